"""What does a third (and fourth) pool save, and what does the K-pool sweep cost?

    python benchmarks/bench_kpool.py [--rate 1000] [--slo 0.5]

For every bundled workload, and for a long-tailed conversation trace built here (totals from
1K to 128K tokens: L = 1024·e^X, X ~ Exp(mean 1.3), capped at 131,072; 256 output tokens), plans
the fleet with at most 2, 3 and 4 pools (lockstep, the papers' Llama-3-70B / A100 calibration)
and prints the GPUs and dollars of the cheapest fleet with exactly k pools, the saving of the
best ≤ K-pool plan against the best two-pool plan, and the planning time as a ratio to K = 2
measured in the same run.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fleetopt.core.planner import Planner, PlanOptions
from fleetopt.core.workload import Workload, workload_from_requests
from fleetopt.io.data import bundled_dir
from fleetopt.io.profiles import pool_hardware
from fleetopt.io.workloads import load_workload

BUNDLED = (
    "azure-2023",
    "azure-2023-conv",
    "azure-2023-code",
    "azure",
    "lmsys",
    "lmsys-multiturn",
    "agent-heavy",
)


def long_tailed_trace(requests: int = 4000, seed: int = 7) -> Workload:
    """Totals 1K … 128K tokens, heavy-tailed (median ≈ 2.5K, P90 ≈ 20K, 4.6% above 64K)."""
    rng = np.random.default_rng(seed)
    totals = np.minimum(131_072, np.round(1024 * np.exp(rng.exponential(1.3, requests)))).astype(int)
    outputs = np.minimum(totals - 1, 256)
    return workload_from_requests(totals - outputs, outputs, name="long-tail-128k")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=1000.0, help="arrival rate, req/s")
    parser.add_argument("--slo", type=float, default=0.5, help="P99 TTFT SLO, seconds")
    args = parser.parse_args()
    hardware = pool_hardware("llama-3-70b-a100-80gb-tp8", [bundled_dir("profiles")])
    cases = [(name, load_workload(name), 65_536, args.rate, args.slo) for name in BUNDLED]
    # a 128K prefill alone takes 2.2 s under lockstep at one slot: a 3 s SLO leaves room to queue
    cases.append(("long-tail-128k (built)", long_tailed_trace(), 131_072, 200.0, 3.0))
    print(f"{'workload':<24} {'λ':>6} {'SLO':>5}  {'k=1 GPUs':>9} {'k=2':>6} {'k=3':>6} {'k=4':>6}  "
          f"{'≤3 vs 2':>8} {'≤4 vs 2':>8}  {'time ≤3':>8} {'time ≤4':>8}")  # fmt: skip
    for name, workload, context, rate, slo in cases:
        plans, seconds = {}, {}
        for pools in (2, 3, 4):
            options = PlanOptions(
                sizing_rate_per_s=rate, ttft_slo_s=slo, long_context_tokens=context, max_pools=pools
            )
            start = time.perf_counter()
            plans[pools] = Planner(workload, (hardware,), options).plan()
            seconds[pools] = time.perf_counter() - start
        by_count = plans[4].best_by_pool_count
        gpus = ["—" if c is None else f"{c.total_gpus:,}" for c in by_count]
        two = plans[2].best.cost_per_hour_usd

        savings = [f"{1 - plans[k].best.cost_per_hour_usd / two:.1%}" for k in (3, 4)]
        ratios = [f"{seconds[k] / seconds[2]:.1f}×" for k in (3, 4)]
        print(f"{name:<24} {rate:>6g} {slo:>5g}  {gpus[0]:>9} {gpus[1]:>6} {gpus[2]:>6} {gpus[3]:>6}  "
              f"{savings[0]:>8} {savings[1]:>8}  {ratios[0]:>8} {ratios[1]:>8}")  # fmt: skip


if __name__ == "__main__":
    main()
