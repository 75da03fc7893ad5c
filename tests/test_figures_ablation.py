"""The Fig. 17 screen's figure on hand-made tables: per-run responses, cell table and main effects."""
import itertools
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from cli_helpers import assert_png

from rvfx.analysis.screen import Progress, confirmation_cell, screen_runs, signs
from rvfx.figures import FIGURES
from rvfx.figures.cartpole_ablation import effect_note
from rvfx.report.export import export_tables
from rvfx.report.registry import load_registry

CLAIMS = Path(__file__).resolve().parent.parent / "claims.yaml"
FACTORS = ["agent.sgd_period", "agent.prior_scale", "env.observation"]


def make_results(root):
    """A 2^3 factorial, 2 seeds per cell, 10 episodes per run, and a control. Rewarded episodes:
    5 at sgd_period 1, else 1, plus 1 for seed 0; returns -1 except 200 on rewarded episodes of
    the control (which therefore learns). Over-estimation = 3 * prior_scale."""
    exp = root / "cartpole_ablation"
    exp.mkdir(parents=True)
    agents, eps, diag = {}, [], []
    cells = list(itertools.product((4, 1), (1.0, 3.0), ("raw", "trig")))
    for i, (period, beta, obs) in enumerate(cells + [(1, 3.0, "trig_indicators")]):
        label = f"c{i + 1:02d}" if i < len(cells) else "ctl"
        agents[label] = {"algorithm": "ensemble_rlsvi", "sgd_period": period, "prior_scale": beta}
        for seed in (0, 1):
            run = f"{label}-{seed}"
            hits = (5 if period == 1 else 1) + (seed == 0)
            for e in range(1, 11):
                hit = e > 10 - hits
                ret = 200.0 if hit and label == "ctl" else -1.0
                eps.append({"run_id": run, "agent": label, "algorithm": "ensemble_rlsvi", "seed": seed,
                            "env.observation": obs,
                            "episode": e, "return": ret, "upright_steps": int(hit)})
            for member in (0, 1):
                diag.append({"run_id": run, "agent": label, "seed": seed, "episode": 6, "metric": "overestimation",
                             "probe": "", "member": member, "value": 3.0 * beta})
                diag.append({"run_id": run, "agent": label, "seed": seed, "episode": 6, "metric": "flip_rate",
                             "probe": "", "member": member, "value": 0.01})
                diag.append({"run_id": run, "agent": label, "seed": seed, "episode": 6, "metric": "q_max",
                             "probe": "hanging", "member": member, "value": float(member)})
    eps += [{"run_id": "ref-0", "agent": "reference", "algorithm": "cartpole_reference", "seed": 0,
             "env.observation": "raw", "episode": e, "return": 830.0, "upright_steps": 800} for e in range(1, 11)]
    agents["reference"] = {"algorithm": "cartpole_reference"}
    pd.DataFrame(eps).to_csv(exp / "episodes.csv", index=False)
    pd.DataFrame(diag).to_csv(exp / "diagnostics.csv", index=False)
    spec = {"experiment": "cartpole_ablation", "env": {"name": "cartpole_swingup"}, "agents": agents,
            "design": {"factors": FACTORS, "controls": ["ctl", "reference"]}, "seeds": 2}
    (exp / "spec.yaml").write_text(yaml.safe_dump(spec))


@pytest.fixture(scope="module")
def screen(tmp_path_factory) -> tuple[Path, list]:
    """(ROOT, paths): the hand-made screen in ROOT/res and both of its figures drawn from it in
    ROOT/out, once for the tests that read them; paths, what the screen's figure said it wrote."""
    root = tmp_path_factory.mktemp("screen")
    make_results(root / "res")
    paths = FIGURES["cartpole_ablation"].draw(root / "res", root / "out")
    FIGURES["cartpole_diagnostics"].draw(root / "res", root / "out")
    return root, paths


