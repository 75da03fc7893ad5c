"""Figs. 6-13: linear RLSVI on deep sea (Sec. 7.1.2-7.1.4): regret, learning-time scaling in N
and M, misspecification, (lambda, v) tuning, and bootstrap vs Gaussian randomization."""
from __future__ import annotations

import matplotlib.ticker as mticker
import numpy as np
import pandas as pd

from rvfx.agents.linear.rlsvi import LinearRLSVIParams
from rvfx.analysis.deepsea_linear import (
    bend_summary,
    bootstrap_vs_best_v,
    misspecification_summary,
    regret_by_lambda,
    regret_summary,
    seed_summary,
)
from rvfx.analysis.scaling import cis_overlap, slope_fits
from rvfx.analysis.stats import censored_medians, learning_times, mean_sem, mean_sem_all
from rvfx.envs.deep_sea import optimal_return
from rvfx.experiment.results import env_params, load_spec_value, load_table
from rvfx.figures.common import (
    agent_params,
    band,
    fmt_episodes,
    plt,
    run_dots,
    save,
    scaling_panel,
    slope_row,
    write_table,
)

LT_LABEL = "learning time (episodes, eq. 7.1)"
CENSORED_NOTE = "dots: runs; line: median; open triangles: censored runs at their cap"


def _fmt_fit(fit) -> str:
    """"slope [lo, hi]" of a row of `slope_fits`, n/a when unfitted."""
    return f"{fit['slope']:.2f} [{fit['lo']:.2f}, {fit['hi']:.2f}]" if np.isfinite(fit["slope"]) else "n/a"


def _seeds(df: pd.DataFrame) -> int:
    return int(df["seed"].nunique())


def _never_opens(results, exp: str) -> float:
    """Regret per episode of never opening the chest (going left always returns 0): V* of the start."""
    return optimal_return(env_params(results, exp))


def _chest(results, exp: str) -> str:
    return "treasure" if env_params(results, exp).treasure else "bomb"


def _cap(results, exp: str) -> int:
    """The episode cap of a learning-time sweep (censored runs stop there)."""
    return int(load_spec_value(results, exp, ("episodes",)))


