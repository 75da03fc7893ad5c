"""Re-measure `rvfx validate`'s speed constants: run every family's cases at the sweeps' load, fit.

Two processes, one per core (the load of a sweep with `--jobs 2`), each time every case: an agent of
the specs' settings run through `live` for `warmup` episodes, then `episodes` more timed in process
CPU time (BLAS on one thread). A case's time is the slower process's. Then, per family, the
constants that charge no case less than its time with the least summed model/measured (a linear
program: the model is linear in them): first the fixed charges every run pays with the tabular
agents' `LEARN`, then the linear agents' and the networks' constants on top of those fixed
charges. It prints the constants in use and the fitted ones, and model/measured per case for both;
it changes no code (the constants live in rvfx/agents/costs.py).

Run: .venv/bin/python benchmarks/fit_speeds.py [--save FILE | --load FILE...]  (about a minute on 2
cores; the bsuite cases need the bsuite extra and are left out without it). --save keeps the
measurements; --load fits saved ones instead of measuring, the slowest of several sittings per case
(a case's time varies by up to ~15% between sittings), or checks constants edited after a fit.
"""
import rvfx  # noqa: F401, I001  (first: BLAS threads and kernels pinned as in the runs)

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import linprog
from threadpoolctl import threadpool_limits

from rvfx.agents import costs, make_agent
from rvfx.agents.neural.ensemble import DQNParams, EnsembleParams
from rvfx.core.live import live
from rvfx.envs import ENVS
from rvfx.envs.cartpole.dynamics import CartpoleSwingUpParams
from rvfx.envs.deep_sea import DeepSeaParams
from rvfx.experiment import memory, runner
from rvfx.experiment.spec import load_spec

HERE = Path(__file__).parent
CONFIGS = HERE.parent / "configs"
sys.path.insert(0, str(HERE))
from bench_cartpole import MODEL_CASES as CARTPOLE_CASES  # noqa: E402
from bench_tabular import MODEL_CASES as TABULAR_CASES  # noqa: E402
from estimate_check import agent_params  # noqa: E402


@dataclass(frozen=True)
class Case:
    family: str
    label: str
    algorithm: str
    params: object
    env: str
    env_params: object
    warmup: int
    episodes: int
    seed_run: object = None         # a spec's run whose generators it uses, else fixed seeds


def spec_case(family, spec, label, warmup, episodes, where="native", **want) -> Case:
    """The run of `spec` with agent `label` and these env/agent values (the first seed); a bsuite run
    `where`="native" on rvfx's DeepSea of the size bsuite's id has."""
    exp = load_spec(str(CONFIGS / f"{spec}.yaml"), "paper", allow_long=True)
    run = next(r for r in exp.runs if r.agent == label
               and all({**asdict(r.env_params), **asdict(r.agent_params)}.get(k) == v for k, v in want.items()))
    params, env_params = run.agent_params, run.env_params
    if run.env == "bsuite" and where == "native":
        env, env_params = "deep_sea", DeepSeaParams(size=env_params.run_sizes()["S"])
    else:
        env = run.env
    name = " ".join([label, where if run.env == "bsuite" else "", *(f"{k}={v}" for k, v in want.items())])
    return Case(family, " ".join(name.split()), run.algorithm, params, env, env_params, warmup, episodes, run)


def bsuite_installed() -> bool:
    try:
        import bsuite  # noqa: F401
    except ImportError:
        return False
    return True