def test_screen_responses_effects_and_figures(screen):
    tmp_path, paths = screen
    runs = screen_runs(tmp_path / "res", "cartpole_ablation")
    assert len(runs) == 19 and runs["control"].sum() == 3 and runs["reference"].sum() == 1
    assert runs.loc[runs["agent"] == "ctl", "learnt"].all() and not runs.loc[~runs["control"], "learnt"].any()
    coded, levels = signs(runs, FACTORS, yaml.safe_load((tmp_path / "res" / "cartpole_ablation" / "spec.yaml")
                                                        .read_text())["agents"], ["ctl", "reference"])
    assert levels == {"agent.sgd_period": [4, 1], "agent.prior_scale": [1.0, 3.0], "env.observation": ["raw", "trig"]}
    assert_png(tmp_path / "out" / "cartpole_ablation.png")
    assert_png(tmp_path / "out" / "cartpole_diagnostics.png")
    effects = pd.read_csv(tmp_path / "out" / "cartpole_ablation_effects.csv").set_index("factor")
    assert effects.loc["A agent.sgd_period", "rewarded episodes: effect ± s.e."].startswith("4.00 ±")
    assert effects.loc["A agent.sgd_period", "rewarded episodes: > 2 s.e."] == "yes"
    assert effects.loc["C env.observation", "rewarded episodes: > 2 s.e."] == "no"
    assert effects.loc["B agent.prior_scale", "over-estimation, last diagnostic: effect ± s.e."].startswith("6.00")
    # signed log: log10(1 + 9) - log10(1 + 3) = 1 - 0.602
    log_effect = effects.loc["B agent.prior_scale", "over-estimation, signed log10 (post hoc): effect ± s.e."]
    assert log_effect.startswith("0.40 ±")
    cells = pd.read_csv(tmp_path / "out" / "cartpole_ablation_cells.csv")
    assert list(cells["cell"]) == [f"c{i:02d}" for i in range(1, 9)] + ["ctl", "reference"]
    assert list(cells["signs ABC"])[:2] == ["---", "--+"] and cells["signs ABC"].iloc[-1] == "control"
    learnt = cells.set_index("cell")["learnt (mean return >= 100, last 10%; exact 95% CI)"]
    # Clopper-Pearson at n = 2: 0/2 -> [0, 1 - 0.025^(1/2)], 2/2 -> [0.025^(1/2), 1]
    assert learnt["c01"] == "0/2 [0.00, 0.84]" and learnt["ctl"] == "2/2 [0.16, 1.00]"
    # c01's rewarded episodes 2 and 1: mean 1.5, s.e.m. 0.5, t(0.975, 1 d.f.) = 12.71 -> ± 6.35
    rewarded = cells.set_index("cell")["rewarded episodes (mean, 95% CI over seeds)"]
    assert rewarded["c01"] == "1.5 [-4.9, 7.9]"
    # the reference controller has no Q: its over-estimation and flip rate are not measured, not "1 seed"
    ref = cells.set_index("cell").loc["reference"]
    assert ref["over-estimation, last diagnostic (mean, 95% CI over seeds)"] == "n/a (not measured)"
    assert ref["flip rate per SGD step"] == "n/a (not measured)"
    assert any(str(p).endswith("cartpole_ablation_effects.md") for p in paths)
    chosen = pd.read_csv(tmp_path / "out" / "cartpole_ablation_confirmation.csv")
    # no design cell learns (the control is no candidate): most rewarded episodes per run, 5.5 in
    # the four sgd_period-1 cells, equal final returns, then the fewest factors at + (c05, "+--")
    assert chosen[["cell", "signs", "learnt"]].values.tolist() == [["c05", "+--", "0/2"]]
    assert chosen["rule"].iloc[0].startswith("no cell learnt")


