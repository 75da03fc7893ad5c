"""How many seeds would settle a claim that is inconclusive for lack of runs: the power statements in
the specs' headers (configs/deepsea_*.yaml) come from here.

Plug-in power: each design cell's committed runs (figures/paper) are resampled with replacement to K
runs, the claim's current version is judged on them as the report judges it (its rule, with 1,000
bootstrap resamples instead of 2,000 for speed), and the share of draws giving each verdict is
printed. It takes the committed runs as the truth, so it understates the spread of a cell of few runs;
`--lucky` instead draws UCRL2's runs from a model of them (each run its size's learning time, lucky,
meeting eq. 7.1 in 2 episodes, with probability 2^(1 - N)), whose 3 committed runs per size are too
few to resample.

    .venv/bin/python benchmarks/claim_power.py fig14_plateau_around_20 20,30,40,50,60
    .venv/bin/python benchmarks/claim_power.py fig5_ucrl2_slope 4,6,8 --lucky
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from rvfx.report.claims import combine, judge_group
from rvfx.report.registry import load_registry, versions
from rvfx.report.tables import claim_table, select

ROOT = Path(__file__).resolve().parent.parent


def design_cells(df: pd.DataFrame) -> list:
    """The columns that tell a run's cell apart: the agent and every swept agent or env parameter."""
    keys = [c for c in df.columns if c in ("agent", "algorithm") or c.startswith(("agent.", "env."))]
    return [k for k in keys if df[k].nunique(dropna=False) > 1]


def verdict(claim: dict, rules: dict, df: pd.DataFrame) -> str:
    """The claim's verdict on `df`, its groups combined as the report combines them."""
    by = claim.get("by", [])
    groups = df.groupby(by, dropna=False, sort=True) if by else [((), df)]
    return combine([judge_group(claim, rules, str(k), g).verdict for k, g in groups], claim.get("aggregate", "all"))


def resampled(df: pd.DataFrame, k: int, rng: np.random.Generator) -> pd.DataFrame:
    """k runs per design cell, drawn with replacement from its committed runs."""
    keys = design_cells(df)
    cells = df.groupby(keys, dropna=False) if keys else [((), df)]
    return pd.concat([g.iloc[rng.integers(0, len(g), k)] for _, g in cells], ignore_index=True)


def lucky(df: pd.DataFrame, k: int, rng: np.random.Generator) -> pd.DataFrame:
    """k runs per size of a near-deterministic learner: a committed unlucky run's learning time, or 2
    episodes with probability 2^(1 - N)."""
    rows = []
    for n, cell in df[df["learning_time"] > 2].groupby("env.size"):
        for s in range(k):
            t = 2.0 if rng.random() < 2.0 ** (1 - n) else float(rng.choice(cell["learning_time"]))
            rows.append({**cell.iloc[0].to_dict(), "run_id": f"{n}-{s}", "learning_time": t, "censored": False})
    return pd.DataFrame(rows)


def power(claim_id: str, counts: list, draws: int = 100, model: bool = False, seed: int = 0) -> None:
    registry = load_registry(ROOT / "claims.yaml")
    rules = {**registry["rules"], "bootstrap": {"resamples": 1000, "seed": 0}}
    claim = next(versions(c)[-1] for c in registry["claims"] if c["id"] == claim_id)
    df = select(claim_table(claim, ROOT / "figures" / "paper"), claim.get("where", []))
    rng = np.random.default_rng(seed)
    print(f"{claim_id}: now {verdict(claim, rules, df)}; cells by {design_cells(df)}", flush=True)
    for k in counts:
        found = [verdict(claim, rules, (lucky if model else resampled)(df, k, rng)) for _ in range(draws)]
        print(f"  K = {k}: " + ", ".join(f"{v} {found.count(v) / draws:.2f}"
                                         for v in ("holds", "differs", "inconclusive")), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("claim")
    parser.add_argument("counts", help="runs per cell to try, e.g. 20,40,60")
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--lucky", action="store_true", help="UCRL2's model instead of resampling")
    args = parser.parse_args()
    power(args.claim, [int(k) for k in args.counts.split(",")], args.draws, args.lucky)


if __name__ == "__main__":
    main()
