"""Peak- and burst-aware sizing: the arrival term C_a² in the waits (Hayward's peakedness, checked at
50 digits), monotonicity (sizing at the peak never returns fewer instances than at the mean), the
rate basis of a plan, and schedules."""

from __future__ import annotations

import math
from dataclasses import replace

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetopt.core.mgc import wait_quantile_s
from fleetopt.core.poolstats import PoolStatistics
from fleetopt.core.service import PoolHardware
from fleetopt.core.sizing import evaluate_pool, size_pool
from fleetopt.core.workload import workload_from_requests
from fleetopt.errors import ValidationError

PAPER_A100 = PoolHardware(
    serving_name="paper", model_name="llama-3-70b", gpu_name="a100-80gb", gpus_per_instance=8,
    gpu_hour_usd=2.21, iteration_base_s=0.008, iteration_per_slot_s=0.00065, prefill_chunk_tokens=512,
    calibration_context_tokens=8192, kv_capacity_tokens=65_536 * 16, kv_block_tokens=16,
)  # fmt: skip
# An engine-model calibration (W, H, τ, T0 of the measured H100 profile's order of magnitude).
ENGINE_HW = replace(
    PAPER_A100, iteration_base_s=0.012, iteration_per_slot_s=0.00012, prefill_per_token_s=4e-5,
    prefill_chunk_tokens=8192, ttft_overhead_s=0.03,
)  # fmt: skip

logs = st.lists(st.tuples(st.integers(1, 3000), st.integers(1, 600)), min_size=3, max_size=30)


def _moments(pairs, chunk=512, engine=False):
    inputs, outputs = np.array(pairs).T
    workload = workload_from_requests(inputs, outputs, name="random")
    stats = PoolStatistics(workload, chunk, prompt_levels=engine)  # the engine model needs prompt levels
    return stats.range_moments(-1, math.inf, 0.99, prompt_levels=engine)


def _erlang_c_mp(servers, load):
    """Erlang C at real c (the continuous extension through the incomplete gamma), 50 digits."""
    with mpmath.workdps(50):
        c, a = mpmath.mpf(servers), mpmath.mpf(load)
        pmf = mpmath.exp(c * mpmath.log(a) - a - mpmath.loggamma(c + 1))
        cdf = mpmath.gammainc(c + 1, a, mpmath.inf, regularized=True)
        b = pmf / cdf
        return b / (1 - a / c * (1 - b))


@pytest.mark.parametrize(
    ("servers", "rate", "mean_s", "scv", "arrival_scv"),
    [(40, 30.0, 1.0, 1.0, 3.0), (200, 170.0, 0.5 * 2, 0.4, 9.0), (12, 8.0, 1.0, 2.0, 1.7)],
)
def test_peaked_wait_is_erlang_c_at_c_over_z_with_the_kimura_tail(
    servers, rate, mean_s, scv, arrival_scv
) -> None:
    """W_q = max(0, ln(C(c/z, a/z)/(1 − q)))·(C_a² + C_s²)/2/(cμ − λ), z = (1 + C_a²)/2 (Hayward;
    Kimura's tail), against mpmath at 50 digits."""
    z = 0.5 * (1 + arrival_scv)
    load = rate * mean_s
    c_mp = _erlang_c_mp(servers / z, load / z)
    expected = (
        max(0.0, float(mpmath.log(c_mp / mpmath.mpf("0.01"))))
        * 0.5
        * (arrival_scv + scv)
        / (servers / mean_s - rate)
    )
    got = wait_quantile_s(float(servers), rate, mean_s, scv, 0.99, arrival_scv)
    assert got == pytest.approx(expected, rel=1e-9)
    assert got > wait_quantile_s(float(servers), rate, mean_s, scv, 0.99)  # burstier arrivals wait longer


