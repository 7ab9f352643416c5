"""Workload summary files: read, write, detect (docs/scale.md).

Two forms hold the same :class:`~fleetopt.core.summary.LogSummary`:

* **a table** (Parquet, CSV or JSON lines) with the columns of
  :data:`fleetopt.io.logs.SUMMARY_COLUMNS` — what ``fleetopt workload summarize`` writes to
  ``.parquet``/``.csv`` and what the query of ``fleetopt workload sql`` returns in a warehouse;
* **a JSON document** ``{"fleetopt_summary": 1, "window_us": …, "sources": [...], "tokens":
  {"input_tokens": [...], "output_tokens": [...], "n": [...]}, "windows": {"start_us": [...],
  "n": [...]}}`` — what ``summarize`` writes to ``.json``.

A summary of a log that reports cached prompt tokens has one more key of its histogram, a
``cached_tokens`` column of the table (after the others) and list of ``tokens`` (null: the rows
that do not report them); a summary without it reads as before.

Every read checks that the parts agree (counts, windows, sources) and refuses a table that counts
invalid rows, so a summary never plans silently wrong.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from fleetopt.core.prefix import NOT_REPORTED
from fleetopt.core.summary import LogSummary, SummarySource, make_summary
from fleetopt.errors import ValidationError, excerpt
from fleetopt.io.files import atomic_output
from fleetopt.io.logs import MAX_REQUEST_TOKENS, SUMMARY_COLUMNS, connect, engine_message, sql_string
from fleetopt.io.yamlio import json_loads

#: The JSON document's marker and version.
SUMMARY_JSON_KEY = "fleetopt_summary"
SUMMARY_JSON_VERSION = 1
#: Suffixes ``summarize``/``merge`` write, by output format.
SUMMARY_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".json": "json", ".csv": "csv"}


def summary_format_for(path: Path) -> str:
    """The format a summary output path asks for (by suffix), before any work is done."""
    fmt = SUMMARY_SUFFIXES.get(Path(path).suffix.lower())
    if fmt is None:
        raise ValidationError(
            f"--output {path}: a summary is written as .parquet, .json or .csv (by the file's suffix)"
        )
    return fmt


def is_summary_header(columns: list[str]) -> bool:
    """Whether a table's columns are a summary's (order and case ignored, extra columns allowed)."""
    return set(SUMMARY_COLUMNS) <= {c.strip().lower() for c in columns}


# --------------------------------------------------------------------------- reading


def read_summary_json(data: bytes, label: str) -> LogSummary:
    """A summary from its JSON document."""
    try:
        document = json_loads(data.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ValidationError(f"{label}: not a valid summary JSON document ({exc})") from None
    if not isinstance(document, dict) or document.get(SUMMARY_JSON_KEY) != SUMMARY_JSON_VERSION:
        raise ValidationError(
            f"{label}: not a fleetopt summary (expected {SUMMARY_JSON_KEY}: {SUMMARY_JSON_VERSION})"
        )

    def column(part: str, key: str) -> np.ndarray:
        block = document.get(part)
        values = block.get(key) if isinstance(block, dict) else None
        if not isinstance(values, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and -(2**62) < v < 2**62 for v in values
        ):
            raise ValidationError(f"{label}: {part}.{key} must be a list of whole numbers (below 2**62)")
        return np.array(values, dtype=np.int64)

    for part, keys in (
        ("tokens", ("input_tokens", "output_tokens", "n", "cached_tokens")),
        ("windows", ("start_us", "n")),
    ):
        block = document.get(part)
        lengths = {len(block[k]) for k in keys if isinstance(block, dict) and isinstance(block.get(k), list)}
        if len(lengths) > 1:
            raise ValidationError(f"{label}: the lists of {part} differ in length")
    window = document.get("window_us")
    if window is not None and (
        not isinstance(window, int) or isinstance(window, bool) or not 0 < window < 2**62
    ):
        raise ValidationError(
            f"{label}: window_us = {json.dumps(window)} must be a whole number of µs or null"
        )
    sources = document.get("sources")
    if not isinstance(sources, list) or not sources:
        raise ValidationError(f"{label}: sources must be a non-empty list")
    records = tuple(_source_record(s, label, f"sources[{k}]") for k, s in enumerate(sources))
    cached = None
    tokens = document.get("tokens")
    if isinstance(tokens, dict) and "cached_tokens" in tokens:
        values = tokens["cached_tokens"]
        if not isinstance(values, list) or not all(
            v is None or (isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**62) for v in values
        ):
            raise ValidationError(
                f"{label}: tokens.cached_tokens must be a list of whole numbers ≥ 0 or null (not reported)"
            )
        cached = np.array([NOT_REPORTED if v is None else v for v in values], dtype=np.int64)
    summary = make_summary(
        column("tokens", "input_tokens"), column("tokens", "output_tokens"), column("tokens", "n"),
        window, column("windows", "start_us") if window is not None else np.zeros(0, np.int64),
        column("windows", "n") if window is not None else np.zeros(0, np.int64), records, cached,
    )  # fmt: skip
    summary.check(label)
    return summary


def _source_record(entry: Any, label: str, where: str) -> SummarySource:
    if not isinstance(entry, dict) or not isinstance(entry.get("source"), str):
        raise ValidationError(f"{label}: {where} must be an object with a source name")
    values = {}
    for key in ("requests", "first_us", "last_us"):
        value = entry.get(key)
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or abs(value) >= 2**62
        ):
            raise ValidationError(f"{label}: {where}.{key} = {json.dumps(value)} must be a whole number")
        values[key] = value
    if values["requests"] is None:
        raise ValidationError(f"{label}: {where}.requests is missing")
    clock = entry.get("clock")
    if clock not in ("utc", "relative", None):
        raise ValidationError(f"{label}: {where}.clock = {json.dumps(clock)} (allowed: utc, relative, null)")
    return SummarySource(
        entry["source"], values["requests"], values["first_us"], values["last_us"], clock == "utc"
    )


def _table_columns(table: dict[str, np.ndarray], label: str) -> dict[str, np.ndarray]:
    lowered = {key.strip().lower(): values for key, values in table.items()}
    missing = [c for c in SUMMARY_COLUMNS if c not in lowered]
    if missing:
        raise ValidationError(f"{label}: not a summary table (missing columns: {', '.join(missing)})")
    return lowered


def _numbers(values: np.ndarray) -> np.ndarray:
    """A column as float64 with NaN for missing values and for text that is not a number."""
    if isinstance(values, np.ma.MaskedArray) and values.dtype.kind in "iuf":
        return np.ma.filled(values.astype(np.float64), np.nan)
    if isinstance(values, np.ma.MaskedArray):
        values = _rows(values, np.ones(values.shape[0], dtype=bool))
    array = np.asarray(values)
    if array.dtype.kind in "iuf":
        return array.astype(np.float64)
    if array.dtype.kind == "b":  # a boolean column counts nothing (float(True) would be 1)
        return np.full(array.shape, np.nan)
    return np.array([_number(v) for v in array], dtype=np.float64)


def _whole_or_none(values: np.ndarray, mask: np.ndarray, name: str, label: str) -> list[int | None]:
    """The rows ``mask`` selects as whole numbers, None where missing (the few ``log`` rows)."""
    if np.asarray(values).dtype.kind in "iu":
        return [None if v is None else int(v) for v in _rows(values, mask)]
    numbers = _numbers(values)[mask]
    present = ~np.isnan(numbers)  # (an infinite value is present, and not a whole number)
    whole = np.isfinite(numbers) & (numbers == np.round(numbers)) & (np.abs(numbers) <= 2**53)
    if (present & ~whole).any():
        raise ValidationError(f"{label}: a {name} value of a log row is not a whole number of µs")
    return [None if np.isnan(v) else int(v) for v in numbers]


def _number(value: Any) -> float:
    if isinstance(value, (bool, np.bool_)):
        return np.nan
    try:
        return float(value) if value is not None else np.nan
    except (TypeError, ValueError):
        return np.nan


def _records(values: np.ndarray) -> np.ndarray:
    """The ``record`` column as lower-case text (vectorized: a summary table may have millions of rows)."""
    array = np.ma.filled(values, "") if isinstance(values, np.ma.MaskedArray) else np.asarray(values)
    if array.dtype == object:
        array = np.where(np.equal(array, None), "", array)
    return np.char.lower(np.char.strip(array.astype(str)))


def _rows(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The rows ``mask`` selects of a column, masked values as None (the ``log`` rows: few)."""
    if isinstance(values, np.ma.MaskedArray):
        data = values.data[mask].astype(object)
        data[np.ma.getmaskarray(values)[mask]] = None
        return data
    return np.asarray(values, dtype=object)[mask]


