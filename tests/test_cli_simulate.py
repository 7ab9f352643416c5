"""fleetopt simulate --plan and plan --validate via CliRunner: exit codes, JSON shape, exact errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from fleetopt.cli import app

runner = CliRunner()
METRIC_FIELDS = {"analytical", "simulated", "ci95_half_width", "error_pct"}


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("plans") / "plan.yaml"
    result = runner.invoke(
        app,
        [
            "plan",
            "--cdf",
            "azure-2023",
            "--slo",
            "500ms",
            "--rate",
            "1000",
            "--service-model",
            "lockstep",
            "--serving",
            "llama-3-70b-a100-80gb-tp8",
            "--rate-basis",
            "mean",
            "--output",
            str(path),
        ],  # fmt: skip
    )
    assert result.exit_code == 0, result.output
    return path


def test_simulate_json_shape(plan_file: Path) -> None:
    result = runner.invoke(
        app, ["simulate", "--plan", str(plan_file), "--requests", "20000", "--seeds", "2", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data["pools"]) == {"short", "long"}
    for pool in data["pools"].values():
        for key in ("utilization", "p50_ttft_s", "p99_ttft_s", "p99_wait_s", "tpot_s"):
            assert set(pool[key]) == METRIC_FIELDS
        assert pool["p50_ttft_s"]["analytical"] is None  # the planner predicts no median
        assert isinstance(pool["warmed_up"], bool)
    planned = yaml.safe_load(plan_file.read_text())
    assert (
        data["pools"]["short"]["utilization"]["analytical"]
        == planned["best"]["pools"]["short"]["utilization"]
    )
    assert data["requests"] == 20000 and data["seeds"] == [1, 2]
    assert data["service_model"] == "lockstep" and data["dispatch"] == "least-loaded"
    assert data["arrival_process"] == "poisson" and data["analytical_source"] == "plan"
    assert data["warmup_fraction"] == 0.5
    assert data["warmed_up"] is False  # 10,000 warm-up requests (10 s) < the short pool's 160 s services
    assert any("NOT warmed up" in note for note in data["notes"])


@pytest.mark.slow
def test_default_request_count_warms_every_pool_up(plan_file: Path) -> None:
    result = runner.invoke(app, ["simulate", "--plan", str(plan_file), "--seeds", "2", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["warmed_up"] is True and data["requests"] > 100_000
    assert data["slo_met"] is True and data["verdict"].startswith("PASS")


def test_other_rate_re_evaluates_the_predictions(plan_file: Path) -> None:
    args = [
        "simulate",
        "--plan",
        str(plan_file),
        "--rate",
        "500",
        "--requests",
        "20000",
        "--seeds",
        "2",
        "-f",
        "json",
    ]
    data = json.loads(runner.invoke(app, args).stdout)
    assert data["analytical_source"] == "re-evaluated" and data["arrival_rate_per_s"] == 500
    planned = yaml.safe_load(plan_file.read_text())["best"]["pools"]["short"]["utilization"]
    # same pool, half the traffic: λ·E[S]/c halves exactly
    assert data["pools"]["short"]["utilization"]["analytical"] == pytest.approx(planned / 2, rel=1e-9)


def test_strict_exits_1_on_an_slo_breach(plan_file: Path, tmp_path: Path) -> None:
    document = yaml.safe_load(plan_file.read_text())
    document["inputs"]["ttft_slo_s"] = 0.1  # the short pool's P99 TTFT is 0.5 s by construction
    tight = tmp_path / "tight.yaml"
    tight.write_text(yaml.safe_dump(document))
    args = ["simulate", "--plan", str(tight), "--requests", "20000", "--seeds", "2"]
    relaxed = runner.invoke(app, args)
    assert relaxed.exit_code == 0
    assert "FAIL: a simulated P99 TTFT exceeds the SLO" in relaxed.stdout
    strict = runner.invoke(app, [*args, "--strict"])
    assert strict.exit_code == 1
    assert (
        strict.stderr
        == "Error: --strict: FAIL: the simulated P99 TTFT exceeds the SLO in the short, long pool(s)\n"
    )


def test_missing_plan_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    result = runner.invoke(app, ["simulate", "--plan", str(path)])
    assert result.exit_code == 1
    assert result.stderr == f"Error: plan {path}: no such file\n"


def test_broken_plan_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"kind": "fleetopt-plan", "schema_version": 1, "inputs": {')
    result = runner.invoke(app, ["simulate", "--plan", str(path)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: plan {path}: not valid json (")
    not_a_plan = tmp_path / "other.yaml"
    not_a_plan.write_text("a: 1\n")
    result = runner.invoke(app, ["simulate", "--plan", str(not_a_plan)])
    assert result.stderr == f"Error: plan {not_a_plan}: not a fleetopt plan (expected kind: fleetopt-plan)\n"


def test_bad_choices_and_replay_without_times(plan_file: Path) -> None:
    result = runner.invoke(app, ["simulate", "--plan", str(plan_file), "--dispatch", "fastest"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --dispatch: 'fastest' is not one of pooled, round-robin, least-loaded, least-kv, "
        "least-waiting, random, least-tokens\n"
    )
    result = runner.invoke(app, ["simulate", "--plan", str(plan_file), "--dispatch", "least-kv"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --dispatch: least-kv reads an engine's KV cache or waiting queue, which the lockstep model "
        "does not simulate; use --service-model physical or one of pooled, round-robin, least-loaded\n"
    )
    result = runner.invoke(app, ["simulate", "--plan", str(plan_file), "--scheduler", "v0"])
    assert result.exit_code == 1
    assert result.stderr == "Error: --scheduler: 'v0' is not one of vllm, slots\n"
    result = runner.invoke(app, ["simulate", "--plan", str(plan_file), "--service-model", "exact"])
    assert result.stderr == "Error: --service-model: 'exact' is not one of lockstep, fleet-sim, physical\n"
    result = runner.invoke(app, ["simulate", "--plan", str(plan_file), "--cdf", "azure", "--replay"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --replay: workload 'azure' has no arrival times (a CDF, or a log without a time "
        "column); drop --replay to simulate Poisson arrivals\n"
    )


@pytest.mark.slow
def test_replay_of_the_log_at_the_plan_rate(plan_file: Path) -> None:
    args = ["simulate", "--plan", str(plan_file), "--replay", "--rate", "1000", "--requests", "20000"]
    data = json.loads(runner.invoke(app, [*args, "--seeds", "2", "-f", "json"]).stdout)
    assert data["arrival_process"] == "replay" and data["replay"]["mean_rate_per_s"] == 1000
    # the log's own mean is (n − 1)/span = 8.022 req/s (FACTS §5): scaled, not compressed in time
    assert data["replay"]["rate_factor"] == pytest.approx(1000 / 8.0222, rel=1e-4)


def test_plan_validate_json_has_validation_and_the_output_file_does_not(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    args = ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000", "--service-model", "lockstep",
            "--serving", "llama-3-70b-a100-80gb-tp8", "--validate"]  # fmt: skip
    result = runner.invoke(
        app, [*args, "--sim-requests", "20000", "--sim-seeds", "2", "-o", str(path), "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["validation"]["kind"] == "fleetopt-validation"
    assert set(printed["validation"]["pools"]) == set(printed["best"]["pools"])
    written = json.loads(path.read_text())
    assert "validation" not in written
    assert written == {k: v for k, v in printed.items() if k != "validation"}


def test_plan_validate_table_prints_the_plan_then_the_simulation() -> None:
    args = ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000", "--service-model", "lockstep",
            "--serving", "llama-3-70b-a100-80gb-tp8", "--rate-basis", "mean", "--validate"]  # fmt: skip
    result = runner.invoke(app, [*args, "--sim-requests", "20000", "--sim-seeds", "2"])
    assert result.exit_code == 0, result.output
    assert "Simulation of the plan (B = 2,048, γ = 1, p_c = 0)" in result.stdout
    assert "short pool: 119 × 141 slots" in result.stdout
