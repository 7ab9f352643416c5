"""`fleetopt plan` / `simulate` / `workload show` / `drift` on a log's rate profile through the CLI:
what every output says about the rate basis, the errors, replay on the log's own time scale, --plot."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from fleetopt.cli import app

runner = CliRunner()


def _plan_json(*args: str) -> dict:
    result = runner.invoke(app, ["plan", *args, "-f", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _utc_minutes(name: str) -> np.ndarray:
    """Arrivals per full UTC clock minute of a bundled log, counted here from its times and its
    first arrival's UTC moment (the planner's windows are these)."""
    from fleetopt.io.workloads import load_workload

    log = load_workload(name)
    epoch_s = log.arrival_span.first_us / 1e6 + log.arrival_times_s
    minutes = np.floor(epoch_s / 60.0).astype(np.int64)
    first, last = int(np.ceil(epoch_s.min() / 60.0)), int(np.floor(epoch_s.max() / 60.0))
    full = minutes[(minutes >= first) & (minutes < last)]
    return np.bincount(full - first, minlength=last - first).astype(float)


def test_the_table_states_the_basis_with_the_peak_to_mean_ratio() -> None:
    counts = _utc_minutes("azure-2023-code")
    ratio = counts.max() / counts.mean()
    result = runner.invoke(app, ["plan", "--cdf", "azure-2023-code", "--slo", "500ms", "--rate", "1000"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "mean 1,000 req/s (given)" in text
    from fleetopt.core.arrivals import WindowCounts, denoised_counts

    profile = denoised_counts(WindowCounts(60.0, counts)).counts
    sizing = profile.max() / profile.mean()
    assert (
        f"rate basis (peak): sized for the peak 1-min window and its bursts within windows: "
        f"{1000 * sizing:,.0f} req/s, {sizing:.3f} × the mean 1,000 req/s "
        f"(the log's peak window ran {ratio:.3f} × its mean; {ratio - sizing:.3g} × of that was Poisson "
        "counting noise, which does not grow with the traffic, and is left out)" in text
    )
    assert "arrival SCV C_a²" in text


def test_the_document_carries_the_basis_and_a_mean_plan_of_a_bursty_log_warns() -> None:
    counts = _utc_minutes("azure-2023-code")
    ratio, dispersion = counts.max() / counts.mean(), counts.var() / counts.mean()
    peak = _plan_json("--cdf", "azure-2023-code", "--slo", "500ms", "--rate", "1000")
    basis = peak["inputs"]["rate_basis"]
    assert basis["basis"] == "peak" and basis["window_s"] == 60.0 and basis["overdispersed"] is True
    assert (
        basis["observed_factor"]
        == pytest.approx(basis["peak_to_mean_ratio"])
        == pytest.approx(ratio, rel=1e-9)
    )
    # the factor sized on leaves the busiest minute's counting noise out (test_counting_noise.py)
    assert 1 < basis["factor"] < ratio
    assert basis["counting_noise_factor"] == pytest.approx(ratio - basis["factor"])
    assert basis["profile"]["windows"] == counts.size
    assert peak["inputs"]["arrival_rate_per_s"] == 1000 and peak["inputs"][
        "sizing_rate_per_s"
    ] == pytest.approx(1000 * basis["factor"])
    assert all(pool["arrival_scv"] >= 1 for pool in peak["best"]["pools"].values())
    assert not any(note.startswith("WARNING") for note in peak["notes"])
    mean = _plan_json("--cdf", "azure-2023-code", "--slo", "500ms", "--rate", "1000", "--rate-basis", "mean")
    assert (
        mean["inputs"]["sizing_rate_per_s"] == 1000
        and mean["inputs"]["rate_basis"]["arrival_dispersion"] == []
    )
    assert all(pool["arrival_scv"] == 1 for pool in mean["best"]["pools"].values())
    assert (
        f"WARNING: sized on the mean of a bursty log: its busiest 1-min window runs at {ratio:.2f} × the "
        f"mean ({1000 * ratio:,.0f} req/s at this plan's mean), and its 1-min counts are over-dispersed "
        f"(index of dispersion {dispersion:.0f}, Poisson 1); this fleet will queue during the peaks — "
        "--rate-basis peak sizes for them"
    ) in mean["notes"]
    assert mean["best"]["total_gpus"] < peak["best"]["total_gpus"]


def test_a_cdf_plans_on_the_mean_and_refuses_a_peak_basis() -> None:
    cdf = _plan_json("--cdf", "azure", "--slo", "500ms")
    assert cdf["inputs"]["rate_basis"]["basis"] == "mean" and cdf["inputs"]["rate_basis"]["profile"] is None
    result = runner.invoke(app, ["plan", "--cdf", "azure", "--slo", "500ms", "--rate-basis", "peak"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --rate-basis peak: workload 'azure' has no arrival times spanning a 60 s window (a CDF, a "
        "log without a time column, or a shorter log); use --rate-basis mean, or a shorter --rate-window\n"
    )
    result = runner.invoke(app, ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate-basis", "max"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --rate-basis: 'max' is not allowed; use mean, peak, or pNN (a percentile of the windowed "
        "rates, e.g. p99)\n"
    )


def test_schedule_errors() -> None:
    result = runner.invoke(app, ["plan", "--cdf", "azure", "--slo", "500ms", "--schedule", "1h"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --schedule: workload 'azure' has no arrival times spanning a 60 s window, so it has no "
        "profile to schedule over\n"
    )
    result = runner.invoke(app, ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--schedule-csv", "s.csv"])
    assert result.exit_code == 2 and "--schedule-csv needs --schedule WINDOW" in result.output
    result = runner.invoke(app, ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--schedule", "30s"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --schedule: a 30 s window is shorter than the rate window 60 s it is built from; use a "
        "longer --schedule or a shorter --rate-window\n"
    )


def test_the_schedule_over_the_azure_hour_is_not_periodic() -> None:
    plan = _plan_json("--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000", "--schedule", "15min")
    schedule = plan["schedule"]
    minutes = _utc_minutes("azure-2023").size
    assert schedule["periodic"] is False and schedule["period_s"] == minutes * 60.0  # the full UTC minutes
    assert minutes == 58  # the hour's log: from 18:15:46 to 19:14:… UTC
    assert schedule["origin_utc"] == "2023-11-16T18:16:00Z"  # the first full UTC minute
    assert schedule["pools"] == list(plan["best"]["pools"])
    assert [w["end_s"] for w in schedule["windows"]] == [900.0, 1800.0, 2700.0, 3480.0]
    busiest = max(schedule["windows"], key=lambda w: w["arrival_rate_per_s"])
    assert busiest["instances"] == {name: p["instances"] for name, p in plan["best"]["pools"].items()}


def _short_log(tmp_path: Path, long_share: float = 0.0) -> Path:
    """A ten-minute log: 2 req/s with one busy minute at 6 req/s (``long_share`` of its prompts
    20,000–30,000 tokens long)."""
    rng = np.random.default_rng(0)
    rates = [2.0] * 4 + [6.0] + [2.0] * 5
    counts = rng.poisson(np.array(rates) * 60.0)
    times = np.sort(np.append(np.repeat(np.arange(10) * 60.0, counts) + rng.random(counts.sum()) * 60.0, 0.0))
    short, long = rng.integers(100, 2000, times.size), rng.integers(20_000, 30_000, times.size)
    inputs = np.where(rng.random(times.size) < long_share, long, short)
    outputs = rng.integers(10, 200, times.size)
    path = tmp_path / "short.csv"
    rows = "".join(f"{t:.6f},{i},{o}\n" for t, i, o in zip(times, inputs, outputs, strict=True))
    path.write_text("timestamp_s,input_tokens,output_tokens\n" + rows)
    return path


#: A 1 s SLO at a mean of 50 req/s under the lockstep service model.
_LOCKSTEP = ("--slo", "1s", "--rate", "50", "--service-model", "lockstep")


def _lockstep_plan(log: Path, folder: Path) -> Path:
    """A plan of ``log`` at a mean of 50 req/s, 1 s SLO, lockstep service, written to a file."""
    plan = folder / "plan.yaml"
    args = ["plan", "--cdf", str(log), *_LOCKSTEP]
    result = runner.invoke(app, [*args, "-o", str(plan)])
    assert result.exit_code == 0, result.output
    return plan


@pytest.mark.slow
def test_replay_runs_on_the_logs_own_time_scale(tmp_path: Path) -> None:
    """At 20× the log's rate a replay still spans the log's ten minutes (a scaled replay would span 30 s),
    and Poisson arrivals default to the rate the plan was sized for."""
    log = _short_log(tmp_path)
    plan = _lockstep_plan(log, tmp_path)
    planned = yaml.safe_load(plan.read_text())
    sizing = planned["inputs"]["sizing_rate_per_s"]
    replay = runner.invoke(app, ["simulate", "--plan", str(plan), "--replay", "--seeds", "2", "-f", "json"])
    assert replay.exit_code == 0, replay.output
    data = json.loads(replay.stdout)
    assert data["arrival_process"] == "replay" and data["replay"]["mean_rate_per_s"] == 50
    span = float(np.loadtxt(log, delimiter=",", skiprows=1, usecols=0).max())
    assert min(data["window_s"]) > 0.9 * span
    assert data["requests_per_seed"][0] == pytest.approx(50 * span + 50 * min(data["warmup_s"]), rel=0.1)
    simulate = ["simulate", "--plan", str(plan), "--seeds", "2", "-f", "json"]
    poisson = json.loads(runner.invoke(app, [*simulate, "--requests", "20000"]).stdout)
    assert poisson["arrival_process"] == "poisson" and poisson["arrival_rate_per_s"] == pytest.approx(sizing)
    # predictions made for burstier arrivals are re-evaluated for the Poisson ones simulated
    poisson_plan = all(pool["arrival_scv"] == 1 for pool in planned["best"]["pools"].values())
    assert poisson["analytical_source"] == ("plan" if poisson_plan else "re-evaluated")
    profile = json.loads(runner.invoke(app, [*simulate, "--arrivals", "profile"]).stdout)
    assert profile["arrival_process"] == "profile" and min(profile["window_s"]) > 0.85 * 600


def test_arrival_options_are_checked() -> None:
    result = runner.invoke(app, ["simulate", "--plan", "p.yaml", "--arrivals", "bursty"])
    assert result.exit_code == 1


def test_workload_show_plots_the_rate_profile() -> None:
    minutes = _utc_minutes("azure-2023-code").size
    result = runner.invoke(app, ["workload", "show", "azure-2023-code", "--plot"])
    assert result.exit_code == 0, result.output
    assert (
        "arrival rate per 60 s window (req/s; a column is the busiest of 1 window(s)), "
        f"over {minutes * 60:,} s:" in result.stdout
    )
    assert "█" in result.stdout
    data = json.loads(
        runner.invoke(app, ["workload", "show", "azure-2023-code", "--plot", "-f", "json"]).stdout
    )
    series = data["rate_series"]["rates_per_s"]
    assert (
        len(series) == data["rate_profile"]["windows"]
        and max(series) == data["rate_profile"]["peak_rate_per_s"]
    )


def test_drift_of_a_peak_plan_on_its_own_log_fits(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    result = runner.invoke(app, ["plan", "--cdf", "azure-2023-conv", "--slo", "500ms", "-o", str(plan)])
    assert result.exit_code == 0, result.output
    drift = runner.invoke(app, ["drift", "--plan", str(plan), "--cdf", "azure-2023-conv", "-f", "json"])
    assert drift.exit_code == 0, drift.output
    data = json.loads(drift.stdout)
    assert data["verdict"] == "fits" and data["replan"]["gpu_change"] == 0


def test_plan_validate_replay_replays_right_after_planning(tmp_path: Path) -> None:
    log = _short_log(tmp_path)
    args = ["plan", "--cdf", str(log), *_LOCKSTEP]
    result = runner.invoke(app, [*args, "--validate", "--replay", "--sim-seeds", "2", "-f", "json"])
    assert result.exit_code == 0, result.output
    validation = json.loads(result.stdout)["validation"]
    assert validation["arrival_process"] == "replay" and validation["replay"]["mean_rate_per_s"] == 50
    assert validation["rate_basis"] == "peak" and validation["plan_mean_rate_per_s"] == 50
    clash = runner.invoke(app, [*args, "--validate", "--replay", "--arrivals", "profile"])
    assert clash.exit_code == 1
    assert clash.stderr == "Error: --replay and --arrivals profile contradict each other; give one of them\n"


@pytest.mark.slow
def test_a_replay_runs_enough_seeds_for_its_rarest_pool(tmp_path: Path) -> None:
    """Cut to its first 1,000 arrivals a replay measures a few dozen long-pool requests per seed: by
    default it runs as many seeds as that pool needs for a P99 interval (at most 10), not 3."""
    log = _short_log(tmp_path, long_share=0.03)
    plan = _lockstep_plan(log, tmp_path)
    pools = yaml.safe_load(plan.read_text())["best"]["pools"]
    share = min(p["traffic_fraction"] for p in pools.values() if p["instances"] > 0)
    result = runner.invoke(
        app, ["simulate", "--plan", str(plan), "--replay", "--requests", "1000", "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    expected = min(10, max(3, -(-1.1 * 368 // (share * 1000))))
    assert len(data["seeds"]) == expected > 3
    fixed = json.loads(
        runner.invoke(
            app,
            ["simulate", "--plan", str(plan), "--replay", "--requests", "1000", "--seeds", "2", "-f", "json"],
        ).stdout
    )
    assert fixed["seeds"] == [1, 2]
