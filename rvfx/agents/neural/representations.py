"""How an environment's states become network inputs for the neural agents (Section 7.2).

A representation splits the job in two so the replay buffer stays small:
`encode(state)` gives a compact code stored per transition (an int cell index,
or a short float vector), and `inputs(codes)` builds the network input only when
a minibatch is drawn. `index_input` says the input is a one-hot vector given by
its index (`input_dim` wide), which the network reads as a row gather;
`block_size` > 0 says the input is a `rvfx.agents.neural.sparse.BlockInput`, nonzero on one block of
that many consecutive coordinates, which the network reads as a gather of those
rows of W_1 and a weighted sum.

Two kinds: "observation", the environment's own observation (deep sea: the one-hot N x N image
of the diver's cell, `OneHotPixels`, as bsuite's observation; cartpole: its observation vector;
a Gymnasium environment: its `representation`), and "linear_basis", the coherent linear basis of
Section 7.1.2 (`LinearBasisInput`): deep sea's two inputs of Figs. 14-15. The third
representation of Fig. 15, pixels with action 1 always "right", is the observation on an instance
with `randomize_actions: false`.
"""
from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from rvfx.agents.neural.sparse import BlockInput
from rvfx.core.protocols import Layered, LinearFeatures, OwnNetworkInput, VectorObservations

RepresentationKind = Literal["observation", "linear_basis"]


class Representation(Protocol):
    index_input: bool      # inputs are int indices of a one-hot vector of width input_dim
    input_dim: int
    block_size: int        # > 0: inputs are BlockInputs, nonzero on one block of this many coordinates
    code_shape: tuple      # shape of one stored code
    code_dtype: Any

    def encode(self, state) -> Any: ...

    def inputs(self, codes: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class FiniteCodes(Protocol):
    """A representation with `num_codes` integer codes whose inputs the network may cache
    (prior and target values), all at once from `all_inputs()`."""
    num_codes: int

    def all_inputs(self) -> Any: ...


class OneHotPixels:
    """A layered state (h, s) as an H x S image with a 1 at (h, s): deep sea's N x N pixels with the
    diver (Section 7.2.1); code = h*S + s."""
    index_input = True
    block_size = 0
    code_shape = ()
    code_dtype = np.int32

    def __init__(self, rows: int, cols: int):
        self.cols = cols
        self.input_dim = rows * cols

    def encode(self, state) -> int:
        row, col = state
        return row * self.cols + col

    def inputs(self, codes: np.ndarray) -> np.ndarray:
        return codes


class DenseVector:
    """A float observation used as is, e.g. cartpole's (theta, theta_dot, x, x_dot, t) (Section 7.2.2)."""
    index_input = False
    block_size = 0
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
    block_size = 0
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


class LinearBasisInput:
    """Deep sea through the coherent linear basis of Section 7.1.2 (M features per row), as a network input.

    The basis gives per-(state, action) features: phi(s, a) in R^D, D = N*M, nonzero
    only on the M features of the row h of s (`DeepSea.linear_features`).
    The Q-network has one output per action (as for pixels), so the input must be a
    function of s alone. We use all of the basis at s:

        x(s) = [phi(s, a=0); phi(s, a=1)] in R^(2D),

    laid out (row, action, feature): x(s)[h*2M + a*M + m] = phi_h,m(s, a) for the row h
    of s, zero elsewhere. Why this one:

    - nothing is lost or added: x(s) is exactly the basis at s. The linear value
      functions of Section 7.1.2, Q_theta(s, a) = theta . phi(s, a), are linear
      readouts of x(s) (output a reads theta in a's slots), so the basis is as
      informative here as for linear RLSVI: Q* of both the treasure and the bomb
      instance is linear in x(s) (tested), and the network only has to find it.
    - the alternatives fail or change the experiment: summing phi(s, 0) + phi(s, 1)
      mixes the actions up; the M values without the row's place in R^(2D) (a 2M-wide
      dense input) make rows with unrelated random features share weights, so Q* is
      no longer linear in the input; one network call per (s, a) with a single
      output changes the architecture from the pixel runs.
    - it is sparse: 2M nonzeros out of 2NM, on one contiguous block per row, so the
      first layer is a gather of 2M rows of W_1 and a weighted sum (`BlockInput`),
      O(2M K H) per state instead of a dense O(2NM K H) product (N times less).

    The features keep the paper's scale (unit vectors in R^(2N), entries ~ 1/sqrt(2N));
    no input normalisation is added. The code of a state is row*N + col, and every
    code's input is known in advance (`all_inputs`), so prior and target values are
    cached per state exactly.
    """
    index_input = False
    code_shape = ()
    code_dtype = np.int32

    def __init__(self, phi: np.ndarray):
        n, n2, num_actions, M = phi.shape
        if n2 != n:
            raise ValueError(f"features must have shape (N, N, A, M), got {phi.shape}")
        self.size, self.M = n, M
        self.block_size = num_actions * M
        self.input_dim = n * self.block_size
        self.num_codes = n * n
        self.table = np.ascontiguousarray(phi.reshape(n * n, self.block_size), dtype=np.float32)
        self._row = np.repeat(np.arange(n), n)

    def encode(self, state) -> int:
        row, col = state
        return row * self.size + col

    def inputs(self, codes: np.ndarray) -> BlockInput:
        codes = np.asarray(codes)
        return BlockInput(self._row[codes], self.table[codes], codes)

    def all_inputs(self) -> BlockInput:
        return self.inputs(np.arange(self.num_codes))


def representation_for(env, kind: RepresentationKind = "observation", M: int = 10,
                       basis: str = "random_unit", rng: np.random.Generator | None = None) -> Representation:
    """The network input an environment offers: with `kind="linear_basis"` its linear features
    (`LinearFeatures`, e.g. deep sea's coherent basis with M features per row, drawn from `rng`);
    with "observation" its observation: its own network input (`OwnNetworkInput`, e.g. a Gymnasium
    environment), its observation vector (`VectorObservations`, e.g. cartpole) or, for a layered
    tabular environment (`Layered`, e.g. deep sea), the one-hot image of its states."""
    if kind == "linear_basis":
        if not isinstance(env, LinearFeatures):
            raise TypeError(f"representation 'linear_basis' needs an environment with linear features "
                            f"(Section 7.1.2); {type(env).__name__} has none (use 'observation')")
        if rng is None:
            raise ValueError("the linear basis is random: pass an rng")
        return LinearBasisInput(env.linear_features(M, rng, basis))
    if kind != "observation":
        raise ValueError(f"unknown representation {kind!r} (observation, linear_basis)")
    if isinstance(env, OwnNetworkInput):
        return env.representation
    if isinstance(env, VectorObservations):
        return DenseVector(int(env.observation_size))
    if isinstance(env, Layered):
        return OneHotPixels(*env.shape[:2])
    raise TypeError(f"no network representation for {type(env).__name__}: it declares neither "
                    f"observation_size nor a layered shape")
