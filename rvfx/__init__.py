"""rvfx: reproduce "Deep Exploration via Randomized Value Functions" (Osband et al., JMLR 2019)."""
import os
import platform

# Results must not depend on the BLAS thread count: pin it before NumPy loads
# (also inherited by worker processes).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# Nor on the CPU: OpenBLAS picks its kernels by CPU, and an AVX-512 kernel rounds a network's
# products differently from the AVX2 one, so the same seed gave other CSV on another machine.
# Pin the AVX2 (Haswell) kernels, which every x86-64 CPU since 2013 runs.
if platform.machine().lower() in ("x86_64", "amd64"):
    os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")

__version__ = "0.1.0"

# rvfx/DeepSea-v0 and rvfx/CartpoleSwingUp-v0 for gymnasium.make, registered once gymnasium is
# imported (nothing happens without it); gymnasium.make("rvfx:rvfx/DeepSea-v0") imports rvfx itself.
from rvfx.interop import register_gymnasium_on_import  # noqa: E402

register_gymnasium_on_import()
