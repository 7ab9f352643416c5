"""Hostile inputs and environments (issue 17): one `Error:` line naming the input, the right exit
code, no traceback, nothing overwritten."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import fleetopt.api as api
from fleetopt.cli import INTERNAL_ERROR_EXIT, app

runner = CliRunner()


def _plan(tmp_path: Path, workload: str = "azure") -> Path:
    """A small plan of ``workload`` at 10 req/s and a 1 s SLO, written to tmp_path."""
    plan = tmp_path / "plan.yaml"
    result = runner.invoke(app, ["plan", "--cdf", workload, "--slo", "1s", "--rate", "10", "-o", str(plan)])
    assert result.exit_code == 0, result.output
    return plan


def test_json_nested_100000_deep_is_refused_by_name(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"cdf": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = runner.invoke(app, ["plan", "--cdf", str(deep), "--slo", "500ms"])
    assert result.exit_code == 1
    assert result.stderr == f"Error: {deep}: JSON nested too deeply to be a CDF\n"


def test_replay_of_a_log_whose_timestamps_are_all_equal(tmp_path: Path) -> None:
    log = tmp_path / "same.csv"
    log.write_text("input_tokens,output_tokens,timestamp\n10,5,1.0\n20,5,1.0\n30,5,1.0\n")
    plan = _plan(tmp_path, str(log))
    result = runner.invoke(app, ["simulate", "--plan", str(plan), "--cdf", str(log), "--replay"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --replay: the 3 arrival times of 'same.csv' span 0 s (all equal), so they give no rate to "
        "replay at; drop --replay\n"
    )


def test_a_hundred_million_simulated_requests_are_refused_up_front(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    result = runner.invoke(app, ["simulate", "--plan", str(plan), "--requests", "100000000"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: requests: 100,000,000 per seed is more than this simulator holds in memory "
        "(at most 10,000,000, about 1 GB); use more seeds instead\n"
    )


def test_output_never_replaces_the_input(tmp_path: Path) -> None:
    cdf = tmp_path / "cdf.json"
    text = '{"cdf": [[100, 0.5], [1000, 1.0]]}'
    cdf.write_text(text)
    result = runner.invoke(app, ["plan", "--cdf", str(cdf), "--slo", "1s", "--rate", "10", "-o", str(cdf)])
    assert result.exit_code == 1
    assert result.stderr == f"Error: --output {cdf}: that is the input file {cdf}; write the plan elsewhere\n"
    assert cdf.read_text() == text


def test_an_unwritable_output_is_one_line_and_changes_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = runner.invoke(
        app, ["plan", "--cdf", "azure", "--slo", "1s", "--rate", "10", "-o", str(blocker / "p.yaml")]
    )
    assert result.exit_code == 1
    assert result.stderr == f"Error: --output {blocker / 'p.yaml'}: the folder {blocker} does not exist\n"


def test_an_internal_error_is_one_line_asking_for_a_report(monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise TypeError("boom")

    monkeypatch.setattr(api, "queue_report", broken)
    result = runner.invoke(app, ["queue", "--servers", "10", "--load", "5"])
    assert result.exit_code == INTERNAL_ERROR_EXIT == 70
    assert result.stderr.startswith("Error: internal error (TypeError: boom) — this is a bug in fleetopt ")
    assert "Traceback" not in result.output
    debug = runner.invoke(app, ["--debug", "queue", "--servers", "10", "--load", "5"])
    assert isinstance(debug.exception, TypeError)  # the traceback is there for whoever asked


@pytest.mark.parametrize("value", ["1e308", "99999999999999999999"])
def test_jsonl_token_counts_beyond_any_context(tmp_path: Path, value: str) -> None:
    log = tmp_path / "big.jsonl"
    log.write_text(f'{{"input_length": {value}, "output_length": 5}}\n')
    result = runner.invoke(app, ["plan", "--cdf", str(log), "--slo", "500ms"])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {log}, line 1: input_length = ")
    assert result.stderr.endswith("is too large (at most 100,000,000 tokens per request)\n")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b"input_tokens;output_tokens\n10;5\n",
            "the columns are separated by semicolons, not commas; fleetopt reads "
            "comma-separated files (convert it, e.g. with `tr`)",
        ),
        (
            b"input_tokens\toutput_tokens\n10\t5\n",
            "the columns are separated by tabs, not commas; fleetopt reads "
            "comma-separated files (convert it, e.g. with `tr`)",
        ),
        (
            "input_tokens,output_tokens\n10,5\n".encode("utf-16"),
            "the file is UTF-16-encoded; save it as UTF-8",
        ),
        (
            b"\x01\x02\x00\x00binary",
            "not a text file (it contains NUL bytes: binary data, or UTF-16 without a BOM)",
        ),
        (
            b"input_tokens,input_tokens,output_tokens\n10,7,5\n",
            "column 'input_tokens' appears more than once in the header",
        ),
    ],
    ids=["semicolons", "tabs", "utf-16", "binary", "duplicate-column"],
)
def test_unreadable_logs_say_why(tmp_path: Path, content: bytes, message: str) -> None:
    log = tmp_path / "log.csv"
    log.write_bytes(content)
    result = runner.invoke(app, ["plan", "--cdf", str(log), "--slo", "1s"])
    assert result.exit_code == 1
    assert result.stderr == f"Error: {log}: {message}\n"


def _notes(args: list[str]) -> list[str]:
    import json

    result = runner.invoke(app, ["plan", *args, "-f", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["notes"]


def test_a_log_that_gives_no_rate_says_so(tmp_path: Path) -> None:
    log = tmp_path / "one.csv"
    log.write_text("input_tokens,output_tokens,timestamp\n10,5,1.0\n")
    assert (
        "the log's timestamps give no arrival rate (one request): planned at the default 1,000 req/s; "
        "give --rate" in _notes(["--cdf", str(log), "--slo", "1s"])
    )


def test_pools_of_different_models_are_flagged() -> None:
    notes = _notes(
        ["--cdf", "azure", "--slo", "2s", "--rate", "50", "--serving-long", "llama-3-70b-h100-80gb-tp8"]
    )
    assert any(
        n.startswith("the short pool serves llama-3.1-70b and the long pool llama-3-70b") for n in notes
    )


def test_a_full_disk_on_stdout_is_an_error_not_a_success(monkeypatch) -> None:
    """`fleetopt plan … > /dev/full`: the write fails with ENOSPC; exit 1 with one line, not 0."""
    import errno

    import fleetopt.render.output as output

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(output, "dumps", full)
    result = runner.invoke(app, ["plan", "--cdf", "azure", "--slo", "1s", "--rate", "10", "-f", "json"])
    assert result.exit_code == 1
    assert result.stderr == "Error: cannot write the output or read a file: No space left on device\n"


def test_drift_calls_an_unreadable_workload_unusable_input_exit_2(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    garbage = tmp_path / "garbage.csv"
    garbage.write_bytes(b"\x00\x01\x02binary")
    result = runner.invoke(app, ["drift", "--plan", str(plan), "--cdf", str(garbage)])
    assert result.exit_code == 2  # 1 means drift; this is unusable input
    assert result.stderr == (
        f"Error: {garbage}: not a text file (it contains NUL bytes: binary data, or UTF-16 without a BOM)\n"
    )


def test_an_implausible_observed_rate_is_flagged(tmp_path: Path) -> None:
    """Nanosecond timestamps in a column read as seconds: one request per 10⁹ s."""
    log = tmp_path / "ns.csv"
    rows = "".join(f"{100 + k},{10 + k},{k * 1_000_000_000}\n" for k in range(5))
    log.write_text("input_tokens,output_tokens,timestamp\n" + rows)
    notes = _notes(["--cdf", str(log), "--slo", "1s"])
    assert any(n.startswith("the log's observed rate is 1e-09 req/s, which looks wrong") for n in notes)


def test_an_integer_timestamp_beyond_the_clock_is_one_error(tmp_path: Path) -> None:
    """Found by the deep fuzz: a 23-digit integer timestamp overflowed int64 (an internal error)."""
    log = tmp_path / "far.jsonl"
    log.write_text(
        '{"input_length": 100, "output_length": 20, "timestamp": 0}\n'
        '{"input_length": 3000, "output_length": 200, "timestamp": 99999999999999999999500}\n'
    )
    result = runner.invoke(app, ["plan", "--cdf", str(log), "--slo", "1s", "--rate", "20"])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {log}, line 2: timestamp = '99999999999999999999500' is out of range for an arrival "
        "time (at most 2⁶² µs, about 146,000 years, from the clock's zero)\n"
    )


def test_drift_reads_the_routing_the_plan_reader_checked(tmp_path: Path) -> None:
    """Found by the deep fuzz: a plan whose best fleet lacks the old b_short_tokens key (the
    routing is in best.routing) was an internal error in the drift report. The plan reader now
    checks every field against the schema: the renamed key is one error naming it, and the fields
    allowed there (exit 2, no traceback)."""
    plan = _plan(tmp_path)
    text = plan.read_text()
    assert "\n  b_short_tokens: " in text
    plan.write_text(text.replace("\n  b_short_tokens: ", "\n  _short_tokens: ", 1))
    arguments = ["drift", "--plan", str(plan), "--cdf", "azure", "--rate", "10", "-f", "json"]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"Error: plan {plan}: best._short_tokens = ")
    assert "is not a known field; best has only label, feasible, reason, b_short_tokens," in result.stderr


def test_a_pool_of_requests_that_ask_for_no_output_plans(tmp_path: Path) -> None:
    """Found by the deep fuzz: a pool whose requests all have 0 output tokens decodes nothing, and
    the engine model's occupancy chain divided by that zero cost (an internal error)."""
    log = tmp_path / "prefill-only.csv"
    log.write_text("input_tokens,output_tokens\n100,0\n2000,0\n")
    result = runner.invoke(app, ["plan", "--cdf", str(log), "--slo", "1s", "--rate", "20", "-f", "json"])
    assert result.exit_code == 0, result.output
    import json

    best = json.loads(result.stdout)["best"]
    assert best["total_gpus"] >= 8
    assert all(pool["p99_ttft_s"] <= 1.0 for pool in best["pools"].values() if pool["instances"])


def test_a_summary_csv_with_an_infinite_first_arrival_is_one_error(tmp_path: Path) -> None:
    """Found by the deep fuzz (seed 59): a summary's ``log`` row whose start_us overflows float64
    (1e3080) was an internal error (OverflowError), not a message naming the file and field."""
    summary = tmp_path / "summary.csv"
    summary.write_text(
        "record,input_tokens,output_tokens,start_us,end_us,n,source,clock\n"
        "tokens,100,20,,,2,,\ntokens,2000,300,,,1,,\n"
        "window,,,0,1000000,2,,\nwindow,,,2000000,3000000,1,,\n"
        "log,,,1e3080,2500000,3,x,utc\n"
    )
    result = runner.invoke(app, ["plan", "--cdf", str(summary), "--slo", "1s", "--rate", "20"])
    assert result.exit_code == 1
    assert result.stderr == f"Error: {summary}: a start_us value of a log row is not a whole number of µs\n"
