"""Request logs read by DuckDB, the embedded engine for logs of any size.

A log is one or more files (a path, a glob, a list) or ``s3://``/``https://`` URLs in one layout:
CSV (optionally gzip-compressed), JSON lines, JSON, Parquet — plus two nested layouts a preset
may name, OpenTelemetry's OTLP JSON and ``vllm bench``'s per-request arrays, which are flattened
to rows here. :func:`resolve_log` picks the columns (``--input-column`` etc., else the
``--log-format`` preset, else the recognised names of docs/workloads.md) and the unit of the time
column; :func:`rows_sql` is the one query of the log's requests (prompt tokens, generated
tokens, arrival on the log's clock in whole µs), which :func:`load_requests` reads into numpy for
a Workload and :func:`summary_sql` aggregates into a summary — the very query ``fleetopt workload
sql`` transpiles for a warehouse.

DuckDB is imported lazily (``fleetopt --help`` does not load it). Rows that are not valid requests
are counted by the query; the caller then asks :func:`first_invalid_row` (or, for a local text
file, the careful line-by-line reader) which row and field is wrong.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from fleetopt.core.workload import MICROSECONDS_PER_S
from fleetopt.errors import ValidationError, excerpt
from fleetopt.io.log_formats import CachedField, LogFormat

#: The most tokens one side of one request may have (no model has a context near this; it keeps
#: every count far inside int64 and float64 arithmetic).
MAX_REQUEST_TOKENS = 100_000_000

#: Layouts of log files: table-like ones DuckDB reads directly, and the nested ones flattened here.
LOG_CONTAINERS = ("csv", "jsonl", "json", "parquet")

_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_GLOB = re.compile(r"[*?\[]")
_INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                  "UINTEGER", "UBIGINT", "UHUGEINT")  # fmt: skip
_FLOAT_TYPES = ("FLOAT", "DOUBLE", "REAL")
# Seconds per unit of a numeric time column, from its name's suffix (no suffix: seconds).
_TIME_SUFFIX_SCALE_S = (("_ns", 1e-9), ("_us", 1e-6), ("_ms", 1e-3), ("_s", 1.0))


def is_remote(location: str) -> bool:
    """Whether ``location`` is a URL (``s3://``, ``https://``, ``gs://`` …) rather than a local path."""
    return bool(_URL.match(location))


def is_pattern(location: str) -> bool:
    """Whether ``location`` is a glob (``logs/*.csv.gz``) rather than one file."""
    return bool(_GLOB.search(location))


#: The most files a glob may match (each is read, or summarized, as part of one log).
MAX_GLOB_FILES = 10_000
#: The most folders a glob may look into before it is refused (``/usr/**/*.py`` would walk the
#: whole tree).
MAX_GLOB_FOLDERS = 20_000


def expand_local(location: str) -> list[Path]:
    """The files a local glob matches, sorted, each real file once: two matches that are the same
    file (a ``latest -> d2`` symlink beside ``d2``, or ``**`` reaching a folder twice) count once,
    by its resolved path. ``*``, ``?`` and ``[…]`` match within one path component, ``**`` any
    number of folders; names starting with a dot match only a pattern that starts with one (as
    ``glob`` and the shell). Refused with a ValidationError: no match; a symlink loop on the way
    (a folder that contains itself); more than :data:`MAX_GLOB_FILES` files or
    :data:`MAX_GLOB_FOLDERS` folders looked into."""
    import fnmatch
    import os
    import stat

    pattern = Path(location).expanduser()
    parts = pattern.parts
    fixed = next((k for k, part in enumerate(parts) if _GLOB.search(part)), len(parts))
    root = Path(*parts[:fixed]) if fixed else Path(".")
    rest = parts[fixed:]
    matches: dict[str, Path] = {}
    folders = [0]

    def too_many(what: str, limit: int) -> ValidationError:
        return ValidationError(
            f"{location}: the pattern reaches more than {limit:,} {what}, more than fleetopt "
            "reads as one log; narrow it (or summarize the parts with fleetopt workload summarize and "
            "merge the summaries)"
        )

    def entries(folder: Path) -> list[os.DirEntry]:
        folders[0] += 1
        if folders[0] > MAX_GLOB_FOLDERS:
            raise too_many("folders", MAX_GLOB_FOLDERS)
        try:
            with os.scandir(folder) as listing:
                return sorted(listing, key=lambda entry: entry.name)
        except OSError:
            return []

    def enter(folder: Path, ancestors: frozenset) -> frozenset | None:
        """The ancestors with ``folder`` added, or None when it is not a folder; a ValidationError
        when ``folder`` is one of its own ancestors (a symlink loop)."""
        try:
            info = folder.stat()
        except OSError:
            return None
        if not stat.S_ISDIR(info.st_mode):
            return None
        identity = (info.st_dev, info.st_ino)
        if identity in ancestors:
            raise ValidationError(
                f"{location}: {folder} is a symlink loop (a folder inside itself); "
                "fleetopt does not follow it: remove the link or narrow the pattern"
            )
        return ancestors | {identity}

    def add(path: Path) -> None:
        if path.is_file():
            matches.setdefault(os.path.realpath(path), path)
            if len(matches) > MAX_GLOB_FILES:
                raise too_many("files", MAX_GLOB_FILES)

    def step(child: Path, index: int, ancestors: frozenset) -> None:
        """Continue the match at ``child`` with the pattern's part ``index`` (a file ends it)."""
        if index == len(rest):
            add(child)
            return
        below = enter(child, ancestors)
        if below is not None:
            walk(child, index, below)

    def walk(folder: Path, index: int, ancestors: frozenset) -> None:
        """Match the pattern from its part ``index`` inside ``folder`` (``ancestors``: the folders
        on the way, ``folder`` included)."""
        part = rest[index]
        if part == "**":
            if index + 1 < len(rest):
                walk(folder, index + 1, ancestors)  # ** as no folder at all
            for entry in entries(folder):
                if entry.name.startswith("."):
                    continue
                child = folder / entry.name
                if entry.is_dir():
                    step(child, index, ancestors)
                elif index + 1 == len(rest):
                    add(child)
            return
        if not _GLOB.search(part):
            step(folder / part, index + 1, ancestors)
            return
        for entry in entries(folder):
            if (not entry.name.startswith(".") or part.startswith(".")) and fnmatch.fnmatchcase(
                entry.name, part
            ):
                step(folder / entry.name, index + 1, ancestors)

    start = enter(root, frozenset())
    if start is not None and rest:
        walk(root, 0, start)
    files = sorted(matches.values())
    if not files:
        raise ValidationError(f"{location}: the pattern matches no file")
    return files


def container_from_name(location: str) -> str | None:
    """The layout a file name suggests (for URLs and globs, which fleetopt cannot peek into)."""
    name = location.lower().split("?")[0]
    for suffix in (".gz", ".zst", ".gzip"):
        name = name.removesuffix(suffix)
    if name.endswith(".parquet") or name.endswith(".pq"):
        return "parquet"
    if name.endswith((".jsonl", ".ndjson", ".log")):
        return "jsonl"
    if name.endswith(".json"):
        return "json"
    if name.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    return None


# --------------------------------------------------------------------------- the DuckDB session


#: The column types DuckDB's CSV sniffer may choose: its defaults (DuckDB 2.0) without BIGNUM, whose
#: parse of a long digit string is quadratic (a 280,000-digit field took 8 s, a 2 MB one minutes);
#: such a field is read as DOUBLE (inf) and refused as a token count or a time.
CSV_TYPE_CANDIDATES = (
    "['BOOLEAN', 'BIGINT', 'HUGEINT', 'DOUBLE', 'TIME', 'DATE', 'TIMESTAMP', 'TIMESTAMPTZ', 'VARCHAR']"
)

#: The DuckDB connections alive (so a signal can interrupt their queries: interrupt_queries).
_CONNECTIONS: weakref.WeakSet = weakref.WeakSet()


def interrupt_queries() -> None:
    """Interrupt every running DuckDB query (from any thread: fleetopt.cli.signals' watcher); the
    query raises in the thread that runs it."""
    for connection in list(_CONNECTIONS):
        try:
            connection.interrupt()
        except Exception:  # noqa: BLE001 - a connection closed meanwhile
            pass


def connect(*, ordered: bool = False):
    """A DuckDB connection in UTC (naive date-times are UTC), with the usual credential chain for
    ``s3://`` paths when they are used. ``ordered`` keeps file order (row numbers for errors)."""
    import duckdb

    connection = duckdb.connect(":memory:")
    _CONNECTIONS.add(connection)
    connection.execute("SET TimeZone = 'UTC'")
    connection.execute("SET enable_progress_bar = false")
    if not ordered:
        connection.execute("SET preserve_insertion_order = false")
    return connection


def _s3_credentials(connection, locations: tuple[str, ...]) -> None:
    """Use the AWS credential chain (environment, ~/.aws, instance role) for ``s3://`` paths."""
    if not any(loc.lower().startswith(("s3://", "s3a://", "s3n://")) for loc in locations):
        return
    try:
        connection.execute("CREATE OR REPLACE SECRET fleetopt_s3 (TYPE s3, PROVIDER credential_chain)")
    except Exception:  # noqa: BLE001 - the aws extension may be unavailable; httpfs still reads env/config
        pass


def sql_string(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def sql_identifier(name: str) -> str:
    """A quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


# --------------------------------------------------------------------------- resolving a log


@dataclass(frozen=True)
class LogSource:
    """Where a log is and how DuckDB reads its rows.

    ``label``: the log as the user named it (messages); ``files``: local files or URLs;
    ``container``: csv, jsonl, json or parquet; ``layout``: table, otlp or arrays;
    ``gzip``: the files are gzip-compressed (local files: by their magic bytes);
    ``content_bytes``: each local gzip file's decompressed size, measured (None otherwise).
    """

    label: str
    files: tuple[str, ...]
    container: str
    layout: str = "table"
    gzip: bool = False
    content_bytes: tuple[int, ...] | None = None

    def relation(self) -> str:
        """DuckDB SQL of the raw rows (a table function call, or a subquery for nested layouts)."""
        files = "[" + ", ".join(sql_string(f) for f in self.files) + "]"
        compression = ", compression = 'gzip'" if self.gzip else ""
        if self.container == "parquet":
            return f"read_parquet({files})"
        if self.container == "csv":
            return (
                f"read_csv({files}, header = true, delim = ',', quote = '\"'{compression}, "
                f"auto_type_candidates = {CSV_TYPE_CANDIDATES})"
            )
        json_format = "newline_delimited" if self.container == "jsonl" else "auto"
        if self.layout == "otlp":
            return _otlp_relation(files, json_format, compression)
        return f"read_json({files}, format = '{json_format}'{compression}, maximum_object_size = 1073741824)"


def _otlp_relation(files: str, json_format: str, compression: str) -> str:
    """OTLP JSON (``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}`` per line or file)
    flattened to one row per span: ``start_time_unix_nano`` and the span's ``gen_ai.usage.*``
    attributes (``intValue``, else ``doubleValue``, else ``stringValue``) as columns."""
    from fleetopt.io.log_formats import LOG_FORMATS

    preset = LOG_FORMATS["otel"]
    keys = preset.input_columns + preset.output_columns + tuple(f.column for f in preset.cached_fields)
    pivots = ", ".join(
        f"TRY_CAST(max(CASE WHEN attribute_key = {sql_string(k)} THEN attribute_value END) AS DOUBLE) "
        f"AS {sql_identifier(k)}"
        for k in keys
    )
    return (
        "(WITH otlp_documents AS (SELECT resourceSpans AS resource_spans FROM read_json("
        f"{files}, format = '{json_format}'{compression}, columns = {{'resourceSpans': 'JSON'}}, "
        "maximum_object_size = 1073741824)), "
        "otlp_spans AS (SELECT row_number() OVER () AS span_row, span FROM (SELECT unnest(json_extract("
        "resource_spans, '$[*].scopeSpans[*].spans[*]')) AS span FROM otlp_documents)), "
        "otlp_attributes AS (SELECT span_row, json_extract_string(attribute, '$.key') AS attribute_key, "
        "COALESCE(json_extract_string(attribute, '$.value.intValue'), "
        "json_extract_string(attribute, '$.value.doubleValue'), "
        "json_extract_string(attribute, '$.value.stringValue')) AS attribute_value FROM (SELECT span_row, "
        "unnest(json_extract(span, '$.attributes[*]')) AS attribute FROM otlp_spans)) "
        "SELECT TRY_CAST(json_extract_string(any_value(span), '$.startTimeUnixNano') AS BIGINT) "
        f"AS start_time_unix_nano, {pivots} FROM otlp_spans LEFT JOIN otlp_attributes USING (span_row) "
        "GROUP BY span_row)"
    )


@dataclass(frozen=True)
class ResolvedLog:
    """A log with its columns chosen: the SQL expressions of its requests.

    ``input_sql``/``output_sql``: prompt and generated tokens (as written: validity is checked by
    the query); ``time_sql``: the arrival on the log's clock in whole µs (None without a time
    column); ``utc``: that clock is UTC; ``where_sql``: the preset's row filter; ``names``: the
    input, output and time columns for messages. ``cached``: the fields a row may report its
    cached prompt tokens in (:class:`CachedSQL`, the first a row reports is used; empty for a log
    without them), combined by the ``cached_*`` properties.
    """

    source: LogSource
    input_sql: str
    output_sql: str
    time_sql: str | None
    utc: bool
    where_sql: str | None
    names: tuple[str, str, str | None]
    integer_tokens: bool = False
    cached: tuple[CachedSQL, ...] = ()

    def _first(self, part: str) -> str | None:
        """SQL of ``part`` of the first field a row reports (None without cached fields)."""
        if not self.cached:
            return None
        if len(self.cached) == 1:
            return getattr(self.cached[0], part)
        whens = " ".join(f"WHEN {f.present} THEN {getattr(f, part)}" for f in self.cached)
        return f"CASE {whens} END"

    @property
    def cached_sql(self) -> str | None:
        """The cached prompt tokens a row reports, as a number (NULL where it reports none or a
        value that is not a number); None for a log without the field."""
        return self._first("value")

    @property
    def cached_present_sql(self) -> str | None:
        """Whether a row reports its cached prompt tokens."""
        return "(" + " OR ".join(f.present for f in self.cached) + ")" if self.cached else None

    @property
    def cached_text_sql(self) -> str | None:
        """The value a row reports as written (messages)."""
        return self._first("text")

    @property
    def cached_field_sql(self) -> str | None:
        """The name of the field a row reports its cached tokens in (messages)."""
        if not self.cached:
            return None
        return "CASE " + " ".join(f"WHEN {f.present} THEN {sql_string(f.name)}" for f in self.cached) + " END"

    @property
    def cached_name(self) -> str | None:
        """The fields read, for messages (``a or b``)."""
        return " or ".join(f.name for f in self.cached) or None


@dataclass(frozen=True)
class CachedSQL:
    """One field a row may report its cached prompt tokens in: SQL of its ``value`` (a number, NULL
    for one that is not), whether the row has it (``present``) and it as written (``text``), and
    its ``name`` for messages."""

    value: str
    present: str
    name: str
    text: str


def describe(connection, source: LogSource) -> list[tuple[str, str]]:
    """(column, DuckDB type) of the log's rows; a ValidationError naming the log when DuckDB cannot
    read it (its own message, first line)."""
    _s3_credentials(connection, source.files)
    relation = source.relation()
    if source.layout == "arrays":
        arrays = connection.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
        listed = [(name, kind) for name, kind, *_ in arrays if kind.endswith("[]")]
        return [(name, kind[:-2]) for name, kind in listed]
    return [
        (name, kind) for name, kind, *_ in connection.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
    ]


def rows_relation(source: LogSource, columns: list[tuple[str, str]]) -> str:
    """SQL of one row per request (the ``arrays`` layout unnests its per-request lists)."""
    if source.layout != "arrays":
        return source.relation()
    unnested = ", ".join(f"unnest({sql_identifier(name)}) AS {sql_identifier(name)}" for name, _ in columns)
    return f"(SELECT {unnested} FROM {source.relation()})"


def pick_column(
    header: list[str], given: str | None, candidates: tuple[str, ...], role: str, label: str, required: bool
) -> int | None:
    """Index of the column named ``given`` (exact, then case-insensitive) or of the first candidate
    present (case-insensitive); the errors name the columns found and the recognised names."""
    lowered = [c.strip().lower() for c in header]
    if given is not None:
        if given in header:
            return header.index(given)
        if given.strip().lower() in lowered:
            return lowered.index(given.strip().lower())
        raise ValidationError(
            f"{label}: no column {excerpt(given)} for {role} (columns found: {', '.join(header)})"
        )
    for candidate in candidates:
        if candidate.lower() in lowered:
            return lowered.index(candidate.lower())
    if required:
        raise ValidationError(
            f"{label}: no {role} column among {', '.join(header)} "
            f"(recognised: {', '.join(candidates)}; name one with --{role.replace(' ', '-')}-column)"
        )
    return None


def time_scale_from_name(column: str, default_scale_s: float) -> float:
    """Seconds per unit of a numeric time column from its name's suffix (_ns, _us, _ms, _s)."""
    lowered = column.strip().lower()
    for suffix, scale in _TIME_SUFFIX_SCALE_S:
        if lowered.endswith(suffix):
            return scale
    return default_scale_s


