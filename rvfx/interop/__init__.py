"""rvfx's environments offered to the ecosystem: as Gymnasium environments (`rvfx.interop.gym`,
extra rvfx[gym]). The other direction, Gymnasium and bsuite environments inside rvfx, is the
`gym` and `bsuite` environment kinds (rvfx.envs.gym, rvfx.envs.bsuite); bsuite's logs and score
of rvfx results are rvfx.analysis.bsuite.

This module registers rvfx's environments with Gymnasium and imports nothing heavy, as `import
rvfx` runs it.
"""
from __future__ import annotations

import importlib.util
import sys

GYMNASIUM_IDS = {
    "rvfx/DeepSea-v0": "rvfx.interop.gym:DeepSeaEnv",
    "rvfx/CartpoleSwingUp-v0": "rvfx.interop.gym:CartpoleSwingUpEnv",
}


def register_gymnasium() -> None:
    """Register rvfx/DeepSea-v0 and rvfx/CartpoleSwingUp-v0 with Gymnasium (once)."""
    import gymnasium
    for env_id, entry_point in GYMNASIUM_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point)


class _RegisterAfterImport:
    """One-shot import hook: lets gymnasium's own loader run, then registers rvfx's environments."""

    def find_spec(self, name, path, target=None):
        if name != "gymnasium":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            exec_module = spec.loader.exec_module

            def exec_and_register(module):
                exec_module(module)
                register_gymnasium()
            spec.loader.exec_module = exec_and_register
        return spec


def register_gymnasium_on_import() -> None:
    """Register with Gymnasium now if it is imported, else when it is, else never (not installed):
    importing gymnasium (about 0.3 s) is left to whoever uses it, so `import rvfx` stays light."""
    if "gymnasium" in sys.modules:
        register_gymnasium()
    elif importlib.util.find_spec("gymnasium") is not None:
        sys.meta_path.insert(0, _RegisterAfterImport())
