"""Logs at scale: summary and plan against DuckDB's own GROUP BY of the same file, in the same run.

Usage::

    python benchmarks/bench_workload.py [--rows 10000000] [--big-rows 44000000] [--repeats 3]
                                        [--skip-big] [--folder /tmp]

Writes (under ``--folder``, deleted afterwards) an Azure-format CSV of ``--rows`` requests
(``TIMESTAMP,ContextTokens,GeneratedTokens``, seven fractional digits; prompts lognormal(7, 1) + 1
capped at 16,000, outputs lognormal(4.5, 1.2) capped at 2,000, one arrival per 0.1 s on average —
the distributions of the issue's measurement) and the same rows as Parquet. Then, interleaved,
``--repeats`` times each, medians:

* ``groupby``   — DuckDB's own ``SELECT ContextTokens, GeneratedTokens, count(*) … GROUP BY ALL``
  (the baseline);
* ``summarize`` — ``fleetopt.api.summarize_logs([file])`` (the exact histogram, 1 s arrival
  windows, first/last arrival, validation);
* ``load``      — ``load_workload(file)`` (the Workload a plan uses: atoms and every arrival time);
* ``plan``      — ``plan_workload(file, ttft_slo_s=0.5)`` (load + the planner + the plan document);
* ``plan-summary`` — the same plan from the file's summary (Parquet, written once beforehand).

Ratios are to ``groupby`` on the same file, wall time and CPU time (user + system of this process,
all threads); the machine may be shared, so CPU ratios are the steadier figure.

Then, unless ``--skip-big``, a ``--big-rows`` CSV (the size of the Azure 2024 week) and the peak
resident memory of fresh processes running ``fleetopt workload summarize`` on it, ``fleetopt
workload show`` of the summary and ``fleetopt plan`` from the summary (each watched and stopped
above 4 GB).
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

MEAN_GAP_S = 0.1
WATCH_LIMIT_BYTES = 4 << 30


def write_log(folder: Path, rows: int, name: str, parquet: bool = True) -> tuple[Path, Path | None]:
    """An Azure-format CSV of ``rows`` requests (and the same rows as Parquet), written by DuckDB.
    Arrivals (i + U)·0.1 s increase with i, so the rows are written in time order without a sort."""
    import duckdb

    csv_path, parquet_path = folder / f"{name}.csv", folder / f"{name}.parquet"
    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'UTC'")
    connection.execute("SET enable_progress_bar = false")
    connection.execute("SELECT setseed(0.16)")
    rows_sql = f"""
        SELECT TIMESTAMP '2023-11-16 18:15:46.680590' + to_microseconds(CAST(floor((i + random()) *
                   {MEAN_GAP_S * 1e6}) AS BIGINT)) AS t,
               CAST(least(floor(exp(7.0 + sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))) + 1,
                   16000) AS BIGINT) AS ContextTokens,
               CAST(least(floor(exp(4.5 + 1.2 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))),
                   2000) AS BIGINT) AS GeneratedTokens
        FROM range({rows}) AS r(i)
    """
    source = rows_sql
    if parquet:
        connection.execute(f"CREATE TEMP TABLE log AS {rows_sql}")
        source = "SELECT * FROM log"
    connection.execute(
        "COPY (SELECT strftime(t, '%Y-%m-%d %H:%M:%S.%f') || '0' AS TIMESTAMP, ContextTokens, "
        "GeneratedTokens "
        f"FROM ({source})) TO '{csv_path}' (FORMAT csv, HEADER true)"
    )
    if not parquet:
        return csv_path, None
    connection.execute(
        "COPY (SELECT t AS TIMESTAMP, ContextTokens, GeneratedTokens FROM log) "
        f"TO '{parquet_path}' (FORMAT parquet)"
    )
    return csv_path, parquet_path


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed_runs(cases: dict, repeats: int) -> dict[str, tuple[float, float]]:
    """Median (wall s, CPU s) of each case, the cases interleaved ``repeats`` times."""
    walls: dict[str, list[float]] = {k: [] for k in cases}
    cpus: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(repeats):
        for name, function in cases.items():
            gc.collect()
            start_wall, start_cpu = time.perf_counter(), _cpu_s()
            result = function()
            walls[name].append(time.perf_counter() - start_wall)
            cpus[name].append(_cpu_s() - start_cpu)
            del result
    return {k: (statistics.median(walls[k]), statistics.median(cpus[k])) for k in cases}


def speed(folder: Path, rows: int, repeats: int) -> None:
    import duckdb

    from fleetopt.api import plan_workload, summarize_logs
    from fleetopt.io.summaries import write_summary
    from fleetopt.io.workloads import load_workload

    start = time.perf_counter()
    csv_path, parquet_path = write_log(folder, rows, "log")
    print(f"wrote {rows:,} rows as CSV ({csv_path.stat().st_size / 1e6:,.0f} MB) and Parquet "
          f"({parquet_path.stat().st_size / 1e6:,.0f} MB) in "
          f"{time.perf_counter() - start:.0f} s")  # fmt: skip
    for path, reader in ((csv_path, "read_csv"), (parquet_path, "read_parquet")):

        def groupby(path=path, reader=reader):
            return (
                duckdb.connect()
                .execute(
                    f"SELECT ContextTokens, GeneratedTokens, count(*) FROM {reader}('{path}') GROUP BY ALL"
                )
                .fetchall()
            )

        summary_path = folder / f"{path.stem}-summary.parquet"
        write_summary(summarize_logs([str(path)]), summary_path)
        cases = {
            "groupby": groupby,
            "summarize": lambda path=path: summarize_logs([str(path)]),
            "load": lambda path=path: load_workload(str(path)),
            "plan": lambda path=path: plan_workload(str(path), ttft_slo_s=0.5),
            "plan-summary": lambda summary_path=summary_path: plan_workload(
                str(summary_path), ttft_slo_s=0.5
            ),
        }
        results = timed_runs(cases, repeats)
        base_wall, base_cpu = results["groupby"]
        atoms = load_workload(str(path)).total_tokens.size
        print(
            f"\n{path.suffix[1:]} ({rows:,} rows, {atoms:,} distinct (input, output) pairs), "
            f"medians of {repeats}:"
        )
        for name, (wall, cpu) in results.items():
            print(
                f"  {name:12s} wall {wall:6.2f} s ({wall / base_wall:4.2f}x)   "
                f"cpu {cpu:6.2f} s ({cpu / base_cpu:4.2f}x)"
            )
        print(
            f"  summary file ({summary_path.name}, 1 s windows): {summary_path.stat().st_size / 1e6:.1f} MB"
        )
        plan_wall, plan_cpu = results["plan"]
        load_wall, load_cpu = results["load"]
        print(f"  plan = load + planning: the planning part is {plan_wall - load_wall:.2f} s wall "
              f"({(plan_wall - load_wall) / base_wall:.2f}x of groupby)")  # fmt: skip


def _peak_rss(command: list[str]) -> tuple[int, float, int]:
    """(peak resident bytes, wall s, exit code) of ``command``, stopped above WATCH_LIMIT_BYTES."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = [0]

    def watch() -> None:
        while process.poll() is None:
            try:
                with open(f"/proc/{process.pid}/status") as status:
                    for line in status:
                        if line.startswith("VmHWM:"):
                            peak[0] = max(peak[0], int(line.split()[1]) * 1024)
            except OSError:
                break
            if peak[0] > WATCH_LIMIT_BYTES:
                process.kill()
                break
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    process.wait()
    watcher.join()
    return peak[0], time.perf_counter() - start, process.returncode