def _invalid_counts(
    lowered: dict[str, np.ndarray], tokens: np.ndarray, windows: np.ndarray
) -> tuple[int, int]:
    """(rows whose token values are not token counts, rows without an arrival time) of a table."""
    counts = _numbers(lowered["n"])
    inputs, outputs = _numbers(lowered["input_tokens"])[tokens], _numbers(lowered["output_tokens"])[tokens]
    with np.errstate(invalid="ignore"):
        good = (
            np.isfinite(inputs) & np.isfinite(outputs) & (inputs >= 0) & (outputs >= 0)
            & (inputs == np.floor(inputs)) & (outputs == np.floor(outputs)) & (inputs + outputs >= 1)
            & (inputs <= MAX_REQUEST_TOKENS) & (outputs <= MAX_REQUEST_TOKENS)
        )  # fmt: skip
    untimed = windows & np.isnan(_numbers(lowered["start_us"]))
    if "cached_tokens" in lowered:  # NULL: not reported; else a token count within the prompt
        cached = _numbers(lowered["cached_tokens"])[tokens]
        with np.errstate(invalid="ignore"):
            good &= np.isnan(cached) | (
                (cached >= 0)
                & (cached == np.floor(cached))
                & (cached <= np.where(np.isfinite(inputs), inputs, 0))
            )
    return int(counts[tokens][~good].sum()), int(counts[untimed].sum())


