"""``fleetopt queue``: outputs against FACTS §4, exit codes and the exact error text."""

from __future__ import annotations

import json
import math

import mpmath
import pytest
import yaml
from typer.testing import CliRunner

from fleetopt.cli import app

runner = CliRunner()


def _json(*args: str) -> dict:
    result = runner.invoke(app, ["queue", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_load_mode_matches_facts_4_in_units_of_the_service_time() -> None:
    data = _json("--servers", "100", "--load", "85")
    assert data["erlang_c"] == pytest.approx(0.074850495974551737, rel=1e-13)  # FACTS §4
    assert data["wait_quantile_service_times"] == pytest.approx(0.134193842939744, rel=1e-13)  # FACTS §4
    # M/M/c mean wait C/(c − a) in service times: 0.0748504959745517/15
    assert data["mean_wait_service_times"] == pytest.approx(0.074850495974551737 / 15, rel=1e-13)
    assert data["utilization"] == pytest.approx(0.85)
    assert data["time_unit"] == "mean service time"
    assert "mean_wait_s" not in data


def test_rate_mode_reports_seconds() -> None:
    # c = 14, a = λ/μ = 8 req/s × 1.25 s = 10 Erlangs (a FACTS §4 row).
    data = _json("--servers", "14", "--rate", "8", "--service-time", "1250ms")
    assert data["offered_load_erlangs"] == pytest.approx(10.0)
    assert data["erlang_c"] == pytest.approx(0.1741319335950498, rel=1e-13)  # FACTS §4
    # FACTS §4 gives the μ = 1 P99 wait 0.714307039488623; time scales with 1/μ = 1.25 s.
    assert data["wait_quantile_s"] == pytest.approx(1.25 * 0.714307039488623, rel=1e-13)
    assert data["time_unit"] == "s"
    assert data["service_time_s"] == 1.25


def test_scv_scales_the_waits_by_one_plus_scv_over_two() -> None:
    base = _json("--servers", "100", "--load", "85")
    heavy = _json("--servers", "100", "--load", "85", "--scv", "3")
    assert heavy["wait_quantile_service_times"] == pytest.approx(
        2 * base["wait_quantile_service_times"], rel=1e-13
    )


def test_quantile_option_and_yaml_output() -> None:
    result = runner.invoke(
        app, ["queue", "--servers", "1", "--load", "0.5", "--quantile", "0.9", "-f", "yaml"]
    )
    assert result.exit_code == 0
    data = yaml.safe_load(result.stdout)
    # M/M/1 at ρ = 0.5: P(W > t) = 0.5·e^{−0.5t} → t_0.9 = 2·ln 5
    assert data["wait_quantile_service_times"] == pytest.approx(2 * math.log(5), rel=1e-13)
    assert data["quantile"] == 0.9


def test_underflowing_erlang_c_is_reported_through_its_log() -> None:
    # mpmath at 50 digits from the definition: C = c·B/(c − a + a·B), B = p(c; a)/P(c; a).
    with mpmath.workdps(50):
        c, a = mpmath.mpf(100_000), mpmath.mpf(85_000)
        pmf = mpmath.exp(c * mpmath.log(a) - a - mpmath.loggamma(c + 1))
        b = pmf / (1 - mpmath.gammainc(c + 1, 0, a, regularized=True))
        exact = c * b / (c - a + a * b)
        exact_log10 = float(mpmath.log10(exact))
        shown = mpmath.nstr(exact, 4)
    data = _json("--servers", "100000", "--load", "85000")
    assert data["erlang_c"] == 0.0  # below the smallest double
    assert data["erlang_c_log10"] == pytest.approx(exact_log10, rel=1e-12)
    table = runner.invoke(app, ["queue", "--servers", "100000", "--load", "85000"])
    assert table.exit_code == 0
    assert shown == "1.716e-546"
    assert shown in table.stdout


def test_table_says_the_time_unit() -> None:
    result = runner.invoke(app, ["queue", "--servers", "100", "--load", "85"])
    assert result.exit_code == 0
    assert "P99 wait" in result.stdout
    assert "0.134194 × mean service time" in result.stdout
    assert "Waits are in units of the mean service time (1/μ)" in result.stdout
    seconds = runner.invoke(app, ["queue", "--servers", "100", "--rate", "85", "--service-time", "1s"])
    assert "134.2 ms" in seconds.stdout


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--servers", "100", "--load", "-5"],
            "--load: -5 is not allowed; the offered load (Erlangs) must be finite and ≥ 0",
        ),
        (
            ["--servers", "100", "--load", "120"],
            "the queue is unstable: load 120 ≥ servers 100 (utilization 1.2); "
            "waits grow without bound — add servers or lower the load",
        ),
        (
            ["--servers", "100", "--load", "100"],
            "the queue is unstable: load 100 ≥ servers 100 (utilization 1); "
            "waits grow without bound — add servers or lower the load",
        ),
        (
            ["--servers", "100", "--rate", "120", "--service-time", "1s"],
            "the queue is unstable: load 120 (--rate 120 req/s × --service-time 1 s) ≥ servers 100 "
            "(utilization 1.2); waits grow without bound — add servers or lower the load",
        ),
        (
            ["--servers", "0", "--load", "1"],
            "--servers: 0 is not allowed; the number of servers must be at least 1",
        ),
        (
            ["--servers", "10", "--rate", "-1", "--service-time", "1s"],
            "--rate: -1 is not allowed; the arrival rate (req/s) must be finite and ≥ 0",
        ),
        (
            ["--servers", "10", "--load", "5", "--scv", "-1"],
            "--scv: -1 is not allowed; a squared coefficient of variation is ≥ 0",
        ),
        (
            ["--servers", "10", "--load", "5", "--quantile", "1"],
            "--quantile: 1 is not allowed; it must be strictly between 0 and 1",
        ),
        (
            ["--servers", "10", "--load", "inf"],
            "--load: inf is not allowed; the offered load (Erlangs) must be finite and ≥ 0",
        ),
        (
            ["--servers", "10", "--rate", "1", "--service-time", "0s"],
            "--service-time: '0s' must be a positive, finite duration",
        ),
    ],
)
def test_bad_numbers_exit_1_with_the_exact_message(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["queue", *args])
    assert result.exit_code == 1
    assert result.stderr == f"Error: {message}\n"
    assert result.stdout == ""


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--servers", "abc", "--load", "1"],
            "Invalid value for '--servers' / '-c': "
            "Input should be a valid integer, unable to parse string as an integer",
        ),
        (
            ["--servers", "10", "--load", "lots"],
            "Invalid value for '--load' / '-a': "
            "Input should be a valid number, unable to parse string as a number",
        ),
        (
            ["--servers", "10", "--load", "5", "--rate", "3"],
            "Invalid value for '--load': cannot be combined with --rate/--service-time; "
            "give the load in Erlangs, or the rate and the service time",
        ),
        (
            ["--servers", "10"],
            "Invalid value for '--load': "
            "missing; give --load (Erlangs), or --rate (req/s) with --service-time",
        ),
        (
            ["--servers", "10", "--rate", "3"],
            "Invalid value for '--rate': needs --service-time (e.g. --service-time 1s)",
        ),
        (
            ["--servers", "10", "--rate", "3", "--service-time", "one second"],
            "Invalid value for '--service-time': 'one second' is not a duration; write a number with a unit, "
            "e.g. 500ms or 0.5s (units: us, µs, ms, s, min, h, d)",
        ),
    ],
)
def test_text_where_a_number_belongs_and_conflicting_options_are_usage_errors(
    args: list[str], message: str
) -> None:
    result = runner.invoke(app, ["queue", *args])
    assert result.exit_code == 2
    assert result.output.endswith(f"Error: {message}\n")
    assert "Traceback" not in result.output


