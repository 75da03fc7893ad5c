"""bsuite's JAX boot_dqn on given parameters and minibatches, for tests/test_bsuite.py's equivalence test.

Run by the interpreter of the separate venv that holds bsuite[baselines_jax] (`make bsuite-venv`), not
by rvfx's: `python tests/boot_dqn_reference.py IN.npz OUT.npz`. It imports nothing from rvfx.

IN (written by the test, read with allow_pickle=False): `w{l}`, `b{l}`, `prior_w{l}`, `prior_b{l}`,
`target_w{l}`, `target_b{l}` for the layers l = 0, 1, 2, each stacked over the K members (w: (K, in,
out), b: (K, out)); `cases`, comma-separated case names c, each run from that start; for case c the
minibatch of each step i, `{c}o_tm1_{i}` (B, 1, 8), `{c}a_tm1_{i}`, `{c}r_t_{i}`, `{c}d_t_{i}` (B,),
`{c}o_t_{i}`, and `{c}m_t_{i}`, `{c}z_t_{i}` (B, K), as boot_dqn's replay returns them; `draws`.

The agent is bsuite's own, `boot_dqn.default_agent` (run.py's settings: 50-50 MLP plus a prior MLP
scaled by 5, Adam 1e-3, discount 0.99); its members' TrainingStates are replaced by the given
parameters, and each step runs the agent's jitted `_sgd_step` per member on member k's column of the
masks and noise, as `BootstrappedDqn.update` does. The loss and its gradient are the agent's own
`loss` (the closure `_sgd_step` was built from), evaluated at the parameters before each step.

OUT, per case c and step i: `{c}loss_{i}` (K,), the gradients `{c}grad_w{l}_{i}`, `{c}grad_b{l}_{i}` of
the trained network and the largest |gradient| of the prior network `{c}prior_grad_max_{i}`, the
parameters after the step `{c}w{l}_{i}`, `{c}b{l}_{i}`; and `{c}adam2_w{l}_{i}`, ...: the same steps with
optax.adam(1e-3, eps=2e-8) on the agent's gradients (Adam on half the loss is Adam with twice the
epsilon on the loss). Also `haiku_w{l}`, `haiku_b{l}`: the trained network's parameters of `draws`
fresh members as the agent initialises them (hk.nets.MLP's default), for the initialisation check.
"""
import inspect
import sys

import jax
import numpy as np
import optax
from bsuite.baselines.jax import boot_dqn
from dm_env import specs

LAYERS = 3


def tree(data, k, prefix=""):
    """Member k's haiku parameters: the trained MLP `mlp` and the prior MLP `mlp_1`."""
    out = {}
    for l in range(LAYERS):
        out[f"mlp/~/linear_{l}"] = {"w": data[f"{prefix}w{l}"][k], "b": data[f"{prefix}b{l}"][k]}
        out[f"mlp_1/~/linear_{l}"] = {"w": data[f"prior_w{l}"][k], "b": data[f"prior_b{l}"][k]}
    return jax.tree_util.tree_map(jax.numpy.asarray, out)


def run_case(agent, loss, data, case):
    """Case `case`'s steps from the given start, every member; its outputs keyed `{case}...`."""
    K = data["w0"].shape[0]
    steps = sum(1 for key in data if key.startswith(f"{case}o_tm1_"))
    adam2 = optax.adam(1e-3, eps=2e-8)
    states, twins = [], []
    for k in range(K):
        params, target = tree(data, k), tree(data, k, "target_")
        states.append(agent._ensemble[k]._replace(params=params, target_params=target,
                                                  opt_state=agent._optimizer.init(params), step=0))
        twins.append((params, adam2.init(params)))
    out = {}
    for i in range(steps):
        o_tm1, a_tm1, r_t, d_t, o_t, m_t, z_t = (data[f"{case}{name}_{i}"] for name in
                                                 ("o_tm1", "a_tm1", "r_t", "d_t", "o_t", "m_t", "z_t"))
        losses, grads = [], []
        for k in range(K):
            transitions = [o_tm1, a_tm1, r_t, d_t, o_t, m_t[:, k], z_t[:, k]]
            losses.append(float(loss(states[k].params, states[k].target_params, transitions)))
            grads.append(jax.grad(loss)(states[k].params, states[k].target_params, transitions))
            states[k] = agent._sgd_step(states[k], transitions)
            twin, twin_opt = twins[k]
            updates, twin_opt = adam2.update(jax.grad(loss)(twin, states[k].target_params, transitions), twin_opt)
            twins[k] = (optax.apply_updates(twin, updates), twin_opt)
        out[f"{case}loss_{i}"] = np.array(losses)
        out[f"{case}prior_grad_max_{i}"] = np.array(max(float(np.abs(g[f"mlp_1/~/linear_{l}"][p]).max())
                                                        for g in grads for l in range(LAYERS) for p in "wb"))
        for l in range(LAYERS):
            name = f"mlp/~/linear_{l}"
            for p in "wb":
                out[f"{case}grad_{p}{l}_{i}"] = np.stack([np.asarray(g[name][p]) for g in grads])
                out[f"{case}{p}{l}_{i}"] = np.stack([np.asarray(s.params[name][p]) for s in states])
                out[f"{case}adam2_{p}{l}_{i}"] = np.stack([np.asarray(t[0][name][p]) for t in twins])
    return out


def main(path_in, path_out):
    data = dict(np.load(path_in, allow_pickle=False))
    obs_spec = specs.Array((1, data["w0"].shape[1]), np.float32)
    action_spec = specs.DiscreteArray(data["w2"].shape[2])
    agent = boot_dqn.default_agent(obs_spec, action_spec, num_ensemble=data["w0"].shape[0])
    loss = inspect.getclosurevars(agent._sgd_step.__wrapped__).nonlocals["loss"]
    assert jax.tree_util.tree_structure(agent._ensemble[0].params) == jax.tree_util.tree_structure(tree(data, 0))
    out = {}
    for case in str(data["cases"]).split(","):
        out.update(run_case(agent, loss, data, case))
    fresh = boot_dqn.default_agent(obs_spec, action_spec, num_ensemble=int(data["draws"]), seed=7)
    for l in range(LAYERS):
        for p in "wb":
            out[f"haiku_{p}{l}"] = np.stack([np.asarray(s.params[f"mlp/~/linear_{l}"][p]) for s in fresh._ensemble])
    np.savez(path_out, **out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python tests/boot_dqn_reference.py IN.npz OUT.npz")
    main(*sys.argv[1:])
