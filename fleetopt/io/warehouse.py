"""The summary query for a warehouse (``fleetopt workload sql``): the same aggregation fleetopt runs
on DuckDB, written for the table where the logs live and transpiled by sqlglot.

The query is built in DuckDB's dialect from a preset's columns (or explicit ones) — exactly
:func:`fleetopt.io.logs.summary_sql` over :func:`fleetopt.io.logs.rows_sql` — and sqlglot
transpiles it. One function has no common spelling and sqlglot does not translate it, the
microseconds since the Unix epoch of a timestamp; it is written per dialect from each engine's
documented function (table :data:`EPOCH_MICROSECONDS`); so is the text at a path inside a column
of JSON, where a preset's cached prompt tokens live (:data:`JSON_TEXT`). Only the aggregate leaves
the warehouse: one row per distinct (input, output[, cached]) triple, one per window, one per log.
"""

from __future__ import annotations

from fleetopt.core.workload import MICROSECONDS_PER_S
from fleetopt.errors import ValidationError
from fleetopt.io.log_formats import CachedField, LogFormat
from fleetopt.io.logs import (
    CachedSQL,
    LogSource,
    ResolvedLog,
    integer_time_sql,
    rows_sql,
    sql_identifier,
    sql_string,
    summary_sql,
)

#: Dialects ``workload sql`` writes (sqlglot's names), and the epoch-µs expression of each.
EPOCH_MICROSECONDS = {
    "duckdb": "EPOCH_US({arg})",
    "spark": "UNIX_MICROS({arg})",
    "bigquery": "UNIX_MICROS({arg})",
    "trino": "CAST(ROUND(TO_UNIXTIME({arg}) * 1000000) AS BIGINT)",
    "snowflake": "DATE_PART(EPOCH_MICROSECOND, {arg})",
    "postgres": "CAST(ROUND(EXTRACT(EPOCH FROM {arg}) * 1000000) AS BIGINT)",
}
DIALECTS = tuple(EPOCH_MICROSECONDS)

#: The text at a JSON path inside a column (JSON, or text holding JSON), per dialect: ``{arg}`` the
#: column, ``{path}`` the keys joined by dots (each engine's documented JSON function).
JSON_TEXT = {
    "duckdb": "JSON_EXTRACT_STRING(CAST({arg} AS JSON), '$.{path}')",
    "spark": "GET_JSON_OBJECT({arg}, '$.{path}')",
    "bigquery": "JSON_EXTRACT_SCALAR({arg}, '$.{path}')",
    "trino": "JSON_EXTRACT_SCALAR({arg}, '$.{path}')",
    "snowflake": "JSON_EXTRACT_PATH_TEXT(TO_VARCHAR({arg}), '{path}')",
    "postgres": "CAST({arg} AS JSONB) #>> '{{{keys}}}'",
}
#: ``--cached-column`` value that leaves cached prompt tokens out of the query.
NO_CACHED_COLUMN = "none"

#: How each preset's time column is stored in a warehouse table: ``timestamp`` or ``number``.
WAREHOUSE_TIME_TYPES = {
    "azure": "timestamp",
    "mooncake": "number",
    "burstgpt": "number",
    "litellm": "timestamp",
    "langfuse": "timestamp",
    "helicone": "timestamp",
    "otel": "number",
    "sglang": "number",
    "vllm-bench": "number",
}


