"""Figs. 16-17: DQN vs ensemble RLSVI on cartpole swing-up (Sec. 7.2.2), and a rendering of a learned policy.

"Reaching the upright reward" is judged per episode from the environment's count of
rewarded steps (`upright_steps` in episodes.csv): an episode reached it if that count is > 0.
Reaching it is not learning it: a pilot's exploring agent passed through the reward box in
scattered episodes (under 10 rewarded steps an episode on average) without ever learning a
swing-up, while an agent that balances collects hundreds. A run "learnt" the swing-up if its
mean return over the last 10% of episodes is at least LEARNT_RETURN = 100 (one second upright
per episode), an order of magnitude from both (rvfx.analysis.final_return). What the final policy does is read from one
greedy episode per run (trajectory.csv): whether it swings the pole up, and whether it is rewarded.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.cartpole import cartpole_summary
from rvfx.analysis.curves import (
    cartpole_runs,
    pole_up,
    return_curves,
    rewarded,
    run_summaries,
    smooth_window,
    swept,
)
from rvfx.analysis.final_return import LEARNT_RETURN
from rvfx.envs.cartpole.dynamics import CartpoleSwingUpParams
from rvfx.experiment.results import env_params, load_or_derive, load_spec_value, load_table
from rvfx.figures.cartpole_draw import draw_cartpole
from rvfx.figures.common import agent_params, band, plt, save, write_table


def _describe(results, experiment: str, agent: str, row: dict) -> str:
    """A short legend label from the agent's parameters: the spec's, its swept values, the defaults."""
    algorithm = load_spec_value(results, experiment, ("agents", agent, "algorithm"))
    if algorithm == "cartpole_reference":
        return "reference controller (energy pumping + LQR, not a learner)"
    p = agent_params(results, experiment, agent, {k.split(".", 1)[1]: v for k, v in row.items()
                                                  if k.startswith("agent.")})
    if algorithm == "dqn":
        return f"DQN, ε {p.epsilon:g}→{p.epsilon_final:g} over {int(p.epsilon_anneal_episodes)} episodes"
    h1, h2 = int(p.hidden1), int(p.hidden2)
    net = "linear Q" if h1 == 0 else (f"{h1} ReLU, one layer" if h2 == 0 else f"{h1}-{h2} ReLU MLP")
    return f"{agent}: K={int(p.K)}, {net}"


def _groups(results, experiment: str, table: pd.DataFrame):
    """(label, rows) per agent and swept setting, in spec order."""
    keys = ["agent", *swept(table)]
    for values, g in table.groupby(keys, sort=False, dropna=False):   # an agent without a swept key too
        values = values if isinstance(values, tuple) else (values,)
        row = dict(zip(keys, values))
        yield _describe(results, experiment, row["agent"], row), g


def _fraction(k: int, n: int) -> str:
    return f"{k}/{n} = {k / n:.2f}"


def summary_rows(results, experiment: str, runs: pd.DataFrame) -> list[dict]:
    """The summary table of `cartpole_summary` of the per-run table `cartpole_runs`, one row per
    agent/setting: seeds, the fraction that ever reach the upright reward, final returns, the best 10%
    window, and what the final greedy policies do."""
    rows = []
    crit = "upright steps > 0"
    p = env_params(results, experiment)
    cos_bound, steady = p.upright_cos, p.steady_bound
    for s in cartpole_summary(runs).to_dict("records"):
        n, tail_from, last_ep = s["seeds"], s["final_window_start"], s["episodes"]
        rows.append({
            "agent": _describe(results, experiment, s["agent"], s),
            "seeds": n,
            "episodes": last_ep,
            f"reached upright ({crit}), ever": _fraction(s["ever_reached"], n),
            "first episode reaching (median)": ("never" if np.isnan(s["first_reached_median"])
                                                else f"{s['first_reached_median']:.0f}"),
            f"reached in episodes {tail_from}-{last_ep}": _fraction(s["reached_in_final_window"], n),
            f"return, episodes {tail_from}-{last_ep} (mean ± s.e.m.)":
                f"{s['final_return_mean']:.2f} ± {s['final_return_sem']:.2f}",
            f"learnt (mean return >= {LEARNT_RETURN:g} over episodes {tail_from}-{last_ep})":
                _fraction(s["learnt"], n),
            f"mean return >= {LEARNT_RETURN:g} over some 10% window (post hoc)":
                _fraction(s["learnt_in_some_window"], n),
            "best 10% window's mean return, median over seeds (post hoc)": f"{s['best_window_median']:.2f}",
            f"final greedy episode swings the pole up (cos θ > {cos_bound:g})": _fraction(s["swings_up"], n),
            "final greedy episode collects upright reward": _fraction(s["collects_reward"], n),
            f"median |θ̇| while up, over those that swing up (reward needs <= {steady:g})":
                "" if np.isnan(s["up_speed_median"]) else f"{s['up_speed_median']:.1f}",
        })
    return rows


def _reached_by(runs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The fraction of `runs` that have reached the upright reward by each episode, as a step
    function from episode 1 to the last: (episodes, fractions) for a post-step plot."""
    first = np.sort(runs["first_reached"].dropna().to_numpy())
    x = np.unique(np.concatenate([[1], first, [runs["episodes"].max()]]))
    return x, np.searchsorted(first, x, side="right") / len(runs)


