"""Summaries of a log with a cached-tokens column against DuckDB's own GROUP BY of the same file.

Usage::

    python benchmarks/bench_cached_summary.py [--rows 10000000] [--repeats 3] [--folder /tmp]

Writes (under ``--folder``, deleted afterwards) a CSV of ``--rows`` requests with the columns
``TIMESTAMP,ContextTokens,GeneratedTokens,cached_tokens`` — the prompts, outputs and arrivals of
benchmarks/bench_workload.py (lognormal(7, 1) + 1 capped at 16,000; lognormal(4.5, 1.2) capped at
2,000; one arrival per 0.1 s) and, on 60% of the requests, a cached prefix of 16·⌊U·L_in/16⌋ tokens
(U uniform: whole 16-token blocks, as vLLM caches them), 0 on the others — and the same rows as
Parquet. Then, interleaved, ``--repeats`` times each, medians of wall and CPU time:

* ``groupby``    — DuckDB's own ``SELECT ContextTokens, GeneratedTokens, cached_tokens, count(*) …
  GROUP BY ALL`` (the baseline: the exact histogram a summary of such a log keeps);
* ``summarize``  — ``fleetopt.api.summarize_logs([file])`` (that histogram, validated — every cached
  count a whole number within its prompt — 1 s arrival windows, first and last arrival);
* ``streamed``   — the same summary by the query fleetopt streams logs too large for memory through
  (``IN_MEMORY_SUMMARY_ROWS`` set to 0).

The issue's bound: ``summarize`` ≤ 1.5× ``groupby`` on a 10M-row file. CPU ratios are the steadier
figure on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_workload import MEAN_GAP_S, timed_runs  # noqa: E402

#: Share of requests with a cached prefix, and the cache's block size (tokens).
CACHED_SHARE, BLOCK_TOKENS = 0.6, 16


def write_log(folder: Path, rows: int) -> tuple[Path, Path]:
    """The CSV and Parquet files of ``rows`` requests with a ``cached_tokens`` column (module docstring)."""
    import duckdb

    csv_path, parquet_path = folder / "cached.csv", folder / "cached.parquet"
    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'UTC'")
    connection.execute("SET enable_progress_bar = false")
    connection.execute("SELECT setseed(0.16)")
    connection.execute(f"""
        CREATE TEMP TABLE log AS SELECT t, ContextTokens, GeneratedTokens,
            CASE WHEN random() < {CACHED_SHARE}
                 THEN CAST({BLOCK_TOKENS} * floor(random() * ContextTokens / {BLOCK_TOKENS}) AS BIGINT)
                 ELSE 0 END AS cached_tokens
        FROM (SELECT TIMESTAMP '2023-11-16 18:15:46.680590' + to_microseconds(CAST(floor((i + random()) *
                     {MEAN_GAP_S * 1e6}) AS BIGINT)) AS t,
                 CAST(least(floor(exp(7.0 + sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))) + 1,
                     16000) AS BIGINT) AS ContextTokens,
                 CAST(least(floor(exp(4.5 + 1.2 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))),
                     2000) AS BIGINT) AS GeneratedTokens
              FROM range({rows}) AS r(i))
    """)
    connection.execute(
        "COPY (SELECT strftime(t, '%Y-%m-%d %H:%M:%S.%f') || '0' AS TIMESTAMP, ContextTokens, "
        f"GeneratedTokens, cached_tokens FROM log) TO '{csv_path}' (FORMAT csv, HEADER true)"
    )
    connection.execute(
        "COPY (SELECT t AS TIMESTAMP, ContextTokens, GeneratedTokens, cached_tokens FROM log) "
        f"TO '{parquet_path}' (FORMAT parquet)"
    )
    return csv_path, parquet_path


def speed(folder: Path, rows: int, repeats: int) -> None:
    import duckdb

    from fleetopt.api import summarize_logs
    from fleetopt.io import logs

    start = time.perf_counter()
    csv_path, parquet_path = write_log(folder, rows)
    print(f"wrote {rows:,} rows as CSV ({csv_path.stat().st_size / 1e6:,.0f} MB) and Parquet "
          f"({parquet_path.stat().st_size / 1e6:,.0f} MB) in "
          f"{time.perf_counter() - start:.0f} s")  # fmt: skip
    in_memory = logs.IN_MEMORY_SUMMARY_ROWS

    def streamed(path: Path):
        logs.IN_MEMORY_SUMMARY_ROWS = 0
        try:
            return summarize_logs([str(path)])
        finally:
            logs.IN_MEMORY_SUMMARY_ROWS = in_memory

    for path, reader in ((csv_path, "read_csv"), (parquet_path, "read_parquet")):

        def groupby(path=path, reader=reader):
            return (
                duckdb.connect()
                .execute(
                    "SELECT ContextTokens, GeneratedTokens, cached_tokens, count(*) "
                    f"FROM {reader}('{path}') GROUP BY ALL"
                )
                .fetchall()
            )

        cases = {
            "groupby": groupby,
            "summarize": lambda path=path: summarize_logs([str(path)]),
            "streamed": lambda path=path: streamed(path),
        }
        results = timed_runs(cases, repeats)
        summary = summarize_logs([str(path)])
        base_wall, base_cpu = results["groupby"]
        print(
            f"\n{path.suffix[1:]} ({rows:,} rows, {summary.counts.size:,} distinct (input, output, cached) "
            f"triples), medians of {repeats}:"
        )
        for name, (wall, cpu) in results.items():
            print(
                f"  {name:10s} wall {wall:6.2f} s ({wall / base_wall:4.2f}x)   "
                f"cpu {cpu:6.2f} s ({cpu / base_cpu:4.2f}x)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--folder", default=os.environ.get("TMPDIR", "/tmp"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.folder, prefix="fleetopt-bench-") as folder:
        speed(Path(folder), args.rows, args.repeats)


if __name__ == "__main__":
    main()
