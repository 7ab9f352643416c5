"""The words for what core reports as numbers and enums: why a pool or fleet is infeasible, and
the plan's notes. Plain strings, no rich: the plan document (``render/plan_document.py``), the
tables and the audit all word a problem the same way."""

from __future__ import annotations

from fleetopt.core.planner import FleetCandidate, FleetPlan
from fleetopt.core.sizing import PoolProblem, PoolSizing, ProblemKind
from fleetopt.core.workload import Workload


def problem_sentence(problem: PoolProblem, context_tokens: int) -> str:
    """One reason a pool is infeasible, in words (``context_tokens``: the pool's context)."""
    kind, value, limit = problem.kind, problem.value, problem.limit
    if kind is ProblemKind.KV_MISFIT:
        return (
            f"one {int(value):,}-token sequence does not fit in an instance's KV cache "
            f"({int(limit):,} tokens)"
        )
    if kind is ProblemKind.TPOT_OVER_SLO:
        return (
            f"the iteration time at {problem.slots} slot(s) is {value * 1e3:.1f} ms, "
            f"above the TPOT SLO {limit * 1e3:.1f} ms"
        )
    if kind is ProblemKind.PREFILL_OVER_SLO:
        return (
            f"prefill and first decode alone take {value * 1e3:.1f} ms at the best slot count "
            f"({problem.slots}), above the SLO {limit * 1e3:.1f} ms"
        )
    if kind is ProblemKind.COMPUTE_FLOOR:
        return (
            f"even at the GPUs' peak FLOP/s, the P99 prompt's prefill and first decode take "
            f"{value * 1e3:.1f} ms on an idle instance, above the SLO {limit * 1e3:.1f} ms "
            "(a compute floor no pool size can beat)"
        )
    if kind is ProblemKind.NO_INSTANCES:
        return "the pool has no instances but receives traffic"
    if kind is ProblemKind.SLOTS_OVER_KV:
        return f"{int(value)} slots exceed the KV limit {int(limit)} at {context_tokens:,} tokens"
    if kind is ProblemKind.OVER_CAP:
        return f"utilization {value:.3f} > cap {limit:.3f}"
    return f"P99 TTFT {value * 1e3:.1f} ms > SLO {limit * 1e3:.1f} ms"


def pool_reason(pool: PoolSizing) -> str | None:
    """Why a pool is infeasible (its problems joined), or None when it is feasible."""
    if not pool.problems:
        return None
    return "; ".join(problem_sentence(p, pool.context_tokens) for p in pool.problems)


def fleet_reason(fleet: FleetCandidate) -> str | None:
    """Why a fleet is infeasible, pool by pool ("short pool: …; long pool: …"), or None."""
    one_pool = fleet.pool_count == 1
    reasons = [
        f"pool: {pool_reason(pool)}" if one_pool else f"{name} pool: {pool_reason(pool)}"
        for name, pool in zip(fleet.pool_names, fleet.pools, strict=True)
        if not pool.feasible
    ]
    return "; ".join(reasons) or None


#: What every output says about a bare total-token CDF split by the default assumption.
SPLIT_ASSUMED_NOTE = (
    "this CDF gives total tokens only, so fleetopt split every length 80/20 into prompt and output "
    "(the papers' reference implementation's assumption); the split moves the fleet a lot (the Azure "
    "2023 logs, split 80/20 instead of by their own prompts and outputs, plan 10–45% more GPUs): pass "
    "--split, or add mean_input_tokens and mean_output_tokens to the CDF file"
)


def workload_notes(workload: Workload) -> list[str]:
    """What a reader should know about how the workload was read."""
    return [SPLIT_ASSUMED_NOTE] if workload.split_assumed else []


def rate_notes(workload: Workload, rate_per_s: float, origin: str) -> list[str]:
    """Say when the rate was not the user's and the log could not give one, or looks off."""
    if origin == "default" and workload.has_arrivals:
        why = "one request" if (workload.request_count or 0) < 2 else "all its timestamps are equal"
        return [
            f"the log's timestamps give no arrival rate ({why}): planned at the default "
            f"{rate_per_s:,g} req/s; give --rate"
        ]
    if origin == "observed" and not (1e-3 <= rate_per_s <= 1e6):
        return [
            f"the log's observed rate is {rate_per_s:.3g} req/s, which looks wrong: check the unit of its "
            "time column (a _ms/_us/_ns suffix in the column name sets it) or give --rate"
        ]
    return []