def test_a_screen_in_progress_shows_effects_once_every_cell_ran_and_chooses_no_cell_before_the_end(tmp_path):
    """Levels come from the spec, so a screen whose first cells alone have run still draws; its
    effects wait for every design cell, and the confirmation cell for every design run."""
    make_results(tmp_path / "res")
    eps_path = tmp_path / "res" / "cartpole_ablation" / "episodes.csv"
    eps = pd.read_csv(eps_path)
    eps[~eps["agent"].isin(["c07", "c08"]) & ~eps["run_id"].isin(["c05-1", "c06-1"])].to_csv(eps_path, index=False)
    FIGURES["cartpole_ablation"].draw(tmp_path / "res", tmp_path / "out")
    assert_png(tmp_path / "out" / "cartpole_ablation.png")
    effects = pd.read_csv(tmp_path / "out" / "cartpole_ablation_effects.csv")
    assert set(effects["rewarded episodes: effect ± s.e."]) == {"n/a (6 of 8 cells run)"}
    assert set(effects["runs"]) == {"10 of 16"}
    chosen = pd.read_csv(tmp_path / "out" / "cartpole_ablation_confirmation.csv")
    assert chosen["cell"].iloc[0] == "none yet" and "10 of 16 design runs" in chosen["rule"].iloc[0]
    # every cell has run, not every seed: effects over cell means, still no confirmation cell
    make_results(tmp_path / "all")
    eps_path = tmp_path / "all" / "cartpole_ablation" / "episodes.csv"
    eps = pd.read_csv(eps_path)
    eps[eps["run_id"] != "c08-1"].to_csv(eps_path, index=False)
    FIGURES["cartpole_ablation"].draw(tmp_path / "all", tmp_path / "out2")
    effects = pd.read_csv(tmp_path / "out2" / "cartpole_ablation_effects.csv").set_index("factor")
    # c08 keeps its seed 0 (6 rewarded): + cells 5.5, 5.5, 5.5, 6 -> 5.625, - cells 1.5: 4.125 (over runs 4.07)
    assert effects.loc["A agent.sgd_period", "rewarded episodes: effect ± s.e."].startswith("4.12 ±")
    flag = effects.loc["A agent.sgd_period", "rewarded episodes: > 2 s.e."]
    assert flag == "judged when complete (7 of 8 d.f. so far)"
    assert pd.read_csv(tmp_path / "out2" / "cartpole_ablation_confirmation.csv")["cell"].iloc[0] == "none yet"
    # one seed of every cell: effects, but no within-cell spread to give them an s.e. by
    eps[eps["seed"] == 0].to_csv(eps_path, index=False)
    FIGURES["cartpole_ablation"].draw(tmp_path / "all", tmp_path / "out3")
    effects = pd.read_csv(tmp_path / "out3" / "cartpole_ablation_effects.csv").set_index("factor")
    a = effects.loc["A agent.sgd_period"]
    assert a["rewarded episodes: effect ± s.e."] == "4.00 ± n/a (no cell has 2 seeds)"
    assert set(effects["rewarded episodes: > 2 s.e."]) == {"n/a (no cell has 2 seeds)"}


def test_effect_panels_say_why_they_draw_no_error_bars():
    """A complete screen of one seed per cell (CI scale) has effects but no s.e.: the panel says so."""
    complete, partial = Progress(8, 8, 8, 8), Progress(8, 8, 12, 16)
    one_seed = pd.DataFrame({"effect": [4.0, 1.0], "se": [float("nan")] * 2, "dof": [0, 0]})
    assert effect_note(one_seed, complete).startswith("no error bars: no cell has 2 seeds")
    assert effect_note(one_seed, partial).startswith("no error bars")
    spread = one_seed.assign(se=[0.5, 0.5], dof=[4, 4])
    assert effect_note(spread, partial) == "s.e. from 4 of 8 d.f. so far"
    assert effect_note(spread, complete) == ""


def coded_cells(rows):
    """Design cells (agent, signs of A and B) with per-run (learnt, rewarded episodes, final return)."""
    return pd.DataFrame([{"agent": a, "A": sa, "B": sb, "learnt": l, "rewarded_episodes": r, "final_return": f}
                         for a, sa, sb, runs in rows for l, r, f in runs])


def pick(rows):
    return confirmation_cell(coded_cells(rows), ["A", "B"])


