"""Benchmark: ``fleetopt observe`` reading 7 days at 15 s resolution for 10 pools from a local Prometheus.

The issue's target: read and summarize 7 days × 10 pools in ≤ 10 s against a local server. The
data are tests/prometheus_fixture.py's vLLM-format series (one engine per pool, every vLLM
histogram: ~105 series per engine, 40,321 samples each: 42 M samples), backfilled with promtool
into a temporary folder (kept under --cache between runs: building it takes minutes). The figure
is the wall time and this process's CPU time of :func:`fleetopt.api.observe.observe_prometheus`
(all queries, the pools' figures, attainment and the workload summary); Prometheus' own CPU time
is reported beside it (it evaluates the subqueries). Run: python benchmarks/observe_prometheus.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from prometheus_fixture import PrometheusServer, make_fleet  # noqa: E402

DAYS, POOLS = 7, 10


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/fleetopt-observe-benchmark"),
                        help="a folder kept between runs for the backfilled blocks")  # fmt: skip
    args = parser.parse_args()
    end = 1_780_315_200.0  # 2026-06-01T12:00:00Z: a fixed span (retention counts from the newest block)
    pools = {f"pool-{k + 1}": (1, 2.0, 32768, 0.05 * (k + 1), 300 * (k + 1)) for k in range(POOLS)}
    built = time.perf_counter()
    fleet = make_fleet(pools=pools, start_s=end - DAYS * 86400, hours=DAYS * 24, seed=11)
    from fleetopt.api.observe import observe_prometheus

    with PrometheusServer(fleet, start_timeout_s=600, keep=args.cache) as server:
        print(f"backfilled and started in {time.perf_counter() - built:.0f} s: {server.url}", flush=True)
        for attempt in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            run = observe_prometheus(
                server.url, since_s=DAYS * 86400, end_s=end, pool_label="pod", ttft_slo_s=0.5,
                max_model_len=32768, window_s=60,
            )  # fmt: skip
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            requests = sum(p.requests for p in run.pools)
            print(
                f"run {attempt + 1}: {len(run.pools)} pools, {requests:,.0f} requests, "
                f"{run.summary.window_counts.size:,} windows: {wall:.2f} s wall, {cpu:.2f} s CPU (fleetopt), "
                f"Prometheus {_cpu_s(server.process.pid):.1f} s CPU so far",
                flush=True,
            )


if __name__ == "__main__":
    main()
