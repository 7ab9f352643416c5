"""The words for what core reports as numbers and enums, where documents carry them: why a pool or
fleet is infeasible, the plan's notes and headroom warnings. Plain strings, no rich: the plan
document (``build_plan.py``), the tables and the audit all word a problem the same way."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from fleetopt.core.planner import FleetCandidate, FleetPlan
from fleetopt.core.sizing import PoolProblem, PoolSizing, ProblemKind
from fleetopt.core.workload import Workload

if TYPE_CHECKING:
    from fleetopt.core.crosscheck import Finding
    from fleetopt.core.drift import DriftReason, DriftResult, FitProblem, Tolerances
    from fleetopt.core.observed import LiveFinding
    from fleetopt.core.planner import PlanOptions
    from fleetopt.io.documents.plan import HeadroomWarning, PoolDocument


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


#: How far simulation put prefill-bound thin pools behind a router that counts requests above the
#: model: the README plan's long pool at 515 ms against 407 ms predicted, +27% (docs/validation.md,
#: "Refining a plan by simulation"). A pool whose P99 prefill is at least
#: :data:`PREFILL_BOUND_SHARE` of its P99 TTFT and whose slots are at most :data:`THIN_OCCUPANCY`
#: occupied is prefill-bound and thin: a request sent to an instance still prefilling another prompt
#: waits for that prefill (vLLM's one token budget per iteration goes to the running prompt first),
#: which the model does not count.
PREFILL_BOUND_MISS = 0.27
PREFILL_BOUND_SHARE = 0.5
THIN_OCCUPANCY = 0.3
#: The longest context of the validation sets (docs/validation.md): beyond it the regime grid
#: (benchmarks/regime_grid.py) found 131K-token long pools 25–100% short of the simulated minimum, and
#: issue 30 a replayed 131K pool at 5.40 s against 4.76 s predicted.
VALIDATED_CONTEXT_TOKENS = 65_536


#: The dispatch policies the engine model sizes for: its intake share and company factor are a
#: least-loaded router's (docs/math.md).
MODELLED_DISPATCH = ("least-loaded",)
#: What the regime grid found under the other policies (docs/validation.md, "The regime grid"): the
#: most GPUs one fleet needed in simulation beyond the model's count (None: not run on the grid).
UNMODELLED_DISPATCH_MISS: dict[str, float | None] = {
    "round-robin": 0.64,
    "least-waiting": 0.75,
    "least-kv": 1.60,
    "random": 1.00,
    "least-tokens": 1.82,
    "pooled": None,
}


def regime_warnings(pools: dict[str, PoolDocument], options, dispatch: str) -> list[HeadroomWarning]:
    """Pools of an unrefined plan outside the region where the analytic model was shown to hold
    (docs/validation.md): every pool under a dispatch policy the model does not size for
    (:data:`MODELLED_DISPATCH`), contexts beyond the validation sets', and prefill-bound thin pools
    under a dispatch policy that counts requests with less headroom to the SLO than simulation put
    such pools above the model (:data:`PREFILL_BOUND_MISS`)."""
    from fleetopt.io.documents.plan import HeadroomWarning

    warnings = []
    for name, pool in pools.items():
        if dispatch not in MODELLED_DISPATCH and pool.instances > 0:
            miss = UNMODELLED_DISPATCH_MISS.get(dispatch)
            found = (
                f"on the regime grid one fleet needed {miss:.0%} more GPUs in simulation under it"
                if miss is not None
                else "it was not checked on the regime grid"
            )
            warnings.append(HeadroomWarning(
                pool=name,
                kind="outside_validated_region",
                message=(
                    f"{name} pool: outside where the model was shown to hold — the plan states {dispatch} "
                    "dispatch, and the model sizes pools for a least-loaded router (its intake and the "
                    f"company a routed request finds); {found}. Re-plan with --refine K (sizes it by "
                    f"simulation under {dispatch}) or check it with plan --validate --strict "
                    '(docs/validation.md, "The regime grid")'
                ),
            ))  # fmt: skip
            continue
        if pool.context_tokens > VALIDATED_CONTEXT_TOKENS and pool.instances > 0:
            warnings.append(HeadroomWarning(
                pool=name,
                kind="outside_validated_region",
                message=(
                    f"{name} pool: outside where the model was shown to hold — a context of "
                    f"{pool.context_tokens:,} tokens, beyond the {VALIDATED_CONTEXT_TOKENS:,} of the "
                    "validation sets; simulation found such long pools 25–100% short of the instances they "
                    "need. Re-plan with --refine K (sizes it by simulation) or check it with plan --validate "
                    '--strict (docs/validation.md, "Refining a plan by simulation")'
                ),
            ))  # fmt: skip
            continue
        prefill, ttft, headroom = pool.p99_prefill_s, pool.p99_ttft_s, pool.ttft_headroom_fraction
        if (
            prefill is not None and ttft and headroom is not None
            and pool.utilization is not None and pool.utilization <= THIN_OCCUPANCY
            and prefill >= PREFILL_BOUND_SHARE * ttft and headroom < PREFILL_BOUND_MISS
        ):  # fmt: skip
            warnings.append(HeadroomWarning(
                pool=name,
                kind="outside_validated_region",
                message=(
                    f"{name} pool: outside where the model was shown to hold — its P99 TTFT is mostly "
                    f"prefill ({prefill * 1e3:.0f} of {ttft * 1e3:.0f} ms) on thin instances "
                    f"({pool.utilization:.0%} of slots occupied) behind {dispatch} dispatch, which sends "
                    "some requests to an instance still prefilling another prompt; simulation put such "
                    f"pools up to {PREFILL_BOUND_MISS:.0%} above the model, and this one has {headroom:.1%} "
                    "headroom: it may fail "
                    "its SLO. Re-plan with --refine K (sizes it by simulation) or check it with "
                    "plan --validate --strict (docs/validation.md, \"Refining a plan by simulation\")"
                ),
            ))  # fmt: skip
    return warnings


def headroom_warnings(pools: dict[str, PoolDocument], options) -> list[HeadroomWarning]:
    """Pools that sit within :data:`~fleetopt.defaults.NEAR_SLO_FRACTION` of an SLO, or at a TPOT a chat
    user would notice, from the pool documents' headroom fields."""
    from fleetopt.defaults import (
        FEWER_INSTANCES_FRACTION,
        FLAT_TTFT_FRACTION,
        NEAR_SLO_FRACTION,
        SLOT_WAIT_BUDGET_FRACTION,
    )
    from fleetopt.io.documents.plan import HeadroomWarning

    warnings = []
    for name, pool in pools.items():
        fewer_ttft = pool.p99_ttft_fewer_instances_s
        if fewer_ttft is not None and fewer_ttft <= options.ttft_slo_s * (1.0 + FLAT_TTFT_FRACTION):
            warnings.append(HeadroomWarning(
                pool=name,
                kind="ttft_flat_in_instances",
                message=(
                    f"{name} pool: the P99 TTFT hardly falls with more instances here "
                    f"({fewer_ttft * 1e3:.1f} ms with {pool.fewer_instances:,} instances, "
                    f"{pool.p99_ttft_s * 1e3:.1f} ms with {pool.instances:,}): the SLO is just above "
                    "what a request's own prefill takes, so a model error of a few per cent moves this "
                    f"pool by more than {FEWER_INSTANCES_FRACTION:.0%} of its instances, either way; "
                    "simulate it before buying "
                    "(fleetopt plan --validate; fleetopt simulate --plan on a copy with fewer instances), "
                    "or allow a longer TTFT"
                ),
            ))  # fmt: skip
        wait_over = pool.slot_wait_over_slo
        budget = 1.0 - options.quantile
        if wait_over is not None and wait_over > SLOT_WAIT_BUDGET_FRACTION * budget:
            warnings.append(HeadroomWarning(
                pool=name,
                kind="slot_wait_sets_ttft",
                message=(
                    f"{name} pool: waiting for a KV slot alone puts {wait_over:.2%} of its requests over "
                    f"the TTFT SLO, {wait_over / budget:.0%} of the {budget:.0%} the "
                    f"P{options.quantile * 100:g} allows ({pool.instances:,} × "
                    f"{pool.slots_per_instance:,} slots at {pool.utilization:.0%} occupancy): the "
                    "planner's slot waits are least accurate here (too few in small pools of long "
                    "requests, too many near saturation), so the pool may be an instance short or long; "
                    "simulate it before buying (fleetopt plan --validate), or plan at a higher --rate"
                ),
            ))  # fmt: skip
        ttft = pool.ttft_headroom_fraction
        if ttft is not None and ttft < NEAR_SLO_FRACTION:
            warnings.append(HeadroomWarning(
                pool=name,
                kind="ttft_near_slo",
                message=(
                    f"{name} pool: P99 TTFT {pool.p99_ttft_s * 1e3:.1f} ms is within "
                    f"{NEAR_SLO_FRACTION:.0%} of the {options.ttft_slo_s * 1e3:g} ms SLO "
                    f"({ttft:.1%} headroom): "
                    "a little more traffic, longer prompts or a model error of that size breaks it "
                    "(plan at a higher --rate for growth; fleetopt drift --min-headroom watches it)"
                ),
            ))  # fmt: skip
        tpot = pool.tpot_headroom_fraction
        if tpot is None:
            continue
        limit_ms = pool.tpot_limit_s * 1e3
        iteration_ms = pool.iteration_s * 1e3
        if pool.tpot_limit_kind == "tpot_slo":
            if tpot < NEAR_SLO_FRACTION:
                warnings.append(HeadroomWarning(
                    pool=name,
                    kind="tpot_near_slo",
                    message=(
                        f"{name} pool: TPOT {iteration_ms:.1f} ms is within {NEAR_SLO_FRACTION:.0%} of the "
                        f"{limit_ms:g} ms TPOT SLO ({tpot:.1%} headroom)"
                    ),
                ))  # fmt: skip
        elif tpot < 0:
            warnings.append(HeadroomWarning(
                pool=name,
                kind="tpot_noticeable",
                message=(
                    f"{name} pool: TPOT {iteration_ms:.1f} ms ({1e3 / iteration_ms:.1f} tokens/s) is slower "
                    f"than {limit_ms:g} ms, where a chat user reading along sees the stream stall; "
                    "set --tpot-slo to cap it"
                ),
            ))  # fmt: skip
    return warnings


