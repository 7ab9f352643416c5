"""CPU cost of ``plan --refine K`` on the README plan (azure-2023, 500 ms) at 10³, 10⁴ and 10⁵ req/s.

For each rate: the analytic plan's CPU (the baseline, same run), then the refine's added CPU, the
fleets and pools refined, the outcomes (refined / too_large / unreachable), the one-seed runs and the
requests simulated, and the analytic vs refined GPUs of the best fleet. CPU time (process_time), the
compiled engine loaded first. Not a timed test: figures for docs/validation.md.

Run: python benchmarks/bench_refine.py [--rates 1000,10000,100000] [--refine 5]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="1000,10000,100000")
    parser.add_argument("--refine", type=int, default=5)
    args = parser.parse_args()
    from fleetopt.api import plan_workload
    from fleetopt.core.engines import load_kernels

    load_kernels()
    print("| rate | analytic plan CPU | --refine CPU added | fleets | pool outcomes | one-seed runs | "
          "requests simulated | best GPUs analytic → refined |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for rate in (float(r) for r in args.rates.split(",")):
        start = time.process_time()
        analytic = plan_workload("azure-2023", ttft_slo_s=0.5, mean_rate_per_s=rate)
        plan_s = time.process_time() - start
        start = time.process_time()
        refined = plan_workload("azure-2023", ttft_slo_s=0.5, mean_rate_per_s=rate, refine=args.refine)
        total_s = time.process_time() - start
        fleets = refined.document["refinement"]["fleets"]
        pools = [p for f in fleets for p in f["pools"]]
        outcomes = Counter(p["outcome"] for p in pools)
        runs = sum(p["simulations"] for p in pools)
        requests = sum(p["simulations"] * p["requests_per_seed"] for p in pools)
        print(
            f"| {rate:,.0f} req/s | {plan_s:.1f} s | {total_s - plan_s:.1f} s | {len(fleets)} | "
            f"{', '.join(f'{k} {v}' for k, v in sorted(outcomes.items()))} | {runs} | {requests:,} | "
            f"{analytic.plan.best.total_gpus:,} → {refined.plan.best.total_gpus:,} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