def _base_type(kind: str) -> str:
    return kind.split("(")[0].strip().upper()


def token_sql(column: str, kind: str) -> str:
    """A token column as a number (text is read as a number where it is one, else NULL: invalid).
    A boolean is never a token count (DuckDB casts true to 1): NULL, so its rows are refused."""
    base = _base_type(kind)
    if base in _INTEGER_TYPES or base in _FLOAT_TYPES or base.startswith("DECIMAL"):
        return sql_identifier(column)
    if base == "BOOLEAN":
        return f"CAST(CASE WHEN {sql_identifier(column)} IS NULL THEN NULL END AS DOUBLE)"
    if base == "JSON":  # a JSON value: a number, or text that reads as one (not true/false)
        quoted = sql_identifier(column)
        return (
            f"CASE WHEN json_type({quoted}) IN ('BOOLEAN', 'NULL') THEN NULL "
            f"ELSE TRY_CAST(json_extract_string({quoted}, '$') AS DOUBLE) END"
        )
    return f"TRY_CAST({sql_identifier(column)} AS DOUBLE)"


def time_sql(column: str, kind: str, unit_s: float) -> tuple[str, str]:
    """(SQL of the arrival in whole µs, "datetime" or "number") for a time column of DuckDB type
    ``kind``; numbers are in ``unit_s`` seconds per unit. Sub-µs digits are dropped (date-times)
    or rounded half away from zero (numbers); integers in µs or coarser units are exact. A value
    that is neither gives NULL (an invalid row)."""
    base = _base_type(kind)
    quoted = sql_identifier(column)
    if base.startswith("TIMESTAMP"):  # naive date-times are UTC (the session's time zone)
        return f"epoch_us({quoted})", "datetime"
    if base == "DATE":
        return f"epoch_us(CAST({quoted} AS TIMESTAMP))", "datetime"
    if base in _INTEGER_TYPES:
        return integer_time_sql(quoted, unit_s), "number"
    if base in _FLOAT_TYPES or base.startswith("DECIMAL"):
        return f"TRY_CAST(ROUND({quoted} * {unit_s * MICROSECONDS_PER_S!r}) AS BIGINT)", "number"
    return f"epoch_us(TRY_CAST({quoted} AS TIMESTAMPTZ))", "datetime"  # text: date-times