def test_arrivals_smoother_than_poisson_are_refused() -> None:
    moments = _moments([(100, 50), (200, 20), (900, 300)])
    with pytest.raises(ValidationError, match="arrival SCV: 0.5 must be a finite number ≥ 1"):
        size_pool(arrival_rate_per_s=1.0, moments=moments, hardware=PAPER_A100, context_tokens=4096,
                  service_model="lockstep", ttft_slo_s=1.0, arrival_scv=0.5)  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    logs,
    st.sampled_from(["lockstep", "fleet-sim", "engine"]),
    st.floats(0.2, 3.0),
    st.floats(0.5, 3000.0),
    st.floats(1.0, 3.0),
    st.floats(1.0, 60.0),
)
def test_more_rate_or_burstier_arrivals_never_need_fewer_instances(
    pairs, model, slo_s, rate, factor, scv
) -> None:
    """The peak basis sizes at factor × rate with C_a² ≥ 1: never fewer instances than the mean."""
    chunk = ENGINE_HW.prefill_chunk_tokens if model == "engine" else 512
    hardware = ENGINE_HW if model == "engine" else PAPER_A100
    common = dict(moments=_moments(pairs, chunk, model == "engine"), hardware=hardware, context_tokens=4096,
                  service_model=model, ttft_slo_s=slo_s)  # fmt: skip
    mean = size_pool(arrival_rate_per_s=rate, **common)
    peak = size_pool(arrival_rate_per_s=rate * factor, arrival_scv=scv, **common)
    if not mean.feasible:
        assert not peak.feasible
        return
    if peak.feasible:
        assert peak.instances >= mean.instances
        assert peak.arrival_scv == scv
        again = evaluate_pool(
            arrival_rate_per_s=rate * factor, instances=peak.instances,
            slots_per_instance=peak.slots_per_instance, arrival_scv=scv, **common,
        )  # fmt: skip
        assert again.feasible and again.p99_ttft_s <= slo_s * (1 + 1e-9)


@pytest.mark.parametrize("name", ["azure-2023", "azure-2023-code"])
@pytest.mark.parametrize("slo_s", [0.5, 2.0])
def test_the_peak_plan_has_at_least_the_mean_plans_instances_in_every_pool(name, slo_s) -> None:
    from fleetopt.api import plan_workload

    mean = plan_workload(name, ttft_slo_s=slo_s, mean_rate_per_s=1000, rate_basis="mean").plan.best
    peak_run = plan_workload(name, ttft_slo_s=slo_s, mean_rate_per_s=1000)
    peak = peak_run.plan.best
    assert peak_run.plan.options.rate_basis == "peak"
    assert peak.total_instances >= mean.total_instances and peak.total_gpus >= mean.total_gpus
    # every pool of the peak plan, re-sized at the mean with the peak plan's routing, needs no more
    options = replace(peak_run.plan.options, sizing_rate_per_s=1000.0, mean_rate_per_s=None,
                      rate_basis="mean", arrival_dispersion=())  # fmt: skip
    from fleetopt.core.planner import Planner

    at_mean = Planner(peak_run.workload, peak_run.plan.hardware, options)
    for pool, again in zip(peak.pools, at_mean.fleet(peak.routing).pools, strict=True):
        assert pool.instances >= again.instances


def test_the_peak_basis_sizes_at_the_busiest_minute_of_the_log(shared_dir) -> None:
    """azure-2023: the busiest 1-min window holds 854 arrivals against a mean of 481.12 (FACTS §5's
    trace; the window counts are pinned against numpy in test_workload_stats)."""
    from fleetopt.api import plan_workload
    from fleetopt.core.arrivals import denoised_counts

    run = plan_workload("azure-2023", ttft_slo_s=0.5, mean_rate_per_s=1000)
    counts = run.arrivals.counts.counts
    assert run.arrivals.observed_factor == pytest.approx(counts.max() / counts.mean())
    # sized on the busiest minute with its Poisson counting noise taken out (test_counting_noise.py)
    sizing = denoised_counts(run.arrivals.counts).counts
    assert run.plan.options.sizing_rate_per_s == pytest.approx(1000 * sizing.max() / sizing.mean())
    assert 1000 < run.plan.options.sizing_rate_per_s < 1000 * counts.max() / counts.mean()
    assert run.document["inputs"]["arrival_rate_per_s"] == 1000
    assert run.document["inputs"]["sizing_rate_per_s"] == run.plan.options.sizing_rate_per_s
    # a p50 basis is below this log's mean: it sizes at the mean (never below it)
    p50 = plan_workload("azure-2023", ttft_slo_s=0.5, mean_rate_per_s=1000, rate_basis="p50")
    assert p50.plan.options.sizing_rate_per_s == 1000.0


