"""Reading a log's prefix identity: Mooncake-style block hash lists (``hash_ids``).

A Mooncake trace (kvcache-ai/Mooncake ``FAST25-release``; the same format NVIDIA AIPerf and Dynamo
replay) is JSON lines of ``{"timestamp": ms, "input_length": L_in, "output_length": L_out,
"hash_ids": [...]}``: one integer per block of ``block_size`` prompt tokens (512 in Mooncake's
traces), so a prompt of L_in tokens has ⌈L_in / block⌉ of them. DuckDB reads and checks every row
once; the first row that breaks a rule is named (file, row, field, value, what is allowed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fleetopt.core.prefix import MOONCAKE_BLOCK_TOKENS, BlockStream
from fleetopt.errors import ValidationError

#: The fields a hash log's rows carry (Mooncake's names).
HASH_FIELD, INPUT_FIELD, OUTPUT_FIELD, TIME_FIELD = "hash_ids", "input_length", "output_length", "timestamp"
_INTEGER = "('BIGINT', 'UBIGINT')"


@dataclass(frozen=True, eq=False)
class HashLog:
    """A hash log's requests in arrival order (ties in file order).

    Attributes:
        stream: the prompts' block hashes (:class:`fleetopt.core.prefix.BlockStream`).
        output_tokens: generated tokens per request.
        arrival_ms: arrival per request, ms on the log's clock (None when the log has no times).
        source: the file, as named in messages.
    """

    stream: BlockStream
    output_tokens: np.ndarray
    arrival_ms: np.ndarray | None
    source: str


def _problem_sql(block: int, with_time: bool) -> str:
    """SQL naming what is wrong with a row (NULL for a good row)."""
    hashes = f'"{HASH_FIELD}"'
    checks = []
    for name in (INPUT_FIELD, OUTPUT_FIELD):
        checks.append(
            f"WHEN \"{name}\" IS NULL THEN '{name}: missing (a whole number of tokens ≥ 0)' "
            f'WHEN json_type("{name}") NOT IN {_INTEGER} OR CAST("{name}" AS HUGEINT) < 0 '
            f"THEN '{name}: ' || left(CAST(\"{name}\" AS VARCHAR), 40) || "
            "' is not a whole number of tokens ≥ 0'"
        )
    if with_time:
        checks.append(
            f'WHEN "{TIME_FIELD}" IS NULL OR '
            f"json_type(\"{TIME_FIELD}\") NOT IN ('BIGINT', 'UBIGINT', 'DOUBLE') "
            f"OR CAST(\"{TIME_FIELD}\" AS DOUBLE) < 0 THEN '{TIME_FIELD}: ' || "
            f"coalesce(left(CAST(\"{TIME_FIELD}\" AS VARCHAR), 40), 'missing') || ' is not a time ≥ 0 in ms'"
        )
    checks.append(
        f"WHEN {hashes} IS NULL "
        f"THEN '{HASH_FIELD}: missing (other rows have block hashes; every row needs them)' "
        f"WHEN json_type({hashes}) <> 'ARRAY' OR NOT coalesce(list_bool_and(list_transform("
        f"from_json({hashes}, '[\"JSON\"]'), lambda x: json_type(x) IN {_INTEGER})), true) "
        f"THEN '{HASH_FIELD}: ' || left(CAST({hashes} AS VARCHAR), 40) || ' is not a list of integers' "
        f'WHEN json_array_length({hashes}) <> (CAST("{INPUT_FIELD}" AS BIGINT) + {block - 1}) // {block} '
        f"THEN '{HASH_FIELD}: ' || json_array_length({hashes}) || ' blocks for ' || \"{INPUT_FIELD}\" || "
        f"' prompt tokens (blocks of {block} tokens need ' || "
        f"((CAST(\"{INPUT_FIELD}\" AS BIGINT) + {block - 1}) // {block}) || '; is the block size right?)'"
    )
    return "CASE " + " ".join(checks) + " END"


def has_block_hashes(path: str | Path) -> bool:
    """Whether a JSON lines file's first row carries ``hash_ids``."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(1 << 20)
    except OSError:
        return False
    return f'"{HASH_FIELD}"'.encode() in first


def read_hash_log(path: str | Path, block_size_tokens: int = MOONCAKE_BLOCK_TOKENS) -> HashLog:
    """Every request of a Mooncake-style hash log, in arrival order; a ValidationError naming the
    first bad row (``row N``: the N-th request line) otherwise."""
    from fleetopt.io.logs import connect, engine_message, sql_string

    if block_size_tokens < 1:
        raise ValidationError(f"--block-size: {block_size_tokens} must be a whole number of tokens ≥ 1")
    label = str(path)
    if not Path(path).is_file():
        raise ValidationError(f"{label}: no such file")
    connection = connect(ordered=True)
    columns = {name: "JSON" for name in (TIME_FIELD, INPUT_FIELD, OUTPUT_FIELD, HASH_FIELD)}
    spec = "{" + ", ".join(f"{sql_string(k)}: {sql_string(v)}" for k, v in columns.items()) + "}"
    relation = f"read_json({sql_string(str(path))}, format='newline_delimited', columns={spec})"
    try:
        connection.execute(f"CREATE TEMP TABLE rows AS SELECT row_number() OVER () AS row, * FROM {relation}")
        with_time = connection.execute(f'SELECT count("{TIME_FIELD}") > 0 FROM rows').fetchone()[0]
        bad = connection.execute(
            f"SELECT row, problem FROM (SELECT row, {_problem_sql(block_size_tokens, with_time)} AS problem "
            "FROM rows) WHERE problem IS NOT NULL ORDER BY row LIMIT 1"
        ).fetchone()
        if bad is not None:
            raise ValidationError(f"{label}: row {bad[0]}: {bad[1]}")
        order = f'CAST("{TIME_FIELD}" AS DOUBLE), row' if with_time else "row"
        table = connection.execute(
            f'SELECT CAST("{INPUT_FIELD}" AS BIGINT) AS i, CAST("{OUTPUT_FIELD}" AS BIGINT) AS o, '
            f'CAST("{TIME_FIELD}" AS DOUBLE) AS t, json_array_length("{HASH_FIELD}") AS n '
            f"FROM rows ORDER BY {order}"
        ).fetchnumpy()
        hashes = connection.execute(
            f'SELECT unnest(CAST("{HASH_FIELD}" AS BIGINT[])) AS h FROM (SELECT * FROM rows ORDER BY {order})'
        ).fetchnumpy()["h"]
    except ValidationError:
        raise
    except Exception as exc:  # duckdb.Error: not JSON lines, a value DuckDB cannot convert
        raise ValidationError(f"{label}: {engine_message(exc)}") from None
    finally:
        connection.close()
    inputs = np.asarray(table["i"], dtype=np.int64)
    if not inputs.size:
        raise ValidationError(f"{label}: no requests")
    if int((inputs + np.asarray(table["o"], dtype=np.int64)).min()) < 1:
        raise ValidationError(f"{label}: a request with input_length + output_length = 0")
    offsets = np.concatenate(([0], np.cumsum(np.asarray(table["n"], dtype=np.int64))))
    stream = BlockStream(inputs, offsets, np.asarray(hashes, dtype=np.int64), int(block_size_tokens))
    arrival = np.asarray(table["t"], dtype=np.float64) if with_time else None
    return HashLog(stream, np.asarray(table["o"], dtype=np.int64), arrival, label)
