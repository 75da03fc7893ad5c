"""The Fig. 17 screen (configs/cartpole_ablation.yaml): every cell's responses, the factors' main
effects, and the members' value diagnostics over episodes, drawn from the screen's per-run tables
(rvfx/analysis/screen.py): as recorded (`rvfx run --record`, e.g. figures/paper), else computed
from the collected per-episode and diagnostics tables.

The confirmation's diagnostics (configs/cartpole_confirm.yaml) are drawn the same way, per variant,
and its variants' responses tabled as the cells' are.

The factors and the controls come from the spec's `design` block (saved beside the tables); a
factor's "-" level is its value in the first cell of the spec, its "+" level the other one.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.final_return import LEARNT_RETURN
from rvfx.analysis.screen import (
    RESPONSES,
    Progress,
    confirmation_cell,
    design,
    diagnostics_summary,
    main_effects,
    progress,
    screen_runs,
    signs,
)
from rvfx.analysis.stats import clopper_pearson, mean_t_ci
from rvfx.experiment.results import load_or_derive, load_spec_value
from rvfx.figures.common import plt, save, write_table

EXPERIMENT = "cartpole_ablation"
CONFIRMATION = "cartpole_confirm"
SWING_UP = "reference swing-up states"   # diagnostics_summary's kind of the reference controller's states
LABELS = dict(zip(RESPONSES, ("rewarded episodes", "mean return, last 10%", "over-estimation, last diagnostic",
                              "over-estimation, signed log10 (post hoc)")))   # the responses as the tables say them
NOT_MEASURED = "n/a (not measured)"   # a response no seed of the cell has: the reference has no Q


def _mean_ci(df: pd.DataFrame, col: str, fmt: str = ".2f") -> pd.Series:
    """Per cell: "mean [lo, hi]", the 95% t-interval over its seeds ("mean (1 seed)" for one,
    NOT_MEASURED where no seed has the response, as the reference controller has no Q)."""
    s = mean_t_ci(df, ["agent"], col).set_index("agent")
    return pd.Series({a: NOT_MEASURED if r["count"] == 0 else f"{r['mean']:{fmt}} (1 seed)" if r["count"] == 1
                      else f"{r['mean']:{fmt}} [{r['lo']:{fmt}}, {r['hi']:{fmt}}]" for a, r in s.iterrows()})


def _learnt(flags: pd.Series) -> str:
    """k/n seeds learnt with its Clopper-Pearson 95% CI: with 3 seeds, 0/3 still allows 71%."""
    k, n = int(flags.sum()), len(flags)
    lo, hi = clopper_pearson(k, n)
    return f"{k}/{n} [{lo:.2f}, {hi:.2f}]"


def response_table(runs: pd.DataFrame, first: str) -> pd.DataFrame:
    """Per agent (column `first`: a cell, a control, a variant), in order of appearance: its seeds,
    the seeds learnt with their exact 95% CI, each response's mean with its 95% t-interval over
    seeds, and the mean flip rate."""
    order = list(dict.fromkeys(runs["agent"]))
    g = runs.groupby("agent", sort=False)
    table = pd.DataFrame({
        first: order,
        "seeds": g.size().reindex(order).to_numpy(),
        f"learnt (mean return >= {LEARNT_RETURN:g}, last 10%; exact 95% CI)":
            [_learnt(g.get_group(a)["learnt"]) for a in order],
    })
    for col, label in LABELS.items():
        fmt = ".1f" if col == "rewarded_episodes" else ".2f"
        table[label + " (mean, 95% CI over seeds)"] = _mean_ci(runs, col, fmt).reindex(order).to_numpy()
    table["flip rate per SGD step"] = runs.groupby("agent")["flip_rate"].mean().reindex(order).map(
        lambda v: NOT_MEASURED if np.isnan(v) else f"{v:.4f}").to_numpy()
    return table


def cell_table(runs: pd.DataFrame, coded: pd.DataFrame, factors: list[str]) -> pd.DataFrame:
    """Every cell (and control) with its signs, seeds and responses (response_table)."""
    table = response_table(runs, "cell")
    sign = coded.groupby("agent")[factors].first().reindex(table["cell"])
    table.insert(1, "signs " + "".join(chr(65 + i) for i in range(len(factors))),
                 ["control" if any(pd.isna(v) for v in r) else "".join("+" if v > 0 else "-" for v in r)
                  for r in sign.itertuples(index=False)])
    return table


def effects_table(effects: dict | None, factors: list[str], levels: dict, done: Progress) -> pd.DataFrame:
    """Each factor's main effect ± s.e. per response (`main_effects`), "n/a" until every design
    cell has run (before that the cells' signs cannot balance each other); whether it exceeds 2 s.e.
    is said only once every design run has, since the spec's rule rests on the complete screen's
    degrees of freedom (a first second seed gives an s.e. from one)."""
    rows = {f: {"factor": f"{chr(65 + i)} {f}", "levels (- / +)": f"{levels[f][0]} / {levels[f][1]}",
                "runs": f"{done.runs} of {done.planned}"} for i, f in enumerate(factors)}
    for col, label in LABELS.items():
        for f in factors:
            if effects is None:
                rows[f][f"{label}: effect ± s.e."] = f"n/a ({done.cells_run} of {done.cells} cells run)"
                rows[f][f"{label}: > 2 s.e."] = "n/a"
                continue
            e = effects[col].loc[f]
            if np.isnan(e["se"]):
                rows[f][f"{label}: effect ± s.e."] = f"{e['effect']:.2f} ± n/a (no cell has 2 seeds)"
                rows[f][f"{label}: > 2 s.e."] = "n/a (no cell has 2 seeds)"
                continue
            rows[f][f"{label}: effect ± s.e."] = f"{e['effect']:.2f} ± {e['se']:.2f}"
            rows[f][f"{label}: > 2 s.e."] = ("yes" if e["effect > 2 s.e."] else "no") if done.complete else \
                f"judged when complete ({e['dof']} of {done.dof} d.f. so far)"
    return pd.DataFrame(rows.values())


def confirmation_table(coded: pd.DataFrame, factors: list[str], done: Progress | None = None) -> pd.DataFrame:
    """`confirmation_cell` as a one-row table, "none yet" until every design run has finished (`done`)."""
    if done is not None and not done.complete:
        return pd.DataFrame([{"cell": "none yet", "signs": "", "learnt": "", "rewarded episodes per run": "",
                              "mean return, last 10%": "", "rule": f"chosen when the screen is complete: "
                                                                  f"{done.runs} of {done.planned} design runs"}])
    best = confirmation_cell(coded, factors)
    return pd.DataFrame([{
        "cell": best["cell"], "signs": best["signs"], "learnt": f"{best['learnt']}/{best['seeds']}",
        "rewarded episodes per run": f"{best['rewarded_episodes']:.1f}",
        "mean return, last 10%": f"{best['final_return']:.2f}",
        "rule": "most seeds learnt (ties: final return, then fewer +)" if best["any_learnt"] else
                "no cell learnt: most rewarded episodes per run (ties: final return, then fewer +); "
                "the confirmation reports what it learns, not a success"}])


def effect_note(eff: pd.DataFrame, done: Progress) -> str:
    """An effect panel's title: why it draws no error bars (no cell has two seeds, as at CI scale),
    or on how many of the complete screen's degrees of freedom its s.e. rests so far."""
    if eff["se"].isna().all():
        return "no error bars: no cell has 2 seeds, so there is no within-cell spread"
    return "" if done.complete else f"s.e. from {eff['dof'].iloc[0]} of {done.dof} d.f. so far"


def _effect_panel(ax, effects, factors, col, label, done):
    y = np.arange(len(factors))[::-1]
    if effects is not None:
        eff = effects[col].loc[factors]
        ax.errorbar(eff["effect"], y, xerr=2 * eff["se"], fmt="o", capsize=3)
        ax.set_title(effect_note(eff, done))
    else:
        ax.text(0.5, 0.5, f"effects once every cell has run\n({done.cells_run} of {done.cells} so far)",
                transform=ax.transAxes, ha="center", va="center")
    ax.axvline(0.0, color="0.5", lw=0.8, ls=":")
    ax.set_yticks(y, [f"{chr(65 + i)} {f.split('.', 1)[1]}" for i, f in enumerate(factors)], fontsize=7)
    ax.set_xlabel(f"main effect on {label} (+ minus -), ± 2 s.e.")


def _cell_panel(ax, runs, col, label):
    order = list(dict.fromkeys(runs["agent"]))
    x = {a: i for i, a in enumerate(order)}
    colour = np.where(runs["control"], "C3", "C0")
    ax.scatter(runs["agent"].map(x), runs[col], s=12, c=colour, alpha=0.7)
    means = runs.groupby("agent")[col].mean().reindex(order)
    ax.scatter(range(len(order)), means, marker="_", s=200, color="k")
    ax.set_xticks(range(len(order)), order, rotation=90, fontsize=7)
    ax.set_ylabel(label)


def _seeds_per_cell(learners: pd.DataFrame) -> str:
    """The number of seeds per cell (agent), or its range where the cells differ ("15-16")."""
    seeds = learners.groupby("agent").size()
    return f"{seeds.min()}" if seeds.min() == seeds.max() else f"{seeds.min()}-{seeds.max()}"


def _final_return_panel(ax, runs):
    """Each learner run's final return by cell, the learnt line and the reference controller's mean."""
    _cell_panel(ax, runs[~runs["reference"]], "final_return", "mean return, last 10% of episodes")
    ax.axhline(LEARNT_RETURN, color="C2", lw=0.8, ls="--", label=f"learnt: >= {LEARNT_RETURN:g}")
    if runs["reference"].any():
        ax.axhline(runs.loc[runs["reference"], "final_return"].mean(), color="C1", lw=0.8,
                   label="reference controller (energy pumping + LQR)")
    ax.set_yscale("symlog", linthresh=10.0)   # learners near -6, the learnt line 100, the reference ~830
    ax.set_yticks([-10, -5, 0, 5, 10, 100, 1000], ["-10", "-5", "0", "5", "10", "100", "1000"])
    ax.set_ylabel("mean return, last 10% of episodes\n(linear within ±10, logarithmic beyond)")
    ax.legend()


def fig_ablation(results, out):
    factors, controls, agents = design(results, EXPERIMENT)
    runs = load_or_derive(results, EXPERIMENT, "screen_runs", screen_runs)
    coded, levels = signs(runs, factors, agents, controls)
    done = progress(coded, agents, controls, load_spec_value(results, EXPERIMENT, ("seeds",)))
    effects = main_effects(coded, factors, done)
    learners = runs[~runs["reference"]]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    _cell_panel(axes[0, 0], learners, "rewarded_episodes", "rewarded episodes per run")
    _final_return_panel(axes[0, 1], runs)
    _effect_panel(axes[1, 0], effects, factors, "rewarded_episodes", "rewarded episodes", done)
    _effect_panel(axes[1, 1], effects, factors, "final_return", "final return", done)
    fig.suptitle(f"Cartpole swing-up, Fig. 17 screen ({done.runs} of {done.planned} design runs): dots are runs "
                 f"(seeds per cell: {_seeds_per_cell(learners)}), bars cell means; red: control. Effects over the "
                 f"{done.cells} design cells")
    fig.tight_layout()
    return (save(fig, out, "cartpole_ablation")
            + write_table(cell_table(runs, coded, factors), out, "cartpole_ablation_cells")
            + write_table(effects_table(effects, factors, levels, done), out, "cartpole_ablation_effects")
            + write_table(confirmation_table(coded, factors, done), out, "cartpole_ablation_confirmation"))


def _legend(ax, **kw):
    """A legend where something was drawn (a CI-scale run may end before its first diagnostic)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**kw)


def draw_diagnostics(diag: pd.DataFrame, title: str, name: str, out, q_by: str = "kind"):
    """Over-estimation and flip rate per agent (mean over its runs), and the members' spread and
    level of max_a Q on the probe states (median over runs, quartile band): per kind of probe state
    pooling every agent (q_by="kind", the screen's cells), or per agent on the reference
    swing-up's states (q_by="agent", the confirmation's variants)."""
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    panels = [(axes[0, 0], "overestimation", "Q(s, a) - discounted return\n(last 10^4 transitions;\nmean over "
                                             "members, then runs)"),
              (axes[1, 1], "flip_rate", "greedy-action flips per SGD step\n(live weights;\nmean over members, "
                                        "then runs)")]
    for ax, metric, ylabel in panels:
        d = diag[diag["metric"] == metric].groupby(["agent", "episode"], sort=False)["value"].mean().reset_index()
        for i, (agent, g) in enumerate(d.groupby("agent", sort=False)):
            ax.plot(g["episode"], g["value"], lw=0.9, marker="o", ms=2, color=f"C{i % 10}",
                    ls="-" if i < 10 else "--", label=agent)
        ax.set_xlabel("episode")
        ax.set_ylabel(ylabel)
    axes[0, 0].axhline(0.0, color="0.5", lw=0.8, ls=":")
    axes[0, 0].set_yscale("symlog", linthresh=1.0)      # one diverging cell must not flatten the others
    _legend(axes[0, 0], fontsize=6, ncol=3)
    q = diag if q_by == "kind" else diag[diag["kind"] == SWING_UP]
    where = "probe states" if q_by == "kind" else "the reference swing-up's states"
    for ax, metric, what in ((axes[0, 1], "q_spread", f"s.d. over members of max_a Q\non {where}"),
                             (axes[1, 0], "q_level", f"max_a Q on {where},\nmean over members")):
        # agents in spec order, as in the other two panels (same colours); kinds sorted, as drawn before
        for label, g in q[q["metric"] == metric].groupby(q_by, sort=q_by == "kind"):
            by = g.groupby("episode")["value"]
            median = by.median()
            ax.plot(median.index, median.values, marker="o", ms=2, label=label)
            ax.fill_between(median.index, by.quantile(0.25).values, by.quantile(0.75).values, alpha=0.15)
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_ylabel(f"{what}\n(median over runs, band: quartiles)")
        ax.set_xlabel("episode")
        _legend(ax, fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return save(fig, out, name)


def fig_diagnostics(results, out):
    diag = load_or_derive(results, EXPERIMENT, "diagnostics_summary", diagnostics_summary)
    return draw_diagnostics(diag, "Cartpole swing-up, Fig. 17 screen: what the ensemble's members believe",
                            "cartpole_diagnostics", out)


def fig_confirm_responses(results, out):
    """The confirmation's responses, per run by variant, and per variant with their CIs as the
    screen's cells have them: drawn from the per-run table `screen_runs` alone, which the record
    keeps, so that they cover every run when the per-episode tables of some are lost."""
    runs = load_or_derive(results, CONFIRMATION, "screen_runs", screen_runs)
    learners = runs[~runs["reference"]]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.4))
    _cell_panel(axes[0], learners, "rewarded_episodes", "rewarded episodes per run")
    _final_return_panel(axes[1], runs)
    _cell_panel(axes[2], learners, "log_overestimation",
                "over-estimation of Q, last diagnostic\n(signed log10(1 + |x|), post hoc)")
    fig.suptitle(f"Cartpole swing-up, Fig. 17 confirmation (cell c05): dots are the {len(learners)} learner runs "
                 f"(seeds per variant: {_seeds_per_cell(learners)}), bars variant means; the line, the reference "
                 f"controller's mean over its {int(runs['reference'].sum())} runs")
    fig.tight_layout()
    return save(fig, out, "cartpole_confirm_responses") + write_table(response_table(runs, "agent"), out,
                                                                      "cartpole_confirm_responses")


def fig_confirm_diagnostics(results, out):
    """The confirmation's diagnostics per variant, and the table of what the figure draws: per agent,
    metric and diagnostic episode, the median and quartiles over runs (Q on the swing-up's states)."""
    diag = load_or_derive(results, CONFIRMATION, "diagnostics_summary", diagnostics_summary)
    diag = diag[(diag["kind"] == SWING_UP) | (diag["kind"] == "")]
    by = diag.groupby(["agent", "metric", "episode"], sort=False)["value"]
    table = pd.DataFrame({"runs": by.count(), "median": by.median(), "q25": by.quantile(0.25),
                          "q75": by.quantile(0.75)}).round(4).reset_index()
    table = table[table["runs"] > 0]              # DQN's one member has no spread
    return (draw_diagnostics(diag, "Cartpole swing-up, Fig. 17 confirmation (cell c05): what each variant's "
                             "members believe", "cartpole_confirm_diagnostics", out, q_by="agent")
            + write_table(table, out, "cartpole_confirm_diagnostics"))
