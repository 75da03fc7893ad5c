"""How an environment's states become network inputs for the neural agents (Section 7.2).

A representation splits the job in two so the replay buffer stays small:
`encode(state)` gives a compact code stored per transition (an int cell index,
or a short float vector), and `inputs(codes)` builds the network input only when
a minibatch is drawn. `index_input` says the input is a one-hot vector given by
its index (`input_dim` wide), which the network reads as a row gather.
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class Representation(Protocol):
    index_input: bool      # inputs are int indices of a one-hot vector of width input_dim
    input_dim: int
    code_shape: tuple      # shape of one stored code
    code_dtype: Any

    def encode(self, state) -> Any: ...

    def inputs(self, codes: np.ndarray) -> np.ndarray: ...


class OneHotPixels:
    """Deep sea as an N x N image with a 1 at the diver (Section 7.2.1): code = row*N + col."""
    index_input = True
    code_shape = ()
    code_dtype = np.int32

    def __init__(self, size: int):
        self.size = size
        self.input_dim = size * size

    def encode(self, state) -> int:
        row, col = state
        return row * self.size + col

    def inputs(self, codes: np.ndarray) -> np.ndarray:
        return codes


class DenseVector:
    """A float observation used as is, e.g. cartpole's (theta, theta_dot, x, x_dot, t) (Section 7.2.2)."""
    index_input = False
    code_dtype = np.float32

    def __init__(self, dim: int):
        self.input_dim = dim
        self.code_shape = (dim,)

    def encode(self, state) -> np.ndarray:
        return np.asarray(state, dtype=np.float32)

    def inputs(self, codes: np.ndarray) -> np.ndarray:
        return codes


class TableFeatures:
    """Dense features looked up per discrete state: `table[index_of(state)]` (e.g. a linear basis, Section 7.1).

    Stores only the int index; the float rows are gathered when a minibatch is drawn.
    """
    index_input = False
    code_shape = ()
    code_dtype = np.int32

    def __init__(self, table: np.ndarray, index_of):
        self.table = np.ascontiguousarray(table, dtype=np.float32)
        self.input_dim = self.table.shape[1]
        self.index_of = index_of

    def encode(self, state) -> int:
        return self.index_of(state)

    def inputs(self, codes: np.ndarray) -> np.ndarray:
        return self.table[codes]


def deep_sea_features(size: int, table: np.ndarray) -> TableFeatures:
    """Deep sea with feature row `table[row*N + col]` for cell (row, col)."""
    if table.shape[0] != size * size:
        raise ValueError(f"feature table has {table.shape[0]} rows, deep sea N={size} needs {size * size}")
    return TableFeatures(table, lambda s: s[0] * size + s[1])


def representation_for(env) -> Representation:
    """The environment's own `representation`; else deep sea one-hot pixels, or the raw
    observation vector of an env with `observation_size` (cartpole)."""
    rep = getattr(env, "representation", None)
    if rep is not None:
        return rep
    if getattr(env, "observation_size", None) is not None:
        return DenseVector(int(env.observation_size))
    from rvfx.envs.deep_sea import DeepSea
    if isinstance(env, DeepSea):
        return OneHotPixels(env.size)
    raise TypeError(f"no network representation for {type(env).__name__}: give it a `representation`")


def num_actions(env) -> int:
    """|A|: `env.num_actions`, else the last entry of the layered tabular `env.shape`."""
    n = getattr(env, "num_actions", None)
    return int(n) if n is not None else int(env.shape[-1])