def learning_curves(results, experiment: str, title: str, name: str, out):
    """Mean +- 1 s.e.m. over seeds of the episodic return, averaged over blocks of episodes
    (return_curves), each run's own curve (so that one seed that learns, or learns and forgets, is
    not averaged away), and the fraction of seeds that have reached the upright reward by each
    episode; plus the summary table. All are drawn from the per-run tables a record keeps
    (return_curves, cartpole_runs). The return axes are symmetric-log, linear within +-10, so that
    pushing at every step (-10), standing still (0), a learnt swing-up (>= 100) and the reference
    controller (~830) are all legible."""
    curves = load_or_derive(results, experiment, "return_curves", return_curves)
    runs = load_or_derive(results, experiment, "cartpole_runs", cartpole_runs)
    window = smooth_window(int(runs["episodes"].max()))
    fig, (ax, ax_runs, ax2) = plt.subplots(3, 1, figsize=(8, 12.5))     # stacked: legible at a page's width
    for i, (label, r) in enumerate(_groups(results, experiment, runs)):
        g, n = curves[curves["run_id"].isin(r["run_id"])], len(r)
        band(ax, g, "episode", "return", f"{label} ({n} seeds)", color=f"C{i}")
        for _, run in g.groupby("run_id", sort=False):
            ax_runs.plot(run["episode"], run["return"], color=f"C{i}", lw=0.6, alpha=0.6, rasterized=True)
        ax2.step(*_reached_by(r), where="post", color=f"C{i}", label=f"{label} ({n} seeds)")
    for a in (ax, ax_runs):
        a.axhline(0.0, color="0.5", lw=0.8, ls=":")
        a.axhline(LEARNT_RETURN, color="0.3", lw=0.8, ls="--",
                  label=f"learnt: mean return >= {LEARNT_RETURN:g} over the last 10% of episodes")
        a.set_xlabel("episode")
        a.set_yscale("symlog", linthresh=10.0)
        lo, hi = a.dataLim.y0, a.dataLim.y1      # symlog autoscaling leaves no margin at the top
        a.set_ylim(min(lo, -10.0) - 1.0, hi * 1.5 if hi > 10.0 else 11.0)
    ax.set_ylabel("episodic reward" + (f"\n(mean over each block of {window} episodes)" if window > 1 else "")
                  + "\n(symmetric log scale, linear within ±10)")
    ax.set_title("mean ± 1 s.e.m. over seeds")
    ax_runs.set_title("each run")
    ax2.set_xlabel("episode")
    ax2.set_ylabel("fraction of seeds")
    ax2.set_ylim(-0.03, 1.03)
    ax2.set_title("seeds that have reached the upright reward (upright steps > 0)")
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=1, frameon=False)
    table = pd.DataFrame(summary_rows(results, experiment, runs))
    return save(fig, out, name) + write_table(table, out, f"{name}_summary")


def fig_dqn(results, out):
    return learning_curves(results, "cartpole_dqn", "Cartpole swing-up, DQN (Fig. 16)", "cartpole_dqn", out)


def fig_rlsvi(results, out):
    return learning_curves(results, "cartpole_rlsvi", "Cartpole swing-up, ensemble RLSVI (Fig. 17)",
                           "cartpole_rlsvi", out)


def fig_balance(results, out):
    return learning_curves(results, "cartpole_balance", "Cartpole started upright (control)",
                           "cartpole_balance", out)


def fig_confirm(results, out):
    return learning_curves(results, "cartpole_confirm", "Cartpole swing-up, Fig. 17's contrast in the "
                           "screen's chosen cell (configs/cartpole_confirm.yaml)", "cartpole_confirm", out)


# ------------------------------------------------------------------------------ rendering

RENDER_EXPERIMENT = "cartpole_rlsvi"
RENDER_AGENT = "rlsvi"


def pick_run(runs: pd.DataFrame, agent: str = RENDER_AGENT) -> pd.Series:
    """The run of `agent` (else the first agent) to render, a row of the per-run table cartpole_runs:
    the one whose final greedy episode has the most rewarded steps, then the most steps with the
    pole up; then the best final return (mean over its last 10% of episodes); ties: lowest seed."""
    runs = runs[runs["agent"] == (agent if agent in set(runs["agent"]) else runs["agent"].iloc[0])]
    keys = ["rewarded_steps", "up_steps", "final_return", "seed"]
    return runs.sort_values(keys, ascending=[False, False, False, True], kind="mergesort").iloc[0]


