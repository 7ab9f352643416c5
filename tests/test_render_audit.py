"""The audit's words are built in render from core's enums and numbers (fleetopt.render.audit)."""

from __future__ import annotations

from types import SimpleNamespace

from fleetopt.core.audit import Lever, LeverAdvice, RateSweepScope
from fleetopt.core.sizing import PoolProblem, ProblemKind
from fleetopt.render.audit import lever_text, rate_sweep_note


def _too_slow_long_pool() -> SimpleNamespace:
    """A two-pool fleet whose long pool's P99 TTFT (612 ms) breaks a 500 ms SLO."""
    short = SimpleNamespace(feasible=True, problems=(), context_tokens=8_192)
    long = SimpleNamespace(
        feasible=False, problems=(PoolProblem(ProblemKind.TTFT_OVER_SLO, 0.612, 0.5),), context_tokens=65_536
    )
    return SimpleNamespace(pool_count=2, pool_names=("short", "long"), pools=(short, long))


def test_lever_text_raise_b_then_add_cr() -> None:
    advice = LeverAdvice(
        Lever.RAISE_B,
        0.059,
        16_384,
        0.031,
        0.042,
        0.02,
        8_192,
        best_savings_fraction=0.3,
        also_other_lever=True,
    )
    assert lever_text(advice) == (
        "moving B from 8,192 to 16,384 saves 5.9% at γ = 1; adding C&R at B = 8,192 saves 3.1% more "
        "(4.2% at B = 16,384): raise B first, then add C&R."
    )


def test_lever_text_without_any_feasible_boundary() -> None:
    advice = LeverAdvice(Lever.NEITHER, None, None, None, None, 0.02, 2_048, routed_feasible=False)
    assert lever_text(advice) == "No boundary gives a feasible pool-routing fleet: no lever applies."


def test_lever_text_infeasible_at_b_names_the_planners_reason() -> None:
    advice = LeverAdvice(
        Lever.LOWER_B, None, 1_024, None, 0.01, 0.02, 8_192,
        routed_feasible=False, routed_fleet=_too_slow_long_pool(), best_savings_fraction=0.006,
    )  # fmt: skip
    assert lever_text(advice) == (
        "Pool routing at B = 8,192 is infeasible (long pool: P99 TTFT 612.0 ms > SLO 500.0 ms); lower B "
        "to 1,024, where it saves "
        "0.6% of the homogeneous cost."
    )


def test_rate_sweep_note_lists_the_skipped_rates() -> None:
    note = rate_sweep_note(RateSweepScope(2_048, 1_536, (100_000.0,)))
    assert note == (
        "re-planned at each rate with B fixed: pool routing at B = 2,048 (γ = 1); best = the cheapest γ "
        "of the grid at B = 1,536; no feasible fleet at 100000 req/s (omitted)"
    )
