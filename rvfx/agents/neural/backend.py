"""The kernels an agent's networks run with, an object the agent holds: NumPy's passes (`Numpy`) or,
with the fast extra, numba's (`kernels.Numba`), which give the same bits. `choose` picks them once per
process: RVFX_KERNELS names them, else numba's where numba is installed and its products give NumPy's
bits here (kernels.unfaithful), else NumPy's. The run's manifest records the choice (`chosen`).
"""
from __future__ import annotations

import functools
import os
import warnings

import numpy as np

from rvfx.agents.neural import fused, layers


class Numpy:
    """NumPy's passes (`fused`, `layers`): the reference, and the kernels without the fast extra."""

    name = "numpy"
    whole_step = False                      # no SGD step compiled whole (compiled_step)
    hidden_forward, hidden_backward = staticmethod(layers.forward), staticmethod(layers.backward)
    adam, adam_rows, bootstrap, td = (staticmethod(fused.adam), staticmethod(fused.adam_rows),
                                      staticmethod(fused.bootstrap), staticmethod(fused.td))
    distinct, copy_rows = staticmethod(fused.distinct), staticmethod(fused.copy_rows)

    @staticmethod
    def mask_dtype(dtype) -> np.dtype:
        """ReLU' kept as 0/1 floats of the activations' dtype (the products by them are plain multiplies)."""
        return np.dtype(dtype)


@functools.cache
def choose():
    """This process's kernels: `Numpy()` or `kernels.Numba()` (see the module's docstring); a bad
    RVFX_KERNELS is a ValueError (the run's preflight refuses it before any run)."""
    problem = fused.requested_problem()
    if problem:
        raise ValueError(problem)
    if (os.environ.get("RVFX_KERNELS") or ("numba" if fused.available() else "numpy")) == "numpy":
        return Numpy()
    from rvfx.agents.neural import kernels
    why = kernels.unfaithful()
    if why is None:
        return kernels.Numba()
    warnings.warn(f"{why}: the networks run NumPy's passes (the same numbers, slower)", RuntimeWarning, stacklevel=2)
    return Numpy()


def chosen() -> str | None:
    """The name of the kernels `choose` gave this process ("numba" or "numpy"), or None where no network
    has asked for them."""
    return choose().name if choose.cache_info().currsize else None
