"""Shared plotting pieces: the style (rvfx.mplstyle), saving, tables, mean +- s.e. bands, learning-time
scaling panels."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from rvfx.agents import AGENTS  # noqa: E402
from rvfx.analysis.scaling import size_medians, slope_fits  # noqa: E402
from rvfx.analysis.stats import censored_medians, learning_times, mean_sem, median_ci  # noqa: E402
from rvfx.experiment.results import load_spec_value, write_atomic, write_atomic_text  # noqa: E402
from rvfx.experiment.spec import as_current  # noqa: E402
from rvfx.figures import Output  # noqa: E402

plt.style.use(Path(__file__).with_name("rvfx.mplstyle"))   # the text sizes every figure shares, loaded once


def agent_params(results, experiment: str, agent: str, swept: dict | None = None):
    """The parameters of the spec's `agent` (its resolved settings, `swept` values over them, defaults
    for the rest) as its algorithm's dataclass."""
    spec = {**(load_spec_value(results, experiment, ("agents", agent)) or {}), **(swept or {})}
    params_cls = AGENTS[spec["algorithm"]].params
    return params_cls(**as_current(params_cls, {f.name: spec[f.name] for f in dataclasses.fields(params_cls)
                                                if f.name in spec}))


def _folder(out: Output | Path) -> Path:
    return out.folder if isinstance(out, Output) else Path(out)


def save(fig, out: Output | Path, name: str) -> list[Path]:
    """`fig` as NAME.png and NAME.pdf in `out`, with its banner (Output.stamp: drawn from CI-scale runs)."""
    folder = _folder(out)
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(out, Output) and out.stamp:
        fig.text(0.5, 1.0, out.stamp, ha="center", va="bottom", color="firebrick", fontsize="small")
    paths = [folder / f"{name}.png", folder / f"{name}.pdf"]
    for p in paths:
        # no creation date in the PDF, so redrawing the same CSV gives the same file
        write_atomic(p, lambda f, p=p: fig.savefig(f, format=p.suffix[1:], bbox_inches="tight",
                                                   dpi=150 if p.suffix == ".png" else None,
                                                   metadata={"CreationDate": None} if p.suffix == ".pdf" else None))
    plt.close(fig)
    return paths


def _cell(value) -> str:
    """A Markdown table cell: a '|' in it (e.g. |θ̇|) escaped, so that it does not split the cell."""
    return str(value).replace("|", "\\|")