# -- drift: what breaks when a planned fleet meets today's traffic ----------------------------------


def fit_problem_sentence(problem: FitProblem, pool: PoolSizing, options: PlanOptions) -> str:
    """What breaks in one evaluated pool, in words (from its figures and the plan's options)."""
    from fleetopt.core.drift import FitProblem  # drift's types load when drift runs, not with a plan

    if problem is FitProblem.NO_INSTANCES:
        return f"receives {pool.arrival_rate_per_s:.4g} req/s but has no instances"
    if problem is FitProblem.SLOTS_OVER_KV:
        return (
            f"{pool.slots_per_instance} slots exceed the KV limit {pool.kv_slot_limit} "
            f"at {pool.context_tokens:,} tokens"
        )
    if problem is FitProblem.UNSTABLE:
        return (
            f"utilization {pool.utilization:.3f} > 1: the pool cannot keep up "
            "(its queue and P99 TTFT grow without bound)"
        )
    if problem is FitProblem.OVER_CAP:
        return f"utilization {pool.utilization:.3f} > cap {options.max_utilization:.3f}"
    if problem is FitProblem.TTFT_OVER_SLO:
        return f"P99 TTFT {pool.p99_ttft_s * 1e3:.1f} ms > SLO {options.ttft_slo_s * 1e3:.1f} ms"
    return f"iteration time {pool.iteration_s * 1e3:.1f} ms > TPOT SLO {options.tpot_slo_s * 1e3:.1f} ms"