def test_confirmation_rule_most_seeds_then_return_then_fewer_plus():
    rows = [("c1", -1, -1, [(False, 90, -5.0)] * 3),                 # most rewarded, never learnt
            ("c2", 1, -1, [(True, 50, 150.0), (False, 9, -4.0), (False, 9, -4.0)]),
            ("c3", -1, 1, [(True, 40, 120.0), (True, 40, 110.0), (False, 9, -4.0)]),
            ("c4", 1, 1, [(True, 40, 120.0), (True, 40, 110.0), (False, 9, -4.0)])]
    assert pick(rows)["cell"] == "c3" and (pick(rows)["learnt"], pick(rows)["seeds"]) == (2, 3)   # ties c4: fewer +
    assert pick(rows)["signs"] == "-+" and pick(rows)["final_return"] == pytest.approx(226 / 3)
    better = rows[:3] + [("c4", 1, 1, [(True, 40, 120.0), (True, 40, 130.0), (False, 9, -4.0)])]
    assert pick(better)["cell"] == "c4"                                       # the higher final return
    assert pick(rows[:2])["cell"] == "c2"                                     # one seed beats none
    none = [rows[0], ("c2", 1, -1, [(False, 50, -3.0)] * 3)]
    assert pick(none)["cell"] == "c1" and not pick(none)["any_learnt"] and pick(none)["rewarded_episodes"] == 90


def test_the_screen_is_drawn_alike_from_its_recorded_per_run_tables(screen, tmp_path):
    """The record keeps screen_runs and diagnostics_summary (claims.yaml `tables`), not the
    per-episode or per-member tables, and the figures' tables drawn from it are the same bytes."""
    shutil.copytree(screen[0] / "res", tmp_path / "res")
    runs = screen_runs(tmp_path / "res", "cartpole_ablation")
    runs[["run_id", "agent", "seed"]].to_csv(tmp_path / "res" / "cartpole_ablation" / "runs.csv", index=False)
    export_tables(load_registry(CLAIMS), tmp_path / "res", tmp_path / "paper")
    kept = sorted(p.name for p in (tmp_path / "paper" / "cartpole_ablation").glob("*.csv"))
    assert kept == ["diagnostics_summary.csv", "runs.csv", "screen_runs.csv"]
    summary = pd.read_csv(tmp_path / "paper" / "cartpole_ablation" / "diagnostics_summary.csv")
    one = summary[summary["run_id"] == "c01-0"].set_index("metric")["value"]
    assert one["q_spread"] == pytest.approx(2 ** -0.5) and one["q_level"] == 0.5 and one["flip_rate"] == 0.01
    FIGURES["cartpole_ablation"].draw(tmp_path / "paper", tmp_path / "b")
    FIGURES["cartpole_diagnostics"].draw(tmp_path / "paper", tmp_path / "b")
    for name in ("cells", "effects", "confirmation"):
        table = f"cartpole_ablation_{name}.csv"
        assert (screen[0] / "out" / table).read_bytes() == (tmp_path / "b" / table).read_bytes()
    assert_png(tmp_path / "b" / "cartpole_diagnostics.png")


