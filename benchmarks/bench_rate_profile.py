"""What a log's rate profile adds to loading it, measured as ratios in one run.

Usage: ``python benchmarks/bench_rate_profile.py [ROWS]`` (default 10,000,000).

Writes a numeric request log of ROWS rows (``arrival_offset_ms,input_tokens,output_tokens``, about
11.6 days at 10 req/s with a daily cycle) in a temporary folder, then times, interleaved and best
of three each:

* ``load_workload`` (parse, validate, aggregate: the baseline);
* the rate profile ``fleetopt workload show`` and the planner read (1-min UTC clock window counts
  and their statistics: :func:`fleetopt.core.arrivals.workload_window_counts`, ``rate_profile_of``);
* the rest of the planner's peak basis: the within-window dispersion curve behind each pool's C_a²
  (9 sub-window scales, 30 s down to 1 s);
* a schedule's window counts at 1 h.

Goal (issue 14): the rate profile adds ≤ 20% to loading the log.
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fleetopt.core.arrivals import dispersion_curve, rate_profile_of, workload_window_counts
from fleetopt.io.workloads import load_workload

REPEATS = 3


def _write_log(folder: Path, rows: int) -> Path:
    rng = np.random.default_rng(7)
    # a daily cycle: gaps stretched by up to 3× at night
    gaps = rng.exponential(0.1, rows)
    clock = np.cumsum(gaps)
    gaps *= 1.0 + np.sin(2 * np.pi * clock / 86_400.0) ** 2 * 2.0
    arrival_ms = np.round(np.cumsum(gaps) * 1000).astype(np.int64)
    inputs = np.minimum(rng.lognormal(7.0, 1.0, rows).astype(np.int64) + 1, 16_000)
    outputs = np.minimum(rng.lognormal(4.5, 1.2, rows).astype(np.int64), 2_000)
    path = folder / "log.csv"
    with open(path, "w") as stream:
        stream.write("arrival_offset_ms,input_tokens,output_tokens\n")
        for start in range(0, rows, 1_000_000):
            part = slice(start, start + 1_000_000)
            lines = np.char.add(np.char.add(arrival_ms[part].astype(str), ","), inputs[part].astype(str))
            stream.write("\n".join(np.char.add(np.char.add(lines, ","), outputs[part].astype(str)).tolist()))
            stream.write("\n")
    return path


def _timed(function) -> tuple[float, object]:
    gc.collect()
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def main(rows: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = _write_log(Path(folder), rows)
        loads, profiles, curves, hourly = [], [], [], []
        for _ in range(REPEATS):
            seconds, workload = _timed(lambda: load_workload(str(path)))
            loads.append(seconds)
            profile = lambda w=workload: rate_profile_of(workload_window_counts(w, 60.0))  # noqa: E731
            profiles.append(_timed(profile)[0])
            curves.append(_timed(lambda w=workload: dispersion_curve(w, 60.0))[0])
            hourly.append(_timed(lambda w=workload: workload_window_counts(w, 3600.0))[0])
            del workload
        load = min(loads)
        print(f"{rows:,} rows: load_workload {load:.2f} s (best of {REPEATS})")
        for label, values in (
            ("rate profile (1-min counts + statistics)", profiles),
            ("dispersion curve (9 scales, the pools' C_a²)", curves),
            ("schedule counts (1 h)", hourly),
        ):
            best = min(values)
            share = 100 * best / load
            print(f"  {label}: {best:.3f} s = {share:.1f}% of loading (goal for the profile ≤ 20%)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000)
