"""Honest verdicts: PASS only when every pool's P99 TTFT interval lies under the SLO, FAIL when one lies
above it, INCONCLUSIVE otherwise (too few requests, or an interval straddling the SLO); --strict exits
1 on FAIL and INCONCLUSIVE; a measured value is never printed as ∞ or NaN."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from fleetopt.cli import app
from fleetopt.core.crosscheck import (
    PoolVerdict,
    Verdict,
    compare,
    crosscheck_setup,
    single_pool_setup,
)
from fleetopt.core.poolstats import PoolStatistics
from fleetopt.core.service import PoolHardware
from fleetopt.core.sizing import size_pool
from fleetopt.core.workload import workload_from_requests
from fleetopt.io.documents.build_crosscheck import crosscheck_document

runner = CliRunner()


@pytest.fixture(scope="module")
def simulated():
    """A small lockstep pool simulated with 3 seeds (its P99 TTFT interval is narrow but not 0)."""
    hardware = PoolHardware("synthetic", "m", "g", 1, 1.0, 0.01, 0.002, 512, 8192, 4 * 4096, 16)
    workload = workload_from_requests(
        np.array([100] * 19 + [3000]), np.array([20] * 19 + [1000]), name="two-point"
    )
    moments = PoolStatistics(workload, 512).range_moments(-1, math.inf, 0.99)
    sizing = size_pool(
        arrival_rate_per_s=20.0, moments=moments, hardware=hardware, context_tokens=4096,
        service_model="lockstep", ttft_slo_s=1.0, max_utilization=0.95,
    )  # fmt: skip
    setup = single_pool_setup(
        sizing, hardware, ttft_slo_s=1.0, service_model="lockstep", max_utilization=0.95
    )
    report = crosscheck_setup(
        setup, workload, service_model="lockstep", dispatch="round-robin", requests=30_000, seeds=(1, 2, 3)
    )
    return setup, report


def test_the_verdict_follows_the_p99_interval_against_the_slo(simulated) -> None:
    setup, report = simulated
    row = report.pools[0]
    low, high = row.p99_ttft_interval_s
    estimate = report.result.pools[0].ttft_p99_s
    assert (low, high) == pytest.approx(
        (estimate.mean - estimate.ci95_half_width, estimate.mean + estimate.ci95_half_width)
    )
    assert 0 < low < high
    cases = {
        high * 1.01: (PoolVerdict.MET, Verdict.PASS),
        low * 0.99: (PoolVerdict.BREACH, Verdict.FAIL),
        0.5 * (low + high): (PoolVerdict.INCONCLUSIVE, Verdict.INCONCLUSIVE),
    }
    for slo, (pool_verdict, verdict) in cases.items():
        judged = compare(replace(setup, ttft_slo_s=slo), report.result)
        assert judged.pools[0].verdict is pool_verdict, slo
        assert judged.verdict in (verdict, Verdict.PASS_OPTIMISTIC if verdict is Verdict.PASS else verdict)
    straddle = crosscheck_document(compare(replace(setup, ttft_slo_s=0.5 * (low + high)), report.result))
    assert straddle["verdict"].startswith("INCONCLUSIVE") and straddle["verdict_code"] == "inconclusive"
    assert straddle["conclusive"] is False and straddle["pools"]["homogeneous"]["verdict"] == "inconclusive"
    assert any("straddles the SLO" in note for note in straddle["notes"])


def test_too_few_measured_requests_are_inconclusive_and_one_seed_uses_order_statistics(simulated) -> None:
    setup, report = simulated
    summary = report.result.pools[0]
    few = replace(summary, requests_served=367)  # one short of what a P99 interval needs
    judged = compare(replace(setup, ttft_slo_s=100.0), replace(report.result, pools=(few,)))
    assert judged.pools[0].verdict is PoolVerdict.INCONCLUSIVE and judged.verdict is Verdict.INCONCLUSIVE
    one_seed = crosscheck_setup(setup, _workload(), service_model="lockstep", requests=30_000, seeds=(1,))
    row = one_seed.pools[0]
    lows, highs = (
        one_seed.result.pools[0].ttft_p99_low_s.values,
        one_seed.result.pools[0].ttft_p99_high_s.values,
    )
    assert row.p99_ttft_interval_s == (lows[0], highs[0])  # the seed's order-statistic interval
    document = crosscheck_document(one_seed)
    assert document["pools"]["homogeneous"]["p99_ttft_s"]["ci95_half_width"] is None  # not NaN


def _workload():
    return workload_from_requests(
        np.array([100] * 19 + [3000]), np.array([20] * 19 + [1000]), name="two-point"
    )


def test_a_pool_planned_for_no_traffic_is_not_judged(simulated) -> None:
    setup, report = simulated
    empty = replace(setup.pools[0], simulated=replace(setup.pools[0].simulated, instances=0))
    nothing = replace(report.result.pools[0], requests_served=0)
    judged = compare(replace(setup, pools=(empty,)), replace(report.result, pools=(nothing,)))
    assert judged.pools[0].verdict is PoolVerdict.NO_TRAFFIC


# -------------------------------------------------------------------------------------------- the CLI


@pytest.fixture(scope="module")
def lockstep_plan(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("plans") / "plan.yaml"
    result = runner.invoke(
        app,
        ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000", "--service-model", "lockstep",
         "--serving", "llama-3-70b-a100-80gb-tp8", "--rate-basis", "mean", "-o", str(path)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return path


def test_strict_exits_1_on_inconclusive_and_the_report_says_inconclusive(lockstep_plan: Path) -> None:
    args = ["simulate", "--plan", str(lockstep_plan), "--requests", "1000", "--seeds", "2"]
    relaxed = runner.invoke(app, [*args, "-f", "json"])
    assert relaxed.exit_code == 0
    data = json.loads(relaxed.stdout)
    assert data["verdict_code"] == "inconclusive"
    assert data["pools"]["long"]["requests_measured"] < data["pools"]["long"]["requests_needed"] == 368
    strict = runner.invoke(app, [*args, "--strict"])
    assert strict.exit_code == 1
    assert "INCONCLUSIVE" in strict.stdout and "PASS" not in strict.stdout
    assert strict.stderr == (
        "Error: --strict: INCONCLUSIVE: the simulation cannot tell whether the long pool(s) meet the SLO "
        "(too few requests, or a P99 interval straddling the SLO); simulate more requests or seeds\n"
    )
    for text in (relaxed.stdout, strict.stdout):
        assert "nan" not in text.lower() and "∞" not in text and "Infinity" not in text


def test_plan_validate_strict_exits_1_after_printing_and_writing(tmp_path: Path) -> None:
    output = tmp_path / "plan.yaml"
    args = ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000", "--service-model", "lockstep",
            "--serving", "llama-3-70b-a100-80gb-tp8", "--rate-basis", "mean", "--validate", "--sim-requests",
            "1000", "--sim-seeds", "2", "-o", str(output)]  # fmt: skip
    assert runner.invoke(app, args).exit_code == 0
    strict = runner.invoke(app, [*args, "--strict"])
    assert strict.exit_code == 1 and output.is_file()
    assert strict.stderr.startswith("Error: --strict: INCONCLUSIVE: ")
    assert "INCONCLUSIVE" in strict.stdout


def test_validation_options_need_validate() -> None:
    result = runner.invoke(app, ["plan", "--cdf", "azure", "--slo", "1s", "--strict"])
    assert result.exit_code == 2
    assert "--strict, --replay, --arrivals and --sim-requests apply to --validate" in result.output
