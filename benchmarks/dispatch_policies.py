"""Dispatch policies side by side, and why a least-loaded router hurts long pools with slow prefill.

    python benchmarks/dispatch_policies.py [--requests 40000] [--seeds 3] [--scenarios a100,h100]

For each scenario it plans a fleet with the ``engine`` model, then simulates every pool on its own
Poisson stream (:func:`fleetopt.core.simulate.simulate_pool_alone`, as benchmarks/validate_engine.py
does) under each dispatch policy and both schedulers of the ``physical`` engine, and prints the
simulated P99 TTFT (mean over seeds ± the 95% half-width) beside the plan's prediction.

Then, for the long pool, the mechanism: one seed's stream run through the engine
(:func:`fleetopt.core.simulate.run_pool_engine`, common random numbers across policies), recording
for every request what the router saw when it sent it (``IterationRun.dispatched``): the prompt
tokens its instance still had to prefill and the fewest any instance had. It prints, per policy,
how often a request was sent to an instance still prefilling another prompt while some instance
was not, the prompt tokens ahead of it then, how many of those went where the request before them
went, the mean number of requests its instance held, and the P99 TTFT of the requests sent
behind a prefill and of the others.

Scenarios: ``a100`` is the issue's regime (Llama-3-70B on 4× A100 from Vidur's profiles,
tests/data/profiles; the paper's Azure CDF, 16K long context, 100 req/s, SLO 2 s); ``h100`` the
README plan (Azure 2023, 1,000 req/s, 500 ms, the default H100 profile).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
from validate_engine import pool_stream

from fleetopt.api import plan_workload
from fleetopt.api.crosscheck import with_model_attention
from fleetopt.core.crosscheck import setup_from_plan
from fleetopt.core.simulate import (
    SCHEDULERS,
    routed_pool_workload,
    run_pool_engine,
    simulate_pool_alone,
)

PROFILES = Path(__file__).resolve().parents[1] / "tests" / "data" / "profiles"
SCENARIOS = {
    # name: (workload, SLO s, rate req/s, serving profile, long context, profiles folder)
    "a100": ("azure", 2.0, 100.0, "llama-3-70b-a100-80gb-tp4-vidur", 16384, PROFILES),
    "h100": ("azure-2023", 0.5, 1000.0, None, None, None),
}
POLICIES = ("round-robin", "least-loaded", "least-waiting", "least-kv", "least-tokens", "random", "pooled")


def planned(name: str):
    """(scenario, plan run, setup with attention, [(index, prediction, sizing, routed workload)])."""
    workload, slo_s, rate, serving, context, folder = SCENARIOS[name]
    kwargs = {"serving": serving} if serving else {}
    if context:
        kwargs["long_context_tokens"] = context
    if folder:
        kwargs["profiles_dir"] = folder
    run = plan_workload(workload, ttft_slo_s=slo_s, mean_rate_per_s=rate, rate_basis="mean", **kwargs)
    setup = with_model_attention(setup_from_plan(run.plan))
    pools = []
    for index, (prediction, sizing) in enumerate(zip(setup.pools, run.plan.best.pools, strict=True)):
        own = routed_pool_workload(run.workload, run.plan.best.routing, index)
        if prediction.simulated.instances and own is not None:
            pools.append((index, prediction, sizing, own))
    return SCENARIOS[name], run, pools


def policy_table(name: str, pools, args) -> None:
    print(f"\n### {name}: P99 TTFT by dispatch policy (sim mean ± 95% half-width; prediction)\n")
    header = "| pool | n × s | predicted | scheduler | " + " | ".join(POLICIES) + " |"
    print(header)
    print("|" + "---|" * (4 + len(POLICIES)))
    for _, prediction, sizing, own in pools:
        pool = prediction.simulated
        for scheduler in SCHEDULERS:
            cells = []
            for dispatch in POLICIES:
                if scheduler == "slots" and dispatch not in ("pooled", "round-robin", "least-loaded"):
                    cells.append("–")  # the engine before had only these
                    continue
                summary = simulate_pool_alone(
                    own, pool, sizing.arrival_rate_per_s, residence_s=sizing.mean_service_s,
                    measured_requests=args.requests, service_model="physical", dispatch=dispatch,
                    seeds=tuple(range(1, args.seeds + 1)), scheduler=scheduler,
                ).pools[0]  # fmt: skip
                p99 = summary.ttft_p99_s
                cells.append(f"{p99.mean * 1e3:.0f} ± {p99.ci95_half_width * 1e3:.0f}")
            print(
                f"| {prediction.name} | {pool.instances} × {pool.slots_per_instance} | "
                f"{sizing.p99_ttft_s * 1e3:.0f} ms | {scheduler} | " + " | ".join(cells) + " |",
                flush=True,
            )


def mechanism(name: str, pools, args) -> None:
    _, prediction, sizing, own = pools[-1]  # the longest pool
    pool = prediction.simulated
    rate = sizing.arrival_rate_per_s
    arrivals, inputs, outputs, warmup = pool_stream(
        own, rate, sizing.mean_service_s, max(args.requests, math.ceil(rate * 60.0)), 1
    )
    measured = np.arange(arrivals.size) >= warmup
    draws = np.random.default_rng([1, 30]).random(arrivals.size)
    print(
        f"\n### {name}: what the router saw, {prediction.name} pool ({pool.instances} × "
        f"{pool.slots_per_instance}, {sizing.arrival_rate_per_s:.3g} req/s, one seed, "
        f"{int(measured.sum()):,} measured requests)\n"
    )
    print(
        "| scheduler | dispatch | P99 TTFT | sent to an instance still prefilling while one was not | "
        "prompt tokens ahead, when any | of those, sent where the request before went | "
        "mean requests at its instance | P99 TTFT sent behind a prefill / not |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for scheduler in SCHEDULERS:
        for dispatch in (
            "round-robin",
            "least-loaded",
            "least-waiting",
            "least-tokens",
            "least-kv",
            "random",
        ):
            if scheduler == "slots" and dispatch not in ("round-robin", "least-loaded"):
                continue
            run = run_pool_engine(pool, arrivals, inputs, outputs, dispatch, scheduler, draws)
            ttft = (run.first_token_s - arrivals + pool.ttft_overhead_s)[measured]
            seen = run.dispatched[measured]
            behind = (seen[:, 2] > 0) & (seen[:, 3] == 0)
            instance = run.dispatched[:, 0]
            repeat = np.r_[False, instance[1:] == instance[:-1]][measured]
            repeated = f"{(repeat & behind).sum() / behind.sum():.0%}" if behind.any() else "–"
            ahead = f"{seen[seen[:, 2] > 0, 2].mean():,.0f}" if (seen[:, 2] > 0).any() else "–"
            p99 = [
                np.percentile(part, 99) * 1e3 if part.size >= 100 else math.nan
                for part in (ttft[behind], ttft[~behind])
            ]
            print(
                f"| {scheduler} | {dispatch} | {np.percentile(ttft, 99) * 1e3:.0f} ms | {behind.mean():.1%} "
                f"| {ahead} | {repeated} | {seen[:, 1].mean():.2f} | {p99[0]:.0f} / {p99[1]:.0f} ms |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40_000, help="measured requests per pool and seed")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--no-table", action="store_true", help="the mechanism only")
    args = parser.parse_args()
    for name in args.scenarios.split(","):
        scenario, run, pools = planned(name)
        best = run.plan.best
        print(
            f"\n## {name}: {scenario[0]}, SLO {scenario[1]:g} s, {scenario[2]:g} req/s, "
            f"{scenario[3] or 'default profile'}; plan B = {best.b_short_tokens}, γ = {best.gamma}, "
            + ", ".join(
                f"{p.name} {p.simulated.instances} × {p.simulated.slots_per_instance}" for _, p, _, _ in pools
            )
        )
        if not args.no_table:
            policy_table(name, pools, args)
        mechanism(name, pools, args)


if __name__ == "__main__":
    main()