def _log_axes(ax, xs) -> None:
    """Log-log axes with plain-number ticks: x ticks at the grid values `xs`."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    xs = np.unique(np.asarray(xs, float))
    ax.set_xticks(xs, [f"{x:g}" for x in xs])
    ax.xaxis.set_minor_locator(mticker.NullLocator())
    fmt = mticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5))
    ax.yaxis.set_major_formatter(fmt)
    ax.yaxis.set_minor_formatter(fmt)


def _lt_curve(ax, g: pd.DataFrame, x: str, color, label: str, linestyle="-", marker="o", jitter_seed=0):
    """Learning time of the runs in `g` against column `x`: a dot per run, an open triangle at
    the cap for a censored run, and the censored median per x (left out where censored)."""
    run_dots(ax, g[x].to_numpy(float), learning_times(g), g["episodes_run"].to_numpy(float), color, jitter_seed,
             marker=marker)
    med = censored_medians(g, x).dropna()
    ax.plot(med.index, med.values, linestyle=linestyle, marker=marker, ms=3, color=color, label=label)


def _zero_axis(values: np.ndarray):
    """Positions for a log axis that must also show 0: 0 goes one decade below the smallest
    positive value. Returns (position function, ticks, tick labels)."""
    pos = np.sort(values[values > 0])
    if not len(pos):
        return (lambda v: np.ones_like(np.asarray(v, float))), [1.0], ["0"]
    zero_at = pos[0] / 10

    def place(v):
        v = np.asarray(v, float)
        return np.where(v > 0, v, zero_at)

    decades = range(int(np.floor(np.log10(pos[0]))), int(np.ceil(np.log10(pos[-1]))) + 1)
    ticks = [zero_at] + [10.0 ** k for k in decades]
    labels = ["0"] + [f"$10^{{{k}}}$" for k in decades]
    return place, ticks, labels


# ---------------------------------------------------------------------------------------------
# Fig. 6

def fig_linear_regret(results, out):
    exp = "deepsea_linear"
    eps = load_table(results, exp, "episodes")
    runs = load_table(results, exp, "runs")
    size = load_spec_value(results, exp, ("env", "size"))
    agents = load_spec_value(results, exp, ("agents",)) or {}
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    for i, (agent, g) in enumerate(eps.groupby("agent", sort=False)):
        params = agents.get(agent, {})
        desc = f"{agent} [{params.get('algorithm', '')}, M={params.get('M', '?')}]"
        band(ax, g, "episode", "cum_regret", f"{desc}, pooled ({g['run_id'].nunique()} runs)", color=f"C{i}")
        for chest, style in ((True, "--"), (False, ":")):
            sub = g[g["env.treasure"] == chest]
            if sub.empty:
                continue
            name = f"{agent}, {'treasure' if chest else 'bomb'} ({sub['run_id'].nunique()})"
            line = band(ax, sub, "episode", "cum_regret", name, color=f"C{i}")
            line.set_linestyle(style)
            line.set_linewidth(1)
            band(ax2, sub.assign(avg=sub["cum_regret"] / sub["episode"]), "episode", "avg", name,
                 color=f"C{i}").set_linestyle(style)
    ax.set_xlabel("episode")
    ax.set_ylabel("cumulative regret (symlog)")
    ax.set_yscale("symlog", linthresh=10)
    ax.set_title(f"Deep sea N={size}: cumulative regret, mean ± 1 s.e.")
    ax.legend()
    ax2.axhline(0.5, color="grey", lw=0.8, ls="-", label="0.5: learning-time threshold (eq. 7.1)")
    ax2.set_xscale("log")
    ax2.set_xlabel("episode L")
    ax2.set_ylabel("average regret per episode, Regret(L) / L")
    ax2.set_title("per chest, mean ± 1 s.e.")
    ax2.legend()
    fig.suptitle(f"{_seeds(runs)} seeds per chest; solid: treasure and bomb pooled (as in the paper), "
                 "dashed: treasure only, dotted: bomb only")
    rows = [{"agent": r["agent"], "chest": "treasure" if r["treasure"] else "bomb", "seeds": r["seeds"],
             "episodes": r["episodes"], "final cumulative regret": f"{r['regret']:.1f} ± {r['regret_sem']:.1f}",
             "learning time (median)": fmt_episodes(r["median_learning_time"]),
             "runs never learnt": f"{r['never_learnt']}/{r['seeds']}"}
            for r in regret_summary(runs).to_dict("records")]
    return save(fig, out, "deepsea_linear") + write_table(pd.DataFrame(rows), out, "deepsea_linear_summary")


# ---------------------------------------------------------------------------------------------
# Fig. 7

def fig_linear_scaling(results, out):
    exp = "deepsea_linear_scaling"
    runs = load_table(results, exp, "runs").sort_values("agent.M", kind="stable")
    runs = runs.assign(features="M=" + runs["agent.M"].astype(int).astype(str))
    fig, (ax_raw, ax_log) = plt.subplots(1, 2, figsize=(12, 4.8), layout="constrained")
    for i, (name, g) in enumerate(runs.groupby("features", sort=False)):
        _lt_curve(ax_raw, g, "env.size", f"C{i}", name, jitter_seed=i)
    ax_raw.legend(title="median")
    fits = slope_fits(runs, "env.size", "features")
    scaling_panel(ax_log, runs, fits, "env.size", "features", loglog=True)
    ns = np.sort(runs["env.size"].unique()).astype(float)
    first = censored_medians(runs, "env.size").iloc[0]
    if np.isfinite(first):          # a slope-2 guide through the smallest size's median (all M)
        ax_log.plot(ns, first * (ns / ns[0]) ** 2, color="grey", ls=":", lw=1, label="slope 2 (paper's reading)")
        ax_log.legend(title="median; slope [95% bootstrap CI]")
    _log_axes(ax_log, ns)
    for a, t in ((ax_raw, "(a) raw values"), (ax_log, "(b) log-log: slope = scaling exponent")):
        a.set_xlabel("deep sea size N")
        a.set_ylabel(LT_LABEL)
        a.set_title(t)
    fig.suptitle(f"Linear learn_grlsvi, {_chest(results, exp)}, {_seeds(runs)} seeds per (N, M), "
                 f"cap {_cap(results, exp)} episodes; {CENSORED_NOTE}")
    rows = []
    for fit in fits.to_dict("records"):
        g = runs[runs["features"] == fit["features"]]
        med = censored_medians(g, "env.size")
        rows.append({"M": int(g["agent.M"].iloc[0]), **slope_row(fit),
                     "median learning time by N": " ".join(f"{int(n)}:{'cens' if np.isnan(v) else int(v)}"
                                                          for n, v in med.items())})
    return save(fig, out, "deepsea_linear_scaling") + write_table(pd.DataFrame(rows), out,
                                                                  "deepsea_linear_scaling_slopes")


# ---------------------------------------------------------------------------------------------
# Fig. 8 and 13b: learning time vs M

def _vs_m_rows(runs: pd.DataFrame, label: str) -> list[dict]:
    """`bend_summary` of `runs` as table rows: per N, the slopes in M below and at/above M = 2N, the
    best-fitting kink of a two-piece line (where the curve bends) and the medians."""
    def fit(r, side):
        return _fmt_fit({k: r[f"{side}_{k}"] for k in ("slope", "lo", "hi")})
    return [{"runs": label, "N": r["N"], "2N": 2 * r["N"],
             "slope for M < 2N [95% CI]": fit(r, "below"), "slope for M >= 2N [95% CI]": fit(r, "above"),
             "best kink M (two-piece log-log fit)": "n/a" if np.isnan(r["kink"]) else f"{r['kink']:.0f}",
             "median at M=2N": "n/a" if np.isnan(r["median_at_2N"]) else int(r["median_at_2N"]),
             "median at largest M": "cens" if np.isnan(r["median_at_largest"]) else int(r["median_at_largest"]),
             "censored runs": f"{r['censored']}/{r['runs']}"}
            for r in bend_summary(runs).to_dict("records")]


def _vs_m_panel(ax, runs: pd.DataFrame, linestyle="-", marker="o", labels=True):
    """Learning time vs M, one colour per N, dotted vertical line at M = 2N."""
    for i, (n, g) in enumerate(runs.groupby("env.size")):
        color = f"C{i}"
        _lt_curve(ax, g, "agent.M", color, f"N={int(n)} (dotted: M=2N={int(2 * n)})" if labels else None,
                  linestyle, marker, jitter_seed=i)
        ax.axvline(2 * n, color=color, ls=":", lw=1)


def fig_linear_features(results, out):
    exp = "deepsea_linear_features"
    runs = load_table(results, exp, "runs")
    agents = load_spec_value(results, exp, ("agents",)) or {}
    labels = list(dict.fromkeys(runs["agent"]))
    fig, axes = plt.subplots(2, len(labels), figsize=(6 * len(labels), 8.5), squeeze=False, layout="constrained")
    rows = []
    for j, label in enumerate(labels):
        g = runs[runs["agent"] == label]
        basis = agents.get(label, {}).get("basis", "random_unit")
        for i, loglog in enumerate((False, True)):
            ax = axes[i, j]
            _vs_m_panel(ax, g)
            if loglog:
                _log_axes(ax, g["agent.M"])
            ax.set_xlabel("features per row M")
            ax.set_ylabel(LT_LABEL)
            ax.set_title(f"{label} (basis: {basis}){', log-log' if loglog else ''}")
            ax.legend()
        rows += _vs_m_rows(g, f"{label} ({basis})")
    fig.suptitle(f"Linear learn_grlsvi, {_chest(results, exp)}, {_seeds(runs)} seeds per (N, M), "
                 f"cap {_cap(results, exp)} episodes; {CENSORED_NOTE}")
    return save(fig, out, "deepsea_linear_features") + write_table(pd.DataFrame(rows), out,
                                                                   "deepsea_linear_features_bend")


# ---------------------------------------------------------------------------------------------
# Fig. 9

def fig_misspecified(results, out):
    exp = "deepsea_misspecified"
    runs = load_table(results, exp, "runs").sort_values(["agent.M", "agent.psi"], kind="stable")
    size = load_spec_value(results, exp, ("env", "size"))
    T = int(runs["episodes_run"].max())
    place, ticks, tick_labels = _zero_axis(runs["agent.psi"].unique().astype(float))
    fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    for i, (M, g) in enumerate(runs.groupby("agent.M", sort=False)):
        s = mean_sem(g, ["agent.psi"], "final_cum_regret").sort_values("agent.psi")
        x = place(s["agent.psi"])
        line, = ax.plot(x, s["mean"], "-o", ms=3, color=f"C{i}",
                        label=f"M={int(M)}" + (" (= 2N)" if M == 2 * size else " (> 2N)" if M > 2 * size else ""))
        ax.fill_between(x, s["mean"] - s["sem"], s["mean"] + s["sem"], alpha=0.25, color=line.get_color())
    never = _never_opens(results, exp)
    ax.axhline(never * T, color="grey", ls="--", lw=0.8, label=f"never opens the chest ({never:g} T)")
    ax.set_xscale("log")
    ax.set_xticks(ticks, tick_labels)
    ax.xaxis.set_minor_locator(mticker.NullLocator())
    ax.set_xlabel("misspecification psi (variance of eta entries; 0 = well specified)")
    ax.set_ylabel(f"cumulative regret after {T} episodes")
    ax.set_title(f"Robustness to misspecification, N={size}, mean ± 1 s.e. over {_seeds(runs)} seeds")
    ax.legend()
    rows = [{"M": int(r["M"]), "seeds": int(r["seeds"]),
             f"regret at psi={r['psi_first']:g}": f"{r['regret_first']:.0f} ± {r['regret_first_sem']:.0f}",
             "largest psi where >= half the seeds learn": ("none" if np.isnan(r["largest_psi_learnt"])
                                                           else f"{r['largest_psi_learnt']:g}"),
             "breakdown: smallest psi where most seeds never learn": (f"{r['breakdown_psi']:g}"
                                                                       if np.isfinite(r["breakdown_psi"])
                                                                       else "none in grid"),
             f"regret at psi={r['psi_last']:g}": f"{r['regret_last']:.0f} ± {r['regret_last_sem']:.0f}",
             "seeds learnt at largest psi": f"{r['learnt_at_last']}/{r['runs_at_last']}"}
            for r in misspecification_summary(runs).to_dict("records")]
    return save(fig, out, "deepsea_misspecified") + write_table(pd.DataFrame(rows), out,
                                                                "deepsea_misspecified_breakdown")


# ---------------------------------------------------------------------------------------------
# Figs. 10-12: one sweep over (lambda, v), deterministic and noisy rewards

def _tuning(results):
    exp = "deepsea_tuning"
    runs = load_table(results, exp, "runs")
    gauss = runs[runs["algorithm"] == "linear_grlsvi"]
    boot = runs[runs["algorithm"] == "linear_brlsvi"]
    lams = np.sort(runs["agent.lam"].dropna().unique())
    paper_lam = float(LinearRLSVIParams().lam)                           # the paper's lambda (100)
    lam_ref = float(lams[np.argmin(np.abs(np.log(lams / paper_lam)))])
    return exp, runs, gauss, boot, lam_ref


def _noise_title(noise: float) -> str:
    return "deterministic rewards" if noise == 0 else f"rewards + N(0, {noise:g}²) noise"


def _setting_label(v) -> str:
    return "bootstrap" if pd.isna(v) else f"v={v:g}"


def fig_tuning_lambda(results, out):
    exp, runs, gauss, boot, _ = _tuning(results)
    T = int(runs["episodes_run"].max())
    noises = np.sort(runs["env.reward_noise"].unique())
    fig, axes = plt.subplots(1, len(noises), figsize=(6 * len(noises), 4.5), sharey=True, squeeze=False,
                             layout="constrained")
    vs = np.sort(gauss["agent.v"].unique())
    cmap = plt.get_cmap("viridis")
    never = _never_opens(results, exp)
    for ax, noise in zip(axes[0], noises):
        for k, v in enumerate(vs):
            g = gauss[(gauss["env.reward_noise"] == noise) & (gauss["agent.v"] == v)]
            band(ax, g, "agent.lam", "final_cum_regret", f"grlsvi v={v:g}", color=cmap(k / max(len(vs) - 1, 1)))
        b = boot[boot["env.reward_noise"] == noise]
        if not b.empty:
            band(ax, b, "agent.lam", "final_cum_regret", "brlsvi (bootstrap)", color="k").set_linestyle("--")
        ax.axhline(never * T, color="grey", ls=":", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("prior variance lambda")
        ax.set_title(_noise_title(noise))
    regret = regret_by_lambda(pd.concat([gauss, boot]))
    rows = [{"reward noise sd": noise, "randomization": _setting_label(v),
             **{f"lambda={lam:g}": round(float(r)) for lam, r in zip(g["lam"], g["regret"])}}
            for (noise, v), g in regret.groupby(["reward_noise", "v"], dropna=False, sort=False)]
    axes[0, 0].set_ylabel(f"cumulative regret after {T} episodes")
    axes[0, -1].legend()
    fig.suptitle(f"Linear RLSVI vs prior variance, mean ± 1 s.e. over {_seeds(runs)} seeds; "
                 f"dotted: never opens the chest ({never:g} T)")
    return save(fig, out, "deepsea_tuning_lambda") + write_table(pd.DataFrame(rows), out,
                                                                 "deepsea_tuning_lambda_regret")


def fig_tuning_v(results, out):
    exp, runs, gauss, boot, lam_ref = _tuning(results)
    T = int(runs["episodes_run"].max())
    noises = np.sort(runs["env.reward_noise"].unique())
    never = _never_opens(results, exp)
    fig, axes = plt.subplots(1, len(noises), figsize=(6 * len(noises), 4.5), sharey=True, squeeze=False,
                             layout="constrained")
    for ax, noise in zip(axes[0], noises):
        g = gauss[(gauss["env.reward_noise"] == noise) & (gauss["agent.lam"] == lam_ref)]
        b = boot[(boot["env.reward_noise"] == noise) & (boot["agent.lam"] == lam_ref)]
        band(ax, g, "agent.v", "final_cum_regret", "learn_grlsvi", color="C0")
        if not b.empty:
            bm = mean_sem_all(b, "final_cum_regret")
            ax.axhline(bm["mean"], color="k", ls="--", label="learn_brlsvi (bootstrap, no v to choose)")
            ax.axhspan(bm["mean"] - bm["sem"], bm["mean"] + bm["sem"], color="k", alpha=0.15)
        ax.axhline(never * T, color="grey", ls=":", lw=0.8, label=f"never opens the chest ({never:g} T)")
        if noise > 0:
            ax.axvline(noise ** 2, color="C3", ls=":", lw=0.8, label="v = reward noise variance")
        ax.set_xscale("log")
        ax.set_xlabel("noise variance v")
        ax.set_title(f"{_noise_title(noise)}, lambda={lam_ref:g}")
        ax.legend()
    rows = [{"reward noise sd": r["reward_noise"], "lambda": r["lam"], "best v": f"{r['best_v']:g}",
             "regret, best v": f"{r['best_regret']:.0f} ± {r['best_regret_sem']:.0f}",
             "regret, bootstrap": f"{r['bootstrap_regret']:.0f} ± {r['bootstrap_regret_sem']:.0f}",
             "bootstrap - best v": f"{r['difference']:+.0f} ± {r['difference_se']:.0f}",
             "v values bootstrap beats": f"{r['v_beaten']}/{r['v_count']}",
             "bootstrap within 2 s.e. of best v": "yes" if r["within_2se"] else "no"}
            for r in bootstrap_vs_best_v(gauss, boot, lam_ref).to_dict("records")]
    axes[0, 0].set_ylabel(f"cumulative regret after {T} episodes")
    fig.suptitle(f"Sensitivity to v, mean ± 1 s.e. over {_seeds(runs)} seeds (s.e. of the difference "
                 "treats the settings as independent)")
    return save(fig, out, "deepsea_tuning_v") + write_table(pd.DataFrame(rows), out, "deepsea_tuning_v_bootstrap")


def fig_tuning_seeds(results, out):
    exp, runs, _, _, lam_ref = _tuning(results)
    eps = load_table(results, exp, "episodes")
    eps = eps[eps["agent.lam"] == lam_ref]
    sub = runs[runs["agent.lam"] == lam_ref]
    noises = np.sort(sub["env.reward_noise"].unique())
    settings = sorted(sub["agent.v"].dropna().unique()) + ([np.nan] if sub["agent.v"].isna().any() else [])
    T = int(sub["episodes_run"].max())
    never = _never_opens(results, exp)
    fig, axes = plt.subplots(len(noises), len(settings), figsize=(2.2 * len(settings), 2.4 * len(noises)),
                             sharex=True, sharey=True, squeeze=False, layout="constrained")
    summary = iter(seed_summary(sub).to_dict("records"))
    rows = []
    for i, noise in enumerate(noises):
        for j, v in enumerate(settings):
            ax, r = axes[i, j], next(summary)
            pick = (lambda d: d["agent.v"].isna()) if pd.isna(v) else (lambda d, v=v: d["agent.v"] == v)
            e = eps[(eps["env.reward_noise"] == noise) & pick(eps)]
            for _, curve in e.groupby("seed"):
                ax.plot(curve["episode"], curve["cum_regret"], lw=0.8, alpha=0.8)
            ax.plot([1, T], [never, never * T], color="grey", ls=":", lw=0.8)
            ax.set_title(f"{_setting_label(v)}: {r['learnt']}/{r['runs']} learn")
            if j == 0:
                ax.set_ylabel(f"{_noise_title(noise)}\ncumulative regret", fontsize=7)
            if i == len(noises) - 1:
                ax.set_xlabel("episode", fontsize=7)
            ax.tick_params(labelsize=6)
            lt = r["median_learning_time"]
            rows.append({"reward noise sd": noise, "randomization": _setting_label(v), "lambda": lam_ref,
                         "seeds learnt by T": f"{r['learnt']}/{r['runs']}",
                         "median learning time": "censored" if np.isnan(lt) else int(lt),
                         "final regret (min, median, max)": " / ".join(
                             f"{r[q]:.0f}" for q in ("regret_min", "regret_median", "regret_max"))})
    fig.suptitle(f"Per-seed cumulative regret, lambda={lam_ref:g}, one line per seed; dotted: never opens the "
                 f"chest (linear regret {never:g} per episode); 'learn' = eq. 7.1 within {T} episodes")
    return save(fig, out, "deepsea_tuning_seeds") + write_table(pd.DataFrame(rows), out, "deepsea_tuning_seeds")


# ---------------------------------------------------------------------------------------------
# Fig. 13

def _sweeps_sizes(agent: dict) -> bool:
    """Panel (a) holds the agents whose grid sweeps more sizes N than feature counts M, (b) the others."""
    grid = agent.get("grid", {})
    return len(grid.get("env.size", [])) > len(grid.get("agent.M", []))


def fig_bootstrap_scaling(results, out):
    exp = "deepsea_bootstrap_scaling"
    runs = load_table(results, exp, "runs")
    styles = {"linear_brlsvi": ("-", "o", "brlsvi"), "linear_grlsvi": ("--", "s", "grlsvi")}
    agents = load_spec_value(results, exp, ("agents",))
    vs_n = runs[runs["agent"].map(lambda a: _sweeps_sizes(agents[a]))]
    vs_m = runs[~runs["agent"].map(lambda a: _sweeps_sizes(agents[a]))]
    fig, (ax_n, ax_m) = plt.subplots(1, 2, figsize=(13, 5), layout="constrained")
    rows_n = []
    for i, (M, g) in enumerate(vs_n.groupby("agent.M")):
        row, fits = {"M": int(M)}, slope_fits(g, "env.size", "algorithm").set_index("algorithm")
        for algo, (ls, mk, short) in styles.items():
            if algo not in fits.index:
                continue
            fit = fits.loc[algo]
            _lt_curve(ax_n, g[g["algorithm"] == algo], "env.size", f"C{i}",
                      f"{short} M={int(M)}: slope {_fmt_fit(fit)}", ls, mk, i)
            row[f"{short} slope [95% CI]"] = _fmt_fit(fit)
            row[f"{short} censored runs"] = f"{fit['censored']}/{fit['runs']}"
        if set(styles) <= set(fits.index):
            overlap = cis_overlap(fits.loc["linear_brlsvi"], fits.loc["linear_grlsvi"])
            row["slope CIs overlap"] = "n/a" if overlap is None else "yes" if overlap else "no"
        rows_n.append(row)
    _log_axes(ax_n, vs_n["env.size"])
    ax_n.set_xlabel("deep sea size N")
    ax_n.set_ylabel(LT_LABEL)
    ax_n.set_title("(a) scaling with N; slope [95% bootstrap CI]")
    ax_n.legend()
    rows_m = []
    for algo, (ls, mk, short) in styles.items():
        a = vs_m[vs_m["algorithm"] == algo]
        if a.empty:
            continue
        _vs_m_panel(ax_m, a, ls, mk, labels=algo == "linear_brlsvi")
        rows_m += _vs_m_rows(a, short)
    _log_axes(ax_m, vs_m["agent.M"])
    ax_m.plot([], [], "k-", label="learn_brlsvi")
    ax_m.plot([], [], "k--", label="learn_grlsvi")
    ax_m.set_xlabel("features per row M")
    ax_m.set_ylabel(LT_LABEL)
    ax_m.set_title("(b) scaling with M (solid brlsvi, dashed grlsvi)")
    ax_m.legend()
    settings = {(p.lam, p.v) for p in (agent_params(results, exp, a) for a in agents)}
    lam_v = ", ".join(f"lambda={lam:g}, v={v:g}" for lam, v in sorted(settings, key=str))
    fig.suptitle(f"Bootstrap vs Gaussian linear RLSVI, {_chest(results, exp)}, {lam_v}, {_seeds(runs)} seeds per "
                 f"cell, cap {_cap(results, exp)}; {CENSORED_NOTE}")
    return (save(fig, out, "deepsea_bootstrap_scaling")
            + write_table(pd.DataFrame(rows_n), out, "deepsea_bootstrap_scaling_vs_N")
            + write_table(pd.DataFrame(rows_m), out, "deepsea_bootstrap_scaling_vs_M"))
