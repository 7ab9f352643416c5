"""``plan --refine K`` (fleetopt.core.refine): the search against a brute-force scan on the same seed,
its outcomes, and the command's bounds and defaults."""

from __future__ import annotations

import re

import numpy as np
import pytest
from typer.testing import CliRunner

from fleetopt.cli import app
from fleetopt.core.refine import PoolSearch, RefineSettings
from fleetopt.core.simulate import SimulatedPool, simulate_pool_alone
from fleetopt.core.workload import Workload
from fleetopt.errors import ValidationError

runner = CliRunner()

#: Prompts of 200–1,500 tokens, outputs of 20–80: a pool of 4 slots per instance at 6 req/s needs a few.
STREAM = Workload(
    name="tiny", total_tokens=np.array([220, 640, 1100, 1580]), input_tokens=np.array([200, 600, 1050, 1500]),
    output_tokens=np.array([20, 40, 50, 80]), weights=np.array([0.4, 0.3, 0.2, 0.1]), kind="requests",
)  # fmt: skip
POOL = SimulatedPool(
    name="pool", instances=1, slots_per_instance=4, context_tokens=2048, iteration_base_s=0.01,
    iteration_per_slot_s=0.002, prefill_chunk_tokens=512, prefill_per_token_s=1e-4,
)  # fmt: skip
RATE = 6.0
SETTINGS = RefineSettings(candidates=1, search_seed=7, confirm_seeds=(7, 8, 9), measured_requests=800)


def _search(slo_s: float, analytic: int, settings: RefineSettings = SETTINGS) -> PoolSearch:
    return PoolSearch(
        STREAM, POOL, arrival_rate_per_s=RATE, residence_s=1.0, analytic_instances=analytic,
        floor_instances=1, ttft_slo_s=slo_s, settings=settings,
    )  # fmt: skip


def _upper_p99(instances: int) -> float:
    """The upper end of the one seed's P99 interval, simulated here independently of the search."""
    from fleetopt.core.crosscheck import p99_interval

    result = simulate_pool_alone(
        STREAM, SimulatedPool(**{**POOL.__dict__, "instances": instances}), RATE, residence_s=1.0,
        measured_requests=SETTINGS.measured_requests, service_model="physical", dispatch=SETTINGS.dispatch,
        seeds=(SETTINGS.search_seed,),
    )  # fmt: skip
    return p99_interval(result.pools[0])[1]


@pytest.mark.parametrize("analytic", [1, 3, 9])
def test_the_search_finds_the_smallest_passing_count_from_any_start(analytic) -> None:
    """Wherever the analytic count starts it, the bracket search lands on the first count that passes
    in a scan of every count on the same seed (common random numbers)."""
    uppers = {n: _upper_p99(n) for n in range(1, 8)}
    slo = 0.5 * (uppers[2] + uppers[3]) if uppers[2] > uppers[3] else uppers[3]
    smallest = min(n for n, upper in uppers.items() if upper <= slo)
    assert 1 < smallest < 7  # the SLO puts the answer inside the scan
    result = _search(slo, analytic).search()
    assert result.outcome == "refined" and result.instances == smallest
    assert result.p99_ttft_high_s <= slo


def test_a_pool_past_the_budget_keeps_its_analytic_count_flagged() -> None:
    settings = RefineSettings(candidates=1, measured_requests=800, max_requests=100)
    result = _search(1.0, 3, settings).confirm()
    assert (result.outcome, result.instances, result.simulations) == ("too_large", 3, 0)


def test_an_slo_below_the_prefill_floor_is_unreachable_with_the_best_p99() -> None:
    """No count serves a 1,500-token prompt in 1 ms: unreachable, the analytic count kept, and the
    best P99 reached (above the SLO) reported."""
    result = _search(0.001, 2).confirm()
    assert result.outcome == "unreachable" and result.instances == 2 and not result.passed
    assert result.p99_ttft_s > 0.001 and result.best_instances is not None


@pytest.mark.parametrize("value", ["0", "-1"])
def test_refine_zero_or_negative_is_a_usage_error(value) -> None:
    result = runner.invoke(app, ["plan", "--cdf", "azure", "--slo", "500ms", "--refine", value])
    assert result.exit_code == 2


def test_the_api_refuses_a_bad_refine_or_dispatch() -> None:
    from fleetopt.api import plan_workload

    with pytest.raises(ValidationError, match="--refine"):
        plan_workload("azure", ttft_slo_s=0.5, mean_rate_per_s=1.0, refine=0)
    with pytest.raises(ValidationError, match="--dispatch"):
        plan_workload("azure", ttft_slo_s=0.5, mean_rate_per_s=1.0, dispatch="fastest")