def test_exact_gives_fifty_digits_of_hand_derivable_values() -> None:
    """c = 3, a = 2: B = (8/6)/(1 + 2 + 2 + 8/6) = 4/19 and C = 3B/(3 − 2 + 2B) = 4/9, by hand."""
    exact = _json("--servers", "3", "--load", "2", "--exact")["exact"]
    assert exact["digits"] == 50
    assert exact["erlang_c"] == "0." + "4" * 50
    with mpmath.workdps(60):
        assert exact["erlang_b"] == mpmath.nstr(mpmath.mpf(4) / 19, 50)
    assert exact["method"] == "recursion"
    assert exact["relative_difference_erlang_c"] < 1e-15


def test_exact_reaches_below_double_precision_and_says_how_far_the_fast_path_is() -> None:
    data = _json("--servers", "100000", "--load", "85000", "--exact")
    exact = data["exact"]
    assert exact["method"] == "incomplete gamma"
    assert exact["erlang_c"].startswith("1.71639967214214") and exact["erlang_c"].endswith("e-546")
    assert exact["log10_erlang_c"] == pytest.approx(data["erlang_c_log10"], rel=1e-14)
    assert exact["relative_difference_erlang_c"] < 1e-13
    table = runner.invoke(app, ["queue", "--servers", "100000", "--load", "85000", "--exact"])
    assert table.exit_code == 0
    assert "P(wait), mpmath 50 digits" in table.stdout
    assert "1.7163996721421485009…e-546" in table.stdout


def test_without_exact_there_is_no_exact_block() -> None:
    assert "exact" not in _json("--servers", "3", "--load", "2")
