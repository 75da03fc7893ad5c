"""Why rvfx's ensemble RLSVI solves bsuite's deep_sea later than bsuite's boot_dqn
(configs/bsuite_deep_sea_settings.yaml): a 2^k factorial of the settings in which the two differ,
per size, with the episode each run solves the size at (bsuite's criterion) as the response and
the factors' main effects on its log2 (rvfx/analysis/bsuite_settings.py), beside boot_dqn's own
episodes where its logs are present.

A factor's "-" level is the first value of its grid in the spec (the paper's), "+" the other.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.figures.common import plt, save, write_table

EXPERIMENT = "bsuite_deep_sea_settings"


def cell_table(coded: pd.DataFrame, factors: list[str], levels: dict) -> pd.DataFrame:
    """`cell_summary` as the table says it: per cell and size its settings, seeds solved, the median
    episode solved ("(>=)" where a run is censored) and every seed's (">" before a censored one's)."""
    from rvfx.analysis.bsuite_settings import cell_summary
    return pd.DataFrame([{"cell": r["cell"], **{f: levels[f][0 if sign == "-" else 1] for f, sign in
                                                zip(factors, r["cell"])}, "N": r["N"],
                          "solved": f"{r['solved']}/{r['runs']}",
                          "median episode solved": f"{r['median_episode']:.0f}" + ("" if all(r["solved_per_seed"])
                                                                                   else " (>=)"),
                          "episode solved per seed": " ".join(f"{e}" if ok else f">{e}" for e, ok in
                                                              zip(r["episodes"], r["solved_per_seed"]))}
                         for r in cell_summary(coded).to_dict("records")])


def effects_table(coded: pd.DataFrame, factors: list[str], levels: dict) -> pd.DataFrame:
    """`main_effects` as the table says it: per size and factor the main effect on log2(episode
    solved) ± s.e., the factor it multiplies the episode by, and whether it exceeds 2 s.e."""
    from rvfx.analysis.bsuite_settings import main_effects
    letter = {f: chr(65 + i) for i, f in enumerate(factors)}
    return pd.DataFrame([{"N": e["N"], "factor": f"{letter[e['factor']]} {e['factor']}",
                          "levels (- / +)": f"{levels[e['factor']][0]} / {levels[e['factor']][1]}",
                          "effect on log2(episode solved) ± s.e.": f"{e['effect']:.2f} ± {e['se']:.2f}",
                          "episode solved x (+ vs -)": f"{2.0 ** e['effect']:.2f}",
                          "> 2 s.e.": "yes" if e["effect > 2 s.e."] else "no",
                          "censored runs at this N": e["censored"]}
                         for e in main_effects(coded, factors).to_dict("records")])


def draw(results, out):
    from rvfx.analysis.bsuite import find_solution
    from rvfx.analysis.bsuite_deep_sea import boot_dqn_logs
    from rvfx.analysis.bsuite_settings import cell_summary, main_effects, paper_first, solved_runs
    coded, factors, levels = solved_runs(results)
    medians = cell_summary(coded)
    logs = boot_dqn_logs(results)          # bsuite's own boot_dqn, where it was run: its episodes solved
    boot = find_solution(logs, ["seed"]) if len(logs) else pd.DataFrame({"size": [], "episode": []})
    sizes = sorted(coded["size"].unique())
    cells = paper_first(coded["cell"])
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [1.5, 1]})
    for j, size in enumerate(sizes):
        g = coded[coded["size"] == size]
        x = g["cell"].map({c: i for i, c in enumerate(cells)}).to_numpy(float) + 0.2 * (j - (len(sizes) - 1) / 2)
        x = x + 0.08 * (np.random.default_rng(j).random(len(g)) - 0.5)
        ok = g["solved"].to_numpy()
        ax.scatter(x[ok], g["episode"][ok], s=14, color=f"C{j}", alpha=0.7, label=f"N = {size}")
        ax.scatter(x[~ok], g["episode"][~ok], marker="^", s=30, facecolors="none", edgecolors=f"C{j}")
        meds = medians[medians["N"] == size].set_index("cell")["median_episode"].reindex(cells)
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
    effects = main_effects(coded, factors)
    for j, size in enumerate(sizes):
        eff = effects[effects["N"] == size]
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
