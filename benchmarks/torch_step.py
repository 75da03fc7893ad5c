"""rvfx's neural SGD step written in PyTorch: CPU time per step (run by the torch venv's interpreter).

    .venv-torch/bin/python benchmarks/torch_step.py NETWORK [STEPS ROUNDS]

NETWORK is one of bench_neural_step.py's networks, with rvfx's `EnsembleParams` defaults (batch 128,
gamma 0.99, beta 1, Adam lr 1e-3 with betas 0.9, 0.999 and eps 1e-8, a target copy every 4 steps):

- cartpole: K=20 members of a 5-50-50-3 ReLU MLP, each plus beta times its fixed prior MLP, whose
  values are stored in the replay at enqueue (as rvfx does); bootstrap weights 2 m, m ~ Bernoulli(1/2)
  per transition and member;
- deep_sea: N=25, K=20, 625-50-50-2 + prior on one-hot inputs. The first layer reads W_1's rows of
  the active pixels (`F.embedding` with `sparse=True`, so its gradient holds the batch's rows) and
  `SparseAdam` updates only those rows, the lazy Adam rvfx's one-hot layer uses; the prior's values
  stored like cartpole's;
- deep_sea_dense: the same network with the one-hot images as dense 625-d floats through a dense first
  layer and plain Adam on all of W_1 (how bsuite's boot_dqn reads them): more work, for reference;
- dqn: cartpole's network with K=1, no prior, no bootstrap weights.

The members are stacked, (K, in, out) weights, and run together: a broadcast matmul for the first
layer, `torch.baddbmm` for the others; the TD loss sum_k 1/(2B) sum_b w_kb (r_b + d_b max_a Q^-_k(s'_b, a)
- Q_k(s_b, a_b))^2 (d_b = gamma, 0 at a terminal), autograd's backward and `torch.optim.Adam` (its
fastest CPU form, `fused=True`) in eager mode. Each step draws its minibatch of 128 with replacement
from a replay of 1,500 random transitions, runs the target pass (no grad), the online pass,
backward and Adam, and copies the weights to the target every 4th step: the work of rvfx's
`sgd_step`, except that rvfx, with one-hot inputs, also shares repeated states' passes and caches
target values per state between copies (exact savings that PyTorch's plain step does not make).

One thread (`torch.set_num_threads(1)`, `set_num_interop_threads(1)`), as rvfx's BLAS in the runs;
subnormals flushed to zero (`torch.set_flush_denormal`), so that Adam's decaying moments never take
x86's slow path (in PyTorch's favour). Prints one JSON line: median, min and max ms per step over
ROUNDS rounds of STEPS steps, in process CPU time, after a warm-up. Imports nothing from rvfx: the
torch venv does not hold it.
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

NETWORKS = {   # inputs, actions, K, prior scale beta, bootstrap weights, one-hot inputs as ("rows" | "dense")
    "cartpole": dict(inputs=5, actions=3, K=20, beta=1.0, bootstrap=True, one_hot=None),
    "deep_sea": dict(inputs=625, actions=2, K=20, beta=1.0, bootstrap=True, one_hot="rows"),
    "deep_sea_dense": dict(inputs=625, actions=2, K=20, beta=1.0, bootstrap=True, one_hot="dense"),
    "dqn": dict(inputs=5, actions=3, K=1, beta=0.0, bootstrap=False, one_hot=None),
}
HIDDEN = (50, 50)
BATCH, GAMMA, LR, TARGET_PERIOD = 128, 0.99, 1e-3, 4
FILL = 1_500           # transitions in the replay (rvfx's cartpole agent holds 1,500)
WARMUP = 20            # steps before timing


def init_mlp(K: int, sizes: list[int], g: torch.Generator) -> list[torch.Tensor]:
    """[W_1, b_1, ..., W_L, b_L] of K stacked MLPs: Glorot-uniform weights (K, in, out), zero biases (K, 1, out)."""
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        limit = (6.0 / (fan_in + fan_out)) ** 0.5
        params += [(torch.rand(K, fan_in, fan_out, generator=g) * 2 - 1) * limit, torch.zeros(K, 1, fan_out)]
    return params


def forward(params: list[torch.Tensor], x: torch.Tensor, one_hot: str | None) -> torch.Tensor:
    """(K, B, A) outputs of the K members on a shared minibatch x: (B, in) floats, or (B,) pixel indices
    when one_hot is "rows" (W_1 then stored (in, K*H), read a row per sample)."""
    w1, b1, *rest = params
    if one_hot == "rows":
        K, H = b1.shape[0], b1.shape[2]
        h = F.embedding(x, w1, sparse=True).view(-1, K, H).transpose(0, 1) + b1
    else:
        h = torch.matmul(x, w1) + b1                     # (B, in) @ (K, in, H) -> (K, B, H)
    for w, b in zip(rest[::2], rest[1::2]):
        h = torch.baddbmm(b, h.relu(), w)
    return h


class Replay:
    """FILL random transitions with their K bootstrap weights and stored prior values of s and s'."""

    def __init__(self, net: dict, prior: list[torch.Tensor] | None, g: torch.Generator):
        n, K, A = FILL, net["K"], net["actions"]
        if net["one_hot"]:
            codes = torch.randint(net["inputs"], (n + 1,), generator=g)
            self.obs = codes if net["one_hot"] == "rows" else F.one_hot(codes, net["inputs"]).float()
        else:
            self.obs = torch.randn(n + 1, net["inputs"], generator=g)
        self.action = torch.randint(A, (n,), generator=g)
        self.reward = (torch.rand(n, generator=g) < 0.1).float()
        self.discount = torch.where(torch.rand(n, generator=g) < 0.02, 0.0, GAMMA)
        self.weight = (2.0 * (torch.rand(n, K, generator=g) < 0.5)) if net["bootstrap"] else None
        self.prior = None
        if prior is not None:                           # beta * prior(s) per stored state, (n + 1, K, A)
            with torch.no_grad():
                self.prior = net["beta"] * forward(prior, self.obs, net["one_hot"]).transpose(0, 1).contiguous()
        self.g = g

    def sample(self) -> tuple:
        """A minibatch of BATCH transitions drawn uniformly with replacement; weights (K, B), priors (K, B, A)."""
        i = torch.randint(FILL, (BATCH,), generator=self.g)
        weight = None if self.weight is None else self.weight[i].T
        priors = (None, None) if self.prior is None else (self.prior[i].transpose(0, 1),
                                                          self.prior[i + 1].transpose(0, 1))
        return self.obs[i], self.action[i], self.reward[i], self.discount[i], self.obs[i + 1], weight, *priors