def integer_time_sql(quoted: str, unit_s: float) -> str:
    """Whole µs from an integer column in ``unit_s`` seconds per unit (exact for µs and coarser)."""
    per_unit = unit_s * MICROSECONDS_PER_S
    if per_unit >= 1:
        return f"CAST({quoted} AS BIGINT) * {round(per_unit)}"
    return f"CAST({quoted} AS BIGINT) // {round(1 / per_unit)}"


class UnreadableLog(ValidationError):
    """DuckDB cannot read the log as this layout, or a value cannot be converted (the careful
    reader, where there is one, says which line)."""


def resolve_log(
    connection,
    source: LogSource,
    *,
    preset: LogFormat | None,
    input_column: str | None = None,
    output_column: str | None = None,
    time_column: str | None = None,
    time_unit_s: float | None = None,
    default_names: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] = ((), (), ()),
    name_units: dict[str, float] | None = None,
    time_origin_us: int | None = None,
    fallback: bool = False,
    default_cached: tuple[CachedField, ...] = (),
) -> ResolvedLog | None:
    """Choose the columns of a log: options first, then the preset's candidates, then the
    recognised names (``default_names``: input, output, time). The unit of a numeric time column
    is ``time_unit_s`` (``--time-unit``), else the preset's, else its name's suffix, else
    ``name_units`` by name, else seconds; ``time_origin_us`` makes offsets absolute (UTC). The
    cached prompt tokens come from the preset's ``cached_fields``, else ``default_cached``, those
    present combined row by row (:func:`cached_sql`). Returns None when DuckDB cannot read the log
    and ``fallback`` (a careful reader will), else raises."""
    if preset is not None and preset.layout != "table" and source.layout == "table":
        if source.container in ("json", "jsonl"):
            source = replace(source, layout=preset.layout)
    try:
        columns = describe(connection, source)
    except Exception as exc:  # duckdb.Error: not readable as this layout
        if fallback:
            return None
        raise UnreadableLog(
            f"{source.label}: cannot be read as {_layout_words(source)} ({engine_message(exc)})"
        ) from None
    if not columns:
        if fallback:
            return None
        raise UnreadableLog(f"{source.label}: no columns (expected {_layout_words(source)})")
    header = [name for name, _ in columns]
    types = dict(columns)
    candidates = (
        (preset.input_columns, preset.output_columns, preset.time_columns)
        if preset is not None
        else default_names
    )
    input_index = pick_column(header, input_column, candidates[0], "input", source.label, True)
    output_index = pick_column(header, output_column, candidates[1], "output", source.label, True)
    time_index = pick_column(header, time_column, candidates[2], "time", source.label, False)

    def tokens(index: int, given: str | None, names: tuple[str, ...]) -> str:
        lowered = [h.lower() for h in header]
        if given is None and preset is not None and len(names) > 1:  # otel: current name, then the older
            present = [header[lowered.index(n.lower())] for n in names if n.lower() in lowered]
            if len(present) > 1:
                return "COALESCE(" + ", ".join(token_sql(c, types[c]) for c in present) + ")"
        return token_sql(header[index], types[header[index]])

    input_expr = tokens(input_index, input_column, candidates[0])
    output_expr = tokens(output_index, output_column, candidates[1])
    time_expr, utc, time_name = None, False, None
    if time_index is not None:
        time_name = header[time_index]
        unit = preset.time_unit if preset is not None and time_column is None else None
        if time_unit_s is not None:
            scale = time_unit_s
        elif unit is not None:
            scale = unit.seconds
        else:
            scale = time_scale_from_name(time_name, (name_units or {}).get(time_name.strip().lower(), 1.0))
        time_expr, kind = time_sql(time_name, types[time_name], scale)
        utc = kind == "datetime" or (unit is not None and unit.epoch)
        if time_origin_us is not None:
            time_expr, utc = f"({time_expr}) + {int(time_origin_us)}", True
    filters = []
    if preset is not None:
        filters = [condition for column, condition in preset.filters if column in header]
        if preset.name == "otel" and input_column is None and output_column is None:  # spans without usage
            filters.append(f"({input_expr}) IS NOT NULL OR ({output_expr}) IS NOT NULL")
    cached: tuple[CachedSQL, ...] = ()
    if input_column is None:  # a prompt column named by hand may not include the preset's cache
        fields = preset.cached_fields if preset is not None else default_cached
        cached = cached_sql(fields, types)
        lowered = [h.lower() for h in header]
        addends = [header[lowered.index(a.lower())] for a in (preset.input_addends if preset else ())
                   if a.lower() in lowered]  # fmt: skip
        if addends:  # the whole prompt: the computed tokens and the cached ones
            input_expr = " + ".join(
                [f"({input_expr})"] + [f"COALESCE({token_sql(a, types[a])}, 0)" for a in addends]
            )
    return ResolvedLog(
        source=source,
        input_sql=input_expr,
        output_sql=output_expr,
        time_sql=time_expr,
        utc=utc,
        where_sql=" AND ".join(f"({f})" for f in filters) or None,
        names=(header[input_index], header[output_index], time_name),
        integer_tokens=all(
            _base_type(types.get(c, "")) in _INTEGER_TYPES
            for c in _token_columns(header, input_expr, output_expr)
        ),
        cached=cached,
    )


