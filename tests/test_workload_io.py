"""Readers: fast and careful paths agree, time units, large files, detection."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from fleetopt.errors import ValidationError
from fleetopt.io.workloads import detect_format, load_workload, read_request_log

ROWS = 20_000  # > 64 KiB of text: exercises the head-only detection and numpy's reader on disk


def _azure_text(rows: int, quote_row: int | None = None) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    offsets_us = np.cumsum(rng.integers(0, 2_000_000, rows))
    inputs = rng.integers(0, 9_000, rows)
    outputs = rng.integers(1, 900, rows)
    origin = np.datetime64("2023-11-16T23:59:00", "us")  # crosses midnight
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for k, (offset, i, o) in enumerate(zip(offsets_us, inputs, outputs, strict=True)):
        stamp = str(origin + np.timedelta64(int(offset), "us")).replace("T", " ") + "0"
        value = f'"{i}"' if k == quote_row else str(i)
        lines.append(f"{stamp},{value},{o}")
    return "\n".join(lines) + "\n", offsets_us * 1e-6, inputs, outputs


def test_large_azure_file_fast_and_careful_paths_agree(tmp_path: Path) -> None:
    text, seconds, inputs, outputs = _azure_text(ROWS)
    fast_path = tmp_path / "fast.csv"
    fast_path.write_text(text)
    careful_path = tmp_path / "careful.csv"  # a quoted value sends the file down the careful path
    careful_path.write_text(_azure_text(ROWS, quote_row=ROWS - 1)[0])
    fast = read_request_log(fast_path)
    careful = read_request_log(careful_path)
    for log in (fast, careful):
        assert np.array_equal(log.input_tokens, inputs)
        assert np.array_equal(log.output_tokens, outputs)
        assert np.allclose(log.arrival_times_s, seconds - seconds[0], rtol=0, atol=1e-9)
    workload = load_workload(str(fast_path))
    assert workload.request_count == ROWS
    assert workload.arrival_times_s[-1] == pytest.approx(seconds[-1] - seconds[0], abs=1e-9)


def test_error_beyond_the_first_64_kib_names_its_line(tmp_path: Path) -> None:
    text = _azure_text(ROWS)[0] + "2023-11-17 10:00:00.0000000,12,-4\n"
    path = tmp_path / "late.csv"
    path.write_text(text)
    with pytest.raises(ValidationError) as info:
        load_workload(str(path))
    assert (
        str(info.value) == f"{path}, line {ROWS + 2}: GeneratedTokens = -4 is negative (token counts are ≥ 0)"
    )


@pytest.mark.parametrize(
    "column, values, expected_span_s",
    [
        ("arrival_offset_us", "0 1500000 4000000", 4.0),
        ("arrival_offset_ms", "0 1500 4000", 4.0),
        ("ts_ns", "1700000000000000000 1700000001500000000 1700000004000000000", 4.0),
        ("when", "10 11.5 14", 4.0),  # no suffix: seconds
        ("when", "2024-02-29T23:59:58 2024-02-29T23:59:59.5 2024-03-01T00:00:02", 4.0),
        ("when", "2024-01-01T00:00:00Z 2024-01-01T01:00:01.5+01:00 2024-01-01T00:00:04Z", 4.0),
    ],
)
def test_time_units_from_column_names(
    tmp_path: Path, column: str, values: str, expected_span_s: float
) -> None:
    path = tmp_path / "t.csv"
    rows = "".join(f"{v},5,5\n" for v in values.split())
    path.write_text(f"{column},input_tokens,output_tokens\n{rows}")
    log = read_request_log(path, time_column=column)
    assert log.arrival_times_s.max() - log.arrival_times_s.min() == pytest.approx(expected_span_s, abs=1e-9)


def test_mooncake_jsonl_timestamps_are_milliseconds(tmp_path: Path) -> None:
    """Mooncake's trace format: timestamp = ms since the first request."""
    path = tmp_path / "m.jsonl"
    records = [{"timestamp": 0, "input_length": 6755, "output_length": 500, "hash_ids": [0, 1]}]
    records.append({"timestamp": 3052, "input_length": 7234, "output_length": 794, "hash_ids": [0]})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    workload = load_workload(str(path))
    assert workload.arrival_times_s.tolist() == [0.0, 3.052]
    assert workload.total_tokens.tolist() == [7255, 8028]


def test_gzip_and_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "log.csv.gz"
    path.write_bytes(gzip.compress("\ufeffinput_tokens,output_tokens\n3,4\n".encode()))
    assert load_workload(str(path)).total_tokens.tolist() == [7]


@pytest.mark.parametrize(
    "content, expected",
    [
        (b"[[1, 1.0]]", "cdf-json"),
        (b'{\n  "cdf": [[1, 1.0]]\n}', "cdf-json"),
        (b'{"input_length": 1, "output_length": 2}\n', "jsonl"),
        (b"TIMESTAMP,ContextTokens,GeneratedTokens\n", "azure"),
        (b"tokens,cdf\n1,1\n", "cdf-csv"),
        (b"input_tokens,output_tokens\n1,2\n", "csv"),
    ],
)
def test_detection(content: bytes, expected: str) -> None:
    assert detect_format(content) == expected


# -- the input/output split of a CDF (issue 13, item 6) -------------------------------------------


def test_bare_cdf_is_split_80_20_and_marked_assumed(tmp_path) -> None:
    path = tmp_path / "bare.json"
    path.write_text('{"cdf": [[100, 0.5], [1000, 1.0]]}')
    workload = load_workload(str(path))
    assert workload.split_assumed and workload.split_model == "fleet-sim"
    assert workload.input_tokens[-1] == 800 and workload.output_tokens[-1] == 200


def test_cdf_with_means_is_split_in_their_proportion(tmp_path) -> None:
    """mean_input_tokens 300, mean_output_tokens 700: f = 300/1000 = 0.3, so L = 1,000 → (300, 700)."""
    path = tmp_path / "means.json"
    path.write_text('{"cdf": [[100, 0.5], [1000, 1.0]], "mean_input_tokens": 300, "mean_output_tokens": 700}')
    workload = load_workload(str(path))
    assert not workload.split_assumed and workload.split_model == "input-fraction:0.3"
    assert (workload.input_tokens[-1], workload.output_tokens[-1]) == (300, 700)
    # an explicit --split wins over the file, and is not an assumption either
    explicit = load_workload(str(path), split="output-tokens:100")
    assert not explicit.split_assumed and explicit.output_tokens[-1] == 100


def test_cdf_with_one_mean_is_an_error(tmp_path) -> None:
    path = tmp_path / "half.json"
    path.write_text('{"cdf": [[100, 1.0]], "mean_input_tokens": 300}')
    with pytest.raises(ValidationError) as error:
        load_workload(str(path))
    assert str(error.value) == f"{path}: mean_input_tokens is given without mean_output_tokens"
