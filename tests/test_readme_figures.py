"""The README's figures for the refined and the hardware-searched README plan, as the code gives
them (slow: refining simulates; run with -m slow)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fleetopt.api import plan_workload

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
PLAN = {"ttft_slo_s": 0.5, "mean_rate_per_s": 1000.0}


def _said(text: str) -> bool:
    """``text`` appears in the README (line breaks and runs of spaces read as one space)."""
    return " ".join(text.split()) in " ".join(README.split())


@pytest.mark.slow
def test_the_refined_readme_plan_is_the_one_the_readme_quotes() -> None:
    run = plan_workload("azure-2023", refine=5, **PLAN)
    pools = run.plan.best.pools
    quoted = f"({pools[0].instances} + {pools[1].instances} instances, {run.plan.best.total_gpus:,} GPUs)"
    assert _said(quoted), quoted


@pytest.mark.slow
def test_the_hardware_search_figures_are_the_ones_the_readme_quotes() -> None:
    default = plan_workload("azure-2023", **PLAN).document
    searched = plan_workload("azure-2023", hardware="auto", **PLAN).document
    profiles = searched["inputs"]["profiles"]["pools"]
    names = [
        re.search(r"-(h100|h200|b200)-tp(\d)-", profiles[p]["serving_name"]).groups()
        for p in ("short", "long")
    ]
    cost = searched["best"]["cost_per_year_usd"]
    below_default = 1 - cost / default["best"]["cost_per_year_usd"]
    quoted = (
        f"({names[0][0].upper()} TP{names[0][1]} short, {names[1][0].upper()} TP{names[1][1]} long: "
        f"${cost / 1e6:.1f}M/year, {below_default:.0%} below the default profile, "
        f"{searched['savings']['vs_best_single_hardware']:.1%} below the best single one)"
    )
    assert _said(quoted), quoted