def basis_sentence(basis: dict) -> str:
    """What a plan sized for, with the log's peak/mean (``basis``: the document's ``rate_basis``).

    "sized for the peak 1-min window: 1,754 req/s, 1.754 × the mean 1,000 req/s (the log's peak
    window ran 1.784 × its mean; 0.0306 × of that was Poisson counting noise, ... left out)"
    """
    name, window = basis["basis"], basis.get("window_s")
    span = "" if window is None else f" {duration_words(window)} window"
    mean, sizing = basis["mean_rate_per_s"], basis["sizing_rate_per_s"]
    ratio = basis.get("peak_to_mean_ratio")
    peak = "" if ratio is None else f" (the log's peak/mean {ratio:.3g})"
    if name == "mean":
        return f"sized for the mean rate {mean:,.4g} req/s{peak}"
    what = "peak" if name == "peak" else f"{name[1:]}th-percentile"
    bursts = " and its bursts within windows" if basis.get("arrival_dispersion") else ""
    noise, observed = basis.get("counting_noise_factor"), basis.get("observed_factor")
    if noise is not None and observed is not None and noise >= 0.0005:
        # how much of the log's basis over its mean was Poisson counting noise (left out)
        peak = (
            f" (the log's {what} window ran {observed:.4g} × its mean; {noise:.3g} × of that was Poisson "
            "counting noise, which does not grow with the traffic, and is left out)"
        )
    return (
        f"sized for the {what}{span}{bursts}: {sizing:,.4g} req/s, {basis['factor']:.4g} × the mean "
        f"{mean:,.4g} req/s{peak}"
    )


