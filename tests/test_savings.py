"""Savings estimates (fleetopt.core.savings) against the papers' published arithmetic and derivations."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fleetopt.core.savings import (
    HOURS_PER_YEAR,
    PAPER_HEADROOM_HOMOGENEOUS,
    PAPER_HEADROOM_LONG,
    PAPER_HEADROOM_SHORT,
    AuditInputs,
    EstimateKind,
    SavingsFinding,
    annual_cost_usd,
    audit_savings,
    ceil_instances,
    cliff_ratio,
    closed_form_savings_fraction,
    compress_and_route_increment,
    compressed_short_fraction,
    gpus_from_instances,
    homogeneous_instances,
    iteration_time_s,
    lockstep_throughput_ratio,
    over_prediction_factor,
    rate_sensitivity_rows,
    savings_fraction,
    threshold_sensitivity_rows,
    two_pool_instances,
)
from fleetopt.errors import ValidationError
from fleetopt.render.audit import numbers_reasons

fractions = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
ratios = st.floats(min_value=0.05, max_value=100.0, allow_nan=False)
rates = st.floats(min_value=0.1, max_value=1e5, allow_nan=False)
throughputs = st.floats(min_value=0.01, max_value=1e3, allow_nan=False)


# --- closed form (pool-routing §3, Eq. 7) ---------------------------------------------------------


def test_closed_form_pool_routing_section3_examples() -> None:
    # pool-routing §3: "α = 0.80, ρ = 4: savings = 0.80 × 0.75 = 60%"; "(α = 0.70, ρ = 2) yield 35%".
    assert closed_form_savings_fraction(0.80, 4.0) == pytest.approx(0.60, abs=1e-15)
    assert closed_form_savings_fraction(0.70, 2.0) == pytest.approx(0.35, abs=1e-15)


def test_closed_form_pool_routing_section42_azure_prediction() -> None:
    # pool-routing §4.2: "α(1 − 1/ρ) = 0.92 × 0.75 = 69%".
    assert closed_form_savings_fraction(0.92, 4.0) == pytest.approx(0.69, abs=1e-15)


@given(fractions, ratios, rates, throughputs)
def test_closed_form_is_eq6_with_long_pool_at_homogeneous_throughput(
    alpha: float, rho: float, rate: float, mu_homo: float
) -> None:
    # Eq. 7 is Eq. 6 (no ceilings) with μ(C_S) = ρ·μ_homo and μ(C_H) = μ_homo, divided by G_homo.
    dual = two_pool_instances(rate, alpha, rho * mu_homo, mu_homo).total_instances
    homo = homogeneous_instances(rate, mu_homo)
    assert 1.0 - dual / homo == pytest.approx(closed_form_savings_fraction(alpha, rho), rel=1e-9, abs=1e-12)


def test_closed_form_is_negative_when_the_short_pool_is_slower() -> None:
    assert closed_form_savings_fraction(0.5, 0.5) == pytest.approx(-0.5)


# --- Eq. 6 / Eq. 8 fleet sizes --------------------------------------------------------------------


def test_eq8_pool_routing_section42_azure_292_instances() -> None:
    # pool-routing §4.2: "917/13.5 + 83/0.37 = 68 + 224 = 292".
    fleet = two_pool_instances(1000.0, 0.917, 13.5, 0.37)
    assert fleet.short_instances == pytest.approx(917 / 13.5)
    assert round(fleet.short_instances, 1) == 67.9
    assert round(fleet.long_instances, 1) == 224.3
    assert round(fleet.total_instances) == 292


def test_eq8_with_paper_headroom_and_ceilings_gives_301() -> None:
    # pool-routing §4.2 "(with headroom: 301)" and Table 2 "72 229 301"; factors from Appendix A.
    fleet = two_pool_instances(
        1000.0,
        0.917,
        13.5,
        0.37,
        headroom_short=PAPER_HEADROOM_SHORT,
        headroom_long=PAPER_HEADROOM_LONG,
        round_up=True,
    )
    assert (fleet.short_instances, fleet.long_instances, fleet.total_instances) == (72.0, 229.0, 301.0)
    assert (PAPER_HEADROOM_SHORT, PAPER_HEADROOM_LONG, PAPER_HEADROOM_HOMOGENEOUS) == (1.05, 1.02, 1.08)


def test_homogeneous_instances_with_ceiling_ignores_float_noise() -> None:
    # 1000/3.0 × 1.08 is 360.00000000000006 in binary floating point; exactly 360 in arithmetic.
    assert homogeneous_instances(1000.0, 3.0, headroom=1.08, round_up=True) == 360.0
    assert ceil_instances(360.2) == 361
    assert ceil_instances(0.0) == 0


def test_two_pool_with_all_traffic_short_needs_no_long_pool() -> None:
    fleet = two_pool_instances(1000.0, 1.0, 6.8, None)
    assert fleet.long_instances == 0.0
    assert fleet.short_instances == pytest.approx(1000.0 / 6.8)


def test_two_pool_without_long_throughput_is_refused_when_traffic_is_long() -> None:
    with pytest.raises(ValidationError, match="long-pool throughput μ_long is needed when α < 1"):
        two_pool_instances(1000.0, 0.9, 13.5, None)


@given(fractions, rates, throughputs, throughputs)
def test_rounded_pools_are_within_one_instance_each_of_the_exact_ones(
    alpha: float, rate: float, mu_short: float, mu_long: float
) -> None:
    exact = two_pool_instances(rate, alpha, mu_short, mu_long)
    whole = two_pool_instances(rate, alpha, mu_short, mu_long, round_up=True)
    for exact_pool, whole_pool in (
        (exact.short_instances, whole.short_instances),
        (exact.long_instances, whole.long_instances),
    ):
        assert whole_pool == int(whole_pool)
        assert exact_pool * (1 - 1e-9) - 1e-12 <= whole_pool <= exact_pool + 1.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: two_pool_instances(1000.0, 1.2, 13.5, 0.37), "short fraction α = 1.2 must be a fraction in"),
        (lambda: two_pool_instances(0.0, 0.9, 13.5, 0.37), "arrival rate λ = 0.0 must be a positive"),
        (lambda: two_pool_instances(1000.0, 0.9, 13.5, -1.0), "long-pool throughput μ_long = -1.0"),
        (
            lambda: homogeneous_instances(1000.0, 3.0, headroom=0.9),
            "homogeneous headroom β_homo = 0.9 must be ≥ 1",
        ),
        (lambda: closed_form_savings_fraction(0.8, 0.0), "throughput ratio ρ = 0.0 must be a positive"),
        (lambda: closed_form_savings_fraction(math.nan, 2.0), "short fraction α = nan"),
    ],
)
def test_bad_numbers_are_validation_errors(call, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(".", r"\.")):
        call()


# --- Compress-and-Route (FleetOpt Eq. 14) ---------------------------------------------------------


def test_cr_increment_fleetopt_azure_numbers() -> None:
    # FleetOpt Table 2 (Azure, B = 4,096, γ = 1.5): β = 0.078 at the cliff ρ = 16, p_c = 1 (Table 3):
    # β·p_c·(1 − 1/ρ) = 0.078 × 15/16 = 0.073125 — by hand.
    assert compress_and_route_increment(0.078, 1.0, 16.0) == pytest.approx(0.073125, abs=1e-15)
    # Agent-heavy: β = 0.112, p_c = 0.75, ρ = 8 → 0.112 × 0.75 × 7/8 = 0.0735.
    assert compress_and_route_increment(0.112, 0.75, 8.0) == pytest.approx(0.0735, abs=1e-15)


@given(fractions, fractions, fractions, ratios)
def test_cr_increment_is_the_closed_form_at_the_shifted_alpha(
    alpha: float, beta: float, p_c: float, rho: float
) -> None:
    beta = min(beta, 1.0 - alpha)
    shifted = compressed_short_fraction(alpha, beta, p_c)
    increment = compress_and_route_increment(beta, p_c, rho)
    assert closed_form_savings_fraction(shifted, rho) == pytest.approx(
        closed_form_savings_fraction(alpha, rho) + increment, rel=1e-9, abs=1e-12
    )


def test_alpha_plus_beta_above_one_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"α = 0\.95 plus borderline fraction β = 0\.1 is 1\.05"):
        compressed_short_fraction(0.95, 0.1, 1.0)


# --- the throughput ratio versus the cliff ratio (FACTS §2 item 1) --------------------------------


def test_lockstep_ratio_128_vs_16_slots_is_1_61_not_8() -> None:
    # FACTS §2 item 1: t(16) = 18.4 ms, t(128) = 91.2 ms; ratio = 8 · 18.4/91.2 = 1.61×, not 8×.
    ratio = lockstep_throughput_ratio(128, 16, iteration_base_s=0.008, iteration_per_slot_s=0.00065)
    assert ratio == pytest.approx(float(8 * Fraction("18.4") / Fraction("91.2")), rel=1e-12)
    assert round(ratio, 2) == 1.61
    assert cliff_ratio(128, 16) == 8.0
    assert iteration_time_s(16, iteration_base_s=0.008, iteration_per_slot_s=0.00065) == pytest.approx(0.0184)
    assert iteration_time_s(128, iteration_base_s=0.008, iteration_per_slot_s=0.00065) == pytest.approx(
        0.0912
    )


@given(st.integers(1, 4096), st.integers(1, 4096), st.floats(1e-4, 1.0))
def test_lockstep_ratio_limits(short_slots: int, long_slots: int, base_s: float) -> None:
    # With no per-slot cost the iteration time is constant and throughput ∝ slots (the cliff ratio).
    free = lockstep_throughput_ratio(
        short_slots, long_slots, iteration_base_s=base_s, iteration_per_slot_s=0.0
    )
    assert free == pytest.approx(cliff_ratio(short_slots, long_slots), rel=1e-12)
    # With a per-slot cost the gain is always smaller than the cliff ratio when n_s > n_l (and > 1).
    costly = lockstep_throughput_ratio(
        short_slots, long_slots, iteration_base_s=base_s, iteration_per_slot_s=1e-3
    )
    if short_slots > long_slots:
        assert 1.0 < costly < cliff_ratio(short_slots, long_slots)


# --- dollars (pool-routing Table 5; FACTS §3) -----------------------------------------------------


def test_qwen3_mi300x_table5_dollars() -> None:
    # pool-routing Table 5: 197 nodes = 1,576 GPUs → $50.6M/yr; 137 nodes = 1,096 GPUs → $35.2M/yr;
    # $15.4M saved (30.5%). By hand: 1,576 × 3.67 × 8,760 = 50,667,139.2 — the paper truncates to $50.6M
    # (it rounds to $50.7M); 1,096 × 3.67 × 8,760 = 35,235,523.2.
    homogeneous_gpus = gpus_from_instances(197, 8)
    routed_gpus = gpus_from_instances(137, 8)
    assert (homogeneous_gpus, routed_gpus) == (1576, 1096)
    homogeneous_usd = annual_cost_usd(homogeneous_gpus, 3.67)
    routed_usd = annual_cost_usd(routed_gpus, 3.67)
    assert homogeneous_usd == pytest.approx(50_667_139.2, abs=1e-6)
    assert routed_usd == pytest.approx(35_235_523.2, abs=1e-6)
    assert math.floor(homogeneous_usd / 1e5) / 10 == 50.6
    assert round(routed_usd / 1e6, 1) == 35.2
    assert round((homogeneous_usd - routed_usd) / 1e6, 1) == 15.4
    assert round(100 * savings_fraction(routed_gpus, homogeneous_gpus), 1) == 30.5


def test_fleetopt_table3_cost_column() -> None:
    # FleetOpt Table 3: 284 GPUs at $2.21 × 8,760 h = 5,498 K$; 174 → 3,369 K$
    # (by hand: 284 · 2.21 · 8760 = 5,498,018.4).
    assert HOURS_PER_YEAR == 8760.0
    assert round(annual_cost_usd(284, 2.21) / 1e3) == 5498
    assert round(annual_cost_usd(174, 2.21) / 1e3) == 3369


def test_over_prediction_factor_pool_routing_section42() -> None:
    # pool-routing §4.2: Eq. 7 predicts 69%, the routed fleet realises 16.6% — "up to 4×".
    assert over_prediction_factor(0.69, 0.166) == pytest.approx(0.69 / 0.166)
    assert round(over_prediction_factor(0.69, 0.166), 1) == 4.2
    assert over_prediction_factor(0.5, 0.0) is None
    assert over_prediction_factor(0.5, -0.1) is None


# --- the audit of a set of numbers -----------------------------------------------------------------


def _by_name(result):
    return {estimate.name: estimate for estimate in result.estimates}


def test_audit_azure_paper_numbers_closed_form_vs_eq8() -> None:
    # pool-routing Table 1/2, Appendix A: μ_homo = 3.0, μ_short = 13.5, μ_long = 0.37 at λ = 1000, α = 0.917.
    result = audit_savings(
        AuditInputs(
            short_fraction=0.917,
            arrival_rate_per_s=1000.0,
            short_throughput_per_s=13.5,
            long_throughput_per_s=0.37,
            homogeneous_throughput_per_s=3.0,
        )
    )
    estimates = _by_name(result)
    homogeneous = estimates["homogeneous fleet"]
    routed = estimates["two pools, routed μ_long"]
    closed = estimates["closed form"]
    assert result.baseline is EstimateKind.HOMOGENEOUS and homogeneous.is_baseline
    assert homogeneous.instances == pytest.approx(1000 / 3.0)
    assert routed.instances == pytest.approx(917 / 13.5 + 83 / 0.37)
    assert result.throughput_ratio == pytest.approx(4.5)
    expected_closed = 0.917 * (1 - 1 / 4.5)
    assert closed.savings_fraction == pytest.approx(expected_closed)
    expected_routed = 1 - (917 / 13.5 + 83 / 0.37) / (1000 / 3.0)
    assert routed.savings_fraction == pytest.approx(expected_routed)
    assert closed.over_prediction_factor == pytest.approx(expected_closed / expected_routed)
    # dollars at the default $2.21/GPU-hour, 1 GPU per instance
    assert routed.cost_per_year_usd == pytest.approx(routed.instances * 2.21 * 8760)
    assert routed.saved_usd_per_year == pytest.approx(
        (homogeneous.instances - routed.instances) * 2.21 * 8760
    )
    assert SavingsFinding.CLOSED_FORM_VS_EQ8 in result.findings
    assert any("8.11× slower" in line for line in numbers_reasons(result))  # μ_homo/μ_long = 3/0.37


def test_audit_with_paper_headroom_reproduces_table2_azure_fleet() -> None:
    result = audit_savings(
        AuditInputs(
            short_fraction=0.917,
            arrival_rate_per_s=1000.0,
            short_throughput_per_s=13.5,
            long_throughput_per_s=0.37,
            headroom_short=1.05,
            headroom_long=1.02,
            round_up=True,
        )
    )
    routed = _by_name(result)["two pools, routed μ_long"]
    assert (routed.short_instances, routed.long_instances, routed.instances) == (72.0, 229.0, 301.0)
    assert result.baseline is None and routed.savings_fraction is None


def test_audit_closed_form_applied_to_current_fleet() -> None:
    result = audit_savings(
        AuditInputs(short_fraction=0.8, throughput_ratio=4.0, current_gpus=1000, gpus_per_instance=8)
    )
    closed = _by_name(result)["closed form"]
    assert result.baseline is EstimateKind.CURRENT
    assert closed.gpus == pytest.approx(400.0)  # 1000 × (1 − 0.6)
    assert closed.instances == pytest.approx(50.0)
    assert closed.saved_usd_per_year == pytest.approx(600 * 2.21 * 8760)


def test_audit_slots_give_cliff_and_lockstep_rows() -> None:
    result = audit_savings(AuditInputs(short_fraction=0.8, short_slots=128, long_slots=16))
    estimates = _by_name(result)
    assert result.throughput_ratio == pytest.approx(8 * 18.4 / 91.2)
    assert estimates["closed form"].savings_fraction == pytest.approx(0.8 * (1 - 91.2 / (8 * 18.4)))
    assert estimates["closed form, cliff ratio as ρ"].savings_fraction == pytest.approx(0.8 * 7 / 8)
    assert "closed form, lock-step ρ" not in estimates  # the main row already uses it


def test_audit_cr_row_adds_the_increment() -> None:
    result = audit_savings(
        AuditInputs(
            short_fraction=0.898, throughput_ratio=16.0, borderline_fraction=0.078, compressible_fraction=1.0
        )
    )
    estimates = _by_name(result)
    assert estimates["closed form + C&R"].savings_fraction == pytest.approx(
        estimates["closed form"].savings_fraction + 0.078 * 15 / 16
    )


def test_audit_cr_without_a_throughput_ratio_is_refused() -> None:
    with pytest.raises(
        ValidationError, match="C&R increment needs the short fraction α and a throughput ratio ρ"
    ):
        audit_savings(AuditInputs(short_fraction=0.8, borderline_fraction=0.05))


# --- sensitivity rows ------------------------------------------------------------------------------


def test_rate_rows_reproduce_fleetopt_table6_savings_percentages() -> None:
    # FleetOpt Table 6 (Agent-heavy): the published savings columns follow from its GPU columns.
    rows = rate_sensitivity_rows(
        [2000, 100, 200, 500, 1000],
        [4794, 240, 480, 1199, 2397],
        [4531, 227, 454, 1134, 2266],
        [4470, 225, 448, 1119, 2236],
    )
    assert [row["arrival_rate_per_s"] for row in rows] == [100, 200, 500, 1000, 2000]
    assert [round(100 * row["routed_savings_fraction"], 1) for row in rows] == [5.4, 5.4, 5.4, 5.5, 5.5]
    assert [round(100 * row["compressed_savings_fraction"], 1) for row in rows] == [6.2, 6.7, 6.7, 6.7, 6.8]


def test_threshold_rows_sorted_and_savings_computed() -> None:
    rows = threshold_sensitivity_rows([8192, 4096], [0.95, 0.9], [230.0, 240.0], 284.0)
    assert [row["b_short_tokens"] for row in rows] == [4096, 8192]
    assert rows[0]["savings_fraction"] == pytest.approx(1 - 240 / 284)


def test_sensitivity_rows_length_mismatch_is_refused() -> None:
    with pytest.raises(ValidationError, match="2 thresholds but 1 short fractions"):
        threshold_sensitivity_rows([4096, 8192], [0.9], [240.0, 230.0], 284.0)
    with pytest.raises(ValidationError, match="2 arrival rates but 1 homogeneous"):
        rate_sensitivity_rows([100, 200], [240], [227, 454])
