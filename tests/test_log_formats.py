"""Request logs through DuckDB: every --log-format preset on its project-made sample, the layouts
(CSV, CSV.gz, JSON lines, JSON, Parquet, globs), the time unit, and errors that name the row."""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from fleetopt.cli import app
from fleetopt.core.workload import workload_from_requests
from fleetopt.core.workload_stats import observed_rate_per_s
from fleetopt.errors import ValidationError
from fleetopt.io.log_formats import LOG_FORMATS
from fleetopt.io.workloads import load_workload

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "data" / "logs"
sys.path.insert(0, str(ROOT / "scripts"))
from make_log_samples import REQUESTS  # noqa: E402  (the samples' ground truth)

runner = CliRunner()

#: Each preset's sample (tests/data/logs, written by scripts/make_log_samples.py).
SAMPLE_OF = {
    "azure": "azure.csv",
    "mooncake": "mooncake.jsonl",
    "burstgpt": "burstgpt.csv",
    "litellm": "litellm-spendlogs.csv",
    "langfuse": "langfuse-observations.jsonl",
    "helicone": "helicone.csv",
    "otel": "otel-spans.jsonl",
    "sglang": "sglang-request-metrics-20240510_12.log",
    "vllm-bench": "vllm-bench.json",
}
#: Presets whose clock is UTC (date-times or Unix-epoch numbers); the others count from their own zero.
UTC_PRESETS = {"azure", "litellm", "langfuse", "helicone", "otel", "sglang"}


def _truth():
    """The twelve requests every sample holds (inputs, outputs, arrival seconds from the first)."""
    inputs = np.array([r[0] for r in REQUESTS])
    outputs = np.array([r[1] for r in REQUESTS])
    return workload_from_requests(
        inputs, outputs, name="truth", arrival_times_s=np.array([r[2] for r in REQUESTS]) / 1e3
    )


def _same_requests(workload, truth) -> None:
    for key in ("total_tokens", "input_tokens", "output_tokens", "weights"):
        assert np.array_equal(getattr(workload, key), getattr(truth, key)), key
    assert np.array_equal(workload.arrival_times_s, truth.arrival_times_s)


def test_every_preset_has_a_sample() -> None:
    assert set(SAMPLE_OF) == set(LOG_FORMATS)


@pytest.mark.parametrize("preset", list(SAMPLE_OF))
def test_each_preset_reads_its_sample_exactly(preset: str) -> None:
    """The sample's twelve requests, their exact arrival times, and nothing the preset must skip
    (failed LiteLLM/Helicone/vLLM requests, Langfuse SPAN observations, OTel spans without usage)."""
    workload = load_workload(str(SAMPLES / SAMPLE_OF[preset]), log_format=preset)
    _same_requests(workload, _truth())
    assert workload.arrival_span.utc == (preset in UTC_PRESETS)
    if preset in UTC_PRESETS:
        assert workload.metadata["origin_utc"] == "2024-05-10T12:00:00Z"


def test_litellm_s3_payload_has_unix_seconds() -> None:
    """The StandardLoggingPayload JSON (startTime: float Unix seconds) reads like the SpendLogs export."""
    payload = load_workload(str(SAMPLES / "litellm-payload.jsonl"), log_format="litellm")
    _same_requests(payload, _truth())
    assert payload.metadata["origin_utc"] == "2024-05-10T12:00:00Z"


def test_otel_reads_both_attribute_generations() -> None:
    """Every third span of the sample uses gen_ai.usage.prompt_tokens/completion_tokens (the older
    names); the rest input_tokens/output_tokens; HTTP spans without usage are not requests."""
    spans = [json.loads(line) for line in (SAMPLES / "otel-spans.jsonl").read_text().splitlines()]
    keys = {
        a["key"]
        for d in spans
        for s in d["resourceSpans"][0]["scopeSpans"][0]["spans"]
        for a in s["attributes"]
    }
    assert {"gen_ai.usage.prompt_tokens", "gen_ai.usage.input_tokens"} <= keys
    assert load_workload(str(SAMPLES / "otel-spans.jsonl"), log_format="otel").request_count == 12


def test_unknown_preset_lists_the_presets() -> None:
    with pytest.raises(ValidationError) as error:
        load_workload(str(SAMPLES / "azure.csv"), log_format="nginx")
    assert str(error.value) == f"unknown log format 'nginx' (allowed: {', '.join(LOG_FORMATS)})"


def test_a_preset_column_missing_is_named(tmp_path: Path) -> None:
    path = tmp_path / "spend.csv"
    path.write_text("prompt_tokens,completion_tokens\n5,6\n")
    workload = load_workload(str(path), log_format="litellm")  # no startTime: no arrivals
    assert workload.arrival_times_s is None and workload.request_count == 1
    with pytest.raises(ValidationError) as error:
        load_workload(str(path), log_format="langfuse")
    assert str(error.value) == (
        f"{path}: no input column among prompt_tokens, completion_tokens (recognised: inputUsage; "
        "name one with --input-column)"
    )


# -- layouts: gzip, Parquet, JSON, globs ---------------------------------------------------------


