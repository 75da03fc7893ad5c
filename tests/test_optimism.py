"""The optimism probe (Theorem 1's optimism step as an experiment): its parameters, what it records,
the posterior it samples, and the spec and figure built on it."""
import math

import numpy as np
import pandas as pd
import pytest
from cli_helpers import CONFIGS, assert_png, invoke

from rvfx.agents.tabular.optimism import OptimismParams, OptimismProbe, OutcomeCounts, posterior_optimal_values
from rvfx.core.live import live
from rvfx.envs.random_mdp import RandomMDP, RandomMDPParams
from rvfx.experiment.spec import load_spec

THEOREM = {"v": "3*H**2", "lam": "v/3", "prior_mean": "H"}


def probe(p: RandomMDPParams, seed: int, samples: int = 0) -> tuple[OptimismProbe, RandomMDP]:
    env = RandomMDP(p, np.random.default_rng(seed))
    return OptimismProbe(env, np.random.default_rng(1000 + seed), OptimismParams(**THEOREM, samples=samples)), env


def test_the_spec_gives_theorem_1_parameters():
    exp = load_spec(str(CONFIGS / "regret_bound_optimism.yaml"), "paper")
    run = exp.runs[0]
    env = RandomMDP(run.env_params, np.random.default_rng(0))
    agent = OptimismProbe(env, np.random.default_rng(0), run.agent_params)
    H, beta = env.params.horizon, env.params.beta
    assert agent.v == 3 * H ** 2 and agent.prior_mean == H and agent.v / agent.lam == pytest.approx(beta)
    assert agent.perturbation == "gaussian" and agent.act_rule == "greedy"
    assert len([r for r in exp.runs if r.agent == "prior"]) == 120


def test_the_probe_records_the_value_it_samples_for_each_episode():
    agent, env = probe(RandomMDPParams(horizon=3, states=2, actions=2), 0)
    seen = []
    live(agent, env, 5, on_episode_start=lambda _: seen.append(agent.q[0, 0].max()))
    table = agent.run_tables()["optimism"]
    assert table["episode"].tolist() == [1, 2, 3, 4, 5] and np.allclose(table["start_value"], seen)
    assert np.allclose(table["gap"], table["start_value"] - env.optimal_return)


def test_rlsvi_is_optimistic_in_expectation_under_the_prior():
    p = RandomMDPParams(horizon=3, states=2, actions=2, beta=3.0)
    gaps = []
    for seed in range(60):
        agent, env = probe(p, seed)
        live(agent, env, 40)
        gaps.append(agent.run_tables()["optimism"].set_index("episode").loc[[1, 10, 40], "gap"].to_numpy())
    gaps = np.array(gaps)
    se = gaps.std(axis=0, ddof=1) / math.sqrt(len(gaps))
    assert np.all(gaps.mean(axis=0) - 3 * se > 0)


def test_rlsvi_is_optimistic_given_a_history_under_the_dirichlet_posterior():
    p = RandomMDPParams(horizon=3, states=2, actions=2, beta=3.0)
    for seed, episodes in enumerate([0, 30, 300]):
        agent, env = probe(p, seed, samples=800)
        live(agent, env, episodes)
        row = agent.run_tables()["posterior"].iloc[0]
        assert row["history"] == episodes
        assert row["q_mean"] - row["v_mean"] > -4 * math.hypot(row["q_se"], row["v_se"])


def test_posterior_values_with_no_data_are_the_prior_values():
    """With no data the posterior is the prior: E[V*] over posterior samples = E[V*] over RandomMDP draws."""
    p = RandomMDPParams(horizon=3, states=2, actions=2, beta=3.0)
    post = posterior_optimal_values(OutcomeCounts((3, 2, 2)), p, 4000, np.random.default_rng(0))
    prior = np.array([RandomMDP(p, np.random.default_rng(s)).optimal_return for s in range(4000)])
    se = math.hypot(post.std(), prior.std()) / math.sqrt(4000)
    assert abs(post.mean() - prior.mean()) < 4 * se


def test_the_experiment_runs_and_the_figure_reads_its_tables(tmp_path):
    out, figs = tmp_path / "res", tmp_path / "figs"
    r = invoke("run", CONFIGS / "regret_bound_optimism.yaml", "--set", "seeds=4", "--set", "episodes=10", "--out", out)
    assert r.exit_code == 0, r.output
    post = pd.read_csv(out / "regret_bound_optimism" / "posterior.csv")
    assert post["history"].tolist() == [1, 2, 5, 10, 20, 50, 100, 200]
    r = invoke("plot", "regret_bound_optimism", "--results", out, "--out", figs)
    assert r.exit_code == 0, r.output
    assert_png(figs / "regret_bound_optimism.png")
    table = pd.read_csv(figs / "regret_bound_optimism.csv")
    assert table["MDPs"].eq(4).all() and table["episode"].iloc[-1] == 10
