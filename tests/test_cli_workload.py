"""`fleetopt workload show`: every format round-trips, and bad input gets one clear error line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from fleetopt.cli import app

runner = CliRunner()

# Six requests: (arrival offset in seconds, input tokens, output tokens).
REQUESTS = [(0.0, 100, 20), (0.5, 4000, 200), (1.25, 100, 20), (2.0, 9000, 1), (4.0, 10, 0), (4.5, 1500, 600)]


def _show(*args: str) -> dict:
    result = runner.invoke(app, ["workload", "show", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _comparable(summary: dict) -> dict:
    """The statistics, without the fields that name the file."""
    return {k: v for k, v in summary.items() if k not in ("name", "source")}


def _write_log_formats(folder: Path) -> dict[str, Path]:
    files = {}
    azure = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for offset, i, o in REQUESTS:
        whole, fraction = divmod(round(offset * 10_000_000), 10_000_000)
        azure.append(f"2023-11-16 18:15:{46 + whole:02d}.{fraction:07d},{i},{o}")
    files["azure"] = folder / "azure.csv"
    files["azure"].write_text("\n".join(azure) + "\n")
    files["csv-ms"] = folder / "log_ms.csv"
    files["csv-ms"].write_text(
        "arrival_offset_ms,input_tokens,output_tokens\n"
        + "".join(f"{round(t * 1000)},{i},{o}\n" for t, i, o in REQUESTS)
    )
    files["jsonl"] = folder / "mooncake.jsonl"
    files["jsonl"].write_text(
        "".join(
            json.dumps({"timestamp": round(t * 1000), "input_length": i, "output_length": o, "hash_ids": [1]})
            + "\n"
            for t, i, o in REQUESTS
        )
    )
    files["gzip"] = folder / "log.csv.gz"
    files["gzip"].write_bytes(gzip.compress(files["csv-ms"].read_bytes()))
    return files


def test_every_log_format_gives_identical_statistics(tmp_path: Path) -> None:
    files = _write_log_formats(tmp_path)
    summaries = {name: _comparable(_show(str(path))) for name, path in files.items()}
    reference = summaries["azure"]
    for name, summary in summaries.items():
        assert summary == reference, name
    totals = np.array([i + o for _, i, o in REQUESTS])
    assert reference["request_count"] == 6
    assert reference["tokens"]["total"]["mean"] == pytest.approx(totals.mean())
    assert reference["tokens"]["total"]["p50"] == np.percentile(totals, 50, method="inverted_cdf")
    assert reference["arrivals"]["span_s"] == pytest.approx(4.5)
    assert reference["arrivals"]["mean_rate_per_s"] == pytest.approx(5 / 4.5)


def test_csv_with_named_columns_and_seconds(tmp_path: Path) -> None:
    path = tmp_path / "custom.csv"
    path.write_text("when,model,prompt,completion\n" + "".join(f"{t},m,{i},{o}\n" for t, i, o in REQUESTS))
    summary = _show(
        str(path), "--input-column", "prompt", "--output-column", "completion", "--time-column", "when"
    )
    reference = _show(str(_write_log_formats(tmp_path)["csv-ms"]))
    assert _comparable(summary) == _comparable(reference)


def test_cdf_json_list_object_and_csv_agree(tmp_path: Path) -> None:
    table = [[512, 0.25], [1024, 0.5], [4096, 0.95], [8192, 1.0]]
    (tmp_path / "list.json").write_text(json.dumps(table))
    (tmp_path / "object.json").write_text(json.dumps({"cdf": table, "source": "hand"}, indent=2))
    (tmp_path / "table.csv").write_text("tokens,cdf\n" + "".join(f"{t},{f}\n" for t, f in table))
    summaries = [_comparable(_show(str(tmp_path / n))) for n in ("list.json", "object.json", "table.csv")]
    assert summaries[0] == summaries[1] == summaries[2]
    # Hand: mean = Σ ΔF·(a + 1 + b)/2 over the buckets (0,512], (512,1024], (1024,4096], (4096,8192].
    mean = 0.25 * 513 / 2 + 0.25 * (513 + 1024) / 2 + 0.45 * (1025 + 4096) / 2 + 0.05 * (4097 + 8192) / 2
    assert summaries[0]["tokens"]["total"]["mean"] == pytest.approx(mean)
    assert summaries[0]["cdf_at_tokens"]["4096"] == pytest.approx(0.95)
    assert summaries[0]["archetype"]["archetype"] == "I"


def test_split_option_changes_cdf_inputs_only(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps([[1000, 1.0]]))
    fleet_sim = _show(str(tmp_path / "c.json"))
    fixed = _show(str(tmp_path / "c.json"), "--split", "output-tokens:100")
    assert fixed["split_model"] == "output-tokens:100"
    assert fixed["tokens"]["total"] == fleet_sim["tokens"]["total"]
    assert fixed["tokens"]["output"]["p99"] == 100 and fleet_sim["tokens"]["output"]["max"] == 200


def test_input_format_override(tmp_path: Path) -> None:
    path = tmp_path / "odd.txt"
    path.write_text(json.dumps({"cdf": [[100, 1.0]]}))
    assert _show(str(path), "--input-format", "cdf-json")["kind"] == "cdf"
    result = runner.invoke(app, ["workload", "show", str(path), "--input-format", "xml"])
    assert result.exit_code == 1
    assert (
        result.stderr
        == "Error: unknown input format 'xml' (allowed: azure, csv, jsonl, json, parquet, summary, "
        "cdf-json, cdf-csv)\n"
    )


def test_bundled_names_and_table_output() -> None:
    result = runner.invoke(app, ["workload", "show", "azure-2023"])
    assert result.exit_code == 0
    assert "azure-2023 (28,185 requests" in result.stdout
    assert "α = F(B) = 0.8982 → archetype II" in result.stdout
    yaml_result = runner.invoke(app, ["workload", "show", "lmsys", "--b-short", "1536", "--format", "yaml"])
    assert yaml_result.exit_code == 0 and "archetype: I\n" in yaml_result.stdout


BUNDLED = "agent-heavy, azure, azure-2023, azure-2023-code, azure-2023-conv, lmsys, lmsys-multiturn"


@pytest.mark.parametrize(
    "file_name, content, message",
    [
        ("empty.csv", "", "{p}: the file is empty"),
        ("header.csv", "input_tokens,output_tokens\n", "{p}: no requests (only a header)"),
        (
            "cols.csv",
            "a,b\n1,2\n",
            "{p}: no input column among a, b (recognised: input_tokens, input_length, prompt_tokens, "
            "contexttokens, request tokens; name one with --input-column)",
        ),
        (
            "neg.csv",
            "input_tokens,output_tokens\n5,3\n5,-3\n",
            "{p}, line 3: output_tokens = -3 is negative (token counts are ≥ 0)",
        ),
        (
            "frac.csv",
            "input_tokens,output_tokens\n5,3\n2.5,1\n",
            "{p}, line 3: input_tokens = '2.5' is not a whole number of tokens",
        ),
        (
            "word.csv",
            "input_tokens,output_tokens\nten,1\n",
            "{p}, line 2: input_tokens = 'ten' is not a whole number of tokens",
        ),
        ("short.csv", "input_tokens,output_tokens\n5,3\n7\n", "{p}, line 3: expected 2 fields, found 1"),
        (
            "zero.csv",
            "input_tokens,output_tokens\n0,0\n",
            "{p}, line 2: input_tokens + output_tokens is 0 (a request has ≥ 1 token)",
        ),
        (
            "azure_bad.csv",
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,3,4\nyesterday,3,4\n",
            "{p}, line 3: TIMESTAMP = 'yesterday' is neither a number nor a date-time "
            "like 2023-11-16 18:15:46.680590",
        ),
        (
            "log.jsonl",
            '{"input_length": 3, "output_length": 4}\n{"input_length": -1, "output_length": 4}\n',
            "{p}, line 2: input_length = -1 is negative (token counts are ≥ 0)",
        ),
        (
            "fields.jsonl",
            '{"input_length": 3, "output_length": 4}\n{"input_length": 3}\n',
            "{p}, line 2: no field 'output_length' (fields found: input_length)",
        ),
        (
            "dec.json",
            "[[10, 0.5], [20, 0.4], [30, 1.0]]",
            "{p}, entry 2: F decreases from 0.5 to 0.4 (a CDF must be non-decreasing)",
        ),
        ("above.json", "[[10, 0.5], [20, 1.5]]", "{p}, entry 2: F = 1.5 leaves [0, 1]"),
        ("below.csv", "tokens,cdf\n10,-0.1\n20,1\n", "{p}, line 2: F = -0.1 leaves [0, 1]"),
        (
            "short.json",
            "[[10, 0.5], [20, 0.9]]",
            "{p}: the CDF ends at F = 0.9; it must reach 1 at its last breakpoint",
        ),
        (
            "order.json",
            "[[20, 0.5], [10, 1.0]]",
            "{p}, entry 2: total_tokens 10 is not above the previous breakpoint 20 "
            "(breakpoints must increase)",
        ),
        (
            "notcdf.json",
            '{"foo": 1}',
            "{p}: not a CDF: expected a JSON list of [total_tokens, F] pairs "
            'or an object with a "cdf" list of such pairs',
        ),
        (
            "pairs.json",
            "[[10, 0.5, 3]]",
            '{p}: not a CDF: expected a JSON list of [total_tokens, F] pairs or an object with a "cdf" list '
            "of such pairs; entry 1 is [10, 0.5, 3]",
        ),
        ("broken.json", "[[10, 0.5]", "{p}: not valid JSON at line 1, column 11: …"),
        (
            "cdfcols.csv",
            "tokens,share\n10,1\n",
            "{p}: no input column among tokens, share (recognised: input_tokens, input_length, "
            "prompt_tokens, contexttokens, request tokens; name one with --input-column)",
        ),
    ],
)
def test_bad_input_is_one_error_line_and_exit_1(
    tmp_path: Path, file_name: str, content: str, message: str
) -> None:
    path = tmp_path / file_name
    path.write_text(content)
    result = runner.invoke(app, ["workload", "show", str(path)])
    assert result.exit_code == 1
    assert result.stdout == ""
    expected = "Error: " + message.format(p=path)
    if expected.endswith("…"):  # the JSON parser's own wording varies between Python versions
        assert result.stderr.startswith(expected[:-1]) and result.stderr.count("\n") == 1
    else:
        assert result.stderr == expected + "\n"


def test_missing_file_or_unknown_name_lists_bundled_names(tmp_path: Path) -> None:
    for target in (str(tmp_path / "nope.csv"), "no-such-workload"):
        result = runner.invoke(app, ["workload", "show", target])
        assert result.exit_code == 1
        assert (
            result.stderr
            == f"Error: workload {target!r} is neither a file nor a bundled workload (bundled: {BUNDLED})\n"
        )


def test_unknown_column_option_lists_the_columns_found(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text("input_tokens,output_tokens\n1,2\n")
    result = runner.invoke(app, ["workload", "show", str(path), "--time-column", "ts"])
    assert result.exit_code == 1
    assert (
        result.stderr
        == f"Error: {path}: no column 'ts' for time (columns found: input_tokens, output_tokens)\n"
    )


def test_bad_b_short_is_a_usage_error() -> None:
    result = runner.invoke(app, ["workload", "show", "azure", "--b-short", "0"])
    assert result.exit_code == 2
    assert "Error: Invalid value for '--b-short': Input should be greater than or equal to 1" in result.output
