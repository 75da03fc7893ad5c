"""The kernels an agent's networks run with, an object the agent holds: NumPy's passes (`Numpy`) or,
with the fast extra, numba's (`kernels.Numba`), which give the same bits. `choose` picks them once per
process: RVFX_KERNELS names them, else numba's where numba is installed, else NumPy's. The run's
manifest records the choice (`chosen`).
"""
from __future__ import annotations

import functools
import os

import numpy as np

from rvfx.agents.neural import fused


class Numpy:
    """NumPy's passes (`fused`): the reference, and the kernels without the fast extra."""

    name = "numpy"
    bias_relu, relu, relu_grad_sum = staticmethod(fused.bias_relu), staticmethod(fused.relu), \
        staticmethod(fused.relu_grad_sum)
    adam, adam_rows, bootstrap = staticmethod(fused.adam), staticmethod(fused.adam_rows), staticmethod(fused.bootstrap)
    td, distinct, copy_rows = staticmethod(fused.td), staticmethod(fused.distinct), staticmethod(fused.copy_rows)

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
    return kernels.Numba()


def chosen() -> str | None:
    """The name of the kernels `choose` gave this process ("numba" or "numpy"), or None where no network
    has asked for them."""
    return choose().name if choose.cache_info().currsize else None