def test_a_summary_with_window_counts_plans_like_the_log(shared_dir) -> None:
    """A summary of the log (its histogram and 1 s arrival windows, no timestamps) gets the same
    rate basis, the same C_a² and so the same fleet as the log itself."""
    from fleetopt.api import plan_workload
    from fleetopt.core.summary import summary_from_workload, workload_from_summary
    from fleetopt.io.workloads import load_workload

    log = load_workload("azure-2023-code")
    summary = workload_from_summary(summary_from_workload(log, "code", window_us=1_000_000), "summary")
    assert summary.arrival_times_s is None
    from_log = plan_workload(log, ttft_slo_s=0.5, mean_rate_per_s=1000)
    from_summary = plan_workload(summary, ttft_slo_s=0.5, mean_rate_per_s=1000)
    assert from_summary.plan.options.sizing_rate_per_s == pytest.approx(
        from_log.plan.options.sizing_rate_per_s
    )
    assert [p.instances for p in from_summary.plan.best.pools] == [
        p.instances for p in from_log.plan.best.pools
    ]
    scvs = [p.arrival_scv for p in from_log.plan.best.pools]
    assert [p.arrival_scv for p in from_summary.plan.best.pools] == pytest.approx(scvs, rel=1e-9)


# -------------------------------------------------------------------------------------------- schedules


def _datetime_log(tmp_path, days: float, seed: int = 0):
    """A log with ISO date-times over ``days`` days: a day-time hump (busy 09:00–17:00 UTC)."""
    import datetime

    rng = np.random.default_rng(seed)
    start = datetime.datetime(2024, 3, 4, 6, 30, tzinfo=datetime.timezone.utc)  # a Monday, 06:30
    seconds = np.sort(rng.random(int(4000 * days)) * days * 86400.0)
    hours = ((start.hour + start.minute / 60 + seconds / 3600.0) % 24.0).astype(int)
    keep = rng.random(seconds.size) < np.where((hours >= 9) & (hours < 17), 1.0, 0.25)
    seconds = seconds[keep]
    rows = [
        f"{(start + datetime.timedelta(seconds=float(t))).strftime('%Y-%m-%d %H:%M:%S.%f')},"
        f"{int(rng.integers(50, 3000))},{int(rng.integers(5, 400))}"
        for t in seconds
    ]
    path = tmp_path / f"log-{days}.csv"
    path.write_text("timestamp,input_tokens,output_tokens\n" + "\n".join(rows) + "\n")
    return path


def test_a_daily_schedule_tiles_the_day_never_exceeds_the_static_fleet_and_adds_up(tmp_path) -> None:
    from fleetopt.api import plan_workload

    path = _datetime_log(tmp_path, 2.5)
    run = plan_workload(str(path), ttft_slo_s=1.0, mean_rate_per_s=500, schedule_window_s=3600.0)
    schedule = run.schedule
    assert schedule.periodic and schedule.period_s == 86400.0 and len(schedule.windows) == 24
    document = run.document["schedule"]
    assert document["origin_utc"] == "2024-03-04T00:00:00Z"  # midnight UTC of the first arrival's day
    assert [w["start_s"] for w in document["windows"]] == [3600.0 * k for k in range(24)]
    assert document["windows"][-1]["end_s"] == 86400.0
    static = {
        name: p.instances for name, p in zip(run.plan.best.pool_names, run.plan.best.pools, strict=True)
    }
    hardware = dict(zip(run.plan.best.pool_names, run.plan.best.hardware, strict=True))
    total = 0
    for window in document["windows"]:
        for name, count in window["instances"].items():
            assert 0 <= count <= static[name]
        gpus = sum(count * hardware[name].gpus_per_instance for name, count in window["instances"].items())
        assert window["gpus"] == gpus
        total += gpus * (window["end_s"] - window["start_s"])
    assert document["gpu_hours_per_period"] == total / 3600.0
    assert document["static_gpu_hours_per_period"] == run.plan.best.total_gpus * 24.0
    # busy daytime hours need more than the quiet night, and the busiest hour holds the static fleet
    day = sum(document["windows"][10]["instances"].values())
    night = sum(document["windows"][2]["instances"].values())
    assert day > night
    assert max(sum(w["instances"].values()) for w in document["windows"]) == sum(static.values())


