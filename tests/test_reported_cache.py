"""Logs that report each request's cached prompt tokens (OpenAI's ``cached_tokens`` and each
gateway's name for it): every preset's sample against the hand-made truth it was written from, bad
values refused with one error naming the file, the row or line and the field, rows that do not
report (a warning and their documented fallback: 0 cached), summaries that keep the evidence
exactly through merges, files and the warehouse query, and ``plan --prefix-caching auto`` charging
the reported tokens as given — checked against ``hit-rate:F`` on the same prompts, an independent
path through the planner."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest
from typer.testing import CliRunner

from fleetopt.api.prefix import parse_prefix_caching, plan_with_prefix_caching
from fleetopt.cli import app
from fleetopt.core.prefix import NOT_REPORTED
from fleetopt.core.summary import merge_summaries, workload_from_summary
from fleetopt.io.log_formats import LOG_FORMATS
from fleetopt.io.summaries import write_summary
from fleetopt.io.workloads import load_workload, read_summary_file, summarize_source

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "data" / "logs"
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))
from make_log_samples import CACHED, REQUESTS  # noqa: E402  (the samples' ground truth)
from test_log_formats import SAMPLE_OF  # noqa: E402

runner = CliRunner()
#: The presets whose format reports cached prompt tokens, and the other samples.
REPORTING = {name for name, preset in LOG_FORMATS.items() if preset.cached_fields}
#: Hand sums of the samples: Σ cached = 64·(0+1+2+3)·3, Σ prompt = 12·100 + 37·(0+…+11).
CACHED_SUM, PROMPT_SUM = 64 * 6 * 3, 12 * 100 + 37 * 66


def test_the_hand_sums_are_the_samples() -> None:
    assert (CACHED_SUM, PROMPT_SUM) == (sum(CACHED), sum(r[0] for r in REQUESTS)) == (1152, 3642)
    assert REPORTING == {"litellm", "langfuse", "helicone", "otel", "sglang"}


@pytest.mark.parametrize("preset", sorted(REPORTING))
def test_each_preset_reports_the_samples_cached_tokens(preset: str) -> None:
    """The exact (input, output, cached) histogram of the twelve requests, and hit rate 1152/3642."""
    reported = load_workload(str(SAMPLES / SAMPLE_OF[preset]), log_format=preset).metadata["reported_cache"]
    truth = sorted((i, o, c) for (i, o, _), c in zip(REQUESTS, CACHED, strict=True))
    rows = list(zip(reported.input_tokens, reported.output_tokens, reported.cached_tokens, strict=True))
    assert [tuple(int(v) for v in row) for row in rows] == truth
    assert reported.counts.tolist() == [1] * 12
    assert reported.hit_rate == CACHED_SUM / PROMPT_SUM == reported.reporting_hit_rate
    assert reported.reporting_requests == 12


def test_the_litellm_payload_and_helicones_whole_prompt() -> None:
    """The StandardLoggingPayload's metadata is an object (not text); Helicone's prompt_tokens leave
    the cache out, so its prompt is prompt_tokens + prompt_cache_read_tokens + _write_tokens — and
    named by hand, prompt_tokens is taken as written, without cache evidence."""
    payload = load_workload(str(SAMPLES / "litellm-payload.jsonl"), log_format="litellm")
    assert payload.metadata["reported_cache"].cached_prompt_tokens == CACHED_SUM
    helicone = SAMPLES / "helicone.csv"
    raw = load_workload(str(helicone), log_format="helicone", input_column="prompt_tokens")
    assert "reported_cache" not in raw.metadata
    assert int(np.dot(raw.input_tokens, raw.weights)) == PROMPT_SUM - CACHED_SUM - 32 * 3


@pytest.mark.parametrize("preset", sorted(set(SAMPLE_OF) - REPORTING))
def test_formats_without_the_field_have_no_evidence(preset: str) -> None:
    assert "reported_cache" not in load_workload(str(SAMPLES / SAMPLE_OF[preset]), log_format=preset).metadata


def _error(path: Path, *options: str) -> str:
    result = runner.invoke(app, ["workload", "show", str(path), *options])
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


CSV_HEAD = "arrival_offset_ms,input_tokens,output_tokens,cached_tokens\n0,100,10,50\n"


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("150", "cached_tokens = 150 is more cached tokens than the prompt has (120); cached prompt tokens "
                "are part of the prompt"),
        ("-4", "cached_tokens = -4 is negative (token counts are ≥ 0)"),
        ("2.5", "cached_tokens = '2.5' is not a whole number of tokens"),
        ("many", "cached_tokens = 'many' is not a whole number of tokens"),
    ],
)  # fmt: skip
def test_a_bad_count_is_named_by_line_and_field(tmp_path: Path, value: str, words: str) -> None:
    path = tmp_path / "log.csv"
    path.write_text(CSV_HEAD + f"1000,120,10,{value}\n")
    assert _error(path) == f"Error: {path}, line 3: {words}"


def test_a_bad_count_in_json_lines_parquet_and_nested_json(tmp_path: Path) -> None:
    lines = tmp_path / "log.jsonl"
    rows = [{"input_tokens": 80, "output_tokens": 5, "cached_tokens": 16},
            {"input_tokens": 80, "output_tokens": 5, "cached_tokens": True}]  # fmt: skip
    lines.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _error(lines) == f"Error: {lines}, line 2: cached_tokens = true is not a whole number of tokens"
    parquet = tmp_path / "log.parquet"
    duckdb.sql(
        "SELECT * FROM (VALUES (100, 10, 50), (120, 10, 121)) "
        "AS t(input_tokens, output_tokens, cached_tokens)"
    ).write_parquet(str(parquet))
    assert _error(parquet) == (
        f"Error: {parquet}, row 2: cached_tokens = 121 is more cached tokens than the prompt has (120); "
        "cached prompt tokens are part of the prompt"
    )
    # a filtered preset (no line-by-line reader): DuckDB names the row, the field is the JSON path
    spend = tmp_path / "spend.csv"
    text = (SAMPLES / "litellm-spendlogs.csv").read_text().splitlines()
    row = next(k for k, line in enumerate(text) if '""cached_tokens"": 128' in line)  # data row k (1-based)
    text[row] = text[row].replace('""cached_tokens"": 128', '""cached_tokens"": 4.5')
    spend.write_text("\n".join(text) + "\n")
    field = "usage_object" if "usage_object" in text[row] else "additional_usage_values"  # the row's own
    assert _error(spend, "--log-format", "litellm") == (
        f"Error: {spend}, row {row}: metadata.{field}.prompt_tokens_details.cached_tokens = '4.5' is "
        "not a whole number of tokens"
    )


def test_rows_that_do_not_report_warn_and_count_as_zero_cached(tmp_path: Path) -> None:
    """120 + 200 + 80 prompt tokens, 50 + 40 cached, the third row silent: 90/400 of all prompt
    tokens, 90/320 of the reporting rows'; the summary keeps the silent row apart (null)."""
    path = tmp_path / "log.csv"
    path.write_text(
        "arrival_offset_ms,input_tokens,output_tokens,cached_tokens\n0,120,10,50\n10,200,5,40\n20,80,5,\n"
    )
    result = runner.invoke(app, ["workload", "show", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)["reported_cache"]
    assert (shown["hit_rate"], shown["reporting_hit_rate"]) == (90 / 400, 90 / 320)
    assert (shown["requests"], shown["reporting_requests"], shown["field"]) == (3, 2, "cached_tokens")
    assert result.stderr == (
        "warning: 1 of 3 requests report no cached tokens and count as 0 cached (charged in full): "
        "22.5% of all prompt tokens are cached, 28.1% of the prompt tokens of the requests that report "
        "them.\n"
    )
    summary = summarize_source(str(path), 1_000_000)
    assert summary.cached_tokens.tolist() == [NOT_REPORTED, 50, 40]  # rows by (input, output)
    table = tmp_path / "summary.csv"
    write_summary(summary, table)
    assert table.read_text().splitlines()[1:3] == ["tokens,80,5,,,1,,,", "tokens,120,10,,,1,,,50"]


def test_summarize_says_what_the_log_reports(tmp_path: Path) -> None:
    args = ["workload", "summarize", str(SAMPLES / "helicone.csv"), "--log-format", "helicone"]
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["reported_cache_hit_rate"] == CACHED_SUM / PROMPT_SUM and report["reporting_requests"] == 12
    assert report["distinct_pairs"] == 12
    table = runner.invoke(app, args).stdout
    assert "cached prompt tokens the log reports: 31.6% of prompt tokens (12 requests report them)" in table


def test_a_log_whose_field_is_never_filled_has_no_evidence(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text("input_tokens,output_tokens,cached_tokens\n120,10,\n200,5,\n")
    assert "reported_cache" not in load_workload(str(path)).metadata
    assert summarize_source(str(path), 1_000_000).cached_tokens is None
    # nor does the warehouse query's table of it (a column of NULLs)
    from fleetopt.api import workload_summary_sql
    from fleetopt.io.summaries import summary_from_table

    connection = duckdb.connect()
    connection.execute(f"CREATE TABLE requests AS SELECT * FROM read_csv('{path}')")
    sql = workload_summary_sql(
        dialect="duckdb", log_format=None, table="requests", input_column="input_tokens",
        output_column="output_tokens", no_time=True, cached_column="cached_tokens",
    )  # fmt: skip
    table = connection.execute(sql).fetchnumpy()
    assert "cached_tokens" in table and summary_from_table(table, "requests").cached_tokens is None


# -- summaries: exact and mergeable ---------------------------------------------------------------


def _log(path: Path, rows: range, seed: int = 7) -> Path:
    rng = np.random.default_rng(seed)
    lines = ["arrival_offset_ms,input_tokens,output_tokens,cached_tokens"]
    for k in rows:
        prompt = int(rng.integers(1, 400))
        cached = "" if k % 11 == 0 else str(16 * int(rng.integers(0, prompt // 16 + 1)))
        lines.append(f"{37 * k},{prompt},{int(rng.integers(0, 60))},{cached}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _same(a, b) -> None:
    for key in (
        "input_tokens",
        "output_tokens",
        "counts",
        "cached_tokens",
        "window_starts_us",
        "window_counts",
    ):
        assert np.array_equal(getattr(a, key), getattr(b, key)), key


@pytest.mark.parametrize("in_memory", [True, False], ids=["in-memory", "streamed"])
def test_halves_merge_into_the_summary_of_the_whole(tmp_path: Path, in_memory: bool, monkeypatch) -> None:
    from fleetopt.io import logs

    monkeypatch.setattr(logs, "IN_MEMORY_SUMMARY_ROWS", 10**9 if in_memory else -1)
    whole = summarize_source(str(_log(tmp_path / "whole.csv", range(600))), 1_000_000)
    text = (tmp_path / "whole.csv").read_text().splitlines()
    (tmp_path / "a.csv").write_text("\n".join(text[:301]) + "\n")
    (tmp_path / "b.csv").write_text("\n".join(text[:1] + text[301:]) + "\n")
    first = summarize_source(str(tmp_path / "a.csv"), 1_000_000)
    second = summarize_source(str(tmp_path / "b.csv"), 1_000_000)
    merged = merge_summaries([first, second], ["a", "b"])
    _same(merged, whole)
    assert int((merged.cached_tokens == NOT_REPORTED).astype(int) @ merged.counts) == 55  # k % 11 == 0
    assert whole.sources[0].requests == 600
    # by hand: Σ cached and Σ prompt of the rows as written
    rows = [line.split(",") for line in text[1:]]
    cached = sum(int(r[3]) for r in rows if r[3])
    prompt = sum(int(r[1]) for r in rows)
    reported = workload_from_summary(merged, "merged").metadata["reported_cache"]
    assert (reported.cached_prompt_tokens, reported.prompt_tokens) == (cached, prompt)
    # the three file forms hold the same summary
    for suffix in (".json", ".csv", ".parquet"):
        write_summary(merged, tmp_path / f"merged{suffix}")
        _same(read_summary_file(tmp_path / f"merged{suffix}"), merged)


def test_a_part_without_the_field_merges_as_rows_that_do_not_report(tmp_path: Path) -> None:
    reporting = summarize_source(str(_log(tmp_path / "a.csv", range(50))), 1_000_000)
    plain = tmp_path / "b.csv"
    plain.write_text("arrival_offset_ms,input_tokens,output_tokens\n99000,300,3\n99500,300,3\n")
    merged = merge_summaries([reporting, summarize_source(str(plain), 1_000_000)], ["a", "b"])
    row = np.flatnonzero((merged.input_tokens == 300) & (merged.output_tokens == 3))
    assert merged.cached_tokens[row].tolist() == [NOT_REPORTED] and merged.counts[row].tolist() == [2]


def test_a_summary_file_with_a_bad_cached_count_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "summary.csv"
    path.write_text(
        "record,input_tokens,output_tokens,start_us,end_us,n,source,clock,cached_tokens\n"
        "tokens,100,10,,,3,,,101\nlog,,,,,3,x,,\n"
    )
    result = runner.invoke(app, ["workload", "show", str(path)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {path}: the log has rows that are not valid requests (3 with ")
    assert "or cached tokens negative, fractional or above the prompt)" in result.stderr


def test_the_warehouse_query_keeps_the_nested_and_flat_fields_for_every_dialect() -> None:
    import sqlglot

    from fleetopt.api import workload_summary_sql
    from fleetopt.io.warehouse import DIALECTS

    for dialect in DIALECTS:
        for preset in sorted(REPORTING):
            sql = workload_summary_sql(dialect=dialect, log_format=preset, table="t")
            assert sqlglot.parse_one(sql, read=dialect) is not None and "cached_tokens" in sql
    postgres = workload_summary_sql(dialect="postgres", log_format="litellm", table="t")
    assert "CAST(\"metadata\" AS JSONB) #>> '{usage_object,prompt_tokens_details,cached_tokens}'" in postgres
    none = workload_summary_sql(dialect="duckdb", log_format="helicone", table="t", cached_column="none")
    assert "cached" not in none and "prompt_cache" not in none


# -- plans --------------------------------------------------------------------------------------


def _workload_log(path: Path, share: float | None) -> Path:
    """300 long prompts (4,000–9,000 tokens) arriving every 0.1 s; ``share`` of each prompt
    reported cached (rounded down), or no cached_tokens column at all."""
    rng = np.random.default_rng(3)
    inputs, outputs = rng.integers(4000, 9000, 300), rng.integers(50, 300, 300)
    head = "arrival_offset_ms,input_tokens,output_tokens" + (",cached_tokens" if share is not None else "")
    rows = [
        f"{100 * k},{i},{o}" + (f",{int(np.floor(i * share))}" if share is not None else "")
        for k, (i, o) in enumerate(zip(inputs, outputs, strict=True))
    ]
    path.write_text(head + "\n" + "\n".join(rows) + "\n")
    return path


PLAN_OPTIONS = {"ttft_slo_s": 1.0, "mean_rate_per_s": 20.0}


def test_off_ignores_the_reported_tokens(tmp_path: Path) -> None:
    reported = _workload_log(tmp_path / "reported.csv", 0.75)
    plain = _workload_log(tmp_path / "plain.csv", None)
    off = parse_prefix_caching("off")
    with_field = plan_with_prefix_caching(str(reported), off, **PLAN_OPTIONS, workload_label="log").document
    without = plan_with_prefix_caching(str(plain), off, **PLAN_OPTIONS, workload_label="log").document
    assert json.dumps(with_field) == json.dumps(without)


def test_auto_charges_the_reported_tokens_as_hit_rate_would(tmp_path: Path) -> None:
    """Every prompt reporting ⌊0.75·L⌋ cached is charged exactly what hit-rate:0.75 charges it (the
    same uncached tokens, by an independent path); the plan says whose rate it is."""
    reported = _workload_log(tmp_path / "reported.csv", 0.75)
    auto = plan_with_prefix_caching(str(reported), parse_prefix_caching("auto"), **PLAN_OPTIONS)
    given = plan_with_prefix_caching(str(reported), parse_prefix_caching("hit-rate:0.75"), **PLAN_OPTIONS)
    off = plan_with_prefix_caching(str(reported), parse_prefix_caching("off"), **PLAN_OPTIONS)
    assert auto.document["best"] == given.document["best"]
    caching = auto.document["prefix_caching"]
    assert caching["hit_rate"] == given.document["prefix_caching"]["hit_rate"]
    assert caching["gpus_without_caching"] == off.plan.best.total_gpus > auto.plan.best.total_gpus
    assert {p["source"] for p in caching["pools"].values()} == {"reported"}
    assert (caching["dispatch"], caching["block_size_tokens"], caching["rounds"]) == (None, None, 1)
    assert (
        "the hit rate of the production fleet, measured where the log was taken" in auto.document["notes"][-1]
    )
    import jsonschema

    from fleetopt.io.documents import json_schema

    jsonschema.validate(json.loads(json.dumps(auto.document)), json_schema("plan"))


def test_a_summary_plans_like_its_log_and_the_table_names_the_source(tmp_path: Path) -> None:
    log = _workload_log(tmp_path / "log.csv", 0.6)
    summary = tmp_path / "log.summary.parquet"
    write_summary(summarize_source(str(log), 1_000_000), summary)
    from_log = plan_with_prefix_caching(str(log), parse_prefix_caching("auto"), **PLAN_OPTIONS)
    from_summary = plan_with_prefix_caching(str(summary), parse_prefix_caching("auto"), **PLAN_OPTIONS)
    assert from_summary.document["best"] == from_log.document["best"]
    assert from_summary.document["prefix_caching"] == from_log.document["prefix_caching"]
    result = runner.invoke(
        app, ["plan", "--cdf", str(summary), "--slo", "1s", "--rate", "20", "--prefix-caching", "auto"]
    )
    assert result.exit_code == 0, result.output
    assert "production fleet's hit rate where the log was taken, not the planned fleet's" in result.stdout
    assert "log (production fleet)" in result.stdout


def test_block_hashes_come_before_reported_tokens(tmp_path: Path) -> None:
    """A Mooncake log with hash_ids and cached_tokens: auto simulates the hashes per planned pool."""
    rows = [
        {"timestamp": 100 * k, "input_length": 1024, "output_length": 10, "hash_ids": [k % 3, 7 + k % 5],
         "cached_tokens": 1000}
        for k in range(60)
    ]  # fmt: skip
    path = tmp_path / "hashes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert load_workload(str(path)).metadata["reported_cache"].hit_rate == 1000 / 1024  # read, not used
    run = plan_with_prefix_caching(
        str(path), parse_prefix_caching("auto"), ttft_slo_s=2.0, mean_rate_per_s=5.0
    )
    caching = run.document.get("prefix_caching")
    assert caching is not None and {p["source"] for p in caching["pools"].values()} <= {"simulated"}
    assert (
        caching["block_size_tokens"] == 512 and "block hashes replayed per pool" in run.document["notes"][-1]
    )