def load_trajectory(results, experiment: str = RENDER_EXPERIMENT):
    """The run pick_run chooses among those whose final greedy episode <experiment>/trajectory.csv
    holds (every cartpole run leaves one: `CartpoleSwingUp.run_tables`): its cartpole_runs row, and
    the rows of that episode."""
    traj = load_table(results, experiment, "trajectory")
    runs = run_summaries(load_table(results, experiment, "episodes"), traj, env_params(results, experiment))
    run = pick_run(runs[runs["run_id"].isin(set(traj["run_id"]))])
    return run, traj[traj["run_id"] == run["run_id"]].sort_values("step")


def _frames(ax_row, traj: pd.DataFrame, paid_mask, idx, p: CartpoleSwingUpParams):
    for ax, i in zip(ax_row, idx):
        r, paid = traj.iloc[i], paid_mask[i]
        draw_cartpole(ax, r["theta"], r["x"], length=p.length, rail=p.rail, color="tab:green" if paid else "tab:blue")
        ax.set_title(f"t={r['t']:.2f}" + (" +1" if paid else ""))


def fig_render(results, out):
    p = env_params(results, RENDER_EXPERIMENT)
    rail, cos_bound, steady = p.rail, p.upright_cos, p.steady_bound
    run, traj = load_trajectory(results)
    traj = traj.reset_index(drop=True)
    n_frames = 10
    rewarded_mask = rewarded(traj, p).to_numpy()
    up_mask = pole_up(traj["theta"].to_numpy(), p)
    hit = np.flatnonzero(rewarded_mask if rewarded_mask.any() else up_mask)
    whole = np.linspace(0, len(traj) - 1, n_frames).round().astype(int)
    if hit.size:        # zoom on the swing-up: 2 s before the first rewarded (else up) step to 0.5 s after
        t_hit = traj["t"].iloc[hit[0]]
        lo, hi = np.searchsorted(traj["t"], [t_hit - 2.0, t_hit + 0.5])
        t_lo, t_hi = traj["t"].iloc[lo], traj["t"].iloc[min(hi, len(traj)) - 1]
        zoom_title = f"zoom on the swing-up: t = {t_lo:.1f} to {t_hi:.1f}"
    else:
        lo, hi = 0, min(len(traj), 201)
        zoom_title = "pole never up: the first 2 s"
    zoom = np.linspace(lo, max(lo, min(hi, len(traj)) - 1), n_frames).round().astype(int)
    fig = plt.figure(figsize=(2.0 * n_frames, 5.2))
    grid = fig.add_gridspec(3, n_frames, height_ratios=[0.9, 0.9, 2.2], hspace=0.5, wspace=0.08)
    row1 = [fig.add_subplot(grid[0, j]) for j in range(n_frames)]
    row2 = [fig.add_subplot(grid[1, j]) for j in range(n_frames)]
    _frames(row1, traj, rewarded_mask, whole, p)
    _frames(row2, traj, rewarded_mask, zoom, p)
    row1[0].set_ylabel("whole\nepisode", fontsize=8)
    row2[0].set_ylabel(zoom_title.replace(": ", ":\n", 1), fontsize=7)
    ax = fig.add_subplot(grid[2, :])
    t = traj["t"].to_numpy()
    ax.fill_between(t, -1.1, 1.1, where=rewarded_mask, step="post", color="tab:green", alpha=0.25,
                    label="rewarded (+1) steps")
    ax.plot(t, np.cos(traj["theta"]), color="C0", label="cos θ (1 = upright)")
    ax.axhline(cos_bound, color="C0", lw=0.6, ls=":")
    ax.set_ylim(-1.1, 1.1)
    ax.set_ylabel("cos θ", color="C0")
    ax.set_xlabel("time t (s)")
    ax.set_xlim(t[0], t[-1])
    ax_x = ax.twinx()
    ax_x.plot(t, traj["x"], color="C1", label="cart position x")
    ax_x.axhspan(-1.0, 1.0, color="C1", alpha=0.06)
    ax_x.set_ylim(-rail * 1.05, rail * 1.05)
    ax_x.set_ylabel(f"x (rails at ±{rail:g})", color="C1")
    handles = ax.get_legend_handles_labels()
    more = ax_x.get_legend_handles_labels()
    ax.legend(handles[0] + more[0], handles[1] + more[1], ncol=3, loc="lower right")
    seed = int(traj["seed"].iloc[0])
    agent = traj["agent"].iloc[0]
    episodes = int(run["episodes"])
    ret = float(traj["reward"].sum())
    up_note = f"pole up (cos θ > {cos_bound:g}) on {int(run['up_steps'])} steps"
    if run["up_steps"]:   # why up steps go unrewarded: the box also needs |θ̇| <= steady_bound
        up_note += f", median |θ̇| there {run['up_speed']:.1f} rad/s (reward needs ≤ {steady:g})"
    fig.suptitle(f"Cartpole swing-up: {agent}, seed {seed}, greedy rollout of the policy after {episodes} "
                 f"episodes (one sampled member, as in Algorithm 8): return {ret:.2f}, "
                 f"{int(rewarded_mask.sum())} rewarded steps\n{up_note}")
    return save(fig, out, "cartpole_render")