def test_a_week_long_log_gets_a_weekly_schedule_from_monday(tmp_path) -> None:
    from fleetopt.core.schedule import schedule_period

    assert schedule_period(7 * 86400.0) == (604800.0, True)
    assert schedule_period(86399.0) == (86399.0, False)
    from fleetopt.api import plan_workload

    path = _datetime_log(tmp_path, 7.2, seed=1)
    run = plan_workload(str(path), ttft_slo_s=1.0, mean_rate_per_s=100, schedule_window_s=86400.0)
    document = run.document["schedule"]
    assert document["period_s"] == 604800.0 and len(document["windows"]) == 7
    assert document["origin_utc"] == "2024-03-04T00:00:00Z"  # the log starts on a Monday


def test_the_schedule_reads_back_and_writes_csv(tmp_path) -> None:
    from typer.testing import CliRunner

    from fleetopt.cli import app
    from fleetopt.io.plans import read_plan

    path = _datetime_log(tmp_path, 1.2)
    plan, csv_path = tmp_path / "plan.yaml", tmp_path / "schedule.csv"
    result = CliRunner().invoke(
        app,
        ["plan", "--cdf", str(path), "--slo", "1s", "--rate", "300", "--schedule", "6h", "--schedule-csv",
         str(csv_path), "-o", str(plan)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    plan_file = read_plan(plan)
    schedule = plan_file.schedule
    assert schedule is not None and len(schedule.windows) == 4 and schedule.window_s == 21600.0
    assert schedule.origin_utc.isoformat() == "2024-03-04T00:00:00+00:00" and schedule.periodic
    lines = csv_path.read_text().splitlines()
    names = "".join(f"{name}_instances," for name in schedule.pools)
    assert lines[0] == f"start_s,end_s,start_utc,arrival_rate_per_s,{names}gpus"
    first = lines[1].split(",")
    assert first[:3] == ["0", "21600", "2024-03-04T00:00:00Z"]
    assert [int(v) for v in first[4:-1]] == [schedule.windows[0].instances[name] for name in schedule.pools]
    gpus = {pool.name: pool.hardware.gpus_per_instance for pool in plan_file.fleet.pools}
    assert int(first[-1]) == sum(n * gpus[name] for name, n in schedule.windows[0].instances.items())


def test_a_summary_cannot_be_replayed_but_its_profile_can(shared_dir) -> None:
    from fleetopt.api import crosscheck_setup_run, plan_workload
    from fleetopt.core.arrivals import workload_window_counts
    from fleetopt.core.crosscheck import setup_from_plan
    from fleetopt.core.summary import summary_from_workload, workload_from_summary
    from fleetopt.io.workloads import load_workload

    log = load_workload("azure-2023-conv")
    summary = workload_from_summary(summary_from_workload(log, "conv", window_us=1_000_000), "conv summary")
    run = plan_workload(summary, ttft_slo_s=1.0, mean_rate_per_s=20, service_model="lockstep")
    setup = setup_from_plan(run.plan)
    with pytest.raises(
        ValidationError, match="is a workload summary: .* follow its windows with --arrivals profile"
    ):
        crosscheck_setup_run(setup, summary, service_model="lockstep", seeds=1, arrivals="replay")
    check = crosscheck_setup_run(
        setup, summary, service_model="lockstep", seeds=1, arrivals="profile", requests=20_000
    )
    assert check.arrival_process == "profile" and check.mean_rate_per_s == 20
    minutes = workload_window_counts(summary, 60.0)  # the profile follows 1-minute windows
    assert check.rate_factor == pytest.approx(20 / (minutes.counts.sum() / minutes.span_s))
