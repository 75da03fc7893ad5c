"""The evidence behind claims.yaml's rules.minimum_runs (docs/report.md prints the full table of
benchmarks/bootstrap_coverage.py): the report's percentile bootstrap undercovers with few runs and
covers about as promised at the minimum; the median's interval at odd n, exactly; Clopper-Pearson's
exactness. Fixed seeds; each simulated coverage is checked with a margin of four standard errors of
its `SIMS` data sets (0.015 at 0.9)."""
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from bootstrap_coverage import (  # noqa: E402
    ENOUGH,
    clopper_pearson_coverage,
    coverage,
    median_exact_coverage,
)

SIMS = 1600
MARGIN = 4 * (0.9 * 0.1 / SIMS) ** 0.5
MINIMUM = yaml.safe_load((Path(__file__).resolve().parent.parent / "claims.yaml").read_text())["rules"]["minimum_runs"]


@pytest.mark.parametrize("family, kind", [("mean", "mean"), ("ratio", "ratio"), ("median", "median_learning_time"),
                                          ("slope", "slope")])
def test_at_its_minimum_a_statistic_covers_about_as_promised(family, kind):
    assert coverage(family, MINIMUM[kind], SIMS, seed=1, n_boot=1000) >= ENOUGH - MARGIN


@pytest.mark.parametrize("family", ["mean", "ratio", "median"])
def test_with_three_runs_a_percentile_bootstrap_undercovers(family):
    assert coverage(family, 3, SIMS, seed=1, n_boot=1000) < ENOUGH - MARGIN     # 0.76, 0.80, 0.76 in the table


def test_the_medians_interval_at_odd_n_is_exact_and_dips_below_90_percent_at_7():
    assert median_exact_coverage(5) == pytest.approx(1 - 2 / 2 ** 5)      # [x(1), x(5)]: misses if all 5 on a side
    assert median_exact_coverage(7) == pytest.approx(1 - 2 * 8 / 2 ** 7)  # [x(2), x(6)]: 0.875
    assert MINIMUM["median_learning_time"] > 7
    assert min(median_exact_coverage(n) for n in range(MINIMUM["median_learning_time"] | 1, 42, 2)) >= ENOUGH


@pytest.mark.parametrize("n", [1, 3, 10, 20])
def test_clopper_pearson_covers_at_least_95_percent_at_every_n(n):
    assert clopper_pearson_coverage(n) >= 0.95
