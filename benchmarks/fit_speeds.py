"""Re-measure `rvfx validate`'s speed constants: time every family's cases at the sweeps' load, fit.

The cases are the benchmarks' own (bench_tabular, bench_linear, bench_ensemble, bench_cartpole
`model_cases`), timed as `make bench` times them (estimate_check: two processes, one per core,
rounds taken in turn), one family at a time: two runs of the same agent at once contend for the
shared cache as a sweep's do (a family timed among the others ran up to ~30% faster). Then, per
family, the constants that charge no case less than its time with the least largest model/measured,
and among those the least summed one (linear programs: the model is linear in them): first the
fixed charges every run pays with the tabular agents' constants and the bootstrap's resample, then
the linear agents' and the networks', each on top of those. It prints the constants in use and the
fitted ones, and model/measured per case for both; it changes no code (the constants live in
rvfx/agents/costs.py).

Run (on a machine whose other work is paused):
  .venv/bin/python benchmarks/fit_speeds.py [--family F ...] [--save FILE] [--load FILE ...]
--family times only those families (tabular, linear, network: each a few minutes on 2 cores);
--save keeps the measurements (a JSON object, case -> CPU seconds per episode); --load fits saved
ones instead of measuring, the median of several sittings per case (a case's time varies by up to
~25% between sittings on a shared machine: fitted to the median, a sitting's ratios spread about the
fit's on both sides), or checks constants edited after a fit.
"""
import rvfx  # noqa: F401, I001  (first: BLAS threads and kernels pinned as in the runs)

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import linprog

from rvfx.agents import costs

sys.path.insert(0, str(Path(__file__).parent))
import bench_cartpole  # noqa: E402
import bench_ensemble  # noqa: E402
import bench_linear  # noqa: E402
import bench_tabular  # noqa: E402
from estimate_check import Case, at_sweep_load, charged, summary  # noqa: E402

FAMILIES = ("tabular", "linear", "network")


def cases() -> list[Case]:
    return [*bench_tabular.model_cases(), *bench_linear.model_cases(), *bench_ensemble.model_cases(),
            *bench_cartpole.model_cases()]


# The constants each family's fit sets, as (names, get, put) over a vector
def _tabular_slots():
    def get():
        return [costs.FIXED_PER_STEP, costs.FIXED_PER_EPISODE, *costs.LEARN["rlsvi"], *costs.LEARN["psrl"],
                *costs.LEARN["ucrl2"], *costs.LEARN["thompson"], costs.BOLTZMANN_STEP, costs.RESAMPLE_PER_TRANSITION]

    def put(x):
        costs.FIXED_PER_STEP, costs.FIXED_PER_EPISODE = x[0], x[1]
        costs.LEARN.update(rlsvi=(x[2], x[3]), psrl=(x[4], x[5]), ucrl2=(x[6], x[7]), thompson=(x[8], x[9]))
        costs.BOLTZMANN_STEP, costs.RESAMPLE_PER_TRANSITION = x[10], x[11]
    names = ["FIXED_PER_STEP", "FIXED_PER_EPISODE", "LEARN['rlsvi'][0]", "[1]", "LEARN['psrl'][0]",
             "[1]", "LEARN['ucrl2'][0]", "[1]", "LEARN['thompson'][0]", "[1]", "BOLTZMANN_STEP",
             "RESAMPLE_PER_TRANSITION"]
    return names, get, put


def _linear_slots():
    def put(x):
        costs.LINEAR_ROW, costs.LINEAR_BOOTSTRAP = tuple(x[:4]), tuple(x[4:])
    return (["LINEAR_ROW[0]", "[1]", "[2]", "[3]", "LINEAR_BOOTSTRAP[0]", "[1]", "[2]"],
            lambda: [*costs.LINEAR_ROW, *costs.LINEAR_BOOTSTRAP], put)


def _network_slots():
    def get():
        return [*costs.NETWORK_STEP, costs.KEYED_MEMBER["one-hot"], costs.KEYED_MEMBER["block"],
                costs.SGD_FIXED["dense"], costs.SGD_FIXED["keyed"], *costs.STORED_PRIOR]

    def put(x):
        costs.NETWORK_STEP = tuple(x[:3])
        costs.KEYED_MEMBER = {"one-hot": x[3], "block": x[4]}
        costs.SGD_FIXED = {"dense": x[5], "keyed": x[6]}
        costs.STORED_PRIOR = tuple(x[7:9])
    return (["NETWORK_STEP[0]", "[1]", "[2]", "KEYED_MEMBER['one-hot']", "KEYED_MEMBER['block']",
             "SGD_FIXED['dense']", "SGD_FIXED['keyed']", "STORED_PRIOR[0]", "[1]"], get, put)