def summary_from_table(table: dict[str, np.ndarray], label: str) -> LogSummary:
    """A summary from the columns of its table form (a query result or a file)."""
    lowered = _table_columns(table, label)
    records = _records(lowered["record"])
    unknown = sorted(set(records) - {"tokens", "window", "log"})
    if unknown:
        raise ValidationError(f"{label}: record {excerpt(str(unknown[0]))} is not one of tokens, window, log")
    logs = records == "log"
    sources = [None if v is None else str(v) for v in _plain(_rows(lowered["source"], logs))]
    clocks = [None if v is None else str(v) for v in _plain(_rows(lowered["clock"], logs))]
    return _build_summary(lowered, records == "tokens", records == "window", logs, sources, clocks, label)


def _build_summary(
    lowered: dict[str, np.ndarray],
    tokens: np.ndarray,
    windows: np.ndarray,
    logs: np.ndarray,
    sources: list[str | None],
    clocks: list[str | None],
    label: str,
) -> LogSummary:
    """Check the table's values (every count n a whole number ≥ 0, every token value a token
    count, every request timed) and build the summary from its token, window and log rows."""
    counts = _numbers(lowered["n"])
    for mask, record in ((tokens, "tokens"), (windows, "window"), (logs, "log")):
        values = counts[mask]
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero(~np.isfinite(values) | (values < 0) | (values != np.round(values)))
        if bad.size:
            value = values[bad[0]]
            shown = "missing" if np.isnan(value) else f"{value:g}"
            raise ValidationError(
                f"{label}: a {record} row's count n is {shown}; every row's n must be a whole number "
                "of requests ≥ 0"
            )
    bad_tokens, untimed = _invalid_counts(lowered, tokens, windows)
    if bad_tokens or untimed:
        parts = []
        if bad_tokens:
            parts.append(
                f"{bad_tokens:,} with a token count missing, negative, fractional or above "
                f"{MAX_REQUEST_TOKENS:,}, or input + output = 0"
                + (
                    ", or cached tokens negative, fractional or above the prompt"
                    if "cached_tokens" in lowered
                    else ""
                )
            )
        if untimed:
            parts.append(f"{untimed:,} without an arrival time")
        raise ValidationError(
            f"{label}: the log has rows that are not valid requests ({'; '.join(parts)}); fix or filter "
            "them where the log lives and summarize again"
        )

    def ints(name: str, mask: np.ndarray) -> np.ndarray:
        values = _numbers(lowered[name])[mask]
        if np.isnan(values).any():
            raise ValidationError(f"{label}: a value of {name} is missing")
        if (values != np.round(values)).any():
            raise ValidationError(f"{label}: {name} must hold whole numbers")
        raw = lowered[name]
        if np.asarray(raw).dtype.kind in "iu":
            return np.asarray(np.ma.getdata(raw))[mask].astype(np.int64)
        if (np.abs(values) > 2**53).any():
            raise ValidationError(f"{label}: a {name} value is beyond 2**53 (store the column as integers)")
        return values.astype(np.int64)

    starts = ints("start_us", windows)
    ends = ints("end_us", windows)
    widths = set(np.unique(ends - starts).tolist())
    if len(widths) > 1:
        raise ValidationError(f"{label}: the arrival windows differ in length ({sorted(widths)[:3]} µs)")
    log_counts = ints("n", logs)
    first_column = _whole_or_none(lowered["start_us"], logs, "start_us", label)
    last_column = _whole_or_none(lowered["end_us"], logs, "end_us", label)
    records_out = []
    for k in range(int(logs.sum())):
        if log_counts[k] == 0:
            continue  # an empty log part (a filter that matched nothing)
        first, last = first_column[k], last_column[k]
        records_out.append(
            SummarySource(
                sources[k] if sources[k] is not None else "?",
                int(log_counts[k]),
                None if first is None else int(first),
                None if last is None else int(last),
                str(clocks[k]).lower() == "utc",
            )
        )
    cached = None
    if "cached_tokens" in lowered:
        values = _numbers(lowered["cached_tokens"])[tokens]
        cached = np.where(np.isnan(values), NOT_REPORTED, values).astype(np.int64)
    summary = make_summary(
        ints("input_tokens", tokens), ints("output_tokens", tokens), ints("n", tokens),
        widths.pop() if widths else None, starts, ints("n", windows), tuple(records_out), cached,
    )  # fmt: skip
    summary.check(label)
    return summary


