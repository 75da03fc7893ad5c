"""Figure registry: figure id -> the experiments it reads, the function that draws it, a caption.

The registry is plain data, so reading it (validating a spec, `rvfx list`) loads no plotting
library; `Figure.draw` imports the figure's module, and matplotlib with it, when called. Every
figure is drawn from the collected CSV tables alone (results/<experiment>/) and writes files
named by its id (`<id>.png`, `<id>_<table>.csv`).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Output:
    """Where a figure's files go (`folder`) and the banner drawn on its face (`stamp`; "" for none): a
    figure's function hands it to rvfx.figures.common's save and write_table, which accept a plain
    folder too."""
    folder: Path
    stamp: str = ""


@dataclass(frozen=True)
class Figure:
    id: str
    experiments: tuple
    module: str             # the module (e.g. rvfx.figures.deepsea_tabular) that holds ...
    function: str           # ... draw(results_dir: Path, out: Output) -> list[Path] by this name
    caption: str

    def draw(self, results: Path, out: Path) -> list[Path]:
        """Draw from the tables under `results` into `out`; a figure drawn from CI-scale runs says so on
        its face (CI_STAMP)."""
        stamp = CI_STAMP if "ci" in self.scales(results) else ""
        return getattr(importlib.import_module(self.module), self.function)(results, Output(Path(out), stamp))

    def scales(self, results: Path) -> set:
        """The scales its experiments' tables were run at (their resolved spec.yaml), where known."""
        import yaml

        from rvfx.experiment.results import load_spec_value
        found = set()
        for e in self.experiments:
            try:
                found.add(load_spec_value(results, e, ("scale",)))
            except (OSError, ValueError, AttributeError, yaml.YAMLError):   # damaged: the figure itself says so
                continue
        return found


CI_STAMP = "CI scale: a smoke test of the pipeline, not the paper's results"