def drift_reason_sentence(
    reason: DriftReason, result: DriftResult, options: PlanOptions, tolerances: Tolerances
) -> str:
    """One reason for a drift verdict, in words, with the numbers behind it."""
    from fleetopt.core.drift import DriftCheck

    check = reason.check
    if check is DriftCheck.CONTEXT:
        return (
            f"{result.beyond_long_context_fraction:.4%} of today's requests are longer than the long pool's "
            f"context {options.long_context_tokens:,} tokens (longest {result.longest_request_tokens:,}): "
            "the fleet cannot serve them"
        )
    if check in (DriftCheck.FIT, DriftCheck.HEADROOM):
        fit = result.fit if check is DriftCheck.FIT else result.headroom_fit
        pool = next(p for p in fit.pools if p.name == reason.pool)
        where = f"{reason.pool} pool" + (
            f" at +{tolerances.min_headroom:.0%} traffic" if check is DriftCheck.HEADROOM else ""
        )
        return f"{where}: {fit_problem_sentence(reason.problem, pool.sizing, options)}"
    if check is DriftCheck.REPLAN:
        return "no fleet meets the SLO and the utilization cap on today's workload"
    if check is DriftCheck.COST:
        return (
            f"re-planning today changes the cost by {result.cost_change:+.1%} ({result.gpu_change:+d} GPUs), "
            f"beyond ±{tolerances.max_cost_change:.1%}"
        )
    ks = result.ks
    return (
        f"the total-token distribution moved: KS distance ≥ {ks.lower:.3f} "
        f"(estimate {ks.estimate:.4f} ± {ks.resolution / 2:.4f}) > {tolerances.max_ks:g}"
    )