def duration_words(seconds: float) -> str:
    """A whole duration in its largest unit, hyphenated (``1-min``, ``1-h``, ``90-s``)."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0)):
        if seconds >= size and abs(seconds / size - round(seconds / size)) < 1e-9:
            return f"{round(seconds / size)}-{unit}"
    return f"{seconds:g}-s"


def basis_notes(options, arrivals) -> list[str]:
    """A plan on the mean rate of a log that is bursty at the window scale: the peak it ignores."""
    profile = getattr(arrivals, "profile", None)
    if options.rate_basis != "mean" or profile is None or not getattr(arrivals, "overdispersed", False):
        return []
    peak = options.mean_rate_per_s * profile.peak_to_mean_ratio
    window = duration_words(profile.window_s)
    return [
        f"WARNING: sized on the mean of a bursty log: its busiest {window} window runs at "
        f"{profile.peak_to_mean_ratio:.3g} × the mean ({peak:,.4g} req/s at this plan's mean), and its "
        f"{window} counts are over-dispersed (index of dispersion "
        f"{profile.index_of_dispersion:.3g}, Poisson 1); this fleet will queue during the peaks — "
        "--rate-basis peak sizes for them"
    ]


def pool_model_notes(plan: FleetPlan) -> list[str]:
    """Pools that serve different models: a comparison with the homogeneous fleet is of unlike fleets."""
    short, long = plan.short_hardware.model_name, plan.long_hardware.model_name
    if short == long:
        return []
    return [
        f"the short pool serves {short} and the long pool {long}: a saving against the homogeneous "
        f"{long} fleet compares fleets of different models"
    ]


def context_notes(plan: FleetPlan) -> list[str]:
    """A pool context beyond what its model supports (the papers' 64K long pool on Llama-3-70B, 8K)."""
    notes = []
    for role, hardware in (("short", plan.short_hardware), ("long", plan.long_hardware)):
        limit = hardware.max_context_tokens
        if role == "long" and limit is not None and plan.options.long_context_tokens > limit:
            notes.append(
                f"the long pool's context {plan.options.long_context_tokens:,} tokens exceeds what "
                f"{hardware.model_name} supports ({limit:,} tokens): the plan is arithmetic only; use "
                f"--long-context {limit} or a longer-context model"
            )
    return notes


def plan_notes(plan: FleetPlan) -> list[str]:
    """What a reader of the plan should know about its outcome."""
    if plan.best is None:
        return ["no fleet meets the SLO and the utilization cap; see each pool's reason"]
    if plan.best.b_short_tokens is None:
        return ["no two-pool fleet beats the homogeneous fleet here; the best plan is one pool"]
    return []


def headroom_warnings(pools: dict[str, dict], options) -> list[dict[str, str]]:
    """Pools that sit within :data:`~fleetopt.defaults.NEAR_SLO_FRACTION` of an SLO, or at a TPOT a chat
    user would notice, from the pool documents' headroom fields: ``{pool, kind, message}`` each."""
    from fleetopt.defaults import (
        FEWER_INSTANCES_FRACTION,
        FLAT_TTFT_FRACTION,
        NEAR_SLO_FRACTION,
        SLOT_WAIT_BUDGET_FRACTION,
    )

    warnings = []
    for name, pool in pools.items():
        fewer_ttft = pool.get("p99_ttft_fewer_instances_s")
        if fewer_ttft is not None and fewer_ttft <= options.ttft_slo_s * (1.0 + FLAT_TTFT_FRACTION):
            warnings.append({
                "pool": name,
                "kind": "ttft_flat_in_instances",
                "message": (
                    f"{name} pool: the P99 TTFT hardly falls with more instances here "
                    f"({fewer_ttft * 1e3:.1f} ms with {pool['fewer_instances']:,} instances, "
                    f"{pool['p99_ttft_s'] * 1e3:.1f} ms with {pool['instances']:,}): the SLO is just above "
                    "what a request's own prefill takes, so a model error of a few per cent moves this "
                    f"pool by more than {FEWER_INSTANCES_FRACTION:.0%} of its instances, either way; "
                    "simulate it before buying "
                    "(fleetopt plan --validate; fleetopt simulate --plan on a copy with fewer instances), "
                    "or allow a longer TTFT"
                ),
            })  # fmt: skip
        wait_over = pool.get("slot_wait_over_slo")
        budget = 1.0 - options.quantile
        if wait_over is not None and wait_over > SLOT_WAIT_BUDGET_FRACTION * budget:
            warnings.append({
                "pool": name,
                "kind": "slot_wait_sets_ttft",
                "message": (
                    f"{name} pool: waiting for a KV slot alone puts {wait_over:.2%} of its requests over "
                    f"the TTFT SLO, {wait_over / budget:.0%} of the {budget:.0%} the "
                    f"P{options.quantile * 100:g} allows ({pool['instances']:,} × "
                    f"{pool['slots_per_instance']:,} slots at {pool['utilization']:.0%} occupancy): the "
                    "planner's slot waits are least accurate here (too few in small pools of long "
                    "requests, too many near saturation), so the pool may be an instance short or long; "
                    "simulate it before buying (fleetopt plan --validate), or plan at a higher --rate"
                ),
            })  # fmt: skip
        ttft = pool.get("ttft_headroom_fraction")
        if ttft is not None and ttft < NEAR_SLO_FRACTION:
            warnings.append({
                "pool": name,
                "kind": "ttft_near_slo",
                "message": (
                    f"{name} pool: P99 TTFT {pool['p99_ttft_s'] * 1e3:.1f} ms is within "
                    f"{NEAR_SLO_FRACTION:.0%} of the {options.ttft_slo_s * 1e3:g} ms SLO "
                    f"({ttft:.1%} headroom): "
                    "a little more traffic, longer prompts or a model error of that size breaks it "
                    "(plan at a higher --rate for growth; fleetopt drift --min-headroom watches it)"
                ),
            })  # fmt: skip
        tpot = pool.get("tpot_headroom_fraction")
        if tpot is None:
            continue
        limit_ms = pool["tpot_limit_s"] * 1e3
        iteration_ms = pool["iteration_s"] * 1e3
        if pool["tpot_limit_kind"] == "tpot_slo":
            if tpot < NEAR_SLO_FRACTION:
                warnings.append({
                    "pool": name,
                    "kind": "tpot_near_slo",
                    "message": (
                        f"{name} pool: TPOT {iteration_ms:.1f} ms is within {NEAR_SLO_FRACTION:.0%} of the "
                        f"{limit_ms:g} ms TPOT SLO ({tpot:.1%} headroom)"
                    ),
                })  # fmt: skip
        elif tpot < 0:
            warnings.append({
                "pool": name,
                "kind": "tpot_noticeable",
                "message": (
                    f"{name} pool: TPOT {iteration_ms:.1f} ms ({1e3 / iteration_ms:.1f} tokens/s) is slower "
                    f"than {limit_ms:g} ms, where a chat user reading along sees the stream stall; "
                    "set --tpot-slo to cap it"
                ),
            })  # fmt: skip
    return warnings