def test_confirmation_diagnostics_per_variant_on_the_swing_up_states(tmp_path):
    """The confirmation's figure and table: Q level and spread on the reference swing-up's states only
    (the hanging probe is left out), median and quartiles over each agent's runs; no spread for DQN."""
    exp = tmp_path / "res" / "cartpole_confirm"
    exp.mkdir(parents=True)
    diag = []
    for agent, seeds, members in (("rlsvi", (0, 1, 2), (0, 1)), ("dqn", (0,), (0,))):
        for seed in seeds:
            run = f"{agent}-{seed}"
            for member in members:
                for probe, q in (("reference_000", 10.0 * seed), ("reference_050", 10.0 * seed + 2.0),
                                 ("hanging", 1000.0)):
                    diag.append({"run_id": run, "agent": agent, "seed": seed, "episode": 1, "metric": "q_max",
                                 "probe": probe, "member": member, "value": q + 4.0 * member})
                diag.append({"run_id": run, "agent": agent, "seed": seed, "episode": 1, "metric": "overestimation",
                             "probe": "", "member": member, "value": float(seed)})
    pd.DataFrame(diag).to_csv(exp / "diagnostics.csv", index=False)
    # 10 episodes a run: rlsvi seed s is rewarded in its first s episodes, and seed 2 alone returns >= 100
    pd.DataFrame([{"run_id": f"{agent}-{seed}", "agent": agent, "algorithm": agent, "seed": seed, "episode": e,
                   "return": 150.0 if (agent, seed) == ("rlsvi", 2) else -5.0 if agent == "rlsvi" else 0.0,
                   "upright_steps": int(agent == "rlsvi" and e <= seed)}
                  for agent, seeds in (("rlsvi", (0, 1, 2)), ("dqn", (0,))) for seed in seeds
                  for e in range(1, 11)]).to_csv(exp / "episodes.csv", index=False)
    (exp / "spec.yaml").write_text(yaml.safe_dump({"experiment": "cartpole_confirm",
                                                   "env": {"name": "cartpole_swingup"}}))
    FIGURES["cartpole_confirm_diagnostics"].draw(tmp_path / "res", tmp_path / "out")
    FIGURES["cartpole_confirm_responses"].draw(tmp_path / "res", tmp_path / "out")
    assert_png(tmp_path / "out" / "cartpole_confirm_responses.png")
    # the responses are drawn alike from the record, which keeps screen_runs and no per-episode table
    pd.DataFrame({"run_id": [f"rlsvi-{s}" for s in (0, 1, 2)] + ["dqn-0"]}).to_csv(exp / "runs.csv", index=False)
    export_tables(load_registry(CLAIMS), tmp_path / "res", tmp_path / "paper")
    kept = sorted(p.name for p in (tmp_path / "paper" / "cartpole_confirm").glob("*.csv"))
    assert "episodes.csv" not in kept and "screen_runs.csv" in kept
    FIGURES["cartpole_confirm_responses"].draw(tmp_path / "paper", tmp_path / "b")
    assert ((tmp_path / "b" / "cartpole_confirm_responses.csv").read_bytes()
            == (tmp_path / "out" / "cartpole_confirm_responses.csv").read_bytes())
    r = pd.read_csv(tmp_path / "out" / "cartpole_confirm_responses.csv").set_index("agent")
    learnt = "learnt (mean return >= 100, last 10%; exact 95% CI)"
    assert r.loc["rlsvi", learnt] == "1/3 [0.01, 0.91]" and r.loc["dqn", learnt] == "0/1 [0.00, 0.97]"
    assert r.loc["rlsvi", "rewarded episodes (mean, 95% CI over seeds)"].startswith("1.0 [")   # 0, 1, 2
    assert r.loc["dqn", "mean return, last 10% (mean, 95% CI over seeds)"] == "0.00 (1 seed)"
    # over-estimation: member mean at the last diagnostic = seed, so the mean over seeds is 1 with
    # the t-interval 1 +- t(0.975, 2) * 1 / sqrt 3
    assert r.loc["rlsvi", "over-estimation, last diagnostic (mean, 95% CI over seeds)"] == "1.00 [-1.48, 3.48]"
    assert_png(tmp_path / "out" / "cartpole_confirm_diagnostics.png")
    t = pd.read_csv(tmp_path / "out" / "cartpole_confirm_diagnostics.csv").set_index(["agent", "metric"])
    # q_level of a run: mean over members and the two swing-up states = 10 seed + 1 + 2
    assert t.loc[("rlsvi", "q_level"), ["runs", "median", "q25", "q75"]].tolist() == [3, 13.0, 8.0, 18.0]
    # q_spread: s.d. over members (4 apart) = 2 sqrt 2 on each state, in every run
    assert t.loc[("rlsvi", "q_spread"), "median"] == pytest.approx(2 * 2 ** 0.5, abs=1e-4)   # table rounds to 4 places
    assert ("dqn", "q_spread") not in t.index                    # one member: no spread
    assert t.loc[("dqn", "q_level"), "median"] == 1.0
    assert t.loc[("rlsvi", "overestimation"), "median"] == 1.0
