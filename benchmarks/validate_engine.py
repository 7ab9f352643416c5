"""The engine model against the iteration-level simulation it was not fitted to.

    python benchmarks/validate_engine.py [--pool-requests 60000] [--seeds 3] [--quick] [--no-search]
    python benchmarks/validate_engine.py --ablate [--only SET]

For each scenario (workload, SLO, rate, serving profile, utilization cap) it plans with the
``engine`` model and then checks every planned pool on its own: the pool's routed request stream
(Poisson at the pool's rate, lengths drawn from the routed atoms, Compress-and-Route applied) is
simulated by the ``physical`` engine (token-level costs W + H·decoding + τ·prompt tokens per
iteration, least-loaded dispatch) with ``--pool-requests`` requests per seed, so a pool that gets
0.01% of the traffic is measured as well as the big one. Per pool it reports:

  * the predicted and simulated P99 TTFT (mean over seeds ± the 95% half-width) and the error;
  * the predicted and simulated slot utilization;
  * the smallest instance count (slots as planned) whose simulated P99 TTFT meets the SLO and whose
    simulated utilization and exact compute utilization meet the cap, found by search, and how
    far the plan is from it;

then the fleet: planned instances against the sum of those minima.

Two sets of scenarios: CHOSEN_ON are the ones that were looked at while choosing the
least-loaded intake share of :func:`fleetopt.core.service.least_loaded_time_share`; HELD_OUT
(other workloads, GPUs and models) were not; FRESH were fixed after the model's last change and
first run on the model as it stands. The tables go into docs/validation.md.

``--ablate`` simulates nothing: it re-plans every scenario of every set with each correction of
the engine model (:class:`fleetopt.core.engine.assumptions.EngineAssumptions`) switched in turn to
its simplest alternative, and prints what each is worth: the fleets it changes, the GPUs over all
fleets, and its biggest change in one fleet (then, below the table, every fleet it changes).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from fleetopt.api import plan_workload
from fleetopt.api.crosscheck import with_model_attention
from fleetopt.core.crosscheck import setup_from_plan
from fleetopt.core.engine.assumptions import ALTERNATIVES, DEFAULT_ASSUMPTIONS, TERM_LABELS
from fleetopt.core.engine.model import ENGINE, EngineModel
from fleetopt.core.simulate import DEFAULT_SCHEDULER, SCHEDULERS, routed_pool_workload, simulate_pool_alone
from fleetopt.core.workload import Workload

#: The physical engine's scheduler the pools are judged by (``--scheduler``).
SCHEDULER = [DEFAULT_SCHEDULER]

CHOSEN_ON = (
    # workload, SLO s, rate req/s, serving profile, cap
    ("azure-2023", 0.5, 1000.0, None, 0.85),
    ("azure-2023", 2.0, 1000.0, None, 0.85),
    ("azure-2023", 2.0, 1000.0, None, 1.0),
    ("azure-2023-conv", 0.5, 500.0, None, 1.0),
    ("azure-2023-code", 2.0, 200.0, None, 1.0),
    ("azure", 0.5, 200.0, None, 1.0),
)
HELD_OUT = (
    ("azure-2023-code", 0.5, 200.0, None, 0.85),
    ("lmsys", 0.5, 300.0, None, 0.85),
    ("agent-heavy", 2.0, 50.0, None, 0.85),
    ("azure-2023", 0.5, 1000.0, "llama-3.1-70b-fp8-b200-tp8-vllm", 0.85),
    ("azure-2023-conv", 1.0, 300.0, "qwen3-32b-h100-80gb-tp4-vllm", 0.85),
    ("azure", 1.0, 500.0, "llama-3.1-70b-fp8-h200-tp4-vllm", 1.0),
)
# Fixed (and committed) after the intake share's last change and before it was run on them: the
# first check of the model as it stands that no choice of it has seen.
FRESH = (
    ("lmsys-multiturn", 1.0, 200.0, None, 0.85),
    ("azure-2023", 1.0, 2000.0, "llama-3.1-70b-fp8-h100-80gb-tp4-vllm", 0.85),
    ("agent-heavy", 1.0, 100.0, "llama-3.1-70b-fp8-h200-tp8-vllm", 0.85),
    ("azure-2023-conv", 2.0, 1000.0, "llama-3.1-70b-fp8-b200-tp4-vllm", 0.85),
    ("lmsys", 1.0, 500.0, "qwen3-32b-h100-80gb-tp8-vllm", 0.85),
    ("azure-2023-code", 1.0, 300.0, "llama-3.1-70b-fp8-h200-tp4-vllm", 1.0),
)
# Fixed (and committed) after FRESH's first run and before any change made because of it.
FRESH_2 = (
    ("lmsys-multiturn", 0.5, 1000.0, "llama-3.1-70b-fp8-h200-tp8-vllm", 0.85),
    ("azure", 2.0, 2000.0, "llama-3.1-70b-fp8-b200-tp8-vllm", 0.85),
    ("azure-2023-code", 0.5, 1000.0, "llama-3.1-70b-fp8-h100-80gb-tp8-vllm", 0.85),
    ("agent-heavy", 2.0, 300.0, "llama-3.1-70b-fp8-b200-tp4-vllm", 0.85),
    ("azure-2023-conv", 1.0, 100.0, "qwen3-32b-h100-80gb-tp8-vllm", 1.0),
    ("lmsys", 2.0, 100.0, "llama-3.1-70b-fp8-h200-tp4-vllm", 0.85),
)
# Fixed (and committed) after the second fresh set's run and before any change made because of it.
FRESH_3 = (
    ("lmsys", 1.0, 200.0, "llama-3.1-70b-fp8-h100-80gb-tp4-vllm", 0.85),
    ("lmsys-multiturn", 2.0, 300.0, "llama-3.1-70b-fp8-b200-tp8-vllm", 0.85),
    ("agent-heavy", 1.0, 200.0, "qwen3-32b-h100-80gb-tp4-vllm", 0.85),
    ("azure-2023-conv", 0.5, 2000.0, "llama-3.1-70b-fp8-h200-tp8-vllm", 0.85),
    ("azure", 1.0, 1000.0, "llama-3.1-70b-fp8-h100-80gb-tp4-vllm", 1.0),
    ("azure-2023", 2.0, 500.0, "llama-3.1-70b-fp8-b200-tp4-vllm", 0.85),
)

# Fixed (and committed) after the third fresh set's run and before any change made because of the
# five sets' misses (the e^{−m} term of the intake share, the LMSYS short pools).
FRESH_4 = (
    ("azure-2023", 1.5, 700.0, "llama-3.1-70b-fp8-h200-tp8-vllm", 0.85),
    ("agent-heavy", 3.0, 150.0, None, 0.85),
    ("lmsys-multiturn", 1.5, 600.0, "llama-3.1-70b-fp8-h100-80gb-tp4-vllm", 0.85),
    ("azure-2023-code", 2.0, 500.0, "qwen3-32b-h100-80gb-tp8-vllm", 0.85),
    ("lmsys", 0.75, 800.0, "llama-3.1-70b-fp8-b200-tp8-vllm", 0.85),
    ("azure-2023-conv", 0.5, 150.0, "llama-3.1-70b-fp8-h200-tp4-vllm", 1.0),
)
# Fixed (and committed) after the fourth fresh set's run and before the model that keeps each own
# prefill level as its own part of the TTFT law (which the first four sets' misses led to) was run
# on them.
FRESH_5 = (
    ("azure-2023", 1.0, 1500.0, "llama-3.1-70b-fp8-b200-tp8-vllm", 0.85),
    ("lmsys", 1.5, 400.0, "llama-3.1-70b-fp8-h200-tp8-vllm", 0.85),
    ("lmsys-multiturn", 0.75, 250.0, "qwen3-32b-h100-80gb-tp8-vllm", 0.85),
    ("agent-heavy", 1.5, 80.0, "llama-3.1-70b-fp8-h200-tp4-vllm", 0.85),
    ("azure-2023-code", 1.0, 800.0, "llama-3.1-70b-fp8-b200-tp4-vllm", 0.85),
    ("azure", 0.75, 300.0, "qwen3-32b-h100-80gb-tp4-vllm", 1.0),
)
# Fixed (and committed) after the fifth set's run and before the occupancy chain's variance
# from prefill stalls (which the LMSYS long pools' slot waits led to) was run on them.
FRESH_6 = (
    ("lmsys", 1.0, 600.0, "llama-3.1-70b-fp8-b200-tp4-vllm", 0.85),
    ("lmsys-multiturn", 2.0, 150.0, "llama-3.1-70b-fp8-h200-tp4-vllm", 0.85),
    ("agent-heavy", 2.5, 120.0, "llama-3.1-70b-fp8-b200-tp8-vllm", 0.85),
    ("azure-2023", 0.75, 400.0, "qwen3-32b-h100-80gb-tp8-vllm", 0.85),
    ("azure-2023-conv", 1.5, 800.0, "llama-3.1-70b-fp8-h100-80gb-tp4-vllm", 0.85),
    ("lmsys", 3.0, 250.0, None, 0.85),
)
# Fixed (and committed) after the sixth set's run and before any change to the intake share or the
# chain's variance made in the session after it was run on them.
FRESH_7 = (
    ("azure-2023", 3.0, 800.0, None, 0.85),
    ("agent-heavy", 2.0, 200.0, "qwen3-32b-h100-80gb-tp8-vllm", 0.85),
    ("lmsys", 2.5, 150.0, "llama-3.1-70b-fp8-b200-tp8-vllm", 0.85),
    ("azure-2023-code", 1.5, 400.0, "llama-3.1-70b-fp8-h100-80gb-tp4-vllm", 0.85),
    ("lmsys-multiturn", 1.0, 400.0, "llama-3.1-70b-fp8-b200-tp4-vllm", 0.85),
    ("azure-2023-conv", 2.0, 300.0, "llama-3.1-70b-fp8-h200-tp8-vllm", 1.0),
)
# Fixed (and committed) after the seventh set's run on the chain widened by prefill stalls and before
# the slot wait's two-moment factor was moved to the queue's build-up (which one of fresh-6's pools led
# to) was run on them.
FRESH_8 = (
    ("lmsys", 2.0, 400.0, None, 0.85),
    ("lmsys-multiturn", 3.0, 200.0, "llama-3.1-70b-fp8-h200-tp8-vllm", 0.85),
    ("agent-heavy", 1.5, 150.0, "llama-3.1-70b-fp8-b200-tp4-vllm", 0.85),
    ("azure-2023", 1.5, 300.0, "qwen3-32b-h100-80gb-tp4-vllm", 0.85),
    ("azure-2023-code", 3.0, 600.0, "llama-3.1-70b-fp8-h200-tp8-vllm", 0.85),
    ("azure", 1.5, 800.0, "llama-3.1-70b-fp8-b200-tp4-vllm", 0.85),
)
# Fixed (and committed) before the intake share f was measured in the simulation or changed.
FRESH_9 = (
    ("azure-2023", 2.5, 1500.0, "llama-3.1-70b-fp8-h200-tp4-vllm", 0.85),
    ("agent-heavy", 3.0, 80.0, None, 0.85),
    ("lmsys", 1.5, 250.0, "qwen3-32b-h100-80gb-tp4-vllm", 0.85),
    ("azure-2023-conv", 1.0, 700.0, "llama-3.1-70b-fp8-h100-80gb-tp8-vllm", 0.85),
    ("lmsys-multiturn", 1.5, 300.0, "llama-3.1-70b-fp8-b200-tp8-vllm", 0.85),
    ("azure-2023-code", 2.0, 300.0, "qwen3-32b-h100-80gb-tp8-vllm", 1.0),
)

#: Fixed and committed before any change to the intake share was tried: the check of that change.
FRESH_10 = (
    ("azure-2023", 2.0, 600.0, None, 0.85),
    ("azure-2023", 3.0, 1000.0, "llama-3.1-70b-fp8-h100-80gb-tp8-vllm", 0.85),
    ("agent-heavy", 1.5, 60.0, "llama-3.1-70b-fp8-b200-tp8-vllm", 0.85),
    ("azure-2023-conv", 1.5, 400.0, "qwen3-32b-h100-80gb-tp8-vllm", 0.85),
    ("lmsys", 2.0, 400.0, "llama-3.1-70b-fp8-h200-tp8-vllm", 1.0),
    ("azure", 2.0, 300.0, None, 0.85),
)

#: Fixed and committed after fresh-10's run, before any change to the first-order intake share f₁
#: was tried: the check of that change.
FRESH_11 = (
    ("azure-2023", 2.0, 1500.0, "llama-3.1-70b-fp8-h200-tp8-vllm", 0.85),
    ("azure-2023-code", 1.0, 400.0, "qwen3-32b-h100-80gb-tp4-vllm", 1.0),
    ("azure-2023", 2.5, 400.0, "qwen3-32b-h100-80gb-tp8-vllm", 0.85),
    ("lmsys-multiturn", 2.0, 500.0, "llama-3.1-70b-fp8-h100-80gb-tp8-vllm", 0.85),
    ("agent-heavy", 2.5, 40.0, "llama-3.1-70b-fp8-h200-tp4-vllm", 0.85),
    ("azure-2023-conv", 3.0, 300.0, None, 1.0),
)

#: The scenario sets by their ``--only`` name: (the table's title, the scenarios), in run order.
SETS = {
    "chosen-on": ("Scenarios looked at while choosing the intake share", CHOSEN_ON),
    "held-out": ("Held-out scenarios", HELD_OUT),
    "fresh": ("Fresh scenarios (seen by no choice of the model)", FRESH),
    "fresh-2": ("Second fresh set (fixed before any change made because of the first)", FRESH_2),
    "fresh-3": ("Third fresh set (fixed before any change made because of the second)", FRESH_3),
    "fresh-4": ("Fourth fresh set (fixed before any change made because of the first five)", FRESH_4),
    "fresh-5": ("Fifth fresh set (fixed before the per-level TTFT law was run on it)", FRESH_5),
    "fresh-6": ("Sixth fresh set (fixed before the chain's prefill-stall variance was run on it)", FRESH_6),
    "fresh-7": ("Seventh fresh set (fixed before this session's model changes were run on it)", FRESH_7),
    "fresh-8": ("Eighth fresh set (fixed before the slot wait's two-moment factor moved)", FRESH_8),
    "fresh-9": ("Ninth fresh set (fixed before the intake share was measured or changed)", FRESH_9),
    "fresh-10": ("Tenth fresh set (fixed before a change to the intake share was tried)", FRESH_10),
    "fresh-11": ("Eleventh fresh set (fixed before a change to f₁ was tried)", FRESH_11),
}


def plan_scenario(
    workload_name: str,
    slo_s: float,
    rate: float,
    serving: str | None,
    cap: float,
    model: EngineModel = ENGINE,
):
    """The plan a scenario checks (:func:`fleetopt.api.plan_workload`), on the mean basis: Poisson
    arrivals at the given rate on both sides, so this checks the TTFT law; the arrival term is
    checked on the logs' own arrivals (benchmarks/validate_replay.py). ``model``: the engine model
    (another's assumptions for ``--ablate``)."""
    kwargs = {} if serving is None else {"serving": serving}
    return plan_workload(
        workload_name, ttft_slo_s=slo_s, mean_rate_per_s=rate, max_utilization=cap, rate_basis="mean",
        service_model=model, **kwargs,
    )  # fmt: skip


def planned_pools(run):
    """(index, prediction, sizing, routed workload) for each pool of ``run``'s best fleet that has
    instances and traffic: the pool as the simulation runs it (``prediction.simulated``), as the
    plan sized it, and its own request stream (:func:`fleetopt.core.simulate.routed_pool_workload`)."""
    best = run.plan.best
    setup = with_model_attention(setup_from_plan(run.plan))
    for index, (prediction, sizing) in enumerate(zip(setup.pools, best.pools, strict=True)):
        if prediction.simulated.instances == 0:
            continue
        workload = routed_pool_workload(run.workload, best.routing, index)
        if workload is not None:
            yield index, prediction, sizing, workload


def simulate_pool(pool, workload: Workload, rate: float, residence_s: float, requests: int, seeds: int):
    """(P99 TTFT estimate, utilization estimate) of one pool fed its own Poisson stream
    (:func:`fleetopt.core.simulate.simulate_pool_alone`: a warm-up of at least 30 s and ten mean
    residences, then ``requests`` measured requests, at least 60 s of them). ``residence_s``: the
    planned mean slot-holding time."""
    summary = simulate_pool_alone(
        workload, pool, rate, residence_s=residence_s, measured_requests=requests, service_model="physical",
        dispatch="least-loaded", seeds=tuple(range(1, seeds + 1)), scheduler=SCHEDULER[0],
    ).pools[0]  # fmt: skip
    return summary.ttft_p99_s, summary.utilization


#: The search gives up above this multiple of the planned count (the pool's own prefills miss the SLO).
SEARCH_LIMIT = 3


def smallest_meeting(pool, workload, rate, residence_s, slo_s, cap, compute, requests, seeds) -> int | None:
    """The fewest instances (slots as planned) meeting the SLO and cap in simulation: a step search
    then bisection around the planned count. ``compute``: the planned compute utilization, which
    scales as 1/n exactly; a pool must keep it ≤ cap and < 1 (a finite simulation of an overloaded
    pool can look fine before its queue builds up). None when no count up to SEARCH_LIMIT × the
    planned one meets them: the pool's own prefills alone miss the SLO."""
    import dataclasses

    planned = pool.instances
    cache: dict[int, bool] = {}

    def ok(n: int) -> bool:
        if n not in cache:
            load = compute * planned / n if n >= 1 else math.inf
            if not (n >= 1 and load < 1.0 and load <= cap):
                cache[n] = False
            else:
                ttft, util = simulate_pool(
                    dataclasses.replace(pool, instances=n), workload, rate, residence_s, requests, seeds
                )
                cache[n] = bool(ttft.mean <= slo_s and (cap >= 1.0 or util.mean <= cap))
        return cache[n]

    return smallest_passing(ok, planned)


def smallest_passing(ok, planned: int) -> int | None:
    """The fewest n with ``ok(n)`` (monotone): from the planned count, 10% steps up until one passes
    (None above SEARCH_LIMIT × planned), 10% steps down while they pass, then bisection."""
    step = max(1, math.ceil(0.1 * planned))
    hi = planned
    while not ok(hi):
        hi += step
        if hi > SEARCH_LIMIT * planned + step:  # the SLO is out of reach at any count (a prefill alone)
            return None
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


def pool_stream(own: Workload, rate_per_s: float, residence_s: float, measured: int, seed: int):
    """One seed of a pool's own Poisson stream, with :func:`simulate_pool_alone`'s warm-up of
    max(30 s, ten mean residences) before ``measured`` requests: (arrival times, prompt tokens,
    output tokens ≥ 1, the number of warm-up requests)."""
    warmup = math.ceil(rate_per_s * max(30.0, 10.0 * residence_s))
    count = warmup + measured
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / rate_per_s, count))
    cumulative = np.cumsum(own.weights)
    atoms = np.minimum(np.searchsorted(cumulative, rng.random(count) * cumulative[-1], side="right"),
                       cumulative.size - 1)  # fmt: skip
    outputs = np.maximum(1, own.output_tokens[atoms])
    return arrivals, np.maximum(0, own.total_tokens[atoms] - outputs), outputs, warmup