def _plain(values: Any) -> np.ndarray:
    """A column as an object array with None for missing values (masked arrays included)."""
    if isinstance(values, np.ma.MaskedArray):
        data = values.data.astype(object)
        data[np.ma.getmaskarray(values)] = None
        return data
    array = np.asarray(values, dtype=object)
    return np.array([None if isinstance(v, float) and np.isnan(v) else v for v in array], dtype=object)


def _record_of(mask: np.ndarray, records: np.ndarray) -> str:
    return str(records[mask][0]) if mask.any() else "summary"


def read_summary_table(files: list[str], container: str, label: str) -> LogSummary:
    """A summary from its table form in Parquet, CSV or JSON lines (via DuckDB): the numeric columns
    of every row with the record as a small code, the text columns of the ``log`` rows only (a
    summary may hold millions of rows; no text column of that length is made)."""
    from fleetopt.io.logs import LogSource

    source = LogSource(label=label, files=tuple(files), container=container)
    connection = connect(ordered=True)
    record = "lower(trim(CAST(record AS VARCHAR)))"
    try:
        columns = {
            c[0].strip().lower()
            for c in connection.execute(f"DESCRIBE SELECT * FROM {source.relation()}").fetchall()
        }
        missing = [c for c in SUMMARY_COLUMNS if c not in columns]
        if missing:
            raise ValidationError(f"{label}: not a summary table (missing columns: {', '.join(missing)})")
        cached = ", cached_tokens AS cached_tokens" if "cached_tokens" in columns else ""
        table = connection.execute(
            f"SELECT CASE {record} WHEN 'tokens' THEN 0 WHEN 'window' THEN 1 WHEN 'log' THEN 2 ELSE 3 END "
            "AS code, input_tokens AS input_tokens, output_tokens AS output_tokens, start_us AS start_us, "
            f"end_us AS end_us, n AS n{cached} FROM "
            + source.relation()  # aliases: the header's case may differ
        ).fetchnumpy()
        unknown = np.asarray(table["code"]) == 3
        if unknown.any():
            example = connection.execute(
                f"SELECT record FROM {source.relation()} "
                f"WHERE {record} NOT IN ('tokens', 'window', 'log') LIMIT 1"
            ).fetchone()[0]
            raise ValidationError(f"{label}: record {excerpt(example)} is not one of tokens, window, log")
        log_rows = connection.execute(
            f"SELECT CAST(source AS VARCHAR), CAST(clock AS VARCHAR) FROM {source.relation()} "
            f"WHERE {record} = 'log'"
        ).fetchall()
    except ValidationError:
        raise
    except Exception as exc:  # duckdb.Error
        raise ValidationError(f"{label}: cannot read the summary ({engine_message(exc)})") from None
    code = np.asarray(table["code"])
    return _build_summary(
        table, code == 0, code == 1, code == 2, [r[0] for r in log_rows], [r[1] for r in log_rows], label
    )


# --------------------------------------------------------------------------- writing