@pytest.mark.slow
def test_a_refined_plan_records_its_counts_and_simulate_uses_its_dispatch(tmp_path) -> None:
    """A small plan refined under round-robin: the document says so, its best fleet is the chosen refined
    one, and ``simulate --plan`` simulates round-robin unless told otherwise."""
    from fleetopt.api import plan_workload
    from fleetopt.api.crosscheck import crosscheck_plan_file
    from fleetopt.render.output import dumps

    run = plan_workload(
        "azure-2023-conv", ttft_slo_s=2.0, mean_rate_per_s=0.5, b_short_candidates=[2048], refine=1,
        dispatch="round-robin",
    )  # fmt: skip
    document = run.document
    assert document["dispatch"] == "round-robin"
    fleet = document["refinement"]["fleets"][0]
    assert fleet["chosen"] and fleet["refined_gpus"] == document["best"]["total_gpus"]
    for pool in fleet["pools"]:
        assert document["best"]["pools"][pool["pool"]]["instances"] == pool["refined_instances"]
        assert pool["outcome"] != "refined" or pool["p99_ttft_high_s"] <= 2.0
    path = tmp_path / "plan.json"
    path.write_text(dumps(document, "json"), encoding="utf-8")
    check = crosscheck_plan_file(path, requests=3000, seeds=1)
    assert check.report.result.dispatch == "round-robin"
    assert (
        crosscheck_plan_file(path, requests=3000, seeds=1, dispatch="pooled").report.result.dispatch
        == "pooled"
    )


def _pool(**changes):
    from types import SimpleNamespace

    figures = dict(
        p99_prefill_s=0.457, p99_ttft_s=0.474, ttft_headroom_fraction=0.052, utilization=0.074,
        context_tokens=65_536, instances=18,
    )  # fmt: skip
    return SimpleNamespace(**{**figures, **changes})


@pytest.mark.parametrize(
    ("changes", "dispatch", "warned"),
    [
        ({}, "least-loaded", True),  # the README plan's long pool (docs/validation.md)
        ({}, "least-waiting", True),
        ({}, "round-robin", True),  # a policy the model does not size for: every pool
        ({}, "pooled", True),
        ({"ttft_headroom_fraction": 0.2}, "least-loaded", True),  # the README plan's long pool now: 18.6%
        ({"ttft_headroom_fraction": 0.3}, "least-loaded", False),  # more than the +27% simulation found
        ({"utilization": 0.6}, "least-loaded", False),  # not thin (the README plan's short pool)
        ({"p99_prefill_s": 0.1}, "least-loaded", False),  # the P99 is not mostly prefill
        ({"context_tokens": 131_072, "p99_prefill_s": 0.1}, "round-robin", True),  # beyond the sets' 64K
        (
            {"context_tokens": 131_072, "instances": 0, "p99_prefill_s": None},
            "least-loaded",
            False,
        ),  # no traffic
    ],
)
def test_the_regime_warning_names_prefill_bound_thin_pools_behind_counting_routers(changes, dispatch, warned):
    from types import SimpleNamespace

    from fleetopt.io.documents.words import regime_warnings

    warnings = regime_warnings({"long": _pool(**changes)}, SimpleNamespace(ttft_slo_s=0.5), dispatch)
    assert [w.kind for w in warnings] == (["outside_validated_region"] if warned else [])
    assert not warned or "--refine" in warnings[0].message
    unmodelled = dispatch != "least-loaded"
    assert not warned or (f"the plan states {dispatch} dispatch" in warnings[0].message) == unmodelled


@pytest.mark.slow
def test_no_passing_fleet_is_one_error_line_with_the_best_p99_and_no_file(tmp_path) -> None:
    """LMSYS at 1 s with a 131K long pool on the default profile (the regime grid's H100 row,
    docs/validation.md): no long-pool count up to 3× + 8 meets the SLO in simulation under
    least-loaded dispatch; refining that fleet fails, in one line that names the pool and the best
    P99 with the interval that failed it, and writes nothing."""
    out = tmp_path / "plan.json"
    result = runner.invoke(app, [
        "plan", "--cdf", "lmsys", "--slo", "1s", "--rate", "100", "--long-context", "131072",
        "--refine", "1", "--output", str(out),
    ])  # fmt: skip
    assert result.exit_code == 1 and not out.exists()
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1 and "'long'" in lines[0] and "reached a P99 TTFT of" in lines[0]
    best, high = (
        float(x) for x in re.search(r"of ([\d.]+) ms \(95% interval up to ([\d.]+) ms\)", lines[0]).groups()
    )
    assert best <= high and high > 1000.0  # what failed the SLO is the interval's upper end


def test_a_fleet_of_pools_past_the_budget_is_the_analytic_one_flagged() -> None:
    """Every pool too large to simulate: the refinement ends (nothing to confirm) with the analytic
    fleet as the best, every pool flagged ``too_large`` and unconfirmed."""
    from fleetopt.api import plan_workload
    from fleetopt.core.planner import Planner
    from fleetopt.core.refine import refine_plan

    run = plan_workload("azure-2023-conv", ttft_slo_s=2.0, mean_rate_per_s=0.5, b_short_candidates=[2048])
    plan = run.plan
    planner = Planner(run.workload, plan.hardware, plan.options)
    refinement = refine_plan(planner, plan, RefineSettings(candidates=2, max_requests=10))
    assert refinement.best is not None and refinement.best.fleet.total_gpus == plan.best.total_gpus
    outcomes = {p.outcome for f in refinement.fleets for p in f.pools} - {"no_traffic"}
    assert outcomes == {"too_large"} and not any(p.confirmed for f in refinement.fleets for p in f.pools)