def _json_document_sql(quoted: str, kind: str) -> str | None:
    """A column as a JSON document DuckDB can take paths of (None for a column that cannot hold
    one: a number, a date-time)."""
    base = _base_type(kind)
    if base == "JSON":
        return quoted
    if base.startswith(("STRUCT", "MAP")) or kind.strip().upper().startswith(("STRUCT", "MAP")):
        return f"to_json({quoted})"
    if base == "VARCHAR":
        return f"TRY_CAST({quoted} AS JSON)"
    return None


def cached_sql(fields: tuple[CachedField, ...], types: dict[str, str]) -> tuple[CachedSQL, ...]:
    """The SQL of each of ``fields`` the log has (``types``: its columns and DuckDB types; names
    matched case-insensitively; a path needs a column that can hold JSON)."""
    by_lower = {name.lower(): name for name in types}
    found = []
    for field in fields:
        column = by_lower.get(field.column.lower())
        if column is None:
            continue
        quoted, kind = sql_identifier(column), types[column]
        if not field.path:
            value = token_sql(column, kind)
            present = (
                f"({quoted} IS NOT NULL AND json_type({quoted}) <> 'NULL')"
                if _base_type(kind) == "JSON"
                else f"({quoted} IS NOT NULL)"
            )
            text = f"CAST({quoted} AS VARCHAR)"
        else:
            document = _json_document_sql(quoted, kind)
            if document is None:
                continue
            raw = f"json_extract({document}, {sql_string('$.' + '.'.join(field.path))})"
            present = f"(coalesce(json_type({raw}), 'NULL') <> 'NULL')"
            value = (
                f"CASE WHEN json_type({raw}) IN ('UBIGINT', 'BIGINT', 'DOUBLE') THEN CAST({raw} AS DOUBLE) "
                f"WHEN json_type({raw}) = 'VARCHAR' "
                f"THEN TRY_CAST(json_extract_string({raw}, '$') AS DOUBLE) END"
            )
            text = f"CAST({raw} AS VARCHAR)"
        found.append(CachedSQL(value, present, ".".join((column, *field.path)), text))
    return tuple(found)


def _token_columns(header: list[str], *expressions: str) -> list[str]:
    """The columns the token expressions read (an expression of text or COALESCE is never integer)."""
    columns = []
    for expression in expressions:
        if expression.startswith(("TRY_CAST", "COALESCE")):
            return [""]
        columns.append(expression.strip('"').replace('""', '"'))
    return [c for c in columns if c in header] if all(c in header for c in columns) else [""]


def _layout_words(source: LogSource) -> str:
    if source.layout == "otlp":
        return "OTLP JSON spans"
    if source.layout == "arrays":
        return "a JSON document of per-request arrays"
    return {"csv": "CSV", "jsonl": "JSON lines", "json": "JSON", "parquet": "Parquet"}[source.container]


#: The most characters of a DuckDB error message an error of fleetopt quotes.
_ENGINE_MESSAGE_CHARS = 600