def write_table(df: pd.DataFrame, out: Output | Path, name: str) -> list[Path]:
    """The same small table as CSV and as Markdown (for the README)."""
    folder = _folder(out)
    folder.mkdir(parents=True, exist_ok=True)
    csv, md = folder / f"{name}.csv", folder / f"{name}.md"
    write_atomic_text(csv, df.to_csv(index=False, lineterminator="\n"))
    cols = [_cell(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    write_atomic_text(md, "\n".join(lines) + "\n")
    return [csv, md]


SMOOTH = 10     # the swing-up figures' returns: running mean over this many episodes per run


def smoothed_returns(episodes: pd.DataFrame) -> pd.DataFrame:
    """The episodes by run and episode, with `smoothed`: each run's running mean of its return over its
    last SMOOTH episodes (fewer at its start)."""
    eps = episodes.sort_values(["run_id", "episode"])
    return eps.assign(smoothed=eps.groupby("run_id")["return"].transform(lambda r: r.rolling(SMOOTH, 1).mean()))


def band(ax, df: pd.DataFrame, x: str, y: str, label: str, color=None):
    """Mean of `y` over seeds against `x`, with a +-1 s.e. band."""
    s = mean_sem(df, [x], y).sort_values(x)
    line, = ax.plot(s[x], s["mean"], label=label, color=color)
    ax.fill_between(s[x], s["mean"] - s["sem"], s["mean"] + s["sem"], alpha=0.25, color=line.get_color())
    return line


def first_success_dots(ax, i: int, times: np.ndarray, budgets: np.ndarray, color) -> None:
    """At x = i: each run's first success (jittered dots; open triangles at its budget when it never
    succeeded, NaN) and their median with its 95% CI (`median_ci`)."""
    ok = np.isfinite(times)
    x = i + 0.15 * (np.random.default_rng(i).random(len(times)) - 0.5)
    ax.scatter(x[ok], times[ok], s=12, color=color, alpha=0.6)
    ax.scatter(x[~ok], np.asarray(budgets)[~ok], marker="^", s=30, facecolors="none", edgecolors=color)
    med, lo, hi = median_ci(times)
    if np.isfinite(med):
        ax.errorbar(i, med, yerr=[[med - lo], [(hi if np.isfinite(hi) else med) - med]], fmt="o", color="k",
                    capsize=3)


def run_dots(ax, x: np.ndarray, lt: np.ndarray, caps: np.ndarray, color, seed: int, spread: float = 0.04,
             size: float = 8, alpha: float = 0.35, marker: str = "o", triangle: float = 30) -> None:
    """One dot per run at (x, learning time), jittered by a factor 1 +- spread/2 (log axes), and an
    open triangle at its cap for a censored run (lt NaN)."""
    cens = np.isnan(lt)
    jitter = x * (1 + spread * (np.random.default_rng(seed).random(len(x)) - 0.5))
    ax.scatter(jitter[~cens], lt[~cens], s=size, alpha=alpha, color=color, marker=marker)
    if cens.any():
        ax.scatter(jitter[cens], caps[cens], marker="^", s=triangle, facecolors="none", edgecolors=color)


def scaling_panel(ax, runs: pd.DataFrame, fits: pd.DataFrame, size_col: str, group_col: str, loglog: bool = True):
    """Learning time vs size per group: one dot per run, censored runs as open triangles
    at their cap, the median per size, and the fitted log-log slope with its 95% CI (`fits`, from
    `slope_fits(runs, size_col, group_col)`)."""
    for i, (fit, (name, g)) in enumerate(zip(fits.to_dict("records"), runs.groupby(group_col, sort=False))):
        color = f"C{i}"
        run_dots(ax, g[size_col].to_numpy(float), learning_times(g), g["episodes_run"].to_numpy(float), color, i,
                 spread=0.03, size=10, alpha=0.4)
        med = censored_medians(g, size_col).dropna()
        label = (f"{name}: slope {fit['slope']:.2f} [{fit['lo']:.2f}, {fit['hi']:.2f}]"
                 if np.isfinite(fit["slope"]) else f"{name}: too few uncensored sizes")
        ax.plot(med.index, med.values, "-o", ms=3, color=color, label=label)
    if loglog:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(sorted(runs[size_col].unique()))
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel(size_col)
    ax.set_ylabel("learning time (episodes, eq. 7.1)")
    ax.legend(title="median; slope [95% bootstrap CI]")


def fmt_episodes(x: float) -> str:
    """An episode count for a table, "censored" where it is past the cap (NaN or inf)."""
    return "censored" if not np.isfinite(x) else f"{x:.0f}"


def ci_cell(med: float, lo: float, hi: float) -> str:
    """"median [lo, hi]" of episode counts, as `median_ci` returns them."""
    return f"{fmt_episodes(med)} [{fmt_episodes(lo)}, {fmt_episodes(hi)}]"


def mean_sem_cell(mean: float, sem: float, digits: int) -> str:
    """"mean ± s.e." over seeds, the mean alone where the s.e. is NaN (one seed)."""
    return f"{mean:.{digits}f}" if np.isnan(sem) else f"{mean:.{digits}f} ± {sem:.{digits}f}"


def success_cells(summary: pd.DataFrame) -> dict:
    """The swing-up summaries' first-success columns: the median first episode > 100 with its CI, the
    runs never past 100, and the episodes > 100 (mean ± s.e.), from `median`, `lo`, `hi`, `never`,
    `seeds`, `successes` and `successes_sem`."""
    return {
        "first episode > 100: median [95% CI]": [ci_cell(m, lo, hi) for m, lo, hi in
                                                 zip(summary["median"], summary["lo"], summary["hi"])],
        "never > 100": [f"{k}/{n}" for k, n in zip(summary["never"], summary["seeds"])],
        "episodes > 100 (mean ± s.e.)": [mean_sem_cell(m, s, 1) for m, s in
                                         zip(summary["successes"], summary["successes_sem"])],
    }


def slope_row(fit: dict) -> dict:
    """Summary-table cells of one fitted scaling line (a row of `slope_fits`)."""
    finite = np.isfinite(fit["slope"])
    return {"slope": round(float(fit["slope"]), 2) if finite else "n/a",
            "95% CI": f"[{fit['lo']:.2f}, {fit['hi']:.2f}]" if finite and np.isfinite(fit["lo"]) else "n/a",
            "sizes fitted": " ".join(str(int(s)) for s in fit["sizes_used"]),
            "sizes with censored median": " ".join(str(int(s)) for s in fit["sizes_censored"]),
            "censored runs": f"{fit['censored']}/{fit['runs']}"}


def size_scaling_figure(runs: pd.DataFrame, title: str, out: Path, name: str, label: str = "agent",
                        figsize=(6, 4.5), extra=None) -> list[Path]:
    """Learning time vs deep sea size N per agent (`scaling_panel`, log-log), the table
    `<name>_slopes` of fitted slopes (`slope_fits`; `extra(runs of one agent)` may add columns to its
    row) and the table `<name>_sizes` of the median learning time per agent and N that each line is
    fitted to (`size_medians`)."""
    fits = slope_fits(runs, "env.size", "agent")
    fig, ax = plt.subplots(figsize=figsize)
    scaling_panel(ax, runs, fits, "env.size", "agent")
    ax.set_xlabel("deep sea size N")
    ax.set_title(title)
    rows = [{label: fit["agent"], **slope_row(fit), **(extra(runs[runs["agent"] == fit["agent"]]) if extra else {})}
            for fit in fits.to_dict("records")]
    sizes = [{label: r["agent"], "N": int(r["env.size"]), "seeds": r["runs"],
              "median learning time [95% CI]": ci_cell(r["median"], r["lo"], r["hi"]),
              "censored": f"{r['censored']}/{r['runs']}"}
             for r in size_medians(runs, "agent").to_dict("records")]
    return (save(fig, out, name) + write_table(pd.DataFrame(rows), out, f"{name}_slopes")
            + write_table(pd.DataFrame(sizes), out, f"{name}_sizes"))
