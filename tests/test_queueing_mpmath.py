"""Erlang B/C against an independent mpmath reference at 50 digits, from c = 1 to c = 10⁷.

The reference is written here from the definitions, not from fleetopt's code:
- small c: B = (a^c/c!) / Σ_{k≤c} a^k/k!, summed term by term at 50 digits;
- large c: B = p(c; a)/P(c; a) with ln p = c·ln a − a − ln Γ(c+1) and P = Γ(c+1, a)/Γ(c+1)
  (mpmath's regularized upper incomplete gamma), both at 50 digits;
- C = c·B / (c − a + a·B) (Erlang C from Erlang B, exact algebra).
The two references are checked against each other where both are cheap.

Every check runs on both kinds of input: each point as plain numbers (one point per call, the
sizing loops' path) and all the points of a test in one array call (the vectorized path, which
takes each branch on a subset of the points) — each against mpmath, never against each other.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetopt.core.queueing import (
    erlang_b,
    erlang_c,
    exact_erlang,
    log_erlang_b,
    log_erlang_c,
    wait_quantile,
    wait_statistics,
)

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


def _assert_both_inputs_match(
    servers: list[int] | int, loads: list[float], *, b: bool = True, c: bool = True, where: str = ""
) -> None:
    """Erlang B and C at every (c, a), one point per call and all points in one array call, against
    the mpmath references."""
    servers_list = servers if isinstance(servers, list) else [servers] * len(loads)
    c_array, a_array = np.array(servers_list, dtype=float), np.array(loads, dtype=float)
    functions = []
    if c:
        functions.append(("C", erlang_c, log_erlang_c, reference_c))
    if b:
        functions.append(("B", erlang_b, log_erlang_b, reference_b))
    for name, value_of, log_of, reference in functions:
        values, log_values = value_of(c_array, a_array), log_of(c_array, a_array)
        for i, (c_i, a_i) in enumerate(zip(servers_list, loads, strict=True)):
            exact = reference(int(c_i), float(a_i))
            label = f"{name}({c_i}, {float(a_i)!r}){where}"
            one = value_of(int(c_i), float(a_i))
            assert isinstance(one, float)
            _assert_close(one, log_of(int(c_i), float(a_i)), exact, f"{label}, one point")
            _assert_close(float(values[i]), float(log_values[i]), exact, f"{label}, array call")


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
    _assert_both_inputs_match(servers, [servers * utilization for utilization in UTILIZATIONS])


@pytest.mark.parametrize("servers", [1_000_000, 10_000_000])
def test_huge_servers_near_saturation_match_mpmath(servers: int) -> None:
    loads = [servers * u for u in (0.9, 0.99, 0.995, 0.999, 0.9999, 0.999999)]
    _assert_both_inputs_match(servers, loads, b=False)


def test_load_a_hair_below_the_servers() -> None:
    # a → c: 1 − ρ must come from c − a (exact), not from 1 − a/c (which loses ~10 digits here).
    for servers in (10, 1000, 10_000_000):
        _assert_both_inputs_match(servers, [servers * (1 - gap) for gap in (1e-3, 1e-6)], b=False)


def test_log_erlang_c_where_c_underflows_double_precision() -> None:
    # c = 10⁵, a = 85,000: C ≈ 1.7e-546 (task brief), far below the smallest double.
    exact = reference_c(100_000, 85_000.0)
    with mpmath.workdps(DIGITS):
        assert mpmath.mpf("1e-547") < exact < mpmath.mpf("1e-545")
    assert erlang_c(100_000, 85_000.0) == 0.0
    _assert_close(0.0, log_erlang_c(100_000, 85_000.0), exact, "C(1e5, 85000)")
    assert erlang_c(np.array([100_000]), np.array([85_000.0]))[0] == 0.0
    _assert_close(0.0, log_erlang_c(np.array([100_000]), 85_000.0)[0], exact, "C(1e5, 85000), array call")


def test_tiny_loads_far_in_the_tail() -> None:
    _assert_both_inputs_match([100, 1000, 10, 3], [0.1, 1.0, 1e-5, 1e-100], b=False)


@pytest.mark.parametrize(
    "servers,load",
    [(1, 5.0), (100, 100.0), (100, 150.0), (100, 10_000.0), (10_000_000, 10_400_000.0), (10**7, 2e7)],
)
def test_erlang_b_beyond_the_servers(servers: int, load: float) -> None:
    # Erlang B is a loss probability and stays defined for a ≥ c (Erlang C is 1 there).
    _assert_both_inputs_match(servers, [load], c=False)
    assert erlang_c(servers, load) == 1.0
    assert erlang_c(np.array([servers]), np.array([load]))[0] == 1.0


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


@pytest.mark.slow
@pytest.mark.parametrize("servers", [300, 100_000, 1_000_000, 10_000_000, 100_000_000])
def test_the_poisson_tail_band_where_scipys_series_truncates(servers: int) -> None:
    # Loads 3.9–12 standard deviations below c: Q = P(X > c) is 1e-4…1e-33 here and scipy's
    # gammainc (a 2,000-term power series) is off by up to 1e-5 relative at c ≥ 10⁶.
    zs = (3.9, 4.0, 4.5, 5.0, 6.0, 8.0, 10.0, 10.1, 12.0)
    _assert_both_inputs_match(servers, [float(servers - z * np.sqrt(servers + 1.0)) for z in zs])


@pytest.mark.parametrize("servers", [300, 1_000_000, 10_000_000])
def test_erlang_b_above_the_servers_across_the_continued_fraction_switch(servers: int) -> None:
    zs = (1.0, 5.0, 20.0, 29.9, 30.0, 31.0, 100.0)
    _assert_both_inputs_match(servers, [float(servers + z * np.sqrt(servers)) for z in zs], c=False)


def test_random_sweep_against_mpmath() -> None:
    rng = np.random.default_rng(20240611)
    servers_draws = np.round(10 ** rng.uniform(0, 7, 150)).astype(int)
    servers_kept, loads = [], []
    for servers in servers_draws:
        utilization = 1 - 10 ** rng.uniform(-6.5, 0)
        load = float(servers * utilization)
        if load > 0:
            servers_kept.append(int(servers))
            loads.append(load)
    # one array call over every draw: the branches run on mixed subsets, as in the planner
    _assert_both_inputs_match(servers_kept, loads, b=False)


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


# (servers c, arrival rate λ, per-server rate μ, C_s²), μ a power of two so that a = λ/μ is exact:
# scipy's incomplete gamma, the continued-fraction band (z ≈ 4.1 and 4.8), the stirlerr switch at
# 16, C far below double precision (the quantile is 0 there), one server, and c = 10⁶ at z = 6.
WAIT_POINTS = [
    (100, 85.0, 1.0, 1.0),
    (300, 115.0, 0.5, 1.3),
    (1000, 1700.0, 2.0, 0.7),
    (16, 31.8, 2.0, 2.5),
    (100_000, 85_000.0, 1.0, 1.0),
    (1, 0.125, 0.25, 0.0),
    (10**6, (10**6 - 6_000.0) / 4, 0.25, 3.0),
]


@pytest.mark.parametrize("q", [0.5, 0.99, 1 - 1e-9])
def test_wait_quantile_and_mean_match_mpmath_on_both_inputs(q: float) -> None:
    """W_q = max(0, ln(C/(1 − q)))·(1 + C_s²)/2/(cμ − λ) and E[W] = C·(1 + C_s²)/2/(cμ − λ), with C
    from the mpmath reference. ln C is good to 1e-12 relative, so W_q is held to 1e-12 of
    (|ln C| + |ln(1 − q)|)·(1 + C_s²)/2/(cμ − λ)."""
    columns = [np.array(column, dtype=float) for column in zip(*WAIT_POINTS, strict=True)]
    array_quantiles, array_means = wait_statistics(q, *columns)
    for i, (servers, rate, mu, scv) in enumerate(WAIT_POINTS):
        with mpmath.workdps(DIGITS):
            log_c = mpmath.log(reference_c(servers, rate / mu))
            log_no_wait = mpmath.log(1 - mpmath.mpf(q))
            scale = (1 + mpmath.mpf(scv)) / 2 / (servers * mpmath.mpf(mu) - mpmath.mpf(rate))
            exact_quantile = max(mpmath.mpf(0), log_c - log_no_wait) * scale
            quantile_tolerance = 1e-12 * (abs(log_c) + abs(log_no_wait)) * scale
            exact_mean = mpmath.exp(log_c) * scale
        one_quantile, one_mean = wait_statistics(q, servers, rate, mu, scv)
        assert isinstance(one_quantile, float) and isinstance(one_mean, float)
        assert wait_quantile(q, servers, rate, mu, scv) == one_quantile
        for how, quantile, mean in (
            ("one point", one_quantile, one_mean),
            ("array call", float(array_quantiles[i]), float(array_means[i])),
        ):
            where = f"c={servers}, λ={rate}, μ={mu}, q={q}, {how}"
            assert abs(quantile - exact_quantile) <= quantile_tolerance, (where, quantile, exact_quantile)
            if exact_quantile == 0:
                assert quantile == 0.0, where
            assert abs(mean - exact_mean) <= 1e-12 * exact_mean + 1e-300, (where, mean, exact_mean)


@settings(max_examples=120, deadline=None)
@given(
    load=st.floats(0.01, 1500.0),
    service_rate=st.sampled_from([0.25, 0.5, 1.0, 2.0, 4.0]),
    scv=st.floats(0.0, 20.0),
    q=st.floats(0.5, 0.999),
    budget_in_service_times=st.one_of(st.just(0.0), st.floats(0.0, 30.0)),
)
def test_the_fewest_servers_meeting_a_wait_budget_is_minimal_by_mpmath(
    load: float, service_rate: float, scv: float, q: float, budget_in_service_times: float
) -> None:
    """The smallest c with W_q(c) ≤ t, found by a plain upward loop over fleetopt's wait_quantile,
    is the smallest c whose model tail P(W > t) = C·exp(−(cμ − λ)·t/v), v = (1 + C_s²)/2, is at
    most 1 − q, with C from mpmath (the exact M/M/c tail at C_s² = 1). What the planner's sizing
    searches for, with its answer checked at c and at c − 1."""
    rate = load * service_rate  # a = λ/μ exact: μ is a power of two
    budget_s = budget_in_service_times / service_rate
    servers = math.floor(load) + 1
    while wait_quantile(q, servers, rate, service_rate, scv) > budget_s:
        servers += 1

    def tail(c: int) -> mpmath.mpf:
        with mpmath.workdps(DIGITS):
            slack = c * mpmath.mpf(service_rate) - mpmath.mpf(rate)
            return reference_c(c, load) * mpmath.exp(
                -slack * mpmath.mpf(budget_s) / ((1 + mpmath.mpf(scv)) / 2)
            )

    with mpmath.workdps(DIGITS):
        allowed = 1 - mpmath.mpf(q)
        assert tail(servers) <= allowed * (1 + mpmath.mpf("1e-10")), servers
        if servers - 1 > load:
            assert tail(servers - 1) >= allowed * (1 - mpmath.mpf("1e-10")), servers


@pytest.mark.parametrize("servers", [2, 30, 300, 5_000, 50_000, 99_998, 99_999, 100_000])
def test_the_continued_fraction_near_the_mean_up_to_its_switch_to_scipy(servers: int) -> None:
    """Below 10⁵ servers Q comes from the continued fraction (no scipy at start-up) also near the
    mean, (c + 1 − a)/√(c + 1) ∈ (0, 4), where it needs the most terms; at the switch both sides."""
    root = float(np.sqrt(servers))
    loads = [servers - z * root for z in (0.001, 0.3, 1.0, 2.0, 3.5) if servers - z * root > 0]
    _assert_both_inputs_match(servers, loads)