FIGURES: dict[str, Figure] = {f.id: f for f in [
    Figure("deepsea_tabular", ("deepsea_tabular",), "rvfx.figures.deepsea_tabular", "fig_regret",
           "Fig. 4: cumulative regret on deep sea, mean +- 1 s.e. over seeds (pooled as in the "
           "paper; and split by treasure / bomb)"),
    Figure("deepsea_tabular_scaling", ("deepsea_tabular_scaling",), "rvfx.figures.deepsea_tabular", "fig_scaling",
           "Fig. 5: learning time vs N (log-log) with fitted slopes; censored runs as open "
           "triangles; tables of the slopes and of the median per N"),
    Figure("deepsea_linear", ("deepsea_linear",), "rvfx.figures.deepsea_linear", "fig_linear_regret",
           "Fig. 6: cumulative regret of linear learn_grlsvi on deep sea (N=50, M=50), mean +- 1 "
           "s.e. over treasure and bomb seeds; epsilon-greedy LSVI as a dithering reference"),
    Figure("deepsea_linear_scaling", ("deepsea_linear_scaling",), "rvfx.figures.deepsea_linear", "fig_linear_scaling",
           "Fig. 7: learning time of linear learn_grlsvi vs N for several M (treasure): (a) raw, "
           "(b) log-log with fitted slope and 95% bootstrap CI; censored runs as open triangles"),
    Figure("deepsea_linear_features", ("deepsea_linear_features",),
           "rvfx.figures.deepsea_linear", "fig_linear_features",
           "Fig. 8: learning time of linear learn_grlsvi vs features per row M for several N, "
           "dotted lines at M = 2N; both readings of the random basis (random unit vectors, "
           "orthonormal)"),
    Figure("deepsea_misspecified", ("deepsea_misspecified",), "rvfx.figures.deepsea_linear", "fig_misspecified",
           "Fig. 9: cumulative regret of linear learn_grlsvi after T episodes vs misspecification "
           "psi, for several M (N=20), mean +- 1 s.e. over seeds"),
    Figure("deepsea_tuning_lambda", ("deepsea_tuning",), "rvfx.figures.deepsea_linear", "fig_tuning_lambda",
           "Fig. 10: regret after T episodes vs prior variance lambda for several v and for the "
           "bootstrap, deterministic and N(0,1)-noisy rewards (N=20, M=10), mean +- 1 s.e. over "
           "seeds"),
    Figure("deepsea_tuning_v", ("deepsea_tuning",), "rvfx.figures.deepsea_linear", "fig_tuning_v",
           "Fig. 11: regret after T episodes vs noise variance v at lambda=100, with the bootstrap "
           "as a reference, deterministic and N(0,1)-noisy rewards, mean +- 1 s.e. over seeds"),
    Figure("deepsea_tuning_seeds", ("deepsea_tuning",), "rvfx.figures.deepsea_linear", "fig_tuning_seeds",
           "Fig. 12: per-seed cumulative regret at lambda=100 for each v and for the bootstrap, "
           "deterministic and N(0,1)-noisy rewards"),
    Figure("deepsea_bootstrap_scaling", ("deepsea_bootstrap_scaling",),
           "rvfx.figures.deepsea_linear", "fig_bootstrap_scaling",
           "Fig. 13: learning time of linear learn_brlsvi (solid) beside learn_grlsvi (dashed) on "
           "the same instances: (a) vs N for several M, log-log with slopes; (b) vs M for several "
           "N, dotted at M = 2N"),
    Figure("beta_vs_normal", (), "rvfx.figures.beta_vs_normal", "draw",
           "Fig. 18: Beta(3,2) vs N(3/5, 1/3): pdfs, cdfs, their differences; dashed lines bound "
           "the set C"),
    Figure("exploration_table", ("exploration_table",), "rvfx.figures.exploration_table", "draw",
           "Table 1: learning time (eq. 7.1) on deep sea vs N per exploration method, log scale, "
           "with 2^N and N reference lines; censored runs as open triangles at their cap"),
    Figure("illustrations", (), "rvfx.figures.illustrations", "draw",
           "Figs. 1 and 3: deep-sea diagram of an instance; single vs ensemble value learning"),
    Figure("rlsvi_uncertainty", ("rlsvi_uncertainty",), "rvfx.figures.illustrations", "fig_rlsvi_uncertainty",
           "Fig. 2: variance of learn_grlsvi samples of Q_h(s,a) on the 4-state example with one "
           "observation of (4, down), mean over seeds"),
    Figure("regret_bound", ("regret_bound",), "rvfx.figures.regret_bound", "draw",
           "Thm. 1: empirical Bayesian regret of tabular RLSVI (v=3H^2, theta-bar=H, "
           "v/lambda=beta) on Dirichlet-prior MDPs, mean and 95% CI over sampled MDPs, vs eqs. 6.1 "
           "and 6.2 over L"),
    Figure("regret_bound_optimism", ("regret_bound_optimism",), "rvfx.figures.regret_bound", "draw_optimism",
           "Thm. 1 proof, optimism step: E[max_a Q_l0(x0,a)] - E[V*_M(x0)] >= 0 under the prior (per "
           "episode l), and given histories under the Dirichlet posterior (the optimism probe's tables)"),
    Figure("cartpole_dqn", ("cartpole_dqn",), "rvfx.figures.cartpole", "fig_dqn",
           "Fig. 16: DQN with epsilon annealed 1->0 over several schedules on cartpole swing-up; "
           "episodic reward, mean +- 1 s.e.m., and the fraction of seeds reaching the upright "
           "reward"),
    Figure("cartpole_rlsvi", ("cartpole_rlsvi",), "rvfx.figures.cartpole", "fig_rlsvi",
           "Fig. 17: ensemble RLSVI (K=20) with a 50-50 MLP vs one-layer and linear value "
           "functions; episodic reward, mean +- 1 s.e.m., and the fraction of seeds reaching the "
           "upright reward"),
    Figure("cartpole_confirm", ("cartpole_confirm",), "rvfx.figures.cartpole", "fig_confirm",
           "Fig. 17 confirmation: the Fig. 17 variants (50-50, one-layer and linear ensemble RLSVI) and "
           "DQN in the Fig. 17 screen's chosen cell, on 20 fresh seeds; episodic reward, mean +- 1 "
           "s.e.m., and the fraction of seeds reaching the upright reward"),
    Figure("cartpole_balance", ("cartpole_balance",), "rvfx.figures.cartpole", "fig_balance",
           "Control for Figs. 16-17: the same agents started upright (no exploration needed to "
           "find the reward); episodic reward, mean +- 1 s.e.m., and which of them learn to "
           "balance"),
    Figure("cartpole_render", ("cartpole_rlsvi",), "rvfx.figures.cartpole", "fig_render",
           "Greedy rollout of a learned ensemble-RLSVI policy on cartpole swing-up (one seed: the "
           "final greedy episode with the most rewarded, then pole-up, steps): strips of frames, "
           "pole green while rewarded, and theta, x over time"),
    Figure("deepsea_ensemble", ("deepsea_ensemble",), "rvfx.figures.deepsea_ensemble", "fig_ensemble",
           "Fig. 14: cumulative regret of learn_ensemble_rlsvi on deep sea N=25 (one-hot pixels) "
           "for ensemble sizes K, mean +- 1 s.e. over seeds; learning time vs K and the K where it "
           "plateaus"),
    Figure("deepsea_ensemble_scaling", ("deepsea_ensemble_scaling",),
           "rvfx.figures.deepsea_ensemble", "fig_ensemble_scaling",
           "Fig. 15: learning time of learn_ensemble_rlsvi (K=20) vs deep sea size N, log-log, per "
           "input representation, with fitted slopes and 95% bootstrap CIs; censored runs as open "
           "triangles; tables of the slopes and of the median per N"),
    Figure("cartpole_ablation", ("cartpole_ablation",), "rvfx.figures.cartpole_ablation", "fig_ablation",
           "Fig. 17 screen: a 2^(7-3) resolution-IV fraction of seven factors of ensemble RLSVI on "
           "cartpole swing-up plus bsuite's settings as a control; each run's responses and the "
           "factors' main effects"),
    Figure("cartpole_diagnostics", ("cartpole_ablation",), "rvfx.figures.cartpole_ablation", "fig_diagnostics",
           "Fig. 17 screen diagnostics: over-estimation of Q, the ensemble's spread and values on "
           "probe states, and the greedy-action flip rate per SGD step, over episodes, per cell"),
    Figure("cartpole_confirm_responses", ("cartpole_confirm",), "rvfx.figures.cartpole_ablation",
           "fig_confirm_responses",
           "Fig. 17 confirmation responses: rewarded episodes, final return and over-estimation of Q per run, "
           "by variant, with the reference controller's mean; and each variant's responses with 95% CIs"),
    Figure("cartpole_confirm_diagnostics", ("cartpole_confirm",), "rvfx.figures.cartpole_ablation",
           "fig_confirm_diagnostics",
           "Fig. 17 confirmation diagnostics: over-estimation of Q, the members' spread and values on the "
           "reference swing-up's states, and the greedy-action flip rate, over episodes, per variant"),
    Figure("bsuite_deep_sea", ("bsuite_deep_sea",), "rvfx.figures.interop", "fig_bsuite_deep_sea",
           "bsuite's deep_sea sweep: the episode each size is solved at (fewer than 90% bad episodes so far) "
           "vs size, and bsuite's score per agent, for tabular RLSVI, ensemble RLSVI and DQN (and bsuite's "
           "boot_dqn where its logs are present)"),
    Figure("bsuite_deep_sea_settings", ("bsuite_deep_sea_settings",), "rvfx.figures.bsuite_settings", "draw",
           "Why ensemble RLSVI solves bsuite's deep_sea later than bsuite's boot_dqn: the episode solved per "
           "seed in a 2^3 factorial of the settings in which they differ (prior scale, bootstrap masks, replay "
           "size) at N = 10 and 20, boot_dqn's episodes as dashed lines, and the main effects on log2"),
    Figure("bsuite_cartpole_swingup", ("bsuite_cartpole_swingup",), "rvfx.figures.bsuite_cartpole", "draw",
           "Positive control for Fig. 17: rvfx's ensemble (Glorot and Haiku initialisation) and DQN against "
           "bsuite's own boot_dqn on bsuite's cartpole_swingup: returns over episodes, the first episode with "
           "return > 100 per run (median, 95% CI), episodes > 100, bsuite's score and the verdict"),
    Figure("cartpole_bridge", ("cartpole_bridge",), "rvfx.figures.cartpole_bridge", "draw",
           "Beyond the paper: the bridge from bsuite's cartpole_swingup/0 to the paper's swing-up on rvfx's "
           "cartpole, one change per arm: returns over episodes, the first episode with return > 100 per run "
           "(median, 95% CI), episodes > 100, the rewarded fraction, the gate and the arm where learning stops"),
    Figure("cartpole_rlsvi_rerun", ("cartpole_rlsvi_rerun",), "rvfx.figures.cartpole_rlsvi_rerun", "draw",
           "Fig. 17's contrast rerun at the paper's setting and at the one the positive control and the bridge "
           "identify: returns over episodes of the 50-50 ensemble, one hidden layer, linear Q and DQN, runs "
           "learnt (Fig. 17's criterion, exact CI) and the first episode with return > 100 (median, 95% CI)"),
    Figure("cartpole_doors", ("cartpole_doors",), "rvfx.figures.cartpole_doors", "draw",
           "Beyond the paper: Fig. 17's untried doors, each an arm against the paper's task with the 50-50 "
           "ensemble (DQN beside it): returns over episodes per arm, the first episode with return > 100 per run "
           "(median, 95% CI), and per arm the runs learnt against the rule (an arm opens if 3 of 5 seeds learn)"),
    Figure("mountaincar", ("mountaincar",), "rvfx.figures.interop", "fig_mountaincar",
           "Gymnasium MountainCar-v0: ensemble RLSVI vs epsilon-greedy DQN with the same network, returns over "
           "episodes (mean ± 1 s.e. over seeds) and the episode each run first reaches the flag (median, 95% CI)"),
]}