def make_step(name: str, seed: int = 0):
    """The SGD step of NETWORK `name` as a function of no arguments, on fresh weights and a filled replay."""
    net = NETWORKS[name]
    g = torch.Generator().manual_seed(seed)
    sizes = [net["inputs"], *HIDDEN, net["actions"]]
    params = init_mlp(net["K"], sizes, g)
    prior = init_mlp(net["K"], sizes, g) if net["beta"] else None
    if net["one_hot"] == "rows":                        # W_1 as an embedding table (in, K*H)
        params[0] = params[0].transpose(0, 1).reshape(net["inputs"], -1).contiguous()
        if prior is not None:
            prior[0] = prior[0].transpose(0, 1).reshape(net["inputs"], -1).contiguous()
    for p in params:
        p.requires_grad_(True)
    target = [p.detach().clone() for p in params]
    replay = Replay(net, prior, g)
    if net["one_hot"] == "rows":
        opts = [torch.optim.SparseAdam(params[:1], lr=LR), torch.optim.Adam(params[1:], lr=LR, fused=True)]
    else:
        opts = [torch.optim.Adam(params, lr=LR, fused=True)]
    count = 0

    def step() -> float:
        nonlocal count
        s, a, r, d, s_next, w, p, p_next = replay.sample()
        with torch.no_grad():
            q_next = forward(target, s_next, net["one_hot"])
            if p_next is not None:
                q_next += p_next
            y = r + d * q_next.max(dim=2).values                       # (K, B)
        q = forward(params, s, net["one_hot"])
        if p is not None:
            q = q + p
        delta = y - q.gather(2, a.view(1, -1, 1).expand(q.shape[0], -1, 1)).squeeze(2)
        loss = 0.5 * (delta.square() if w is None else w * delta.square()).sum() / BATCH
        for opt in opts:
            opt.zero_grad(set_to_none=True)
        loss.backward()
        for opt in opts:
            opt.step()
        count += 1
        if count % TARGET_PERIOD == 0:
            with torch.no_grad():
                for old, new in zip(target, params):
                    old.copy_(new)
        return loss.item()

    return step


def main(name: str, steps: int, rounds: int) -> dict:
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    torch.set_flush_denormal(True)
    step = make_step(name)
    for _ in range(WARMUP):
        step()
    ms = []
    for _ in range(rounds):
        t = time.process_time()
        for _ in range(steps):
            step()
        ms.append((time.process_time() - t) / steps * 1e3)
    ms.sort()
    return {"ms": ms[len(ms) // 2], "min": ms[0], "max": ms[-1], "rounds": rounds, "steps": steps,
            "network": name, "torch": torch.__version__, "threads": torch.get_num_threads()}


if __name__ == "__main__":
    extra = [int(a) for a in sys.argv[2:4]]
    print(json.dumps(main(sys.argv[1], *(extra or [100, 5]))))