def engine_message(exc: BaseException) -> str:
    """What DuckDB said, as one line: its lines joined (a message may break mid-sentence, as the
    one about a missing extension does), without the SQL context it appends (``LINE 1: …``: our
    query, not the user's input), cut at a word boundary past :data:`_ENGINE_MESSAGE_CHARS`."""
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    text = re.split(r"\n\s*LINE \d+:", text, maxsplit=1)[0]
    text = " ".join(part.strip() for part in text.splitlines() if part.strip())
    if len(text) > _ENGINE_MESSAGE_CHARS:
        cut = text.rfind(" ", 0, _ENGINE_MESSAGE_CHARS)
        text = text[: cut if cut > _ENGINE_MESSAGE_CHARS // 2 else _ENGINE_MESSAGE_CHARS] + " …"
    return text


# --------------------------------------------------------------------------- the requests query


#: Valid (input, output) pairs are packed into one BIGINT key input·2²⁷ + output (both ≤ 10⁸ < 2²⁷):
#: DuckDB groups one integer faster than two.
PAIR_FACTOR = 1 << 27


def pair_sql(log: ResolvedLog) -> str:
    """The packed (input, output) key of a valid request's tokens, NULL for any other row."""
    return _valid_tokens_key(log, f"CAST(input_raw AS BIGINT) * {PAIR_FACTOR} + CAST(output_raw AS BIGINT)")


def _valid_tokens_key(log: ResolvedLog, packed: str) -> str:
    """``packed`` (an integer key of a row's tokens) where the tokens are a request's, else NULL."""
    return f"CASE WHEN {valid_sql(False, log.integer_tokens)} THEN {packed} END"


def valid_sql(time_present: bool, integer_tokens: bool = False) -> str:
    """The condition a row must meet to be a request (the careful reader's rules, docs/workloads.md);
    ``integer_tokens``: both token columns are integer-typed (no fraction to check)."""
    whole = "" if integer_tokens else "AND input_raw = FLOOR(input_raw) AND output_raw = FLOOR(output_raw) "
    rule = (
        "input_raw IS NOT NULL AND output_raw IS NOT NULL AND input_raw >= 0 AND output_raw >= 0 "
        f"{whole}AND input_raw <= {MAX_REQUEST_TOKENS} AND output_raw <= {MAX_REQUEST_TOKENS} "
        "AND input_raw + output_raw >= 1"
    )
    return rule + (" AND arrival_us IS NOT NULL" if time_present else "")


#: The columns of a summary table (the result of :func:`summary_sql`; docs/scale.md).
SUMMARY_COLUMNS = ("record", "input_tokens", "output_tokens", "start_us", "end_us", "n", "source", "clock")


def rows_sql(log: ResolvedLog, relation: str) -> str:
    """One row per request of ``relation`` as written: ``input_raw``, ``output_raw`` and
    ``arrival_us`` (whole µs on the log's clock, NULL without a time column) — and, for a log that
    reports cached prompt tokens, ``cached_raw`` and ``cached_present`` — after the preset's
    filter. Nothing is checked here: each query built on it checks what it aggregates."""
    time_expr = log.time_sql or "CAST(NULL AS BIGINT)"
    where = f" WHERE {log.where_sql}" if log.where_sql else ""
    cached = (
        f", {log.cached_sql} AS cached_raw, {log.cached_present_sql} AS cached_present"
        if log.cached_sql is not None
        else ""
    )
    return (
        f"SELECT {log.input_sql} AS input_raw, {log.output_sql} AS output_raw, "
        f"{time_expr} AS arrival_us{cached} FROM {relation}{where}"
    )


def cached_key_sql() -> str:
    """A row's reported cached prompt tokens as a BIGINT: -1 where it reports none, NULL where it
    reports a value that is not a whole number of tokens in 0 … its prompt (an invalid row)."""
    return (
        "CASE WHEN NOT cached_present THEN -1 WHEN cached_raw >= 0 AND cached_raw = FLOOR(cached_raw) "
        "AND cached_raw <= input_raw THEN CAST(cached_raw AS BIGINT) END"
    )


def summary_sql(rows: str, window_us: int | None, source: str, utc: bool, cached: bool = False) -> str:
    """The summary of a log as one table (DuckDB dialect; ``workload sql`` transpiles it): one scan,
    one ``GROUP BY GROUPING SETS``.

    Rows by ``record``: ``tokens`` (input_tokens, output_tokens, n) — the exact joint histogram of
    the values as written; ``window`` (start_us, end_us, n) — arrivals per clock window
    [start, start + window), a NULL start counting rows without a time; ``log`` (start_us = first
    arrival, end_us = last, n = rows, source, clock) — provenance. The reader refuses a table whose
    histogram has a value that is not a token count, or rows without a time
    (:func:`fleetopt.io.summaries.summary_from_table`). With ``cached`` (``rows`` has
    ``cached_raw`` and ``cached_present``), a last column ``cached_tokens`` is a third key of the
    histogram: the cached prompt tokens as written, NULL on the rows that report none.
    """
    timed = window_us is not None
    grouped_window = "GROUPING(window_start_us) = 0" if timed else "FALSE"
    is_log = "GROUPING(input_tokens) = 1" + (" AND GROUPING(window_start_us) = 1" if timed else "")
    clock = sql_string("utc" if utc else "relative") if timed else "CAST(NULL AS VARCHAR)"
    windowing = (
        f"arrival_us - (((arrival_us % {window_us}) + {window_us}) % {window_us})"
        if timed
        else "CAST(NULL AS BIGINT)"
    )
    # without times there is no window grouping set: window_start_us may not be named outside it
    window_start = f"WHEN {grouped_window} THEN window_start_us " if timed else ""
    window_end = f"WHEN {grouped_window} THEN window_start_us + {window_us} " if timed else ""
    token_keys = "input_tokens, output_tokens" + (", cached_tokens" if cached else "")
    sets = f"({token_keys}), " + ("(window_start_us), " if timed else "") + "()"
    cached_in = ", CASE WHEN cached_present THEN cached_raw END AS cached_tokens" if cached else ""
    cached_out = ", cached_tokens" if cached else ""
    return (
        f"WITH fleetopt_rows AS ({rows}), fleetopt_windowed AS (SELECT input_raw AS input_tokens, "
        f"output_raw AS output_tokens{cached_in}, arrival_us, "
        f"{windowing} AS window_start_us FROM fleetopt_rows) "
        "SELECT CASE WHEN GROUPING(input_tokens) = 0 THEN 'tokens' "
        f"WHEN {grouped_window} THEN 'window' ELSE 'log' END AS record, input_tokens, output_tokens, "
        f"CASE {window_start}WHEN {is_log} THEN MIN(arrival_us) END "
        f"AS start_us, CASE {window_end}WHEN {is_log} THEN MAX(arrival_us) END AS end_us, COUNT(*) AS n, "
        f"CASE WHEN {is_log} THEN {sql_string(source)} END AS source, "
        f"CASE WHEN {is_log} THEN {clock} END AS clock{cached_out} FROM fleetopt_windowed "
        f"GROUP BY GROUPING SETS ({sets})"
    )


# --------------------------------------------------------------------------- reading a log


@dataclass(frozen=True)
class LogRequests:
    """A log's requests as read: the histogram (distinct pairs, ascending total then input, as a
    Workload orders its atoms), the arrivals (whole µs on the clock, sorted; None without times)
    and the clock."""

    input_tokens: np.ndarray
    output_tokens: np.ndarray
    counts: np.ndarray
    arrival_us: np.ndarray | None
    utc: bool
    cached: Any = None  # fleetopt.core.prefix.ReportedCache, for a log that reports cached tokens


class InvalidRows(ValidationError):
    """Some rows of the log are not valid requests (``count`` of them); the caller names the first."""

    def __init__(self, label: str, count: int):
        super().__init__(f"{label}: {count:,} rows are not valid requests")
        self.count = count


def atom_sql(log: ResolvedLog) -> str:
    """A valid request's tokens as one BIGINT that sorts like a Workload's atoms, (input + output)·2²⁷
    + input (total ≤ 2·10⁸ < 2²⁸, so the key stays below 2⁵⁵), NULL for any other row."""
    total = "CAST(input_raw AS BIGINT) + CAST(output_raw AS BIGINT)"
    return _valid_tokens_key(log, f"({total}) * {PAIR_FACTOR} + CAST(input_raw AS BIGINT)")


def _missing(column: np.ndarray) -> int:
    """How many entries of a fetched column are NULL (DuckDB masks them)."""
    return int(np.ma.getmaskarray(column).sum()) if isinstance(column, np.ma.MaskedArray) else 0


def load_requests(log: ResolvedLog, connection=None) -> LogRequests:
    """Read every request of the log: DuckDB parses and checks each row once and hands over two
    int64 columns, the packed atom key (:func:`atom_sql`) and the arrival µs; numpy sorts the keys
    and counts the runs of equal keys — the exact histogram, already in the Workload's atom order
    (sorting 10⁷ integers costs a fraction of a hash aggregation into millions of groups) — and
    sorts the arrivals. Raises :class:`InvalidRows` when any row is not a request,
    :class:`UnreadableLog` when DuckDB cannot read the log."""
    connection = connection or connect()
    with_times = log.time_sql is not None
    with_cached = log.cached_sql is not None
    try:
        # in file order, which costs DuckDB nothing here: a log written in time order needs no sort
        connection.execute("SET preserve_insertion_order = true")
        columns = describe(connection, log.source) if log.source.layout == "arrays" else []
        rows = rows_sql(log, rows_relation(log.source, columns))
        cached = f", {cached_key_sql()} AS cached" if with_cached else ""
        table = connection.execute(
            f"SELECT {atom_sql(log)} AS atom, arrival_us{cached} FROM ({rows})"
        ).fetchnumpy()
    except ValidationError:
        raise
    except Exception as exc:  # duckdb.Error: a value DuckDB cannot convert, a malformed file
        raise UnreadableLog(f"{log.source.label}: {engine_message(exc)}") from None
    keys, arrivals = table.pop("atom"), table.pop("arrival_us")
    cached = table.pop("cached") if with_cached else None
    invalid = max(
        _missing(keys), _missing(arrivals) if with_times else 0, _missing(cached) if with_cached else 0
    )
    if invalid:
        raise InvalidRows(log.source.label, invalid)
    if not keys.size:
        raise ValidationError(f"{log.source.label}: no requests")
    keys = np.asarray(keys, dtype=np.int64)
    reported = None
    if with_cached:
        atoms, counts, reported = _count_with_cached(
            keys, np.asarray(cached, dtype=np.int64), log.cached_name
        )
    else:
        keys.sort()
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        counts = np.diff(np.append(starts, keys.size))
        atoms = keys[starts]
    del keys, cached
    totals, inputs = atoms // PAIR_FACTOR, atoms % PAIR_FACTOR
    if with_times:
        arrivals = np.asarray(arrivals, dtype=np.int64)
        if arrivals.size > 1 and (arrivals[1:] < arrivals[:-1]).any():
            arrivals.sort()
    return LogRequests(inputs, totals - inputs, counts, arrivals if with_times else None, log.utc, reported)


def _count_with_cached(keys: np.ndarray, cached: np.ndarray, field: str | None):
    """(atoms, their counts, ReportedCache) of rows' atom keys (:func:`atom_sql`) and cached tokens
    (-1: not reported): one sort of the two packed into one integer when they fit in 63 bits (the
    cached count in the low bits, so the atoms come out in their order), else a lexsort; the atoms
    are the runs of the distinct (atom, cached) keys. None for the ReportedCache when no row reports."""
    from fleetopt.core.summary import reported_cache

    shift = (int(cached.max()) + 1).bit_length()
    if int(keys.max()).bit_length() + shift <= 63:
        keys <<= shift
        cached += 1
        keys |= cached
        keys.sort()
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        counts = np.diff(np.append(starts, keys.size))
        distinct = keys[starts]
        atom_of, cached_of = distinct >> shift, (distinct & ((1 << shift) - 1)) - 1
    else:
        order = np.lexsort((cached, keys))
        keys, cached = keys[order], cached[order]
        starts = np.flatnonzero(
            np.concatenate(([True], (keys[1:] != keys[:-1]) | (cached[1:] != cached[:-1])))
        )
        counts = np.diff(np.append(starts, keys.size))
        atom_of, cached_of = keys[starts], cached[starts]
    atom_starts = np.flatnonzero(np.concatenate(([True], atom_of[1:] != atom_of[:-1])))
    atoms, atom_counts = atom_of[atom_starts], np.add.reduceat(counts, atom_starts)
    totals, inputs = atom_of // PAIR_FACTOR, atom_of % PAIR_FACTOR
    inputs, outputs, cached_of, counts = _in_summary_order(inputs, totals - inputs, cached_of, counts)
    return atoms, atom_counts, reported_cache(inputs, outputs, cached_of, counts, field)


def _in_summary_order(inputs, outputs, cached, counts):
    """Distinct (input, output, cached) rows and their counts in the summary's order, ascending: one
    sort of a dense key when the three fit in 62 bits (cached + 1 ≤ input + 1), else a lexsort."""
    out_width, cached_width = int(outputs.max()) + 1, int(inputs.max()) + 2
    if (int(inputs.max()) + 1).bit_length() + out_width.bit_length() + cached_width.bit_length() <= 62:
        dense, counts = _in_key_order((inputs * out_width + outputs) * cached_width + (cached + 1), counts)
        pairs = dense // cached_width
        return pairs // out_width, pairs % out_width, dense % cached_width - 1, counts
    order = np.lexsort((cached, outputs, inputs))
    return inputs[order], outputs[order], cached[order], counts[order]


def load_rows(log: ResolvedLog, connection=None) -> dict[str, np.ndarray]:
    """Every request in file order (``input``, ``output`` and, with times, ``arrival`` µs), for a
    connection made with ``ordered=True``; raises :class:`InvalidRows` on a row that is not a request."""
    connection = connection or connect(ordered=True)
    with_times = log.time_sql is not None
    valid = f"({pair_sql(log)}) IS NOT NULL" + (" AND arrival_us IS NOT NULL" if with_times else "")
    try:
        columns = describe(connection, log.source) if log.source.layout == "arrays" else []
        rows = rows_sql(log, rows_relation(log.source, columns))
        table = connection.execute(
            "SELECT CAST(input_raw AS DOUBLE) AS i, CAST(output_raw AS DOUBLE) AS o, arrival_us, "
            f"{valid} AS valid FROM ({rows})"
        ).fetchnumpy()
    except ValidationError:
        raise
    except Exception as exc:  # duckdb.Error
        raise UnreadableLog(f"{log.source.label}: {engine_message(exc)}") from None
    good = np.ma.filled(table["valid"], False).astype(bool)
    if not good.all():
        raise InvalidRows(log.source.label, int((~good).sum()))
    rows_read = {
        "input": np.asarray(table["i"]).astype(np.int64),
        "output": np.asarray(table["o"]).astype(np.int64),
    }
    if with_times:
        rows_read["arrival"] = np.asarray(table["arrival_us"], dtype=np.int64)
    return rows_read


def local_summary_sql(log: ResolvedLog, relation: str, window_us: int | None) -> str:
    """The summary query fleetopt runs itself (DuckDB only): the rows stream once (a materialized
    CTE of packed token pairs and arrival µs, with several consumers) into the aggregates, one row
    each of ``(record, key, n)``: record 0 — a token pair and its count; 1 — a clock window's start
    and its count (only with times); 2 and 3 — the first and the last arrival (n: every row). It
    returns the same summary as the portable :func:`summary_sql` (tested), three narrow columns
    with no NULL but for rows that are not requests."""
    with_cached = log.cached_sql is not None
    nothing = ", CAST(NULL AS BIGINT) AS cached" if with_cached else ""
    parts = [
        f"SELECT 0 AS record, pair AS key, COUNT(*) AS n{', cached' if with_cached else ''} "
        f"FROM fleetopt_requests GROUP BY pair{', cached' if with_cached else ''}",
        f"SELECT 2, MIN(arrival_us), COUNT(*){nothing} FROM fleetopt_requests",
        f"SELECT 3, MAX(arrival_us), COUNT(*){nothing} FROM fleetopt_requests",
    ]
    if window_us is not None:
        windowing = f"arrival_us - (((arrival_us % {window_us}) + {window_us}) % {window_us})"
        windows = f"SELECT 1, {windowing} AS window_start_us, COUNT(*){nothing} FROM fleetopt_requests"
        parts.insert(1, f"{windows} GROUP BY window_start_us")
    cached = f", {cached_key_sql()} AS cached" if with_cached else ""
    return (
        f"WITH fleetopt_requests AS MATERIALIZED (SELECT {pair_sql(log)} AS pair, arrival_us{cached} "
        f"FROM ({rows_sql(log, relation)})) " + " UNION ALL ".join(parts)
    )


def _in_key_order(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct ``keys`` ascending, their ``counts`` in the same order): one sort of each key and
    its count packed into one integer when both fit in 63 bits, else an argsort."""
    if keys.size < 2:
        return keys, counts
    low = int(keys.min())
    key_bits = (int(keys.max()) - low).bit_length()
    count_bits = max(1, int(counts.max()).bit_length())
    if key_bits + count_bits > 63:
        order = np.argsort(keys)
        return keys[order], counts[order]
    packed = keys - low
    packed <<= count_bits
    packed |= counts
    packed.sort()
    return (packed >> count_bits) + low, packed & ((1 << count_bits) - 1)


#: A log of at most this many requests (by :func:`estimated_rows`) is summarized in memory: its
#: rows come out as two int64 columns (:func:`load_requests`, ≤ 512 MB) that numpy sorts and counts,
#: about 1.5× faster than DuckDB's hash aggregation into millions of groups; a bigger one, or one
#: whose size cannot be told (a URL), streams through :func:`local_summary_sql`, which keeps only
#: the aggregates. Both give the same summary (tested).
IN_MEMORY_SUMMARY_ROWS = 32_000_000

#: Bytes read from the head of a text log to learn its bytes per row (:func:`estimated_rows`).
_ROW_SAMPLE_BYTES = 1 << 20
#: The fewest bytes one request takes in a text log (a CSV row ``1,1,1`` and its line end).
_MIN_ROW_BYTES = 6


def estimated_rows(source: LogSource, connection) -> int | None:
    """About how many rows the log has, or None when that cannot be told cheaply (a URL, a JSON
    document): Parquet files count them in their footers; a local CSV or JSON lines file has its
    size over the mean bytes per line of its first MiB; a gzip-compressed one its measured
    decompressed size (``content_bytes``) over 6 bytes a row."""
    if any(is_remote(f) for f in source.files):
        return None
    if source.container == "parquet":
        files = "[" + ", ".join(sql_string(f) for f in source.files) + "]"
        try:
            (rows,) = connection.execute(
                f"SELECT COALESCE(SUM(num_rows), 0) FROM parquet_file_metadata({files})"
            ).fetchone()
        except Exception:  # noqa: BLE001 - not readable as Parquet: the query will say why
            return None
        return int(rows)
    if source.container not in ("csv", "jsonl"):
        return None
    total = 0
    try:
        for index, name in enumerate(source.files):
            size = Path(name).stat().st_size
            if source.gzip:
                known = source.content_bytes[index] if source.content_bytes is not None else None
                total += (size * 12 if known is None else known) // _MIN_ROW_BYTES
                continue
            with open(name, "rb") as stream:
                head = stream.read(_ROW_SAMPLE_BYTES)
            lines = head.count(b"\n")
            total += lines if len(head) == size else size * max(lines, 1) // max(len(head), 1)
    except OSError:
        return None
    return total


def summary_from_requests(requests: LogRequests, window_us: int | None, source: str):
    """The :class:`~fleetopt.core.summary.LogSummary` of a log's requests as :func:`load_requests`
    reads them: the pairs re-sorted by (input, output), the sorted arrivals counted per window."""
    from fleetopt.core.summary import LogSummary, SummarySource

    inputs, outputs = requests.input_tokens, requests.output_tokens
    width = int(outputs.max()) + 1
    cached = requests.cached
    if cached is None:
        dense, counts = _in_key_order(inputs * width + outputs, requests.counts)
    else:  # the (input, output, cached) histogram, already in the summary's order
        counts = cached.counts
    arrivals = requests.arrival_us
    starts, window_counts = np.zeros(0, np.int64), np.zeros(0, np.int64)
    first = last = None
    if arrivals is not None and window_us is not None:
        index = np.floor_divide(arrivals, window_us)
        changes = np.flatnonzero(np.concatenate(([True], index[1:] != index[:-1])))
        starts, window_counts = index[changes] * window_us, np.diff(np.append(changes, index.size))
        first, last = int(arrivals[0]), int(arrivals[-1])
    record = SummarySource(source, int(counts.sum()), first, last, requests.utc)
    if cached is not None:
        return LogSummary(
            cached.input_tokens, cached.output_tokens, counts, window_us if first is not None else None,
            starts, window_counts, (record,), cached.cached_tokens,
        )  # fmt: skip
    return LogSummary(
        dense // width, dense % width, counts, window_us if first is not None else None, starts,
        window_counts, (record,),
    )  # fmt: skip


def summarize_log(log: ResolvedLog, window_us: int | None, source: str, connection=None):
    """The :class:`~fleetopt.core.summary.LogSummary` of the log: in memory for a log of at most
    :data:`IN_MEMORY_SUMMARY_ROWS` requests, else by :func:`local_summary_sql` (streaming: only the
    aggregates are kept); raises :class:`InvalidRows` when a row is not a valid request."""
    from fleetopt.core.summary import LogSummary, SummarySource

    connection = connection or connect()
    with_times = log.time_sql is not None
    rows = estimated_rows(log.source, connection)
    if rows is not None and rows <= IN_MEMORY_SUMMARY_ROWS:
        summary = summary_from_requests(load_requests(log, connection), window_us, source)
        summary.check(log.source.label)
        return summary
    try:
        columns = describe(connection, log.source) if log.source.layout == "arrays" else []
        query = local_summary_sql(log, rows_relation(log.source, columns), window_us if with_times else None)
        table = connection.execute(query).fetchnumpy()
    except ValidationError:
        raise
    except Exception as exc:  # duckdb.Error
        raise UnreadableLog(f"{log.source.label}: {engine_message(exc)}") from None
    records = np.asarray(table["record"])
    counts = np.asarray(table["n"], dtype=np.int64)
    missing = np.ma.getmaskarray(table["key"])
    keys = np.ma.getdata(table["key"]).astype(np.int64, copy=False)
    tokens, windows = records == 0, records == 1
    if log.cached_sql is not None:  # a row with an invalid cached count has no cached key
        missing = missing | (tokens & np.ma.getmaskarray(table["cached"]))
    bad = int(counts[tokens & missing].sum())
    untimed = int(counts[windows & missing].sum()) if with_times else 0
    if bad or untimed:
        raise InvalidRows(log.source.label, max(bad, untimed))
    total = int(counts[records == 2].sum())
    if total == 0:
        raise ValidationError(f"{log.source.label}: no requests")
    pairs, pair_counts = keys[tokens], counts[tokens]
    inputs, outputs = pairs // PAIR_FACTOR, pairs % PAIR_FACTOR
    cached = None
    if log.cached_sql is not None:
        from fleetopt.core.summary import reported_cache

        cached_of = np.ma.getdata(table["cached"]).astype(np.int64, copy=False)[tokens]
        inputs, outputs, cached_of, pair_counts = _in_summary_order(inputs, outputs, cached_of, pair_counts)
        if reported_cache(inputs, outputs, cached_of, pair_counts) is not None:
            cached = cached_of
        else:  # no row reports: the summary of a log without the field
            inputs, outputs, pair_counts = _pairs_summed(inputs, outputs, pair_counts)
    else:
        # (input, output) ascending, the canonical order of make_summary: a dense key sorts the same
        width = int(outputs.max()) + 1
        dense, pair_counts = _in_key_order(inputs * width + outputs, pair_counts)
        inputs, outputs = dense // width, dense % width
    starts, window_counts = np.zeros(0, np.int64), np.zeros(0, np.int64)
    first = last = None
    if with_times:
        window_index, window_counts = _in_key_order(keys[windows] // window_us, counts[windows])
        starts = window_index * window_us
        first, last = int(keys[records == 2][0]), int(keys[records == 3][0])
    record = SummarySource(source, total, first, last, log.utc)
    summary = LogSummary(
        inputs,
        outputs,
        pair_counts,
        window_us if with_times else None,
        starts,
        window_counts,
        (record,),
        cached,
    )
    summary.check(log.source.label)
    return summary


def _pairs_summed(inputs, outputs, counts):
    """Rows sorted by (input, output) with runs of equal pairs added together."""
    starts = np.flatnonzero(
        np.concatenate(([True], (inputs[1:] != inputs[:-1]) | (outputs[1:] != outputs[:-1])))
    )
    return inputs[starts], outputs[starts], np.add.reduceat(counts, starts)


def first_invalid_row(log: ResolvedLog) -> str:
    """The message naming the first row (1-based, in file order) that is not a valid request and
    why, in the careful reader's words (``label, row N: column = value is …``)."""
    connection = connect(ordered=True)
    columns = describe(connection, log.source) if log.source.layout == "arrays" else []
    relation = rows_relation(log.source, columns)
    time_expr = log.time_sql or "CAST(NULL AS BIGINT)"
    where = f" WHERE {log.where_sql}" if log.where_sql else ""
    names = log.names
    time_raw = sql_identifier(names[2]) if names[2] else "NULL"
    with_cached = log.cached_sql is not None
    cached = (
        f", {log.cached_sql} AS cached_raw, {log.cached_present_sql} AS cached_present, "
        f"{log.cached_text_sql} AS cached_text, {log.cached_field_sql} AS cached_field"
        if with_cached
        else ", NULL AS cached_raw, false AS cached_present, NULL AS cached_text, NULL AS cached_field"
    )
    valid = valid_sql(log.time_sql is not None)
    if with_cached:
        valid = f"({valid}) AND ({cached_key_sql()}) IS NOT NULL"
    numbered = f"(SELECT *, row_number() OVER () AS fleetopt_row FROM {relation}) AS numbered_rows"
    query = (
        "SELECT row_number, input_raw, output_raw, arrival_us, input_text, output_text, time_text, "
        "cached_raw, cached_present, cached_text, cached_field FROM ("
        f"SELECT fleetopt_row AS row_number, {log.input_sql} AS input_raw, {log.output_sql} AS output_raw, "
        f"{time_expr} AS arrival_us, CAST({sql_identifier(names[0])} AS VARCHAR) AS input_text, "
        f"CAST({sql_identifier(names[1])} AS VARCHAR) AS output_text, "
        f"CAST({time_raw} AS VARCHAR) AS time_text{cached} FROM {numbered}{where}) AS checked_rows "
        f"WHERE NOT COALESCE({valid}, false) "
        "ORDER BY row_number LIMIT 1"
    )
    try:
        row = connection.execute(query).fetchone()
    except Exception as exc:  # noqa: BLE001 - no row can be located: say what DuckDB said
        return f"{log.source.label}: {engine_message(exc)}"
    if row is None:
        return f"{log.source.label}: a row is not a valid request"
    number, input_value, output_value, arrival, input_text, output_text, time_text, *cached_row = row
    where_row = f"{log.source.label}, row {number:,}"
    for value, text, name in ((input_value, input_text, names[0]), (output_value, output_text, names[1])):
        problem = token_problem(value, text)
        if problem:
            return f"{where_row}: {name} = {problem}"
    if input_value + output_value < 1:
        return f"{where_row}: {names[0]} + {names[1]} is 0 (a request has ≥ 1 token)"
    if log.time_sql is not None and arrival is None:
        shown = "missing" if time_text is None else repr(time_text)
        return (
            f"{where_row}: {names[2]} = {shown} is neither a number nor a date-time like "
            "2023-11-16 18:15:46.680590"
        )
    cached_value, cached_present, cached_text, cached_field = cached_row
    if cached_present:
        problem = cached_problem(cached_value, cached_text, int(input_value))
        if problem:
            return f"{where_row}: {cached_field} = {problem}"
    return f"{where_row}: not a valid request"


def cached_problem(value: Any, text: str | None, prompt_tokens: int) -> str | None:
    """What is wrong with a reported count of cached prompt tokens (``value`` as read, ``text`` as
    written) of a prompt of ``prompt_tokens``, or None."""
    problem = token_problem(value, text)
    if problem is not None:
        return problem.replace("(no token count)", "(no count of cached tokens)")
    if float(value) > prompt_tokens:
        return (
            f"{int(float(value))} is more cached tokens than the prompt has ({prompt_tokens}); cached "
            "prompt tokens are part of the prompt"
        )
    return None


def token_problem(value: Any, text: str | None) -> str | None:
    """What is wrong with one token count (``value`` as read, ``text`` as written), or None."""
    if value is None:
        return (
            "missing (no token count)" if text is None else f"{excerpt(text)} is not a whole number of tokens"
        )
    number = float(value)
    if not np.isfinite(number) or number != np.floor(number):
        return f"{excerpt(text)} is not a whole number of tokens"
    if number < 0:
        return f"{int(number)} is negative (token counts are ≥ 0)"
    if number > MAX_REQUEST_TOKENS:
        return f"{text} is too large (at most {MAX_REQUEST_TOKENS:,} tokens per request)"
    return None