SLOTS = {"tabular": _tabular_slots, "linear": _linear_slots, "network": _network_slots}


def fit(family_cases: list[Case], measured: np.ndarray, slots) -> np.ndarray:
    """The constants charging every case at least its measured time with the least largest model/measured,
    and among those the least summed one (two linear programs)."""
    _, get, put = slots
    now = np.array(get(), float)

    def model(x):
        put(x)
        return np.array([charged(c) for c in family_cases])
    k = len(now)
    offset = model(np.zeros(k))
    unit = np.where(now > 0, now, 1e-6)                   # solve in units of the constants in use
    coef = np.array([model(unit * np.eye(k)[j]) - offset for j in range(k)]).T / measured[:, None]
    put(now)
    base, n = offset / measured, len(measured)           # case i's ratio: base[i] + coef[i] @ x, kept >= 1
    top = linprog(c=np.r_[np.zeros(k), 1.0],             # over (x, t): the least t with every ratio <= t
                  A_ub=np.block([[-coef, np.zeros((n, 1))], [coef, -np.ones((n, 1))]]), b_ub=np.r_[base - 1.0, -base],
                  bounds=[(0, None)] * (k + 1), method="highs")
    if top.status != 0:
        raise RuntimeError(f"the fit failed: {top.message}")
    least = linprog(c=coef.sum(0), A_ub=np.vstack([-coef, coef]),     # then the least summed ratio under t
                    b_ub=np.r_[base - 1.0, top.x[-1] * (1 + 1e-6) - base], bounds=[(0, None)] * k, method="highs")
    if least.status != 0:
        raise RuntimeError(f"the fit failed: {least.message}")
    return unit * least.x


def measurements(args, all_cases: list[Case]) -> dict[str, float]:
    """Case key -> CPU seconds per episode: timed now (the chosen families), or the median of the saved sittings."""
    if args.load:
        saved: dict[str, list[float]] = {}
        for path in args.load:
            for key, seconds in json.loads(Path(path).read_text()).items():
                saved.setdefault(key, []).append(float(seconds))
        return {key: float(np.median(times)) for key, times in saved.items()}
    t0, measured = time.perf_counter(), {}
    for family in args.family:               # one family at a time, as its benchmark times it
        chosen = [c for c in all_cases if c.family == family]
        measured |= dict(zip((c.key for c in chosen), at_sweep_load(chosen).tolist()))
    print(f"{len(measured)} cases timed in two processes on two cores ({time.perf_counter() - t0:.0f} s)")
    if args.save:
        Path(args.save).write_text(json.dumps(measured, indent=1))
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    parser.add_argument("--save")
    parser.add_argument("--load", nargs="+")
    args = parser.parse_args()
    all_cases = cases()
    measured = measurements(args, all_cases)
    for family in FAMILIES:                 # in this order: later families fit on top of the fixed charges
        fam = [c for c in all_cases if c.family == family]
        if not all(c.key in measured for c in fam):
            print(f"{family}: not every case measured, not fitted")
            continue
        meas = np.array([measured[c.key] for c in fam])
        before = np.array([charged(c) for c in fam]) / meas
        names, get, _ = slots = SLOTS[family]()
        now = np.array(get(), float)
        new = fit(fam, meas, slots)
        slots[2](new)
        after = np.array([charged(c) for c in fam]) / meas
        print(f"{family}: constant in use -> fitted")
        for name, a, b in zip(names, now, new):
            print(f"  {name:34s} {a:10.3g} -> {b:10.3g}")
        print("  model/measured per case, in use -> fitted:")
        for c, m, r0, r1 in zip(fam, meas, before, after):
            print(f"    {c.label:52s} {1e3 * m:9.3f} ms/episode   {r0:5.2f} -> {r1:5.2f}")
        print("  in use:\n" + "\n".join(summary(fam, before)) + "\n  fitted:\n" + "\n".join(summary(fam, after)))


if __name__ == "__main__":
    main()
