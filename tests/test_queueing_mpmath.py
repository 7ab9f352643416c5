"""Erlang B/C against an independent mpmath reference at 50 digits, from c = 1 to c = 10⁷.

The reference is written here from the definitions, not from fleetopt's code:
- small c: B = (a^c/c!) / Σ_{k≤c} a^k/k!, summed term by term at 50 digits;
- large c: B = p(c; a)/P(c; a) with ln p = c·ln a − a − ln Γ(c+1) and P = Γ(c+1, a)/Γ(c+1)
  (mpmath's regularized upper incomplete gamma), both at 50 digits;
- C = c·B / (c − a + a·B) (Erlang C from Erlang B, exact algebra).
The two references are checked against each other where both are cheap.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from fleetopt.core.queueing import erlang_b, erlang_c, exact_erlang, log_erlang_b, log_erlang_c, wait_quantile

DIGITS = 50
TOLERANCE = 1e-12  # the accuracy contract: relative, wherever C ≥ 1e-300; on ln C elsewhere
DIRECT_SUM_MAX_SERVERS = 3000


def _reference_b_by_sum(servers: int, load: float) -> mpmath.mpf:
    with mpmath.workdps(DIGITS):
        a = mpmath.mpf(load)
        term = mpmath.mpf(1)
        total = mpmath.mpf(1)
        for k in range(1, servers + 1):
            term = term * a / k
            total += term
        return term / total


def _reference_b_by_gamma(servers: int, load: float) -> mpmath.mpf:
    with mpmath.workdps(DIGITS):
        c = mpmath.mpf(servers)
        a = mpmath.mpf(load)
        log_pmf = c * mpmath.log(a) - a - mpmath.loggamma(c + 1)
        # Both incomplete gammas are exact at 50 digits; pick the one mpmath evaluates fast
        # (its upper-gamma series crawls for a ≲ 0.95c at c = 10⁷, the lower one near a ≈ c).
        if a <= mpmath.mpf("0.99") * c:
            cdf = 1 - mpmath.gammainc(c + 1, 0, a, regularized=True)
        else:
            cdf = mpmath.gammainc(c + 1, a, mpmath.inf, regularized=True)
        return mpmath.exp(log_pmf) / cdf


def reference_b(servers: int, load: float) -> mpmath.mpf:
    if servers <= DIRECT_SUM_MAX_SERVERS:
        return _reference_b_by_sum(servers, load)
    return _reference_b_by_gamma(servers, load)


def reference_c(servers: int, load: float) -> mpmath.mpf:
    with mpmath.workdps(DIGITS):
        b = reference_b(servers, load)
        c = mpmath.mpf(servers)
        a = mpmath.mpf(load)
        return c * b / (c - a + a * b)


def _assert_close(computed: float, log_computed: float, exact: mpmath.mpf, what: str) -> None:
    """Relative error ≤ 1e-12 on the value where it is ≥ 1e-300, on its logarithm everywhere
    (|Δ ln| ≤ 1e-12·max(1, |ln|): relative where ln is large, absolute where the value is near 1)."""
    with mpmath.workdps(DIGITS):
        if exact >= mpmath.mpf("1e-300"):
            relative = abs(mpmath.mpf(computed) / exact - 1)
            assert relative <= TOLERANCE, (
                f"{what}: {computed!r} vs {mpmath.nstr(exact, 20)} ({float(relative):.2e})"
            )
        log_exact = mpmath.log(exact)
        log_error = abs(mpmath.mpf(log_computed) - log_exact) / max(1, abs(log_exact))
        assert log_error <= TOLERANCE, f"ln {what}: {log_computed!r} vs {mpmath.nstr(log_exact, 20)}"


SERVERS = [1, 2, 3, 7, 14, 55, 100, 512, 1000, 2999, 10_000, 30_000, 100_000, 1_000_000, 10_000_000]
UTILIZATIONS = [1e-3, 0.1, 0.5, 0.85, 0.95, 0.99, 0.999, 0.999999]


def test_the_two_references_agree() -> None:
    for servers, load in [(50, 45.0), (1000, 850.0), (2500, 2499.9), (2000, 100.0)]:
        with mpmath.workdps(DIGITS):
            by_sum = _reference_b_by_sum(servers, load)
            by_gamma = _reference_b_by_gamma(servers, load)
            assert abs(by_sum / by_gamma - 1) < mpmath.mpf("1e-40")


@pytest.mark.parametrize("servers", SERVERS)
def test_erlang_b_and_c_match_mpmath_from_1_to_ten_million_servers(servers: int) -> None:
    for utilization in UTILIZATIONS:
        load = servers * utilization
        exact_b = reference_b(servers, load)
        exact_c = reference_c(servers, load)
        where = f"c={servers}, a={load!r}"
        _assert_close(erlang_c(servers, load), log_erlang_c(servers, load), exact_c, f"C({where})")
        _assert_close(erlang_b(servers, load), log_erlang_b(servers, load), exact_b, f"B({where})")


@pytest.mark.parametrize("servers", [1_000_000, 10_000_000])
def test_vectorized_call_matches_mpmath_at_huge_servers(servers: int) -> None:
    loads = servers * np.array([0.9, 0.99, 0.995, 0.999, 0.9999, 0.999999])
    computed = erlang_c(servers, loads)
    for load, value, log_value in zip(loads, computed, log_erlang_c(servers, loads), strict=True):
        _assert_close(
            float(value), float(log_value), reference_c(servers, float(load)), f"C({servers}, {load})"
        )


def test_load_a_hair_below_the_servers() -> None:
    # a → c: 1 − ρ must come from c − a (exact), not from 1 − a/c (which loses ~10 digits here).
    for servers in (10, 1000, 10_000_000):
        for gap in (1e-3, 1e-6):
            load = servers * (1 - gap)
            _assert_close(
                erlang_c(servers, load),
                log_erlang_c(servers, load),
                reference_c(servers, load),
                f"C({servers})",
            )


def test_log_erlang_c_where_c_underflows_double_precision() -> None:
    # c = 10⁵, a = 85,000: C ≈ 1.7e-546 (task brief), far below the smallest double.
    exact = reference_c(100_000, 85_000.0)
    with mpmath.workdps(DIGITS):
        assert mpmath.mpf("1e-547") < exact < mpmath.mpf("1e-545")
    assert erlang_c(100_000, 85_000.0) == 0.0
    _assert_close(0.0, log_erlang_c(100_000, 85_000.0), exact, "C(1e5, 85000)")


def test_tiny_loads_far_in_the_tail() -> None:
    for servers, load in [(100, 0.1), (1000, 1.0), (10, 1e-5), (3, 1e-100)]:
        _assert_close(
            erlang_c(servers, load),
            log_erlang_c(servers, load),
            reference_c(servers, load),
            f"C({servers}, {load})",
        )


@pytest.mark.parametrize(
    "servers,load",
    [(1, 5.0), (100, 100.0), (100, 150.0), (100, 10_000.0), (10_000_000, 10_400_000.0), (10**7, 2e7)],
)
def test_erlang_b_beyond_the_servers(servers: int, load: float) -> None:
    # Erlang B is a loss probability and stays defined for a ≥ c (Erlang C is 1 there).
    _assert_close(erlang_b(servers, load), log_erlang_b(servers, load), reference_b(servers, load), "B")
    assert erlang_c(servers, load) == 1.0


def test_wait_quantile_where_c_underflows_is_still_exact_zero_or_positive() -> None:
    # With C ≈ 1e-546 the 99th-percentile wait is 0 (C ≤ 1 − q) — computed from ln C, not from 0.
    assert wait_quantile(0.99, 100_000, 85_000.0, 1.0, 1.0) == 0.0
    # ... and the tail quantile where ln(C/(1−q)) > 0 needs q within 1e-546 of 1, so test
    # the mirror case: q close enough to 1 that C/(1−q) is large, at a moderately small C.
    servers, load = 1000, 850.0
    exact = reference_c(servers, load)
    q = 1 - 1e-12
    with mpmath.workdps(DIGITS):
        expected = float(mpmath.log(exact / (1 - mpmath.mpf(q))) / (servers - load))
    assert wait_quantile(q, servers, load, 1.0, 1.0) == pytest.approx(expected, rel=1e-11)


@pytest.mark.parametrize("servers", [300, 100_000, 1_000_000, 10_000_000, 100_000_000])
def test_the_poisson_tail_band_where_scipys_series_truncates(servers: int) -> None:
    # Loads 3.9–12 standard deviations below c: Q = P(X > c) is 1e-4…1e-33 here and scipy's
    # gammainc (a 2,000-term power series) is off by up to 1e-5 relative at c ≥ 10⁶.
    for z in (3.9, 4.0, 4.5, 5.0, 6.0, 8.0, 10.0, 10.1, 12.0):
        load = float(servers - z * np.sqrt(servers + 1.0))
        _assert_close(
            erlang_c(servers, load),
            log_erlang_c(servers, load),
            reference_c(servers, load),
            f"C({servers}, {load})",
        )
        _assert_close(
            erlang_b(servers, load),
            log_erlang_b(servers, load),
            reference_b(servers, load),
            f"B({servers}, {load})",
        )


@pytest.mark.parametrize("servers", [300, 1_000_000, 10_000_000])
def test_erlang_b_above_the_servers_across_the_continued_fraction_switch(servers: int) -> None:
    for z in (1.0, 5.0, 20.0, 29.9, 30.0, 31.0, 100.0):
        load = float(servers + z * np.sqrt(servers))
        _assert_close(
            erlang_b(servers, load),
            log_erlang_b(servers, load),
            reference_b(servers, load),
            f"B({servers}, {load})",
        )


def test_random_sweep_against_mpmath() -> None:
    rng = np.random.default_rng(20240611)
    servers_draws = np.round(10 ** rng.uniform(0, 7, 150)).astype(int)
    for servers in servers_draws:
        utilization = 1 - 10 ** rng.uniform(-6.5, 0)
        load = float(servers * utilization)
        if load <= 0:
            continue
        _assert_close(
            erlang_c(int(servers), load),
            log_erlang_c(int(servers), load),
            reference_c(int(servers), load),
            f"C({servers}, {load!r})",
        )


@pytest.mark.parametrize(
    ("servers", "load"),
    [(1, 0.5), (55, 50.0), (2000, 1999.0), (2001, 1500.0), (100_000, 85_000.0), (10**7, 9.99e6)],
)
def test_exact_erlang_matches_the_independent_reference_to_40_digits(servers: int, load: float) -> None:
    """fleetopt's --exact path (recursion up to c = 2,000, incomplete gamma above) against this
    file's reference (direct sum up to c = 3,000, incomplete gamma above). The reference works at
    50 digits and its ln p = c·ln a − a − ln Γ(c+1) cancels ~9 of them at c = 10⁷, hence 1e-40."""
    exact = exact_erlang(servers, load)
    with mpmath.workdps(DIGITS):
        for computed, reference in (
            (exact.erlang_c, reference_c(servers, load)),
            (exact.erlang_b, reference_b(servers, load)),
        ):
            assert abs(mpmath.mpf(computed) / reference - 1) < mpmath.mpf("1e-40")
