"""Workload summaries: every command gives a summary the answers it gives the raw log, summaries of
two halves merge into the whole, the three file forms agree, and bad summaries are refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from fleetopt.cli import app
from fleetopt.core.summary import merge_summaries, summary_from_workload, workload_from_summary
from fleetopt.core.workload_stats import arrival_window_counts, observed_rate_per_s
from fleetopt.errors import ValidationError
from fleetopt.io.summaries import read_summary_json, summary_document
from fleetopt.io.workloads import load_workload, summarize_source

runner = CliRunner()

#: Arrival statistics that need each arrival (a summary reports them as null).
PER_ARRIVAL = (
    "interarrival_scv",
    "interarrival_cv",
    "peak_requests_per_min",
    "peak_rate_per_s",
    "peak_to_mean_ratio",
)


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    """An Azure-format log of 3,000 bursty requests over ~40 minutes, and its two halves by time."""
    folder = tmp_path_factory.mktemp("summaries")
    rng = np.random.default_rng(16)
    count = 3_000
    gaps = rng.exponential(0.8, count) * np.where(rng.random(count) < 0.1, 8.0, 1.0)
    offsets_us = np.cumsum(np.round(gaps * 1e6).astype(np.int64))
    inputs = np.minimum(rng.lognormal(6.5, 1.1, count).astype(np.int64) + 1, 30_000)
    outputs = np.minimum(rng.lognormal(4.0, 1.0, count).astype(np.int64), 3_000)
    origin = np.datetime64("2024-05-10T09:59:31.250000", "us")
    lines = [
        f"{str(origin + np.timedelta64(int(t), 'us')).replace('T', ' ')},{i},{o}"
        for t, i, o in zip(offsets_us, inputs, outputs, strict=True)
    ]
    header = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    paths = {"whole": folder / "whole.csv", "first": folder / "first.csv", "second": folder / "second.csv"}
    half = count // 2
    paths["whole"].write_text(header + "\n".join(lines) + "\n")
    paths["first"].write_text(header + "\n".join(lines[:half]) + "\n")
    paths["second"].write_text(header + "\n".join(lines[half:]) + "\n")
    for name in ("whole", "first", "second"):
        summary = folder / f"{name}.parquet"
        result = runner.invoke(app, ["workload", "summarize", str(paths[name]), "-o", str(summary)])
        assert result.exit_code == 0, result.output
        paths[f"{name}-summary"] = summary
    merged = folder / "merged.json"
    result = runner.invoke(
        app,
        ["workload", "merge", str(paths["first-summary"]), str(paths["second-summary"]), "-o", str(merged)],
    )
    assert result.exit_code == 0, result.output
    paths["merged"] = merged
    return paths


def _json(args: list[str], exit_code: int = 0) -> dict:
    result = runner.invoke(app, [*args, "-f", "json"])
    assert result.exit_code == exit_code, result.output
    return json.loads(result.stdout)


def _drop(document, *paths: str):
    """``document`` without the keys at the dotted ``paths`` (``*`` matches any key)."""
    for path in paths:
        parts = path.split(".")

        def walk(node, depth=0, parts=parts):
            if not isinstance(node, dict):
                return
            key = parts[depth]
            keys = list(node) if key == "*" else [key]
            for k in keys:
                if k not in node:
                    continue
                if depth == len(parts) - 1:
                    del node[k]
                else:
                    walk(node[k], depth + 1, parts)

        walk(document)
    return document


def _per_arrival(prefix: str) -> list[str]:
    return [f"{prefix}.{key}" for key in PER_ARRIVAL]


def test_the_plan_of_a_summary_is_the_plan_of_its_log(logs) -> None:
    """Every fleet, cost, rate and the fingerprint's hash are identical; only what needs each
    arrival (the gaps' variance, the sliding peak) is null for the summary."""
    raw = _json(["plan", "--cdf", str(logs["whole"]), "--slo", "500ms"])
    summary = _json(["plan", "--cdf", str(logs["whole-summary"]), "--slo", "500ms"])
    assert summary["inputs"]["arrival_rate_origin"] == raw["inputs"]["arrival_rate_origin"] == "observed"
    assert summary["inputs"]["arrival_rate_per_s"] == raw["inputs"]["arrival_rate_per_s"]
    fingerprint = summary["inputs"]["workload_fingerprint"]["arrivals"]
    assert all(fingerprint[k] is None for k in PER_ARRIVAL)
    ignore = ["inputs.workload", *_per_arrival("inputs.workload_fingerprint.arrivals")]
    assert _drop(summary, *ignore) == _drop(raw, *ignore)


@pytest.mark.slow
def test_two_halves_merged_plan_like_the_whole_log(logs) -> None:
    """The must-hold: summaries of two halves, merged, give the plan of the whole log."""
    whole = _json(["plan", "--cdf", str(logs["whole"]), "--slo", "500ms", "--rate", "250"])
    merged = _json(["plan", "--cdf", str(logs["merged"]), "--slo", "500ms", "--rate", "250"])
    ignore = ["inputs.workload", *_per_arrival("inputs.workload_fingerprint.arrivals")]
    assert _drop(merged, *ignore) == _drop(whole, *ignore)
    observed = _json(["plan", "--cdf", str(logs["merged"]), "--slo", "500ms"])
    assert observed["inputs"]["arrival_rate_per_s"] == observed_rate_per_s(load_workload(str(logs["whole"])))


def test_the_merged_summary_is_the_summary_of_the_whole(logs) -> None:
    whole = summarize_source(str(logs["whole"]), 1_000_000)
    merged = read_summary_json(logs["merged"].read_bytes(), "merged")
    for key in ("input_tokens", "output_tokens", "counts", "window_starts_us", "window_counts"):
        assert np.array_equal(getattr(whole, key), getattr(merged, key)), key
    assert merged.span == whole.span and merged.request_count == 3_000
    assert [s.source for s in merged.sources] == [str(logs["first"]), str(logs["second"])]


@pytest.mark.slow
def test_workload_show_audit_and_drift_agree_on_a_summary(logs, tmp_path: Path) -> None:
    raw = _json(["workload", "show", str(logs["whole"]), "--rate-window", "2min"])
    summary = _json(["workload", "show", str(logs["whole-summary"]), "--rate-window", "2min"])
    assert summary["rate_profile"] == raw["rate_profile"] and summary["rate_profile"]["windows"] >= 10
    ignore = ["name", "source", *_per_arrival("arrivals")]
    assert _drop(summary, *ignore) == _drop(raw, *ignore)

    audit_raw = _json(["audit", "--cdf", str(logs["whole"]), "--rate", "100"])
    audit_summary = _json(["audit", "--cdf", str(logs["whole-summary"]), "--rate", "100"])
    assert _drop(audit_summary, "workload", "inputs.workload") == _drop(
        audit_raw, "workload", "inputs.workload"
    )

    plan = tmp_path / "plan.yaml"
    assert (
        runner.invoke(app, ["plan", "--cdf", str(logs["first"]), "--slo", "500ms", "-o", str(plan)]).exit_code
        == 0
    )
    drift_raw = runner.invoke(app, ["drift", "--plan", str(plan), "--cdf", str(logs["whole"]), "-f", "json"])
    drift_summary = runner.invoke(
        app, ["drift", "--plan", str(plan), "--cdf", str(logs["merged"]), "-f", "json"]
    )
    assert drift_raw.exit_code == drift_summary.exit_code
    ignore = [
        "today.workload",
        "workload",
        "*.interarrival_scv",
        "*.*.interarrival_scv",
        "*.*.*.interarrival_scv",
    ]
    assert _drop(json.loads(drift_summary.stdout), *ignore) == _drop(json.loads(drift_raw.stdout), *ignore)


def test_simulate_takes_a_summary_but_replay_needs_the_log(logs, tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    assert (
        runner.invoke(app, ["plan", "--cdf", str(logs["whole"]), "--slo", "1s", "-o", str(plan)]).exit_code
        == 0
    )
    common = ["simulate", "--plan", str(plan), "--requests", "3000", "--seeds", "1"]
    raw = _json([*common, "--cdf", str(logs["whole"])])
    summary = _json([*common, "--cdf", str(logs["whole-summary"])])
    assert _drop(summary, "workload", "plan") == _drop(raw, "workload", "plan")
    result = runner.invoke(app, [*common, "--cdf", str(logs["whole-summary"]), "--replay"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --replay: 'whole.parquet' is a workload summary: it keeps arrivals per window, not each "
        "request's arrival time; replay the raw log, follow its windows with --arrivals profile, or drop "
        "--replay to simulate Poisson arrivals\n"
    )


def test_the_three_file_forms_hold_the_same_summary(logs, tmp_path: Path) -> None:
    source = str(logs["whole"])
    forms = {}
    for suffix in ("parquet", "json", "csv"):
        target = tmp_path / f"s.{suffix}"
        assert (
            runner.invoke(
                app, ["workload", "summarize", source, "-o", str(target), "--window", "5s"]
            ).exit_code
            == 0
        )
        forms[suffix] = load_workload(str(target))
    base = forms["parquet"]
    for workload in forms.values():
        for key in ("total_tokens", "input_tokens", "weights"):
            assert np.array_equal(getattr(workload, key), getattr(base, key))
        assert workload.arrival_span == base.arrival_span
        assert np.array_equal(workload.arrival_windows.counts, base.arrival_windows.counts)
        assert workload.arrival_windows.window_us == 5_000_000


def test_a_summary_of_the_bundled_trace_plans_like_it(tmp_path: Path) -> None:
    target = tmp_path / "azure-2023.parquet"
    assert runner.invoke(app, ["workload", "summarize", "azure-2023", "-o", str(target)]).exit_code == 0
    bundled = _json(["plan", "--cdf", "azure-2023", "--slo", "500ms"])
    summary = _json(["plan", "--cdf", str(target), "--slo", "500ms"])
    ignore = ["inputs.workload", *_per_arrival("inputs.workload_fingerprint.arrivals")]
    assert _drop(summary, *ignore) == _drop(bundled, *ignore)


def test_window_counts_rebin_only_in_multiples(logs) -> None:
    summary = load_workload(str(logs["whole-summary"]))
    raw = load_workload(str(logs["whole"]))
    for window_s in (1.0, 7.0, 60.0, 600.0):
        assert np.array_equal(arrival_window_counts(summary, window_s), arrival_window_counts(raw, window_s))
    with pytest.raises(ValidationError) as error:
        arrival_window_counts(summary, 1.5)
    assert str(error.value) == (
        "rate window: 1.5 s is not a whole multiple of the summary's window (1 s); summarize the log "
        "with a finer --window"
    )


# -- refusals ------------------------------------------------------------------------------------


def test_merging_refuses_what_would_not_add_up(logs, tmp_path: Path) -> None:
    first = summarize_source(str(logs["first"]), 1_000_000)
    coarse = summarize_source(str(logs["second"]), 60_000_000)
    with pytest.raises(ValidationError) as error:
        merge_summaries([first, coarse], ["a", "b"])
    assert str(error.value) == (
        "merge: b counts arrivals per 60 s and a per 1 s; summarize them with the same --window"
    )
    with pytest.raises(ValidationError) as error:
        merge_summaries([first, first], ["a", "b"])
    assert str(error.value) == (
        f"merge: b and a both contain the log {str(logs['first'])!r} (1,500 requests): its requests "
        "would count twice"
    )
    untimed = tmp_path / "untimed.csv"
    untimed.write_text("input_tokens,output_tokens\n5,6\n")
    with pytest.raises(ValidationError) as error:
        merge_summaries([first, summarize_source(str(untimed), 1_000_000)], ["a", "b"])
    assert str(error.value) == (
        "merge: b has no arrival times and a has; a merged summary needs them in every part"
    )
    result = runner.invoke(app, ["workload", "merge", str(logs["first"]), "-o", str(tmp_path / "m.json")])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {logs['first']}: is not a workload summary (it reads as azure); summarize it first with "
        "fleetopt workload summarize\n"
    )


def test_a_summary_table_with_invalid_rows_is_refused(tmp_path: Path) -> None:
    """A warehouse's query result counts what it found; values that are not token counts, or rows
    without a time, are named when the summary is read (never planned on)."""
    path = tmp_path / "warehouse.csv"
    path.write_text(
        "record,input_tokens,output_tokens,start_us,end_us,n,source,clock\n"
        "tokens,10,5,,,3,,\ntokens,-1,5,,,2,,\nwindow,,,0,1000000,4,,\nwindow,,,,,1,,\n"
        "log,,,0,500,5,db.logs,utc\n"
    )
    with pytest.raises(ValidationError) as error:
        load_workload(str(path))
    assert str(error.value) == (
        f"{path}: the log has rows that are not valid requests (2 with a token count missing, negative, "
        "fractional or above 100,000,000, or input + output = 0; 1 without an arrival time); fix or filter "
        "them where the log lives and summarize again"
    )


def test_a_tampered_summary_is_refused(logs, tmp_path: Path) -> None:
    document = summary_document(read_summary_json(logs["merged"].read_bytes(), "m"))
    document["windows"]["n"][0] += 1
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ValidationError) as error:
        load_workload(str(path))
    assert str(error.value) == (
        f"{path}: the arrival windows count 3,001 requests but the token histogram 3,000"
    )


def test_a_cdf_is_not_summarized(tmp_path: Path) -> None:
    result = runner.invoke(app, ["workload", "summarize", "azure", "-o", str(tmp_path / "s.json")])
    assert result.exit_code == 1
    assert result.stderr == "Error: azure: is a CDF table, not a request log; a summary counts requests\n"
    assert not (tmp_path / "s.json").exists()


def test_summary_from_a_loaded_log_equals_the_streamed_one(logs) -> None:
    """The summary DuckDB streams equals the one computed from the loaded log's atoms and times."""
    streamed = summarize_source(str(logs["whole"]), 1_000_000)
    loaded = summary_from_workload(load_workload(str(logs["whole"])), str(logs["whole"]))
    for key in ("input_tokens", "output_tokens", "counts", "window_starts_us", "window_counts"):
        assert np.array_equal(getattr(streamed, key), getattr(loaded, key)), key
    assert streamed.sources == loaded.sources
    workload = workload_from_summary(streamed, "s")
    assert workload.metadata["origin_utc"] == load_workload(str(logs["whole"])).metadata["origin_utc"]


def test_clock_windows_by_hand(tmp_path: Path) -> None:
    """The sample log: arrivals at 0, 1.25, 3, 5.25, 8, 11.25, 15, 19.25, 24, 29.25, 35, 41.25 s
    after 2024-05-10 12:00:00 UTC. Windows of 10 s on the UTC clock that lie within [0, 41.25] s:
    [0, 10) holds 5, [10, 20) 3, [20, 30) 2, [30, 40) 1 (41.25 is in a partial window). The log and
    its summary (1 s windows) give the same counts and the same first window."""
    from fleetopt.core.workload_stats import clock_windows

    sample = Path(__file__).resolve().parent / "data" / "logs" / "azure.csv"
    log = load_workload(str(sample))
    summary = workload_from_summary(summarize_source(str(sample), 1_000_000), "s")
    origin_us = 1_715_342_400_000_000  # 2024-05-10T12:00:00Z
    for workload in (log, summary):
        counts, first_window_us = clock_windows(workload, 10.0)
        assert counts.tolist() == [5, 3, 2, 1] and first_window_us == origin_us
    assert clock_windows(summary, 45.0) is None  # no 45 s window of the UTC clock lies within 41.25 s