# -- drift on live metrics (fleetopt drift --prometheus) ----------------------------------------------

#: Why the KS distance of total tokens is no check on live metrics (``shift.ks_total_tokens.note``).
KS_NOT_CHECKED_LIVE = "not checked on live data: bucketed token histograms do not determine total tokens"


def live_finding_sentence(
    finding: LiveFinding, ttft_slo_s: float, tpot_slo_s: float | None, min_load: float
) -> str:
    """A live finding (:func:`fleetopt.core.observed.live_findings`) as a drift reason, in words."""
    from fleetopt.core.drift import DriftCheck
    from fleetopt.io.units import fmt_num, fmt_pct, fmt_seconds

    if finding.kind in (DriftCheck.SLO_MISSED, DriftCheck.TPOT_MISSED):
        what, limit = ("TTFT", ttft_slo_s) if finding.kind is DriftCheck.SLO_MISSED else ("TPOT", tpot_slo_s)
        return (
            f"{finding.pool} pool misses its SLO now: at most {fmt_pct(finding.observed)} of its requests "
            f"had a {what} within {fmt_seconds(limit)} (P99 needs 99%)"
        )
    return (
        f"{finding.pool} pool runs well below its plan: {fmt_num(finding.observed)} req/s observed, "
        f"{fmt_num(finding.planned)} req/s planned (under {min_load:.0%})"
    )


# -- the cross-check (simulate, plan --validate): its verdict and findings ------------------------------


#: The verdict of a cross-check in words, by :class:`fleetopt.core.crosscheck.Verdict`.
VERDICT_SENTENCES = {
    "fail": "FAIL: a simulated P99 TTFT exceeds the SLO",
    "inconclusive": (
        "INCONCLUSIVE: no pool breaks the SLO for certain, but some pool's P99 TTFT cannot be told "
        "from it (too few requests, or a 95% interval that straddles the SLO)"
    ),
    "pass_optimistic": (
        "PASS with a caveat: every pool meets the SLO, but the analytical P99 TTFT is optimistic"
    ),
    "pass": "PASS: every pool meets the SLO in simulation",
}


def finding_sentence(finding: Finding) -> str:
    """One finding of a cross-check in words."""
    from fleetopt.core.crosscheck import FindingKind

    name = finding.pool
    if finding.kind is FindingKind.SLO_BREACH:
        return (
            f"SLO BREACH in the {name} pool: simulated P99 TTFT {finding.simulated:.4g} s "
            f"(± {finding.half_width:.2g}) exceeds the SLO of {finding.limit:.4g} s by "
            f"{finding.simulated - finding.limit:.4g} s"
        )
    if finding.kind is FindingKind.OPTIMISTIC:
        gap, predicted = finding.simulated - finding.predicted, finding.predicted
        share = f" ({100 * gap / predicted:.1f}%)" if predicted > 0 else ""
        return (
            f"{name} pool: the analytical model is optimistic — simulated P99 TTFT "
            f"{finding.simulated:.4g} s is {gap:.4g} s{share} above the predicted {predicted:.4g} s"
        )
    if finding.kind is FindingKind.TOO_FEW_REQUESTS:
        return (
            f"{name} pool is INCONCLUSIVE: {int(finding.simulated):,} requests measured, fewer than the "
            f"{int(finding.limit):,} a 95% interval of a P99 needs; simulate more requests or seeds"
        )
    if finding.kind is FindingKind.STRADDLES_SLO:
        high = "unbounded" if not math.isfinite(finding.high) else f"{finding.high:.4g} s"
        return (
            f"{name} pool is INCONCLUSIVE: its simulated P99 TTFT {finding.simulated:.4g} s has a 95% "
            f"interval [{finding.low:.4g} s, {high}] that straddles the SLO of {finding.limit:.4g} s; "
            "simulate more seeds"
        )
    if finding.kind is FindingKind.NOT_WARMED_UP:
        return (
            f"{name} pool is NOT warmed up: its longest sojourn ({finding.simulated:.4g} s) "
            f"outlasts the warm-up ({finding.limit:.4g} s), so the utilization reads low; "
            "simulate more requests"
        )
    return (
        f"{name} pool is OVERLOADED in simulation (utilization {finding.simulated:.3f}, "
        f"predicted {finding.predicted:.3f}): the analytical model under-counts its work"
    )