def memory(folder: Path, rows: int) -> None:
    start = time.perf_counter()
    csv_path, _ = write_log(folder, rows, "big", parquet=False)
    print(
        f"\nwrote {rows:,} rows as CSV ({csv_path.stat().st_size / 1e9:.1f} GB) in "
        f"{time.perf_counter() - start:.0f} s"
    )
    fleetopt = [sys.executable, "-m", "fleetopt"]
    summary = folder / "big-summary.parquet"
    commands = {
        "workload summarize (CSV → summary)": [
            *fleetopt,
            "workload",
            "summarize",
            str(csv_path),
            "-o",
            str(summary),
        ],
        "workload show (summary)": [*fleetopt, "workload", "show", str(summary), "-f", "json"],
        "plan (summary)": [*fleetopt, "plan", "--cdf", str(summary), "--slo", "500ms", "-f", "json"],
        "plan (CSV, every arrival loaded)": [
            *fleetopt,
            "plan",
            "--cdf",
            str(csv_path),
            "--slo",
            "500ms",
            "-f",
            "json",
        ],
        "workload show (CSV)": [*fleetopt, "workload", "show", str(csv_path), "-f", "json"],
    }
    for label, command in commands.items():
        peak, wall, code = _peak_rss(command)
        note = (
            ""
            if code == 0
            else f"  (exit {code}{', stopped above 4 GB' if peak > WATCH_LIMIT_BYTES else ''})"
        )
        print(f"  {label:36s} peak {peak / 2**30:5.2f} GiB   wall {wall:6.1f} s{note}")
    print(
        f"  summary file: {summary.stat().st_size / 1e6:.1f} MB"
        if summary.exists()
        else "  no summary written"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--big-rows", type=int, default=44_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-big", action="store_true")
    parser.add_argument("--folder", default=os.environ.get("TMPDIR", "/tmp"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.folder, prefix="fleetopt-bench-") as folder:
        speed(Path(folder), args.rows, args.repeats)
    if not args.skip_big:
        with tempfile.TemporaryDirectory(dir=args.folder, prefix="fleetopt-bench-") as folder:
            memory(Path(folder), args.big_rows)


if __name__ == "__main__":
    main()
