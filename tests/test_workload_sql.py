"""`fleetopt workload sql`: the summary query for a warehouse gives the summary fleetopt computes.

Each preset's sample is loaded into a table of its own rows (nested layouts flattened, date-times
as timestamps, as a warehouse would hold them); the query printed for DuckDB runs on it and must
return exactly the summary ``fleetopt workload summarize`` makes of the file. The Spark SQL runs on
a local PySpark session when pyspark and Java are installed (``pytest -m slow``)."""

from __future__ import annotations

import datetime
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from fleetopt.api import workload_summary_sql
from fleetopt.cli import app
from fleetopt.io.log_formats import LOG_FORMATS
from fleetopt.io.logs import LogSource, connect, describe, rows_relation, sql_identifier
from fleetopt.io.summaries import summary_from_table
from fleetopt.io.warehouse import DIALECTS, WAREHOUSE_TIME_TYPES
from fleetopt.io.workloads import summarize_source

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "data" / "logs"
sys.path.insert(0, str(ROOT / "tests"))
from test_log_formats import SAMPLE_OF  # noqa: E402

runner = CliRunner()
LAYOUT = {"otel": "otlp", "vllm-bench": "arrays"}
CONTAINER = {".csv": "csv", ".jsonl": "jsonl", ".log": "jsonl", ".json": "json"}


def _sample_rows(connection, preset: str) -> str:
    """A table ``requests`` of the preset's sample rows in the database behind ``connection``."""
    path = SAMPLES / SAMPLE_OF[preset]
    source = LogSource(str(path), (str(path),), CONTAINER[path.suffix], layout=LAYOUT.get(preset, "table"))
    columns = describe(connection, source) if source.layout == "arrays" else []
    time_column = LOG_FORMATS[preset].time_columns[0]
    select = "*"
    if WAREHOUSE_TIME_TYPES[preset] == "timestamp":
        quoted = sql_identifier(time_column)
        select = f"* REPLACE (CAST({quoted} AS TIMESTAMPTZ) AS {quoted})"
    connection.execute(
        f"CREATE OR REPLACE TABLE requests AS SELECT {select} FROM {rows_relation(source, columns)}"
    )
    return str(path)


def _same_summary(a, b) -> None:
    keys = ("input_tokens", "output_tokens", "counts", "window_starts_us", "window_counts", "cached_tokens")
    for key in keys:
        assert np.array_equal(getattr(a, key), getattr(b, key)), key
    assert a.window_us == b.window_us
    assert [(s.requests, s.first_us, s.last_us, s.utc) for s in a.sources] == [
        (s.requests, s.first_us, s.last_us, s.utc) for s in b.sources
    ]


@pytest.mark.parametrize("in_memory", [True, False], ids=["in-memory", "streamed"])
@pytest.mark.parametrize("preset", list(SAMPLE_OF))
def test_the_duckdb_query_returns_the_summary_of_the_file(preset: str, in_memory: bool, monkeypatch) -> None:
    """The portable query run on the sample's rows gives the summary fleetopt makes of the file,
    both ways it makes one: sorting the rows in memory, and streaming them through its own query."""
    from fleetopt.io import logs

    monkeypatch.setattr(logs, "IN_MEMORY_SUMMARY_ROWS", 10**9 if in_memory else -1)
    connection = connect()
    path = _sample_rows(connection, preset)
    sql = workload_summary_sql(dialect="duckdb", log_format=preset, table="requests", window_s=2.0)
    table = connection.execute(sql).fetchnumpy()
    warehouse = summary_from_table(table, "requests")
    assert warehouse.sources[0].source == "requests"
    _same_summary(warehouse, summarize_source(path, 2_000_000, log_format=preset))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_dialect_parses_and_uses_its_own_epoch_function(dialect: str) -> None:
    import sqlglot

    expected = {
        "duckdb": "EPOCH_US(",
        "spark": "UNIX_MICROS(",
        "bigquery": "UNIX_MICROS(",
        "trino": "TO_UNIXTIME(",
        "snowflake": "EPOCH_MICROSECOND",
        "postgres": "EXTRACT(EPOCH FROM",
    }
    sql = workload_summary_sql(dialect=dialect, log_format="litellm", table="analytics.litellm_spendlogs")
    assert expected[dialect] in sql.upper().replace("EPOCH_MICROSECOND", "EPOCH_MICROSECOND")
    assert sqlglot.parse_one(sql, read=dialect) is not None
    assert "analytics.litellm_spendlogs" in sql


