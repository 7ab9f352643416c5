"""The engine model against the iteration-level simulation it was not fitted to.

    python benchmarks/validate_engine.py [--requests 200000] [--seeds 3] [--quick]

For each scenario (workload, SLO, rate, serving profile, utilization cap) it plans with the
``engine`` model, simulates the planned fleet with the ``physical`` engine (token-level costs:
W + H·decoding + τ·prompt tokens per iteration, least-loaded dispatch, Poisson arrivals) and
reports per pool:

  * the predicted and simulated P99 TTFT (mean over seeds ± the 95% half-width) and the error;
  * the predicted and simulated slot utilization;
  * the smallest instance count of that pool (slots as planned, the other pools as planned) whose
    simulated P99 TTFT meets the SLO and whose simulated utilization meets the cap, found by
    search over instance counts, and how far the plan is from it.

Scenarios at the default cap (0.85) are usually sized by the compute cap, which the simulation
reproduces exactly (compute utilization is linear in the rate); the scenarios at cap 1 let the
SLO set the size, so they test the TTFT model itself. The table goes into docs/validation.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time

from fleetopt.api import plan_workload
from fleetopt.core.crosscheck import crosscheck_setup, setup_from_plan

SCENARIOS = (
    # workload, SLO s, rate req/s, serving profile, cap
    ("azure-2023", 0.5, 1000.0, None, 0.85),
    ("azure-2023", 2.0, 1000.0, None, 0.85),
    ("azure-2023", 0.5, 1000.0, None, 1.0),
    ("azure-2023", 2.0, 1000.0, None, 1.0),
    ("azure-2023-conv", 0.5, 500.0, None, 1.0),
    ("azure-2023-code", 2.0, 200.0, None, 1.0),
    ("azure", 0.5, 200.0, None, 1.0),
)


def _simulate(setup, workload, requests: int, seeds: int):
    return crosscheck_setup(
        setup, workload, service_model="physical", dispatch="least-loaded", requests=requests,
        seeds=tuple(range(1, seeds + 1)),
    )  # fmt: skip


def _with_instances(setup, index: int, instances: int):
    pools = list(setup.pools)
    pool = pools[index]
    pools[index] = dataclasses.replace(
        pool, simulated=dataclasses.replace(pool.simulated, instances=instances)
    )
    return dataclasses.replace(setup, pools=tuple(pools))


def _meets(report, index: int, slo_s: float, cap: float) -> bool:
    row = report.pools[index]
    ttft = row.metrics["p99_ttft_s"].simulated
    utilization = row.metrics["utilization"].simulated
    return bool(ttft <= slo_s and (cap >= 1.0 or utilization <= cap))


def smallest_meeting(
    setup, workload, index: int, slo_s: float, cap: float, compute: float, requests: int, seeds: int
):
    """The fewest instances of pool ``index`` that meet the SLO (and cap) in simulation: bisection
    between a failing and a passing count around the planned one. ``compute``: the pool's compute
    utilization as planned; it scales as 1/n exactly, and a pool must keep it below the cap and
    below 1 (a finite simulation of an overloaded pool can look fine before its queue builds up)."""
    planned = setup.pools[index].simulated.instances
    step = max(1, math.ceil(0.1 * planned))
    cache: dict[int, bool] = {}

    def ok(n: int) -> bool:
        if n not in cache:
            load = compute * planned / n if n >= 1 else math.inf
            cache[n] = n >= 1 and load < 1.0 and load <= cap and _meets(
                _simulate(_with_instances(setup, index, n), workload, requests, seeds), index, slo_s, cap
            )  # fmt: skip
        return cache[n]

    hi = planned
    while not ok(hi):
        hi += step
    lo = max(0, planned - step)
    while lo > 0 and ok(lo):
        hi, lo = lo, max(0, lo - step)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--search-requests", type=int, default=100_000)
    parser.add_argument("--search-seeds", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="two scenarios, fewer requests")
    parser.add_argument("--no-search", action="store_true")
    args = parser.parse_args()
    scenarios = SCENARIOS[:2] if args.quick else SCENARIOS
    if args.quick:
        args.requests, args.seeds, args.search_requests = 60_000, 2, 40_000
    print(
        "| workload | SLO | λ | cap | B, γ | pool | n × s | util pred / sim | P99 TTFT pred | P99 TTFT sim | "
        "error | n min in sim | plan vs min |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for workload_name, slo_s, rate, serving, cap in scenarios:
        started = time.perf_counter()
        kwargs = {} if serving is None else {"serving": serving}
        run = plan_workload(
            workload_name, ttft_slo_s=slo_s, arrival_rate_per_s=rate, max_utilization=cap, **kwargs
        )
        best = run.plan.best
        if best is None:
            print(
                f"| {workload_name} | {slo_s * 1e3:.0f} ms | {rate:g} | {cap} | infeasible | | | | | | | | |"
            )
            continue
        setup = setup_from_plan(run.plan)
        report = _simulate(setup, run.workload, args.requests, args.seeds)
        routing = f"{best.b_short_tokens}, {best.gamma}" if best.b_short_tokens else "one pool"
        for index, row in enumerate(report.pools):
            sim = row.metrics["p99_ttft_s"]
            util = row.metrics["utilization"]
            pool = row.prediction.simulated
            if pool.instances == 0 or row.requests_measured == 0:
                continue
            error = (sim.analytical / sim.simulated - 1.0) * 100.0
            compute = best.pools[index].compute_utilization or 0.0
            minimum = (
                smallest_meeting(
                    setup, run.workload, index, slo_s, cap, compute, args.search_requests, args.search_seeds
                )
                if not args.no_search
                else None
            )
            versus = "–" if minimum is None else f"{(pool.instances / minimum - 1.0) * 100.0:+.1f}%"
            cells = (
                workload_name, f"{slo_s * 1e3:.0f} ms", f"{rate:g}", f"{cap}", routing, row.prediction.name,
                f"{pool.instances} × {pool.slots_per_instance}",
                f"{util.analytical:.3f} / {util.simulated:.3f}",
                f"{sim.analytical * 1e3:.0f} ms",
                f"{sim.simulated * 1e3:.0f} ± {sim.ci95_half_width * 1e3:.0f} ms",
                f"{error:+.1f}%", "–" if minimum is None else str(minimum), versus,
            )  # fmt: skip
            print("| " + " | ".join(cells) + " |", flush=True)
        print(f"<!-- {workload_name} {slo_s} s: {time.perf_counter() - started:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