def test_gzip_crlf_and_bom_through_duckdb(tmp_path: Path) -> None:
    text = "\ufeffTIMESTAMP,ContextTokens,GeneratedTokens\r\n" + "".join(
        f"2024-05-10 12:00:{ms // 1000:02d}.{ms % 1000:03d}0000,{i},{o}\r\n"
        for i, o, ms in REQUESTS
        if ms < 60_000
    )
    path = tmp_path / "log.dat"  # no suffix: gzip is recognised by its magic bytes
    path.write_bytes(gzip.compress(text.encode()))
    _same_requests(load_workload(str(path)), _truth())


def test_parquet_log_and_a_glob_of_files(tmp_path: Path) -> None:
    from fleetopt.io.logs import connect

    rows = [(i, o, ms * 1000) for i, o, ms in REQUESTS]
    connect().execute(
        "COPY (SELECT * FROM (VALUES "
        + ", ".join(f"({i}, {o}, {us})" for i, o, us in rows)
        + ") AS t(input_tokens, output_tokens, arrival_offset_us)) "
        + f"TO '{tmp_path / 'log.parquet'}' (FORMAT parquet)"
    )
    _same_requests(load_workload(str(tmp_path / "log.parquet")), _truth())
    folder = tmp_path / "parts"
    folder.mkdir()
    lines = (SAMPLES / "azure.csv").read_text().splitlines()
    (folder / "a.csv").write_text("\n".join(lines[:6]) + "\n")
    (folder / "b.csv").write_text("\n".join(lines[:1] + lines[6:]) + "\n")
    _same_requests(load_workload(str(folder / "*.csv")), _truth())
    with pytest.raises(ValidationError) as error:
        load_workload(str(folder / "*.parquet"))
    assert str(error.value) == f"{folder / '*.parquet'}: the pattern matches no file"


def test_a_url_needs_a_recognisable_name_or_format() -> None:
    with pytest.raises(ValidationError) as error:
        load_workload("s3://bucket/logs/latest")
    assert str(error.value) == (
        "s3://bucket/logs/latest: cannot tell the format from the name; give --input-format "
        "(azure, csv, jsonl, json, parquet or summary)"
    )


# -- the time unit -----------------------------------------------------------------------------


def test_a_millisecond_column_read_as_seconds_is_1000x_off_until_told(tmp_path: Path) -> None:
    """The issue's case: a ms column without a suffix is read as seconds (rate 1000× too low);
    --time-unit ms fixes it."""
    path = tmp_path / "log.csv"
    path.write_text("input_tokens,output_tokens,ts\n" + "".join(f"{i},{o},{ms}\n" for i, o, ms in REQUESTS))
    wrong = observed_rate_per_s(load_workload(str(path), time_column="ts"))
    right = observed_rate_per_s(load_workload(str(path), time_column="ts", time_unit="ms"))
    span_s = REQUESTS[-1][2] / 1e3
    assert right == pytest.approx(11 / span_s, rel=1e-12)
    assert wrong == pytest.approx(right / 1000, rel=1e-12)
    result = runner.invoke(app, ["workload", "show", str(path), "--time-unit", "minutes"])
    assert result.exit_code == 1
    assert result.stderr == "Error: --time-unit: 'minutes' is not a time unit (allowed: s, ms, us, ns)\n"


# -- errors that DuckDB locates (no careful reader: Parquet, preset filters) ---------------------


def test_a_bad_row_in_parquet_is_named_by_row_and_field(tmp_path: Path) -> None:
    from fleetopt.io.logs import connect

    path = tmp_path / "bad.parquet"
    connect().execute(
        "COPY (SELECT * FROM (VALUES (5, 3), (7, -2), (9, 1)) AS t(input_tokens, output_tokens)) "
        f"TO '{path}' (FORMAT parquet)"
    )
    with pytest.raises(ValidationError) as error:
        load_workload(str(path))
    assert str(error.value) == f"{path}, row 2: output_tokens = -2 is negative (token counts are ≥ 0)"


def test_a_fractional_count_in_a_filtered_preset_is_named(tmp_path: Path) -> None:
    path = tmp_path / "obs.jsonl"
    rows = [
        {"type": "SPAN", "startTime": "2024-05-10T12:00:00Z", "inputUsage": 0, "outputUsage": 0},
        {"type": "GENERATION", "startTime": "2024-05-10T12:00:01Z", "inputUsage": 12.5, "outputUsage": 4},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValidationError) as error:
        load_workload(str(path), log_format="langfuse")
    assert str(error.value) == f"{path}, row 2: inputUsage = '12.5' is not a whole number of tokens"


def test_presets_on_the_command_line(tmp_path: Path) -> None:
    target = tmp_path / "sglang-request-metrics-20240510_13.log"
    shutil.copy(SAMPLES / SAMPLE_OF["sglang"], target)
    result = runner.invoke(app, ["workload", "show", str(target), "--log-format", "sglang", "-f", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["request_count"] == 12
    assert data["arrivals"]["span_s"] == REQUESTS[-1][2] / 1e3
