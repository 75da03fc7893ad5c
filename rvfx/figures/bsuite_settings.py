"""Why rvfx's ensemble RLSVI solves bsuite's deep_sea later than bsuite's boot_dqn
(configs/bsuite_deep_sea_settings.yaml): a 2^k factorial of the settings in which the two differ,
per size, with the episode each run solves the size at (bsuite's criterion) as the response and
the factors' main effects on its log2, beside boot_dqn's own episodes where its logs are present.

A factor's "-" level is the first value of its grid in the spec (the paper's), "+" the other.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.stats import factorial_effects
from rvfx.experiment.results import load_spec_value, load_table
from rvfx.figures.common import plt, save, write_table
from rvfx.figures.interop import boot_dqn_logs

EXPERIMENT = "bsuite_deep_sea_settings"


def solved_runs(results) -> tuple[pd.DataFrame, list[str], dict]:
    """(one row per run: seed, factors coded -1/+1, size, episode solved or the last logged one,
    solved; the factors; each factor's (-, +) levels)."""
    from rvfx.analysis.bsuite import find_solution, load_runs
    factors = list(load_spec_value(results, EXPERIMENT, ("design", "factors")))
    levels = {f: list(load_spec_value(results, EXPERIMENT, ("grid", f))) for f in factors}
    bad = [f for f, lv in levels.items() if len(lv) != 2]
    if bad:
        raise ValueError(f"{EXPERIMENT}: factors without exactly two grid levels: {bad}")
    runs = load_table(results, EXPERIMENT, "runs")
    solved = find_solution(load_runs(results, EXPERIMENT), ["run_id"])
    runs = runs[["run_id", "seed", *factors]].merge(solved, on="run_id")
    coded = runs.assign(**{f: np.where(runs[f].astype(str) == str(levels[f][0]), -1, 1) for f in factors})
    coded["cell"] = ["".join("+" if v > 0 else "-" for v in r) for r in coded[factors].itertuples(index=False)]
    coded["log2_episode"] = np.log2(coded["episode"].astype(float))
    return coded, factors, levels


def _paper_first(cells) -> list[str]:
    """Cells ordered from all "-" (the paper's settings) to all "+" (boot_dqn's)."""
    return sorted(set(cells), key=lambda c: c.replace("-", "0").replace("+", "1"))


def cell_table(coded: pd.DataFrame, factors: list[str], levels: dict) -> pd.DataFrame:
    """Per cell and size: its settings, seeds solved, the median and every seed's episode solved
    (a censored run counts at its last logged episode, so its cell's median is then a lower bound)."""
    rows = []
    for cell in _paper_first(coded["cell"]):
        settings = {f: levels[f][0 if sign == "-" else 1] for f, sign in zip(factors, cell)}
        for size, g in coded[coded["cell"] == cell].sort_values("seed").groupby("size", sort=True):
            rows.append({"cell": cell, **settings, "N": int(size),
                         "solved": f"{int(g['solved'].sum())}/{len(g)}",
                         "median episode solved":
                             f"{np.median(g['episode']):.0f}" + ("" if g["solved"].all() else " (>=)"),
                         "episode solved per seed": " ".join(f"{e}" if ok else f">{e}"
                                                             for e, ok in zip(g["episode"], g["solved"]))})
    return pd.DataFrame(rows)


def effects_table(coded: pd.DataFrame, factors: list[str], levels: dict) -> pd.DataFrame:
    """Per size and factor: the main effect on log2(episode solved) ± s.e., the factor it
    multiplies the episode by, and whether it exceeds 2 s.e."""
    rows = []
    for size, g in coded.groupby("size", sort=True):
        eff = factorial_effects(g, factors, "cell", "log2_episode")
        for i, e in eff.iterrows():
            f = e["factor"]
            rows.append({"N": int(size), "factor": f"{chr(65 + i)} {f}",
                         "levels (- / +)": f"{levels[f][0]} / {levels[f][1]}",
                         "effect on log2(episode solved) ± s.e.": f"{e['effect']:.2f} ± {e['se']:.2f}",
                         "episode solved x (+ vs -)": f"{2.0 ** e['effect']:.2f}",
                         "> 2 s.e.": "yes" if e["effect > 2 s.e."] else "no",
                         "censored runs at this N": int((~g["solved"]).sum())})
    return pd.DataFrame(rows)


def draw(results, out):
    from rvfx.analysis.bsuite import find_solution
    coded, factors, levels = solved_runs(results)
    logs = boot_dqn_logs(results)          # bsuite's own boot_dqn, where it was run: its episodes solved
    boot = find_solution(logs, ["seed"]) if len(logs) else pd.DataFrame({"size": [], "episode": []})
    sizes = sorted(coded["size"].unique())
    cells = _paper_first(coded["cell"])
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [1.5, 1]})
    for j, size in enumerate(sizes):
        g = coded[coded["size"] == size]
        x = g["cell"].map({c: i for i, c in enumerate(cells)}).to_numpy(float) + 0.2 * (j - (len(sizes) - 1) / 2)
        x = x + 0.08 * (np.random.default_rng(j).random(len(g)) - 0.5)
        ok = g["solved"].to_numpy()
        ax.scatter(x[ok], g["episode"][ok], s=14, color=f"C{j}", alpha=0.7, label=f"N = {size}")
        ax.scatter(x[~ok], g["episode"][~ok], marker="^", s=30, facecolors="none", edgecolors=f"C{j}")
        meds = g.groupby("cell")["episode"].median().reindex(cells)
        ax.scatter(np.arange(len(cells)) + 0.2 * (j - (len(sizes) - 1) / 2), meds, marker="_", s=200, color=f"C{j}")
        for k, e in enumerate(boot.loc[boot["size"] == size, "episode"]):
            ax.axhline(e, color=f"C{j}", ls="--", lw=0.8, label=f"bsuite boot_dqn, N = {size}" if k == 0 else None)
    names = ", ".join(f"{chr(65 + i)} {f.split('.', 1)[1]} {levels[f][0]}/{levels[f][1]}"
                      for i, f in enumerate(factors))
    ax.set_xticks(range(len(cells)), cells)
    ax.set_xlabel(f"cell (signs of {names})")
    ax.set_yscale("log")
    ax.set_ylabel("episode solved (< 90% bad episodes so far)")
    ax.set_title("ensemble RLSVI on bsuite deep_sea: dots are seeds, bars medians (\u25b3: not solved)")
    ax.legend()
    for j, size in enumerate(sizes):
        eff = factorial_effects(coded[coded["size"] == size], factors, "cell", "log2_episode")
        y = np.arange(len(factors)) + 0.2 * (j - (len(sizes) - 1) / 2)
        ax2.errorbar(eff["effect"], y, xerr=2 * eff["se"], fmt="o", color=f"C{j}", capsize=3, label=f"N = {size}")
    ax2.axvline(0, color="k", lw=0.6)
    ax2.set_yticks(range(len(factors)), [f"{chr(65 + i)} {f.split('.', 1)[1]}" for i, f in enumerate(factors)])
    ax2.invert_yaxis()
    ax2.set_xlabel("main effect on log2(episode solved), ± 2 s.e.")
    ax2.set_title("+ level vs -: < 0 solves sooner")
    ax2.legend()
    fig.tight_layout()
    return (save(fig, out, EXPERIMENT) + write_table(cell_table(coded, factors, levels), out, f"{EXPERIMENT}_cells")
            + write_table(effects_table(coded, factors, levels), out, f"{EXPERIMENT}_effects"))
