"""Reader speed and memory against numpy's own ``np.loadtxt`` on the same file, in the same run.

Usage: ``python benchmarks/bench_workload.py [ROWS]`` (default 10,000,000).

Writes two request logs of ROWS rows in a temporary folder — a numeric CSV
``arrival_offset_ms,input_tokens,output_tokens`` and an Azure-format CSV with
``2023-11-16 18:15:46.6805900`` timestamps — and times, side by side, ``np.loadtxt`` on each
(the baseline: int64 columns, or bytes + int64 for the Azure timestamps) and
``load_workload`` (parse, validate, aggregate into the Workload), interleaved, best of three
each. Reports the ratio (goal
≤ 2) and the bytes per request the Workload keeps (goal < 50), plus the parse peak.
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from fleetopt.io.workloads import load_workload

REPEATS = 3


def _write_logs(folder: Path, rows: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(42)
    arrival_ms = np.cumsum(rng.exponential(0.1, rows)) * 1000
    inputs = np.minimum(rng.lognormal(7.0, 1.0, rows).astype(np.int64) + 1, 16_000)
    outputs = np.minimum(rng.lognormal(4.5, 1.2, rows).astype(np.int64), 2_000)
    numeric = folder / "numeric.csv"
    azure = folder / "azure.csv"
    chunk = 1_000_000
    with open(numeric, "w") as plain, open(azure, "w") as stamped:
        plain.write("arrival_offset_ms,input_tokens,output_tokens\n")
        stamped.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        origin = np.datetime64("2023-11-16T18:15:46.680590", "us")
        for start in range(0, rows, chunk):
            part = slice(start, start + chunk)
            ms = np.round(arrival_ms[part]).astype(np.int64)
            lines = np.char.add(np.char.add(ms.astype(str), ","), inputs[part].astype(str))
            plain.write(
                "\n".join(np.char.add(np.char.add(lines, ","), outputs[part].astype(str)).tolist()) + "\n"
            )
            stamps = np.datetime_as_string(origin + (arrival_ms[part] * 1000).astype("timedelta64[us]"))
            stamps = np.char.add(np.char.replace(stamps, "T", " "), "0")  # 7 fractional digits
            azure_lines = np.char.add(np.char.add(stamps, ","), inputs[part].astype(str))
            stamped.write(
                "\n".join(np.char.add(np.char.add(azure_lines, ","), outputs[part].astype(str)).tolist())
                + "\n"
            )
    return numeric, azure


def _timed(function) -> tuple[float, object]:
    gc.collect()
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def _retained_bytes(workload) -> int:
    arrays = [workload.total_tokens, workload.input_tokens, workload.output_tokens, workload.weights]
    if workload.arrival_times_s is not None:
        arrays.append(workload.arrival_times_s)
    return sum(a.nbytes for a in arrays)


def main(rows: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        t0 = time.perf_counter()
        numeric, azure = _write_logs(Path(folder), rows)
        print(f"wrote {rows:,} rows twice in {time.perf_counter() - t0:.1f} s")
        cases = [
            (numeric, {"dtype": np.int64}),
            (azure, {"dtype": [("t", "S32"), ("i", "i8"), ("o", "i8")]}),
        ]
        for path, loadtxt_options in cases:
            # Interleaved repeats, best of each: the machine may be shared, so noise hits both.
            baselines, readers = [], []
            for _ in range(REPEATS):
                baselines.append(
                    _timed(lambda p=path, o=loadtxt_options: np.loadtxt(p, delimiter=",", skiprows=1, **o))[0]
                )
                reader_s, workload = _timed(lambda p=path: load_workload(str(p)))
                readers.append(reader_s)
            baseline, reader_s = min(baselines), min(readers)
            kept = _retained_bytes(workload)
            del workload
            gc.collect()
            tracemalloc.start()
            load_workload(str(path))
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(
                f"{path.name}: np.loadtxt {baseline:.2f} s ({rows / baseline / 1e6:.1f} M rows/s), "
                f"load_workload {reader_s:.2f} s → ratio {reader_s / baseline:.2f} (goal ≤ 2); "
                f"kept {kept / rows:.1f} B/request (goal < 50), parse peak {peak / rows:.0f} B/request"
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000)