def test_the_command_prints_the_query_and_names_bad_choices() -> None:
    result = runner.invoke(app, ["workload", "sql", "--log-format", "helicone", "--dialect", "bigquery"])
    assert result.exit_code == 0, result.output
    assert "UNIX_MICROS(`request_created_at`)" in result.stdout and result.stdout.rstrip().endswith(";")
    result = runner.invoke(app, ["workload", "sql", "--log-format", "helicone", "--dialect", "oracle"])
    assert result.exit_code == 1
    assert result.stderr == (f"Error: --dialect: 'oracle' is not one of {', '.join(DIALECTS)}\n")
    result = runner.invoke(app, ["workload", "sql"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: workload sql: give --log-format, or --input-column and --output-column (and --time-column)\n"
    )


def test_explicit_columns_and_a_numeric_clock(tmp_path: Path) -> None:
    """A generic table: columns by name, a millisecond time column, as a warehouse might keep it."""
    connection = connect()
    connection.execute(
        "CREATE TABLE requests AS SELECT * FROM (VALUES (100, 10, 0), (200, 20, 1500), (100, 10, 61000)) "
        "AS t(prompt, completion, sent_ms)"
    )
    sql = workload_summary_sql(
        dialect="duckdb", log_format=None, table="requests", input_column="prompt",
        output_column="completion", time_column="sent_ms", time_unit="ms", time_type="number", window_s=60.0,
    )  # fmt: skip
    summary = summary_from_table(connection.execute(sql).fetchnumpy(), "requests")
    assert summary.counts.tolist() == [2, 1] and summary.window_counts.tolist() == [2, 1]
    assert summary.span.last_us - summary.span.first_us == 61_000_000 and not summary.span.utc


# -- PySpark: the Spark SQL on a local session -----------------------------------------------------


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("Java is not installed")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("fleetopt-workload-sql")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.mark.slow
@pytest.mark.parametrize("preset", list(SAMPLE_OF))
def test_the_spark_query_returns_the_summary_of_the_file(spark, preset: str) -> None:
    from pyspark.sql import types as T

    connection = connect(ordered=True)
    path = _sample_rows(connection, preset)
    described = connection.execute("DESCRIBE requests").fetchall()
    fields, selects = [], []
    for name, kind, *_ in described:
        quoted = sql_identifier(name)
        if kind.startswith("TIMESTAMP"):
            fields.append(T.StructField(name, T.TimestampType()))
            selects.append(f"epoch_us({quoted})")
        elif kind in ("BIGINT", "INTEGER"):
            fields.append(T.StructField(name, T.LongType()))
            selects.append(quoted)
        elif kind == "DOUBLE":
            fields.append(T.StructField(name, T.DoubleType()))
            selects.append(quoted)
        elif kind == "VARCHAR":
            fields.append(T.StructField(name, T.StringType()))
            selects.append(quoted)
    rows = connection.execute(f"SELECT {', '.join(selects)} FROM requests").fetchall()
    utc = datetime.timezone.utc

    def convert(row):
        return tuple(
            datetime.datetime.fromtimestamp(v / 1e6, tz=utc)
            if isinstance(f.dataType, T.TimestampType) and v is not None
            else v
            for v, f in zip(row, fields, strict=True)
        )

    spark.createDataFrame([convert(r) for r in rows], T.StructType(fields)).createOrReplaceTempView(
        "requests"
    )
    sql = workload_summary_sql(dialect="spark", log_format=preset, table="requests", window_s=2.0)
    collected = spark.sql(sql).collect()
    columns = {
        name: np.array([row[name] for row in collected], dtype=object) for name in collected[0].asDict()
    }
    _same_summary(
        summary_from_table(columns, "requests"), summarize_source(path, 2_000_000, log_format=preset)
    )


def test_where_adds_a_filter_to_the_presets() -> None:
    """--where keeps only the rows it selects (a date range for partition pruning, one model)."""
    connection = connect()
    _sample_rows(connection, "litellm")
    sql = workload_summary_sql(
        dialect="duckdb",
        log_format="litellm",
        table="requests",
        where="\"startTime\" < TIMESTAMP '2024-05-10 12:00:10'",
    )
    summary = summary_from_table(connection.execute(sql).fetchnumpy(), "requests")
    assert (
        summary.request_count == 5
    )  # the sample's arrivals before 10 s: 0, 1.25, 3, 5.25, 8 (failures skipped)
