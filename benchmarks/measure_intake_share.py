"""The intake share f as the `physical` simulation shows it, next to the model's f.

The engine model's TTFT law (docs/math.md, *Intake*) lets a share f of an instance's intake follow
its own iteration lengths: an iteration of length t draws Poisson f·λ_i·t further arrivals. This
script measures the simplest observable form of that share: it runs a planned pool on its own
Poisson stream (as benchmarks/validate_engine.py does, one seed, least-loaded dispatch), records for
every iteration of every instance its length t and the arrivals the router sent to that instance
during it, and fits arrivals = a + b·t by least squares; f_meas = b/λ_i (1 under random dispatch).
It prints f_meas next to the model's f for the same pool, so the two can be compared:

    python benchmarks/validate_engine.py --help   # the scenario sets
    python benchmarks/measure_intake_share.py chosen-on:1 fresh-5:1

Each argument is SET:INDEX, a scenario of validate_engine's sets; ``--scheduler`` picks the engine's
(``slots``, the one the table in docs/validation.md was measured on, by default). The compiled
kernel keeps the sums (``run_iteration_engine``'s ``record_from_s``), a second or so per pool.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from validate_engine import SETS, plan_scenario, planned_pools, pool_stream

from fleetopt.core.engine.model import ENGINE
from fleetopt.core.engine.router import least_loaded_time_share, router_arguments, router_view
from fleetopt.core.hardware import iteration_costs
from fleetopt.core.planner import Planner
from fleetopt.core.simulate import DISPATCH_POLICIES, SCHEDULERS, run_pool_engine


def record_pool(
    pool, workload, rate_per_s: float, residence_s: float, requests: int, dispatch: str, scheduler: str
) -> np.ndarray:
    """N, Σt, Σt², ΣA, ΣA·t over the busy iterations that start after the first 30% of the arrivals
    of one pool's own Poisson stream (the length of :func:`simulate_pool_alone`'s run, one seed)."""
    measured = max(requests, math.ceil(rate_per_s * 60.0))
    arrivals, inputs, outputs, _ = pool_stream(workload, rate_per_s, residence_s, measured, 1)
    count = arrivals.size
    run = run_pool_engine(
        pool, arrivals, inputs, outputs, dispatch, scheduler, np.random.default_rng([1, 30]).random(count),
        record_from_s=float(arrivals[int(count * 0.3)]),
    )  # fmt: skip
    return run.record


def measured_share(sums: np.ndarray, instance_rate_per_s: float) -> float:
    """f_meas = cov(A, t) / var(t) / λ_i."""
    count, sum_t, sum_t2, sum_a, sum_at = sums
    variance = sum_t2 / count - (sum_t / count) ** 2
    return (sum_at / count - sum_t / count * sum_a / count) / variance / instance_rate_per_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="+", help="SET:INDEX, e.g. chosen-on:1")
    parser.add_argument("--requests", type=int, default=60_000, help="measured requests per pool")
    parser.add_argument("--dispatch", default="least-loaded", choices=DISPATCH_POLICIES[1:])
    parser.add_argument("--scheduler", default="slots", choices=SCHEDULERS)
    args = parser.parse_args()
    print("| scenario | workload | profile | SLO | pool | n | u | m | k₀ | f (model) | f_meas |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.scenarios:
        set_name, index = name.split(":")
        workload_name, slo_s, rate, serving, cap = scenario = SETS[set_name][1][int(index)]
        run = plan_scenario(*scenario)
        best = run.plan.best
        planner = Planner(run.workload, run.plan.hardware, run.plan.options)
        traffic = planner.pool_traffic(best.routing)
        for pool_index, prediction, sizing, workload in planned_pools(run):
            pool = prediction.simulated
            sums = record_pool(
                pool, workload, sizing.arrival_rate_per_s, sizing.mean_service_s, args.requests,
                args.dispatch, args.scheduler,
            )  # fmt: skip
            pool_rate, moments = traffic[pool_index]
            costs = iteration_costs(best.hardware[pool_index])
            _, prompt_s = ENGINE.decode_and_prompt_costs(moments, costs)
            view_args = router_arguments(moments, costs, pool_rate / pool.instances, pool.instances, prompt_s)
            u = view_args[0]
            m, k0 = router_view(view_args) or (math.nan, math.nan)
            f_meas = measured_share(sums, pool_rate / pool.instances)
            print(
                f"| {name} | {workload_name} | {serving or 'default'} | {slo_s * 1e3:.0f} ms | "
                f"{'short' if pool_index == 0 else 'long'} | {pool.instances} | {u:.2f} | {m:.2f} | "
                f"{k0:.1f} | {least_loaded_time_share(view_args):.2f} | {f_meas:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