def summary_document(summary: LogSummary) -> dict[str, Any]:
    """The JSON document of a summary."""
    return {
        SUMMARY_JSON_KEY: SUMMARY_JSON_VERSION,
        "window_us": summary.window_us,
        "sources": [
            {
                "source": s.source,
                "requests": s.requests,
                "first_us": s.first_us,
                "last_us": s.last_us,
                "clock": None if not s.has_times else ("utc" if s.utc else "relative"),
            }
            for s in summary.sources
        ],
        "tokens": {
            "input_tokens": summary.input_tokens.tolist(),
            "output_tokens": summary.output_tokens.tolist(),
            "n": summary.counts.tolist(),
            **(
                {}
                if summary.cached_tokens is None
                else {
                    "cached_tokens": [
                        None if v == NOT_REPORTED else v for v in summary.cached_tokens.tolist()
                    ]
                }
            ),
        },
        "windows": {"start_us": summary.window_starts_us.tolist(), "n": summary.window_counts.tolist()},
    }


def write_summary(summary: LogSummary, path: Path, inputs: list[str] = ()) -> None:
    """Write a summary atomically (fleetopt.io.files.atomic_output: a hidden temporary file in the
    same folder with the umask's mode, as plans are, then a rename), as Parquet, JSON or CSV by the
    path's suffix. Never replaces one of ``inputs``."""
    path = Path(path)
    fmt = summary_format_for(path)
    target = path.expanduser().resolve() if path.parent.exists() else path
    for item in inputs:
        source = Path(item).expanduser()
        if source.is_file() and source.resolve() == target:
            raise ValidationError(
                f"--output {path}: that is the input file {item}; write the summary elsewhere"
            )
    with atomic_output(path) as temporary:
        if fmt == "json":
            with open(temporary, "w", encoding="utf-8") as stream:
                json.dump(summary_document(summary), stream, separators=(",", ":"))
                stream.flush()
                os.fsync(stream.fileno())
        else:
            _copy_table(summary, str(temporary), fmt)


def _copy_table(summary: LogSummary, path: str, fmt: str) -> None:
    """Write the table form with DuckDB (Parquet with zstd, or CSV with a header): the token rows,
    the window rows, then one row per source log."""
    connection = connect(ordered=True)
    tokens = {
        "input_tokens": summary.input_tokens,
        "output_tokens": summary.output_tokens,
        "n": summary.counts,
    }
    with_cached = summary.cached_tokens is not None
    if with_cached:
        tokens["cached_tokens"] = summary.cached_tokens
    connection.register("summary_tokens", tokens)
    connection.register("summary_windows", {"start_us": summary.window_starts_us, "n": summary.window_counts})
    sources = summary.sources
    connection.register(
        "summary_logs",
        {
            "first_us": np.array([s.first_us if s.has_times else 0 for s in sources], dtype=np.int64),
            "last_us": np.array([s.last_us if s.has_times else 0 for s in sources], dtype=np.int64),
            "timed": np.array([s.has_times for s in sources], dtype=bool),
            "n": np.array([s.requests for s in sources], dtype=np.int64),
            "source": np.array([s.source for s in sources], dtype=object),
            "clock": np.array(["utc" if s.utc else "relative" for s in sources], dtype=object),
        },
    )
    null, text, window = "CAST(NULL AS BIGINT)", "CAST(NULL AS VARCHAR)", int(summary.window_us or 0)
    cached = ", CASE WHEN cached_tokens >= 0 THEN cached_tokens END AS cached_tokens" if with_cached else ""
    no_cached = f", {null}" if with_cached else ""
    query = (
        f"SELECT 'tokens' AS record, input_tokens, output_tokens, {null} AS start_us, {null} AS end_us, n, "
        f"{text} AS source, {text} AS clock{cached} FROM summary_tokens UNION ALL "
        f"SELECT 'window', {null}, {null}, start_us, start_us + {window}, n, {text}, {text}{no_cached} "
        "FROM summary_windows UNION ALL SELECT 'log', NULL, NULL, CASE WHEN timed THEN first_us END, "
        "CASE WHEN timed THEN last_us END, n, CAST(source AS VARCHAR), "
        f"CASE WHEN timed THEN CAST(clock AS VARCHAR) END{no_cached} FROM summary_logs"
    )
    # DuckDB writes into our temporary file itself (no tmp_<name> file of its own beside it, which a
    # killed command would leave for a later glob to pick up)
    options = "FORMAT parquet, COMPRESSION zstd" if fmt == "parquet" else "FORMAT csv, HEADER true"
    options += ", USE_TMP_FILE false"
    connection.execute(f"COPY ({query}) TO {sql_string(path)} ({options})")