def run_scenarios(label: str, scenarios, args) -> None:
    print(f"\n### {label}\n")
    print(
        "| workload | profile | SLO | λ | cap | B, γ | pool | n × s | util pred / sim | P99 TTFT pred | "
        "P99 TTFT sim | error | n min in sim | plan vs min |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    fleets = []
    for workload_name, slo_s, rate, serving, cap in scenarios:
        started = time.perf_counter()
        run = plan_scenario(workload_name, slo_s, rate, serving, cap)
        best = run.plan.best
        profile = "default (H100 TP8)" if serving is None else serving
        if best is None:
            print(f"| {workload_name} | {profile} | {slo_s * 1e3:.0f} ms | {rate:g} | {cap} | infeasible |")
            continue
        routing = f"{best.b_short_tokens}, {best.gamma}" if best.b_short_tokens else "one pool"
        planned_total = minimum_total = 0
        unreachable = False
        for _, prediction, sizing, workload in planned_pools(run):
            pool = prediction.simulated
            pool_rate, residence = sizing.arrival_rate_per_s, sizing.mean_service_s
            ttft, util = simulate_pool(pool, workload, pool_rate, residence, args.pool_requests, args.seeds)
            error = (sizing.p99_ttft_s / ttft.mean - 1.0) * 100.0
            minimum = (
                None
                if args.no_search
                else smallest_meeting(
                    pool, workload, pool_rate, residence, slo_s, cap, sizing.compute_utilization or 0.0,
                    args.search_requests, args.seeds,
                )
            )  # fmt: skip
            planned_total += pool.instances
            unreachable = unreachable or (minimum is None and not args.no_search)
            minimum_total += minimum or 0
            versus = "–" if minimum is None else f"{(pool.instances / minimum - 1.0) * 100.0:+.1f}%"
            shown = str(minimum) if minimum is not None else ("–" if args.no_search else "none")
            cells = (
                workload_name, profile, f"{slo_s * 1e3:.0f} ms", f"{rate:g}", f"{cap}", routing,
                prediction.name,
                f"{pool.instances} × {pool.slots_per_instance}",
                f"{sizing.utilization:.3f} / {util.mean:.3f}",
                f"{sizing.p99_ttft_s * 1e3:.0f} ms",
                f"{ttft.mean * 1e3:.0f} ± {ttft.ci95_half_width * 1e3:.0f} ms",
                f"{error:+.1f}%", shown, versus,
            )  # fmt: skip
            print("| " + " | ".join(cells) + " |", flush=True)
        if not args.no_search:
            fleets.append(
                (
                    workload_name,
                    profile,
                    slo_s,
                    rate,
                    cap,
                    planned_total,
                    None if unreachable else minimum_total,
                )
            )
        print(f"<!-- {workload_name} {slo_s} s: {time.perf_counter() - started:.0f} s -->", flush=True)
    if fleets:
        print("\n| workload | profile | SLO | λ | cap | planned instances | smallest in sim | plan vs min |")
        print("|---|---|---|---|---|---|---|---|")
        for workload_name, profile, slo_s, rate, cap, planned, minimum in fleets:
            versus = "no count passes" if minimum is None else f"{(planned / minimum - 1.0) * 100.0:+.1f}%"
            print(
                f"| {workload_name} | {profile} | {slo_s * 1e3:.0f} ms | {rate:g} | {cap} | {planned} | "
                f"{'none' if minimum is None else minimum} | {versus} |"
            )


def _fleet_gpus(
    workload_name: str, slo_s: float, rate: float, serving: str | None, cap: float, model
) -> int | None:
    """GPUs of the scenario's planned fleet under ``model`` (None: infeasible)."""
    best = plan_scenario(workload_name, slo_s, rate, serving, cap, model).plan.best
    return None if best is None else sum(pool.gpus for pool in best.pools)


def ablate(sets: dict) -> None:
    """What each correction of the engine model is worth (module docstring): a table, then every
    fleet each one changes."""
    scenarios = [(name, scenario) for name, (_, members) in sets.items() for scenario in members]
    started = time.perf_counter()
    default = [_fleet_gpus(*scenario, ENGINE) for _, scenario in scenarios]
    command = "python benchmarks/validate_engine.py --ablate"
    print(f"\n{len(scenarios)} scenarios ({len(sets)} sets), planned on the mean basis ({command})\n")
    header = ("term switched off (→ its simplest alternative)", "fleets changed", "GPUs, all fleets")
    print("| " + " | ".join((*header, "biggest change in one fleet")) + " |")
    print("|---|---|---|---|")
    details = []
    total = sum(g for g in default if g is not None)
    for term in ALTERNATIVES:
        model = EngineModel(DEFAULT_ASSUMPTIONS.without(term))
        changed, off_total, biggest, infeasible = [], 0, None, 0
        for (set_name, scenario), before in zip(scenarios, default, strict=True):
            after = _fleet_gpus(*scenario, model)
            if before is None or after is None:
                infeasible += (after is None) != (before is None)
                if after != before:
                    changed.append((set_name, scenario, before, after))
                continue
            off_total += after
            if after != before:
                changed.append((set_name, scenario, before, after))
                if biggest is None or abs(after / before - 1.0) > abs(biggest[1] / biggest[0] - 1.0):
                    biggest = (before, after, scenario)
        label = TERM_LABELS[term]
        if biggest is None:
            largest = "–"
        else:
            before, after, (workload_name, slo_s, rate, serving, cap) = biggest
            largest = (
                f"{after - before:+,d} GPUs ({(after / before - 1.0) * 100.0:+.0f}%): {workload_name}, "
                f"{serving or 'default profile'}, {slo_s * 1e3:.0f} ms, {rate:g} req/s"
            )
        gpus = f"{total:,} → {off_total:,} ({(off_total / total - 1.0) * 100.0:+.1f}%)"
        if infeasible:
            gpus += f"; {infeasible} feasibility changed"
        print(f"| {label} | {len(changed)} of {len(scenarios)} | {gpus} | {largest} |", flush=True)
        details.append((label, changed))
    for label, changed in details:
        print(f"\n{label}: {len(changed)} fleets changed")
        for set_name, (workload_name, slo_s, rate, serving, cap), before, after in changed:
            profile = serving or "default profile"
            where = f"{workload_name}, {profile}, {slo_s * 1e3:.0f} ms, {rate:g} req/s, cap {cap}"
            print(f"  {set_name}: {where}: {before} → {after} GPUs")
    print(f"\n<!-- {time.perf_counter() - started:.0f} s -->")


def summarize(path: str) -> None:
    """Per set, from a run's output (``python validate_engine.py > run.md``): pools whose predicted
    P99 TTFT is within ±15% of the simulated one, fleets within ±5% of the smallest passing in
    simulation, and fleets short or over by more than 5%."""
    print(
        "| set | pools within ±15% | fleets within ±5% | fleets short by > 5% | fleets over by > 5% | "
        "fleets no count passes |"
    )
    print("|---|---|---|---|---|---|")
    titles = {title: name for name, (title, _) in SETS.items()}
    totals = [0, 0, 0, 0, 0, 0, 0]
    name, pools, fleets = None, [], []

    def flush() -> None:
        if name is None or not pools:
            return
        within = sum(abs(e) <= 15.0 for e in pools)
        fit = sum(abs(v) <= 5.0 for v in fleets)
        short, over = sum(v < -5.0 for v in fleets), sum(5.0 < v < math.inf for v in fleets)
        none = sum(v == math.inf for v in fleets)
        for k, value in enumerate((within, len(pools), fit, len(fleets), short, over, none)):
            totals[k] += value
        print(f"| {name} | {within} of {len(pools)} | {fit} of {len(fleets)} | {short} | {over} | {none} |")

    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("### "):
                flush()
                name, pools, fleets = titles.get(line[4:].strip(), line[4:].strip()), [], []
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 14 and cells[11].endswith("%") and cells[0] != "workload":
                pools.append(float(cells[11].rstrip("%")))
            elif len(cells) == 8 and cells[7].endswith("%") and cells[0] != "workload":
                fleets.append(float(cells[7].rstrip("%")))
            elif len(cells) == 8 and cells[7] == "no count passes":
                fleets.append(math.inf)
    flush()
    print(
        f"| **all** | **{totals[0]} of {totals[1]}** | **{totals[2]} of {totals[3]}** | **{totals[4]}** | "
        f"**{totals[5]}** | **{totals[6]}** |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summarize", default=None, help="count a previous run's output (a file) per set")
    parser.add_argument(
        "--pool-requests", type=int, default=60_000, help="simulated requests per pool and seed"
    )
    parser.add_argument("--search-requests", type=int, default=40_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="two scenarios, fewer requests")
    parser.add_argument("--no-search", action="store_true")
    parser.add_argument("--only", choices=tuple(SETS), default=None)
    parser.add_argument(
        "--ablate",
        action="store_true",
        help="re-plan every scenario with each correction switched off (no simulation)",
    )
    parser.add_argument(
        "--scheduler", choices=SCHEDULERS, default=DEFAULT_SCHEDULER,
        help="the physical engine's scheduler that judges the pools (slots: the engine before issue 30)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.ablate:
        ablate({name: sets for name, sets in SETS.items() if args.only in (None, name)})
        return
    if args.summarize:
        summarize(args.summarize)
        return
    SCHEDULER[0] = args.scheduler
    if args.quick:
        args.pool_requests, args.search_requests, args.seeds = 20_000, 10_000, 2
    for name, (title, scenarios) in SETS.items():
        if args.only in (None, name):
            run_scenarios(title, scenarios[:2] if args.quick else scenarios, args)


if __name__ == "__main__":
    main()