def warehouse_sql(
    dialect: str,
    *,
    preset: LogFormat | None,
    table: str,
    window_us: int,
    input_column: str | None = None,
    output_column: str | None = None,
    time_column: str | None = None,
    time_unit_s: float | None = None,
    time_type: str | None = None,
    no_time: bool = False,
    where: str | None = None,
    cached_column: str | None = None,
) -> str:
    """The summary query of ``table`` in ``dialect`` (one of :data:`DIALECTS`); ``where``: an extra
    row filter in DuckDB's SQL (a date range, a model), added to the preset's. ``cached_column``:
    the column of the cached prompt tokens (default: the preset's fields, none with an input
    column named by hand; ``none``: leave them out — for Helicone the prompt is then
    ``prompt_tokens`` alone)."""
    if dialect not in EPOCH_MICROSECONDS:
        raise ValidationError(f"--dialect: {dialect!r} is not one of {', '.join(DIALECTS)}")
    if preset is None and (input_column is None or output_column is None):
        raise ValidationError(
            "workload sql: give --log-format, or --input-column and --output-column (and --time-column)"
        )
    if time_type not in (None, "timestamp", "number"):
        raise ValidationError(f"--time-type: {time_type!r} is not timestamp or number")
    inputs = (input_column,) if input_column else preset.input_columns
    outputs = (output_column,) if output_column else preset.output_columns
    time_name = None if no_time else (time_column or (preset.time_columns[0] if preset else None))

    def tokens(names: tuple[str, ...]) -> str:
        quoted = [sql_identifier(n) for n in names]
        return quoted[0] if len(quoted) == 1 else "COALESCE(" + ", ".join(quoted) + ")"

    input_sql, output_sql = tokens(inputs), tokens(outputs)
    time_expr, utc = None, False
    if time_name is not None:
        kind = time_type or (
            WAREHOUSE_TIME_TYPES.get(preset.name, "timestamp") if preset and not time_column else "timestamp"
        )
        unit = preset.time_unit if preset is not None and time_column is None else None
        if kind == "timestamp":
            time_expr, utc = f"epoch_us({sql_identifier(time_name)})", True
        else:
            scale = time_unit_s or (unit.seconds if unit else 1.0)
            time_expr = _number_time_sql(sql_identifier(time_name), scale)
            utc = unit is not None and unit.epoch
    filters = []
    if preset is not None:
        filters = list(preset.warehouse_filters or (condition for _, condition in preset.filters))
    if where:
        filters.append(where)
    if preset is not None and preset.name == "otel" and not input_column and not output_column:
        filters.append(f"({input_sql}) IS NOT NULL OR ({output_sql}) IS NOT NULL")
    if cached_column is not None and cached_column.strip().lower() == NO_CACHED_COLUMN:
        fields: tuple[CachedField, ...] = ()
    elif cached_column is not None:
        fields = (CachedField(cached_column),)
    else:
        fields = preset.cached_fields if preset is not None and not input_column else ()
    cached = _cached_sql(fields)
    if cached and preset is not None and not input_column and preset.input_addends:
        input_sql = " + ".join(
            [f"({input_sql})"] + [f"COALESCE({sql_identifier(a)}, 0)" for a in preset.input_addends]
        )
    log = ResolvedLog(
        source=LogSource(label=table, files=(), container="parquet"),
        input_sql=input_sql,
        output_sql=output_sql,
        time_sql=time_expr,
        utc=utc,
        where_sql=" AND ".join(f"({f})" for f in filters) or None,
        names=(inputs[0], outputs[0], time_name),
        cached=cached,
    )
    duckdb_sql = summary_sql(
        rows_sql(log, table_reference(table)),
        window_us if time_expr else None,
        table,
        utc,
        bool(cached),
    )
    return transpile(duckdb_sql, dialect)


def _cached_sql(fields: tuple[CachedField, ...]) -> tuple[CachedSQL, ...]:
    """The SQL of the cached prompt tokens of a warehouse row, as a number: the first of ``fields``
    that is not NULL (a path inside a JSON column is read as text: ``json_text``, written per
    dialect by :func:`transpile`); a row reports them where that is not NULL."""
    if not fields:
        return ()
    values = []
    for field in fields:
        value = sql_identifier(field.column)
        if field.path:
            value = f"TRY_CAST(json_text({value}, {sql_string('.'.join(field.path))}) AS DOUBLE)"
        values.append(value)
    value = values[0] if len(values) == 1 else "COALESCE(" + ", ".join(values) + ")"
    name = " or ".join(field.name for field in fields)
    return (CachedSQL(value, f"(({value}) IS NOT NULL)", name, value),)


def _number_time_sql(quoted: str, unit_s: float) -> str:
    """Whole µs of a numeric time column: integers in µs or coarser units exactly, else rounded."""
    per_unit = unit_s * MICROSECONDS_PER_S
    if per_unit >= 1 and float(per_unit).is_integer():
        return f"CAST(ROUND({quoted} * {round(per_unit)}) AS BIGINT)"
    if per_unit < 1:
        return integer_time_sql(quoted, unit_s)
    return f"CAST(ROUND({quoted} * {per_unit!r}) AS BIGINT)"


def table_reference(table: str) -> str:
    """A (possibly qualified) table name as SQL: ``db.schema.table`` parts quoted when needed."""
    parts = table.split(".")
    if not table.strip() or any(not p.strip() for p in parts):
        raise ValidationError(f"--table: {table!r} is not a table name")
    return ".".join(
        p if p.replace("_", "").isalnum() and not p[0].isdigit() else sql_identifier(p) for p in parts
    )


def transpile(duckdb_sql: str, dialect: str) -> str:
    """``duckdb_sql`` in ``dialect`` (sqlglot), with ``epoch_us(x)`` written per dialect."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(duckdb_sql, read="duckdb")
    for node in list(tree.find_all(exp.Anonymous)):
        if node.name.lower() == "epoch_us":
            argument = node.expressions[0].sql(dialect=dialect)
            node.replace(sqlglot.parse_one(EPOCH_MICROSECONDS[dialect].format(arg=argument), read=dialect))
        elif node.name.lower() == "json_text":
            argument = node.expressions[0].sql(dialect=dialect)
            path = node.expressions[1].name  # keys joined by dots (identifiers: no quoting needed)
            text = JSON_TEXT[dialect].format(arg=argument, path=path, keys=path.replace(".", ","))
            node.replace(sqlglot.parse_one(text, read=dialect))
    return tree.sql(dialect=dialect, pretty=True)
