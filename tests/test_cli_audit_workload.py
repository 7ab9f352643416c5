"""`fleetopt audit --cdf` (workload mode): exit codes, every figure in JSON, exact error text, plots."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from typer.testing import CliRunner

from fleetopt.cli import app

runner = CliRunner()

USAGE = "Usage: fleetopt audit [OPTIONS]\nTry 'fleetopt audit --help' for help.\n\n"
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Few rates and boundaries keep each run well under a second.
FAST = ["--rates", "500,1000", "--b-short", "1536,2048,4096"]


def _json(*args: str) -> dict:
    result = runner.invoke(
        app, ["audit", "--cdf", "azure-2023", "--rate", "1000", *FAST, *args, "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_carries_every_figure() -> None:
    data = _json("--current-gpus", "2000")
    assert data["mode"] == "workload"
    assert data["inputs"]["arrival_rate_origin"] == "given"
    assert data["inputs"]["ttft_slo_s"] == 0.5  # the default SLO
    assert data["b_short_tokens"] == 2048 and data["b_short_origin"] == "pool-routing optimum"
    names = [e["name"] for e in data["estimates"]]
    assert names == [
        "homogeneous (planner)",
        "current fleet",
        "closed form",
        "closed form, cliff ratio as ρ",
        "Eq. 8 (routed μ_l)",
        "planner: pool routing",
        "closed form + C&R",
        "Eq. 8 + C&R (recalibrated μ)",
        "planner: C&R",
        "planner: best plan",
    ]
    for row in data["estimates"]:
        assert {
            "gpus",
            "cost_per_year_usd",
            "savings_fraction",
            "savings_vs_current",
            "saved_usd_per_year",
        } <= set(row)
        assert row["cost_per_year_usd"] == pytest.approx(
            row["gpus"] * 2.21 * 8760, rel=1e-12
        )  # one GPU price for both pools here
    mu = data["throughputs"]
    assert mu["throughput_ratio"] == pytest.approx(mu["short_per_s"] / mu["homogeneous_per_s"])
    assert mu["cliff_ratio"] == 32.0
    assert data["current"]["gpus"] == 2000 and data["current"]["instances"] == 250
    assert data["current"]["feasible"] is True
    assert data["archetype"]["archetype"] == "II"
    assert data["lever"]["lever"] in ("raise B", "lower B", "add C&R", "neither")
    assert [r["b_short_tokens"] for r in data["savings_vs_b_short"]] == [1536, 2048, 4096]
    assert [r["arrival_rate_per_s"] for r in data["fleet_vs_rate"]] == [500.0, 1000.0]
    assert data["order"].startswith("Eq. 8")
    assert len(data["why_they_differ"]) == 4
    # Savings against the current fleet of 2,000 GPUs, by hand.
    planner = next(e for e in data["estimates"] if e["name"] == "planner: pool routing")
    assert planner["savings_vs_current"] == pytest.approx(1 - planner["gpus"] / 2000)
    assert planner["saved_usd_per_year"] == pytest.approx((2000 - planner["gpus"]) * 2.21 * 8760)


def test_table_prints_the_order_and_the_reasons() -> None:
    result = runner.invoke(app, ["audit", "--cdf", "azure-2023", "--rate", "1000", *FAST])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Order of the three estimates (closed form, Eq. 8, planner): Eq. 8 (routed μ_l) (35.1%) ≥" in out
    assert "Why they differ:" in out and "under-prediction" in out
    assert "Savings vs B_short" in out and "Fleet size vs arrival rate" in out
    assert "Lever: " in out and "Archetype II" in out


def test_yaml_is_the_same_dictionary() -> None:
    import yaml

    args = ["audit", "--cdf", "azure", "--rate", "1000", "--rates", "1000", "--b-short", "4096"]
    as_yaml = yaml.safe_load(runner.invoke(app, [*args, "-f", "yaml"]).stdout)
    as_json = json.loads(runner.invoke(app, [*args, "-f", "json"]).stdout)
    assert as_yaml == as_json


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--cdf", "azure", "--alpha", "0.8", "--rho", "4"],
            "--cdf (workload mode) cannot be combined with --alpha, --rho: with a workload, α, ρ, the "
            "throughputs and the prices come from the workload and the profiles",
        ),
        (
            ["--cdf", "azure", "--gpu-hour-usd", "3"],
            "--cdf (workload mode) cannot be combined with --gpu-hour-usd: with a workload, α, ρ, the "
            "throughputs and the prices come from the workload and the profiles",
        ),
        (["--alpha", "0.8", "--rho", "4", "--slo", "1s"], "--slo needs --cdf (the workload mode)"),
        (["--cdf", "azure", "--at-b-short", "0"], "Invalid value for '--at-b-short': must be > 0, got 0"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["audit", *args])
    assert result.exit_code == 2
    assert result.stderr == USAGE + f"Error: {message}\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--slo", "500"],
            "--slo: '500' is not a duration; write a number with a unit, e.g. 500ms or 0.5s (units: ",
        ),
        (["--compressibility", "1.5"], "--compressibility: '1.5' must be in [0, 1] (0% to 100%)"),
        (["--gamma", "0.5"], "gamma: 0.5 must be ≥ 1 (the band (B, γB] lies above B)"),
        (["--rates", "100,x"], "--rates: 'x' in '100,x' is not a number"),
        (
            ["--b-short", "100000"],
            "b-short: 100000 must be between 1 and the long context 65,536 (exclusive)",
        ),
        (
            ["--current-gpus", "2000", "--current-context", "8192"],
            "current context: 8,192 tokens is shorter than the longest request (14,089 tokens); "
            "the current fleet must hold every request (raise --current-context)",
        ),
        (["--plot", "audit.txt"], "--plot 'audit.txt': unknown file type '.txt'; use .png, .svg, .pdf"),
    ],
)
def test_bad_values_exit_1_with_exact_text(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["audit", "--cdf", "azure-2023", "--rate", "1000", *args])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"Error: {message}")
    assert result.stdout == ""


def test_unknown_workload_exits_1_without_traceback() -> None:
    result = runner.invoke(app, ["audit", "--cdf", "no-such-workload"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and "Traceback" not in result.output


def test_plot_without_matplotlib_gives_the_clear_message(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError
    target = tmp_path / "audit.png"
    result = runner.invoke(app, ["audit", "--cdf", "azure", *FAST, "--plot", str(target)])
    assert result.exit_code == 1
    assert result.stderr == "Error: --plot needs matplotlib: pip install 'fleetopt[plot]'\n"
    assert result.stdout == "" and not target.exists()


@pytest.mark.slow
@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="matplotlib (the 'plot' extra) is not installed")
def test_plot_writes_a_png(tmp_path) -> None:
    target = tmp_path / "audit.png"
    result = runner.invoke(app, ["audit", "--cdf", "azure", *FAST, "--plot", str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_bytes()[:8] == PNG_SIGNATURE
    assert f"plot written to {target}" in result.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["audit.png"]  # no temporary file left behind


def test_boundaries_covering_every_request_do_not_trip_on_float_cdf_sums() -> None:
    # azure's CDF sums to 1.0000000000000835 past its last breakpoint; α is clipped into [0, 1].
    args = ["--cdf", "azure", "--service-model", "fleet-sim", "--b-short", "4096,65535", "--rates", "1000"]
    result = runner.invoke(app, ["audit", *args, "-f", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["savings_vs_b_short"]
    assert rows[-1]["alpha"] == 1.0
