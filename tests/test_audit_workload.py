"""The workload audit (fleetopt.core.audit) against hand-derivable identities, FACTS and the planner."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest

from fleetopt.api import profile_search_path, resolve_hardware
from fleetopt.core.audit import (
    CLOSED_FORM,
    CLOSED_FORM_CLIFF,
    EQ8,
    HOMOGENEOUS,
    LEVER_MIN_GAIN_FRACTION,
    PLANNER_CR,
    PLANNER_PR,
    WorkloadAuditOptions,
    WorkloadFinding,
    audit_workload,
    eq8_instances,
)
from fleetopt.core.planner import Planner, PlanOptions
from fleetopt.core.sizing import ProblemKind
from fleetopt.core.workload_stats import classify_archetype
from fleetopt.defaults import PAPER_SERVING
from fleetopt.errors import ValidationError
from fleetopt.io.workloads import load_workload
from fleetopt.render.audit import order_text, workload_reasons


@cache
def _hardware():
    return resolve_hardware(PAPER_SERVING, None, profile_search_path(None))


@cache
def _audit(name: str, service_model: str = "lockstep", b_short: int | None = None, sweeps: bool = False):
    hw = _hardware()
    options = WorkloadAuditOptions(
        # the audit's defaults (api/audit.py): the papers' C&R, p_c = 1 and no cap on the cut
        plan=PlanOptions(
            sizing_rate_per_s=1000.0,
            ttft_slo_s=0.5,
            service_model=service_model,
            compressibility=1.0,
            max_cut_fraction=1.0,
        ),
        b_short_tokens=b_short,
        rates_per_s=None if sweeps else (),
        sweep_thresholds=sweeps,
    )
    return audit_workload(load_workload(name), (hw,), options)


# --- Azure 2023 at 1,000 req/s: the order of the three estimates, and why -------------------------


def test_azure_2023_order_closed_form_under_predicts_because_long_requests_are_cheap() -> None:
    # Found (lockstep, SLO 500 ms, cap 0.85, B = pool-routing optimum 2,048): Eq. 8 (35.1%) ≥ planner
    # (34.7%) > closed form (22.0%). The closed form *under*-predicts here: the requests above B are
    # mostly code (long prompts, ~28 output tokens, FACTS §5), so they need fewer iterations than the
    # average request and the routed long pool is faster than μ_homo, against Eq. 7's assumption.
    audit = _audit("azure-2023", sweeps=True)
    closed, eq8, planner = (audit.estimate(n) for n in (CLOSED_FORM, EQ8, PLANNER_PR))
    mu = audit.throughputs
    assert audit.b_short_tokens == audit.plan.pool_routing.b_short_tokens
    assert mu.long_per_s > mu.homogeneous_per_s  # the reason
    assert closed.savings_fraction < planner.savings_fraction <= eq8.savings_fraction
    assert closed.over_prediction_factor < 1.0
    assert [r.kind for r in audit.order] == [EQ8, PLANNER_PR, CLOSED_FORM]
    assert audit.order[1].close_to_previous and not audit.order[2].close_to_previous  # 0.4 vs 12.7 points
    assert order_text(audit).endswith(f"> {CLOSED_FORM.value} ({closed.savings_fraction:.1%})")
    # the closed form's gap (1 − α)(μ_homo/μ_l − 1) is negative here: it under-predicts
    assert audit.long_pool_gap_fraction < 0
    assert WorkloadFinding.LONG_POOL_SPEED in audit.findings
    assert any("faster" in r and "under-prediction" in r for r in workload_reasons(audit))
    # The cliff-ratio reading over-predicts: 512 vs 16 slots at B = 2,048 (FACTS §1 slot formula).
    assert mu.cliff_ratio == 512 / 16
    cliff = audit.estimate(CLOSED_FORM_CLIFF)
    assert cliff.savings_fraction == pytest.approx(audit.alpha * (1 - 16 / 512))
    assert cliff.over_prediction_factor > 2.0


def test_throughputs_are_slots_over_mean_service_time_by_hand() -> None:
    # Lock-step (FleetOpt Eq. 3–4): μ = s / ((W + H·s)·E[I]) with E[I] = E[⌈L_in/512⌉ + L_out].
    audit = _audit("azure-2023")
    workload = load_workload("azure-2023")
    hw = _hardware()
    weights = workload.weights / workload.weights.sum()
    iterations = np.ceil(workload.input_tokens / hw.prefill_chunk_tokens) + workload.output_tokens
    mean_iterations = float((weights * iterations).sum())
    mu = audit.throughputs
    slots = mu.homogeneous_slots
    by_hand = slots / ((hw.iteration_base_s + hw.iteration_per_slot_s * slots) * mean_iterations)
    assert mu.homogeneous_per_s == pytest.approx(by_hand, rel=1e-12)
    long = workload.total_tokens > audit.b_short_tokens
    long_iterations = float((weights[long] * iterations[long]).sum() / weights[long].sum())
    assert mu.long_per_s == pytest.approx(
        mu.long_slots / ((hw.iteration_base_s + hw.iteration_per_slot_s * mu.long_slots) * long_iterations),
        rel=1e-12,
    )
    assert mu.throughput_ratio == pytest.approx(mu.short_per_s / mu.homogeneous_per_s)


@pytest.mark.parametrize("name", ["azure-2023", "lmsys"])
def test_eq8_minus_closed_form_is_the_long_pool_term(name: str) -> None:
    # With G_homo = λ/(μ_homo ρ_max): 1 − G8/G_homo = α(1 − 1/ρ) + (1 − α)(1 − μ_homo/μ_l) (algebra).
    audit = _audit(name)
    mu = audit.throughputs
    alpha = audit.alpha
    difference = audit.estimate(EQ8).savings_fraction - audit.estimate(CLOSED_FORM).savings_fraction
    assert difference == pytest.approx((1 - alpha) * (1 - mu.homogeneous_per_s / mu.long_per_s), abs=1e-12)
    assert audit.long_pool_gap_fraction == pytest.approx(-difference, abs=1e-12)


def test_eq8_at_the_planners_own_utilization_is_the_planners_instance_count() -> None:
    # Utilization u = λ/(n μ) ⇒ n = λ/(μ u): Eq. 8 with each pool's own utilization gives the planner's n
    # exactly; at the cap ρ_max it is a lower bound, equal after the ceiling where the cap binds.
    audit = _audit("azure-2023")
    for cell in [c for c in audit.plan.grid if c.feasible and c.gamma == 1.0 and c.long.instances > 0]:
        rate = audit.options.plan.sizing_rate_per_s
        for pool, fraction in ((cell.short, cell.alpha), (cell.long, 1 - cell.alpha)):
            mu = pool.service_rate_per_instance_per_s
            assert fraction * rate / (mu * pool.utilization) == pytest.approx(
                pool.instances, rel=1e-7
            )  # 1 − α loses digits at α ≈ 1
        short, long = eq8_instances(
            rate,
            cell.alpha,
            cell.short.service_rate_per_instance_per_s,
            cell.long.service_rate_per_instance_per_s,
            audit.options.plan.max_utilization,
        )
        assert cell.short.instances >= short - 1e-9 and cell.long.instances >= long - 1e-9
        if cell.short.binding_constraint == "utilization":
            assert cell.short.instances == math.ceil(short)
        if cell.long.binding_constraint == "utilization":
            assert cell.long.instances == math.ceil(long)


def test_audited_row_matches_the_planner_and_the_b_sweep() -> None:
    audit = _audit("azure-2023", sweeps=True)
    planner = audit.estimate(PLANNER_PR)
    cell = audit.plan.pool_routing
    assert planner.whole_instances == cell.total_instances
    assert planner.savings_fraction == pytest.approx(1 - cell.total_gpus / audit.plan.homogeneous.total_gpus)
    row = next(r for r in audit.threshold_rows if r["b_short_tokens"] == audit.b_short_tokens)
    assert row["routed_gpus"] == cell.total_gpus
    assert row["closed_form_savings_fraction"] == pytest.approx(audit.estimate(CLOSED_FORM).savings_fraction)
    assert row["eq8_savings_fraction"] == pytest.approx(audit.estimate(EQ8).savings_fraction)
    # Every fleet of the rate sweep grows with λ, and the audited rate's row is the plan.
    rows = audit.rate_rows
    assert [r["arrival_rate_per_s"] for r in rows] == sorted(r["arrival_rate_per_s"] for r in rows)
    for key in ("homogeneous_gpus", "routed_gpus", "compressed_gpus"):
        assert all(a[key] <= b[key] for a, b in zip(rows, rows[1:], strict=False))
    at_rate = next(r for r in rows if r["arrival_rate_per_s"] == 1000.0)
    assert at_rate["homogeneous_gpus"] == audit.plan.homogeneous.total_gpus
    assert at_rate["routed_gpus"] == cell.total_gpus


def test_compress_and_route_increment_is_beta_pc_one_minus_inverse_rho() -> None:
    audit = _audit("azure-2023")
    rho = audit.throughputs.throughput_ratio
    closed_cr = audit.estimate("closed form + C&R").savings_fraction
    assert closed_cr - audit.estimate(CLOSED_FORM).savings_fraction == pytest.approx(
        audit.beta * audit.compressibility * (1 - 1 / rho)
    )
    cell = Planner(load_workload("azure-2023"), (_hardware(),), audit.options.plan).candidate(
        audit.b_short_tokens, audit.gamma
    )
    assert audit.estimate(PLANNER_CR).gpus == cell.total_gpus


# --- the papers' CDFs: cliff-ratio closed form, archetype, lever ------------------------------------


@pytest.mark.parametrize(
    ("name", "b_short", "alpha", "cliff", "closed_cliff"),
    [
        # FleetOpt §7.1 / Table 1 (α, cliff) and FACTS §2 item 5 (84/89/65%).
        ("azure", 4096, 0.898, 16, 0.84),
        ("lmsys", 1536, 0.909, 682 / 16, 0.89),
        ("agent-heavy", 8192, 0.740, 8, 0.65),
    ],
)
def test_papers_cdfs_cliff_ratio_closed_form_facts_2_5(name, b_short, alpha, cliff, closed_cliff) -> None:
    audit = _audit(name, "fleet-sim", b_short)
    assert audit.alpha == pytest.approx(alpha, abs=5e-4)
    assert audit.throughputs.cliff_ratio == pytest.approx(cliff)
    assert round(audit.estimate(CLOSED_FORM_CLIFF).savings_fraction, 2) == closed_cliff
    assert audit.archetype["archetype"] == classify_archetype(audit.alpha)


@pytest.mark.parametrize(
    ("name", "b_short", "archetype", "lever"),
    [
        # FleetOpt §2.4 labels Azure and LMSYS "I/II" and Agent-heavy "II"; the rule α ≥ 0.9 → I.
        ("azure", 4096, "II", "add C&R"),
        ("lmsys", 1536, "I", "add C&R"),
        ("agent-heavy", 8192, "II", "add C&R"),
    ],
)
def test_papers_cdfs_archetype_and_lever_follow_the_numbers(name, b_short, archetype, lever) -> None:
    audit = _audit(name, "fleet-sim", b_short)
    assert audit.archetype["archetype"] == archetype
    advice = audit.lever
    # The advice is derived from the planner's costs: recompute both levers independently.
    hw = _hardware()
    planner = Planner(load_workload(name), (hw,), audit.options.plan)
    homo = planner.homogeneous().cost_per_year_usd
    routed = {b: planner.candidate(b, 1.0) for b in audit.options.plan.b_short_candidates}
    best_b = min((b for b in routed if routed[b].feasible), key=lambda b: routed[b].cost_per_year_usd)
    move = (routed[b_short].cost_per_year_usd - routed[best_b].cost_per_year_usd) / homo
    cheapest = min(
        (planner.candidate(b_short, g) for g in audit.options.plan.gammas),
        key=lambda c: c.cost_per_year_usd if c.feasible else math.inf,
    )
    compress = (routed[b_short].cost_per_year_usd - cheapest.cost_per_year_usd) / homo
    assert advice.move_b_gain_fraction == pytest.approx(move)
    assert advice.compress_gain_fraction == pytest.approx(compress)
    expected = (
        "neither"
        if max(move, compress) < LEVER_MIN_GAIN_FRACTION
        else ("add C&R" if compress >= move else ("raise B" if best_b > b_short else "lower B"))
    )
    assert advice.lever == expected == lever


def test_lever_neither_when_nothing_is_long() -> None:
    # B = 16,384 covers every Azure 2023 request (max 14,089, FACTS §2 item 3): no band, no long pool.
    audit = _audit("azure-2023", "lockstep", 16384)
    assert audit.alpha == pytest.approx(1.0)
    assert audit.beta == pytest.approx(0.0)
    assert audit.throughputs.long_per_s is None
    assert audit.estimate(EQ8).savings_fraction == pytest.approx(audit.estimate(CLOSED_FORM).savings_fraction)
    assert audit.lever.compress_gain_fraction == pytest.approx(0.0)
    assert audit.lever.lever in ("lower B", "neither")


# --- the current fleet --------------------------------------------------------------------------------


def _with_current(gpus: float, context: int | None = None):
    hw = _hardware()
    options = WorkloadAuditOptions(
        plan=PlanOptions(sizing_rate_per_s=1000.0, ttft_slo_s=0.5, service_model="lockstep"),
        current_gpus=gpus,
        current_context_tokens=context,
        rates_per_s=(),
        sweep_thresholds=False,
    )
    return audit_workload(load_workload("azure-2023"), (hw,), options)


def test_current_fleet_equal_to_the_homogeneous_plan_fits_and_saves_nothing() -> None:
    homogeneous_gpus = _audit("azure-2023").estimate(HOMOGENEOUS).gpus
    audit = _with_current(homogeneous_gpus)
    assert audit.current.sizing.feasible
    assert audit.estimate(HOMOGENEOUS).savings_vs_current == pytest.approx(0.0)
    assert audit.estimate(HOMOGENEOUS).saved_usd_per_year == pytest.approx(0.0)
    planner = audit.estimate(PLANNER_PR)
    assert planner.savings_vs_current == pytest.approx(1 - planner.gpus / homogeneous_gpus)


def test_current_fleet_too_small_is_reported_not_raised() -> None:
    audit = _with_current(800)  # 100 instances: 1,000 req/s needs ~180 at 100% load
    assert not audit.current.sizing.feasible
    assert ProblemKind.OVER_CAP in {problem.kind for problem in audit.current.sizing.problems}


def test_current_context_shorter_than_the_longest_request_is_refused() -> None:
    with pytest.raises(ValidationError) as error:
        _with_current(2000, 8192)
    assert str(error.value) == (
        "current context: 8,192 tokens is shorter than the longest request (14,089 tokens); "
        "the current fleet must hold every request (raise --current-context)"
    )


def test_gamma_below_one_is_refused() -> None:
    hw = _hardware()
    options = WorkloadAuditOptions(plan=PlanOptions(sizing_rate_per_s=1000.0, ttft_slo_s=0.5), gamma=0.5)
    with pytest.raises(ValidationError, match="gamma: 0.5 must be ≥ 1"):
        audit_workload(load_workload("azure"), (hw,), options)
