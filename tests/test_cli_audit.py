"""`fleetopt audit`, back-of-envelope mode: figures, formats, exit codes and exact error text."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from fleetopt.cli import app

runner = CliRunner()

USAGE = "Usage: fleetopt audit [OPTIONS]\nTry 'fleetopt audit --help' for help.\n\n"


def _json(*args: str) -> dict:
    result = runner.invoke(app, ["audit", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _estimates(data: dict) -> dict[str, dict]:
    return {row["name"]: row for row in data["estimates"]}


def test_closed_form_pool_routing_section3() -> None:
    # pool-routing §3: α = 0.80, ρ = 4 → 60%; α = 0.70, ρ = 2 → 35%.
    assert _estimates(_json("--alpha", "0.8", "--rho", "4"))["closed form"][
        "savings_fraction"
    ] == pytest.approx(0.6)
    assert _estimates(_json("--alpha", "70%", "--rho", "2"))["closed form"][
        "savings_fraction"
    ] == pytest.approx(0.35)


def test_closed_form_table_output() -> None:
    result = runner.invoke(app, ["audit", "--alpha", "0.8", "--rho", "4"])
    assert result.exit_code == 0
    assert "closed form" in result.stdout and "60.0%" in result.stdout
    assert "No baseline fleet" in result.stdout


def test_closed_form_with_rate_and_homogeneous_throughput_gives_instances() -> None:
    data = _json("--alpha", "0.8", "--rho", "4", "--rate", "1000", "--mu-homo", "4")
    estimates = _estimates(data)
    assert estimates["homogeneous fleet"]["instances"] == pytest.approx(250.0)  # 1000/4
    assert estimates["closed form"]["instances"] == pytest.approx(100.0)  # 250 × (1 − 0.6)
    assert data["baseline"] == "homogeneous fleet"


def test_eq8_pool_routing_section42_292_instances() -> None:
    # pool-routing §4.2: 917/13.5 + 83/0.37 = 67.9 + 224.3 ≈ 292.
    data = _json("--alpha", "0.917", "--mu-short", "13.5", "--mu-long", "0.37", "--rate", "1000")
    routed = _estimates(data)["two pools, routed μ_long"]
    assert round(routed["short_instances"], 1) == 67.9
    assert round(routed["long_instances"], 1) == 224.3
    assert round(routed["instances"]) == 292
    assert routed["gpus"] == pytest.approx(routed["instances"])  # 1 GPU per instance by default
    assert data["pricing"] == {"gpu_hour_usd": 2.21, "gpus_per_instance": 1, "hours_per_year": 8760.0}
    assert routed["cost_per_year_usd"] == pytest.approx(routed["instances"] * 2.21 * 8760)


def test_eq8_with_paper_headroom_is_301_and_closed_form_over_predicts() -> None:
    # pool-routing Table 2 / Appendix A: 72 + 229 = 301 with β_s = 1.05, β_l = 1.02;
    # homogeneous 1000/3.0 · 1.08 = 360.
    data = _json(
        "--alpha", "0.917", "--mu-short", "13.5", "--mu-long", "0.37", "--rate", "1000", "--mu-homo", "3.0",
        "--headroom-short", "1.05", "--headroom-long", "1.02", "--headroom-homo", "1.08", "--whole-instances",
    )  # fmt: skip
    estimates = _estimates(data)
    routed = estimates["two pools, routed μ_long"]
    assert (routed["short_instances"], routed["long_instances"], routed["instances"]) == (72, 229, 301)
    assert estimates["homogeneous fleet"]["instances"] == 360
    assert routed["savings_fraction"] == pytest.approx(1 - 301 / 360)
    closed = estimates["closed form"]
    assert closed["savings_fraction"] == pytest.approx(0.917 * (1 - 3.0 / 13.5))
    assert closed["over_prediction_factor"] == pytest.approx(closed["savings_fraction"] / (1 - 301 / 360))


def test_qwen3_mi300x_table5_through_the_cli() -> None:
    # pool-routing Table 5: 197 nodes (1,576 GPUs) $50.6M vs 137 nodes (1,096 GPUs) $35.2M, $15.4M/yr saved.
    args = (
        "--current-gpus",
        "1576",
        "--proposed-gpus",
        "1096",
        "--gpus-per-instance",
        "8",
        "--gpu-hour-usd",
        "3.67",
    )
    estimates = _estimates(_json(*args))
    current, proposed = estimates["current fleet"], estimates["proposed fleet"]
    assert (current["instances"], proposed["instances"]) == (197, 137)
    assert current["cost_per_year_usd"] == pytest.approx(1576 * 3.67 * 8760)  # 50,667,139.2 (paper: "$50.6M")
    assert round(proposed["cost_per_year_usd"] / 1e6, 1) == 35.2
    assert round(proposed["savings_usd_per_year"] / 1e6, 1) == 15.4
    assert round(100 * proposed["savings_fraction"], 1) == 30.5
    table = runner.invoke(app, ["audit", *args])
    assert table.exit_code == 0
    for text in ("$50.67M", "$35.24M", "$15.43M", "30.5%", "1,576", "1,096"):
        assert text in table.stdout


def test_cliff_ratio_versus_lockstep_throughput_ratio() -> None:
    # FACTS §2 item 1: 128 vs 16 slots at W = 8 ms, H = 0.65 ms → ρ = 8·18.4/91.2 = 1.61, not 8.
    data = _json("--alpha", "0.8", "--slots-short", "128", "--slots-long", "16")
    assert data["throughput_ratio"] == pytest.approx(8 * 18.4 / 91.2)
    estimates = _estimates(data)
    assert estimates["closed form, cliff ratio as ρ"]["savings_fraction"] == pytest.approx(0.7)
    assert any("1.61×" in line for line in data["why_they_differ"])
    # other W and H: t(16) = 8 + 16 = 24 ms, t(128) = 8 + 128 = 136 ms → ρ = 8·24/136 (by hand)
    data = _json(
        "--alpha", "0.8", "--slots-short", "128", "--slots-long", "16", "--iteration-base", "8ms",
        "--iteration-per-slot", "1ms",
    )  # fmt: skip
    assert data["throughput_ratio"] == pytest.approx(8 * 24 / 136)
    assert data["inputs"]["iteration_per_slot_s"] == pytest.approx(0.001)


def test_cr_increment_row() -> None:
    # FleetOpt Eq. 14: β·p_c·(1 − 1/ρ) on top of α(1 − 1/ρ); Agent-heavy β = 0.112, p_c = 0.75, ρ = 8.
    data = _json("--alpha", "0.74", "--rho", "8", "--beta", "0.112", "--compressibility", "75%")
    estimates = _estimates(data)
    assert estimates["closed form + C&R"]["savings_fraction"] == pytest.approx((0.74 + 0.112 * 0.75) * 7 / 8)
    assert data["inputs"]["compressible_fraction"] == 0.75


def test_yaml_carries_the_same_figures() -> None:
    args = ["audit", "--alpha", "0.8", "--rho", "4", "--current-gpus", "100"]
    as_json = json.loads(runner.invoke(app, [*args, "--format", "json"]).stdout)
    as_yaml = yaml.safe_load(runner.invoke(app, [*args, "--format", "yaml"]).stdout)
    assert as_yaml == as_json
    assert _estimates(as_json)["closed form"]["gpus"] == pytest.approx(40.0)


# --- errors: usage errors exit 2, bad values exit 1 ------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [],
            "nothing to estimate: give --alpha with --rho (closed form), or --alpha, --mu-short, "
            "--mu-long and --rate (Eq. 8), or --current-gpus with --proposed-gpus",
        ),
        (
            ["--alpha", "0.8"],
            "--alpha alone estimates nothing: add --rho (closed form), --slots-short with --slots-long, or "
            "--mu-short, --mu-long and --rate (Eq. 8)",
        ),
        (
            ["--alpha", "0.8", "--rho", "4", "--mu-short", "13.5", "--mu-homo", "3"],
            "--rho contradicts --mu-short/--mu-homo (ρ = μ_short/μ_homo): "
            "give the throughput ratio one way only",
        ),
        (
            ["--alpha", "0.9", "--mu-short", "13.5", "--mu-long", "0.37"],
            "--mu-long is for the two-pool fleet (Eq. 8), which also needs --alpha, --mu-short and --rate",
        ),
        (
            ["--alpha", "0.9", "--mu-short", "13.5"],
            "--mu-short needs --mu-long (Eq. 8) or --mu-homo (ρ = μ_short/μ_homo)",
        ),
        (
            ["--alpha", "0.8", "--slots-short", "128"],
            "--slots-short and --slots-long go together (the lock-step throughput ratio needs both)",
        ),
        (
            ["--alpha", "0.8", "--rho", "4", "--iteration-base", "8ms"],
            "--iteration-base/--iteration-per-slot need --slots-short and --slots-long",
        ),
        (
            ["--alpha", "0.8", "--rho", "4", "--whole-instances"],
            "--headroom-short/--headroom-long/--headroom-homo/--whole-instances need --rate",
        ),
        (
            ["--alpha", "0.8", "--rho", "4", "--compressibility", "0.5"],
            "--compressibility is the compressible share of the borderline band: it needs --beta",
        ),
        (
            ["--proposed-gpus", "10"],
            "--proposed-gpus needs a baseline: --current-gpus, or --rate with --mu-homo",
        ),
        (
            ["--rate", "1000"],
            "--rate needs --mu-homo (homogeneous fleet) or --alpha, --mu-short and --mu-long (Eq. 8)",
        ),
        (["--alpha", "0.8", "--rho", "0"], "Invalid value for '--rho': must be > 0, got 0.0"),
        (
            ["--alpha", "0.8", "--rho", "4", "--gpus-per-instance", "0"],
            "Invalid value for '--gpus-per-instance': must be > 0, got 0",
        ),
        (
            [
                "--alpha",
                "0.9",
                "--mu-short",
                "13.5",
                "--mu-long",
                "0.4",
                "--rate",
                "1",
                "--headroom-long",
                "0.9",
            ],
            "Invalid value for '--headroom-long': must be ≥ 1 (a factor on λ/μ; the paper uses 1.02–1.08), "
            "got 0.9",
        ),
        (
            ["--cdf", "azure", "--alpha", "0.8"],
            "--cdf (workload mode) cannot be combined with --alpha: with a workload, α, ρ, the throughputs "
            "and the prices come from the workload and the profiles",
        ),
        (["--alpha", "0.8", "--rho", "4", "--plot", "x.png"], "--plot needs --cdf (the workload mode)"),
    ],
)
def test_usage_errors_exit_2_with_exact_text(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["audit", *args])
    assert result.exit_code == 2
    assert result.stderr == USAGE + f"Error: {message}\n"
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--alpha", "1.5", "--rho", "4"], "--alpha: '1.5' must be in [0, 1] (0% to 100%)"),
        (
            ["--alpha", "lots", "--rho", "4"],
            "--alpha: 'lots' is not a number or percentage (e.g. 10% or 0.1)",
        ),
        (
            ["--alpha", "0.95", "--rho", "4", "--beta", "0.1"],
            "--alpha 0.95 plus --beta 0.1 is 1.05; the borderline band (B, γB] lies above B, "
            "so α + β = F(γB) must be ≤ 1",
        ),
        (
            ["--alpha", "0.8", "--slots-short", "128", "--slots-long", "16", "--iteration-base", "8"],
            "--iteration-base: '8' is not a duration; write a number with a unit, e.g. 500ms or 0.5s "
            "(units: us, µs, ms, s, min, h, d)",
        ),
    ],
)
def test_bad_values_exit_1_with_exact_text(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["audit", *args])
    assert result.exit_code == 1
    assert result.stderr == f"Error: {message}\n"
    assert result.stdout == ""