def cases() -> list[Case]:
    out = []
    for label, algorithm, values in TABULAR_CASES:
        for n in (10, 20, 40):
            out.append(Case("tabular", f"{label} N={n}", algorithm, agent_params(algorithm, **values), "deep_sea",
                            DeepSeaParams(size=n), 50, max(20, 100_000 // n ** 2)))
    features, bootstrap = "deepsea_linear_features", "deepsea_bootstrap_scaling"
    for spec, label, n, M, warmup, episodes in (     # the linear specs' settings: N, M, history
            (features, "grlsvi", 10, 2, 200, 400), (features, "grlsvi", 10, 40, 200, 200),
            (features, "grlsvi", 20, 10, 200, 200), (features, "grlsvi", 40, 5, 200, 100),
            (features, "grlsvi", 40, 40, 200, 100), (features, "grlsvi", 40, 160, 50, 20),
            (bootstrap, "grlsvi_N", 60, 20, 100, 50), ("deepsea_linear_scaling", "grlsvi", 80, 40, 50, 20),
            (bootstrap, "brlsvi_M", 10, 5, 1000, 300), (bootstrap, "brlsvi_M", 30, 20, 1000, 100),
            (bootstrap, "brlsvi_M", 30, 120, 300, 50), ("deepsea_tuning", "brlsvi", 20, 10, 2000, 200),
            (bootstrap, "brlsvi_N", 60, 5, 300, 30), (bootstrap, "brlsvi_N", 60, 20, 300, 30),
            (bootstrap, "brlsvi_N", 40, 10, 500, 50)):
        out.append(spec_case("linear", spec, label, warmup, episodes, size=n, M=M))
    for label, params, env_values in CARTPOLE_CASES:
        algorithm = "dqn" if isinstance(params, DQNParams) else "ensemble_rlsvi"
        out.append(Case("network", label, algorithm, params, "cartpole_swingup",
                        CartpoleSwingUpParams(tau_pole_mass=True, **env_values), 1, 3))
    for representation in ("observation", "linear_basis"):
        for n in (5, 10, 20, 28, 40, 50):
            out.append(Case("network", f"ensemble {representation} N={n}", "ensemble_rlsvi",
                            EnsembleParams(K=20, representation=representation, M=10), "deep_sea",
                            DeepSeaParams(size=n), 40, max(8, 1000 // n)))
    for k in ("deep_sea/0", "deep_sea/10", "deep_sea/20"):
        out.append(spec_case("network", "bsuite_deep_sea", "dqn", 30, 40, id=k))
        if bsuite_installed():
            out.append(spec_case("network", "bsuite_deep_sea", "dqn", 30, 40, where="bsuite", id=k))
    return out


def measure(case: Case) -> float:
    """Process CPU seconds per episode of `case`'s timed episodes."""
    if case.seed_run is not None:
        env_rng, agent_rng = runner.run_rngs(case.seed_run)
    else:
        env_rng, agent_rng = np.random.default_rng(1), np.random.default_rng(2)
    env = ENVS[case.env][0](case.env_params, env_rng)
    agent = make_agent(case.algorithm, case.params, env, agent_rng)
    with threadpool_limits(limits=1, user_api="blas"):
        live(agent, env, case.warmup, log_every="last")
        start = time.process_time()
        live(agent, env, case.episodes, log_every="all")
    return (time.process_time() - start) / case.episodes


# The constants each family's fit sets, as (name, get, set) over a vector
def _tabular_slots():
    def get():
        return [costs.FIXED_PER_STEP, costs.FIXED_PER_EPISODE, *costs.LEARN["rlsvi"], *costs.LEARN["psrl"],
                *costs.LEARN["ucrl2"], *costs.LEARN["thompson"], *costs.BOOTSTRAP_STATISTICS, costs.BOLTZMANN_STEP]

    def put(x):
        costs.FIXED_PER_STEP, costs.FIXED_PER_EPISODE = x[0], x[1]
        costs.LEARN.update(rlsvi=(x[2], x[3]), psrl=(x[4], x[5]), ucrl2=(x[6], x[7]), thompson=(x[8], x[9]))
        costs.BOOTSTRAP_STATISTICS, costs.BOLTZMANN_STEP = (x[10], x[11]), x[12]
    names = ["FIXED_PER_STEP", "FIXED_PER_EPISODE", "LEARN['rlsvi'][0]", "[1]", "LEARN['psrl'][0]",
             "[1]", "LEARN['ucrl2'][0]", "[1]", "LEARN['thompson'][0]", "[1]",
             "BOOTSTRAP_STATISTICS[0]", "[1]", "BOLTZMANN_STEP"]
    return names, get, put


def _linear_slots():
    def put(x):
        costs.LINEAR_ROW, costs.LINEAR_BOOTSTRAP = tuple(x[:4]), tuple(x[4:])
    return (["LINEAR_ROW[0]", "[1]", "[2]", "[3]", "LINEAR_BOOTSTRAP[0]", "[1]", "[2]"],
            lambda: [*costs.LINEAR_ROW, *costs.LINEAR_BOOTSTRAP], put)


def _network_slots():
    def get():
        return [*costs.NETWORK_STEP, costs.KEYED_MEMBER["one-hot"], costs.KEYED_MEMBER["block"], costs.SGD_FIXED]

    def put(x):
        costs.NETWORK_STEP = tuple(x[:3])
        costs.KEYED_MEMBER = {"one-hot": x[3], "block": x[4]}
        costs.SGD_FIXED = x[5]
    return ["NETWORK_STEP[0]", "[1]", "[2]", "KEYED_MEMBER['one-hot']", "KEYED_MEMBER['block']", "SGD_FIXED"], get, put


def charged(case: Case) -> float:
    """The model's seconds per episode over the case's timed episodes (history included)."""
    at = [memory.cpu_seconds(case.algorithm, case.params, case.env_params, n)
          for n in (case.warmup, case.warmup + case.episodes)]
    return (at[1] - at[0]) / case.episodes


def fit(family_cases: list[Case], measured: np.ndarray, slots) -> np.ndarray:
    """The constants charging every case at least its measured time with the least summed ratio."""
    _, get, put = slots
    now = np.array(get(), float)

    def model(x):
        put(x)
        return np.array([charged(c) for c in family_cases])
    k = len(now)
    offset = model(np.zeros(k))
    unit = np.where(now > 0, now, 1e-6)                   # solve in units of the constants in use
    coef = np.array([model(unit * np.eye(k)[j]) - offset for j in range(k)]).T
    res = linprog(c=(coef / measured[:, None]).sum(0), A_ub=-coef, b_ub=offset - measured,
                  bounds=[(0, None)] * k, method="highs")
    put(now)
    if res.status != 0:
        raise RuntimeError(f"the fit failed: {res.message}")
    return unit * res.x


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--measure":
        json.dump([measure(c) for c in cases()], open(sys.argv[2], "w"))
        return
    t0 = time.perf_counter()
    all_cases = cases()
    if len(sys.argv) >= 3 and sys.argv[1] == "--load":
        sittings = [np.array(json.load(open(f)), float) for f in sys.argv[2:]]
        if any(m.shape != (len(all_cases),) for m in sittings):
            raise SystemExit(f"fit_speeds: a saved file does not hold {len(all_cases)} measurements")
        measured = np.max(sittings, axis=0)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            outs = [Path(tmp) / f"{i}.json" for i in range(2)]
            procs = [subprocess.Popen([sys.executable, __file__, "--measure", str(o)]) for o in outs]
            if any(p.wait() for p in procs):
                raise SystemExit("fit_speeds: a measuring process failed")
            measured = np.max([json.load(open(o)) for o in outs], axis=0)
        if len(sys.argv) == 3 and sys.argv[1] == "--save":
            json.dump(measured.tolist(), open(sys.argv[2], "w"))
    print(f"rvfx validate's speeds: {len(all_cases)} cases measured in two processes on two cores"
          + ("" if sys.argv[1:2] == ["--load"] else f" ({time.perf_counter() - t0:.0f} s)"))
    families = (("tabular", _tabular_slots()), ("linear", _linear_slots()), ("network", _network_slots()))
    before = np.array([charged(c) for c in all_cases]) / measured      # every ratio with the constants in use
    for family, slots in families:
        idx = [i for i, c in enumerate(all_cases) if c.family == family]
        fam, meas = [all_cases[i] for i in idx], measured[idx]
        names, get, put = slots
        now = np.array(get(), float)
        new = fit(fam, meas, slots)
        put(new)                                        # later families fit on top of the fixed charges
        after = np.array([charged(c) for c in fam]) / meas
        print(f"{family}: constant in use -> fitted")
        for name, a, b in zip(names, now, new):
            print(f"  {name:34s} {a:10.3g} -> {b:10.3g}")
        print("  model/measured per case, in use -> fitted:")
        for c, m, r0, r1 in zip(fam, meas, before[idx], after):
            print(f"    {c.label:40s} {1e3 * m:9.3f} ms/episode   {r0:5.2f} -> {r1:5.2f}")


if __name__ == "__main__":
    main()
