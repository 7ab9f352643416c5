"""The queueing core: exact published values, invariants, the wait model and the fewest servers."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetopt.core.queueing import (
    erlang_b,
    erlang_c,
    log_erlang_c,
    mean_wait,
    wait_quantile,
)
from fleetopt.errors import ValidationError

# --- FACTS §4: exact Erlang C values (mpmath at 50+ digits) ---------------------------------------


@pytest.mark.parametrize("load", [1e-9, 0.1, 0.5, 0.85, 0.999999])
def test_facts_4_single_server_erlang_c_is_the_load(load: float) -> None:
    assert erlang_c(1, load) == pytest.approx(load, rel=1e-14)


@pytest.mark.parametrize(
    "servers,load,expected",
    [
        (3, 2.0, Fraction(4, 9)),
        (5, 4.0, Fraction(128, 231)),
        (14, 10.0, 0.1741319335950498),
        (55, 48.0, 0.2387009363780092),
        (100, 85.0, 0.074850495974551737),
        (30_000, 25_500.0, 1.2000434378551342e-165),
    ],
)
def test_facts_4_erlang_c_reference_values(servers: int, load: float, expected: float) -> None:
    assert erlang_c(servers, load) == pytest.approx(float(expected), rel=1e-13)


def test_facts_4_erlang_c_of_3_servers_at_load_2_by_hand() -> None:
    # B(3, 2) = (8/6)/(1 + 2 + 2 + 8/6) = 4/19; C = 3B/(3 − 2 + 2B) = (12/19)/(27/19) = 4/9.
    assert erlang_b(3, 2.0) == pytest.approx(4 / 19, rel=1e-14)


@pytest.mark.parametrize(
    "servers,arrival_rate,expected_p99_s",
    [(100, 85.0, 0.134193842939744), (10, 8.0, 1.85578521628342), (14, 10.0, 0.714307039488623)],
)
def test_facts_4_mmc_p99_waits(servers: int, arrival_rate: float, expected_p99_s: float) -> None:
    # FACTS §4, μ = 1: for M/M/c, P(W > t) = C·e^{−(cμ−λ)t} exactly, so this is the true P99.
    assert wait_quantile(0.99, servers, arrival_rate, 1.0, 1.0) == pytest.approx(expected_p99_s, rel=1e-13)


def test_scalar_in_float_out_and_arrays_broadcast() -> None:
    assert isinstance(erlang_c(100, 85.0), float)
    values = erlang_c(np.array([[3], [5]]), np.array([2.0, 2.5]))
    assert values.shape == (2, 2)
    assert values[0, 0] == pytest.approx(4 / 9, rel=1e-14)


def test_edge_loads() -> None:
    assert erlang_c(10, 0.0) == 0.0
    assert log_erlang_c(10, 0.0) == -math.inf
    assert erlang_c(10, 10.0) == 1.0  # unstable: every arrival waits
    assert erlang_c(10, 25.0) == 1.0


@pytest.mark.parametrize(
    "servers,load,message",
    [
        (0, 1.0, "servers: 0 is not allowed; the number of servers must be ≥ 1"),
        (5, -1.0, "offered_load: -1 is not allowed; the load (Erlangs) must be finite and ≥ 0"),
        (5, math.nan, "offered_load: NaN is not allowed"),
    ],
)
def test_erlang_c_rejects_invalid_arguments(servers: int, load: float, message: str) -> None:
    with pytest.raises(ValidationError) as excinfo:
        erlang_c(servers, load)
    assert str(excinfo.value) == message


# --- Hypothesis invariants -------------------------------------------------------------------------

servers_strategy = st.integers(min_value=1, max_value=2_000_000)
utilization_strategy = st.floats(min_value=1e-6, max_value=0.999999)


@settings(max_examples=300, deadline=None)
@given(servers=servers_strategy, utilization=utilization_strategy)
def test_erlang_c_is_a_probability_at_least_erlang_b(servers: int, utilization: float) -> None:
    load = servers * utilization
    c_value, b_value = erlang_c(servers, load), erlang_b(servers, load)
    assert 0.0 <= c_value <= 1.0
    assert 0.0 <= b_value <= 1.0
    assert c_value >= b_value * (1 - 1e-14)


@settings(max_examples=300, deadline=None)
@given(servers=servers_strategy, utilization=utilization_strategy, extra=st.integers(1, 50))
def test_erlang_c_decreases_in_servers(servers: int, utilization: float, extra: int) -> None:
    load = servers * utilization
    # compare logs: they stay comparable where C underflows
    assert log_erlang_c(servers + extra, load) <= log_erlang_c(servers, load) + 1e-13


@settings(max_examples=300, deadline=None)
@given(servers=servers_strategy, u1=utilization_strategy, u2=utilization_strategy)
def test_erlang_c_increases_in_load(servers: int, u1: float, u2: float) -> None:
    low, high = sorted((u1 * servers, u2 * servers))
    assert log_erlang_c(servers, low) <= log_erlang_c(servers, high) + 1e-13


@settings(max_examples=40, deadline=None)
@given(
    arrival_rate=st.floats(0.01, 1e5),
    service_rate=st.floats(1e-3, 10.0),
    scv=st.floats(0.0, 20.0),
    q=st.floats(0.5, 0.9999),
)
def test_wait_quantile_is_non_increasing_in_servers(
    arrival_rate: float, service_rate: float, scv: float, q: float
) -> None:
    first = math.floor(arrival_rate / service_rate) + 1
    servers = np.arange(first, first + 400)
    waits = wait_quantile(q, servers, arrival_rate, service_rate, scv)
    assert np.all(np.isfinite(waits))
    assert np.all(np.diff(waits) <= 1e-12 * waits[:-1])


@settings(max_examples=200, deadline=None)
@given(servers=st.integers(1, 10_000), utilization=st.floats(0.01, 0.99), scv=st.floats(0.0, 10.0))
def test_mean_wait_and_quantile_scale_with_the_variability_factor(
    servers: int, utilization: float, scv: float
) -> None:
    # Both carry the factor (C_a² + C_s²)/2 (Kimura 1994 / FleetOpt Eq. 6): M/G/c = M/M/c × (1 + C_s²)/2.
    arrival_rate = servers * utilization
    factor = (1 + scv) / 2
    assert mean_wait(servers, arrival_rate, 1.0, scv) == pytest.approx(
        factor * mean_wait(servers, arrival_rate, 1.0, 1.0), rel=1e-12, abs=1e-300
    )
    assert wait_quantile(0.9, servers, arrival_rate, 1.0, scv) == pytest.approx(
        factor * wait_quantile(0.9, servers, arrival_rate, 1.0, 1.0), rel=1e-12, abs=1e-300
    )


def test_mmc_mean_wait_by_hand() -> None:
    # M/M/1: E[W] = ρ/(μ − λ) = 0.5/(1 − 0.5) = 1 s at λ = 0.5, μ = 1.
    assert mean_wait(1, 0.5, 1.0, 1.0) == pytest.approx(1.0, rel=1e-14)
    # M/M/3 at a = 2: C = 4/9, E[W] = C/(3 − 2) = 4/9 s.
    assert mean_wait(3, 2.0, 1.0, 1.0) == pytest.approx(4 / 9, rel=1e-14)


def test_wait_quantile_is_zero_when_few_arrivals_wait_and_infinite_when_unstable() -> None:
    # FACTS §2 item 6: Eq. 6 is negative when C < 1 − q and is clamped to 0.
    assert erlang_c(100, 50.0) < 0.01
    assert wait_quantile(0.99, 100, 50.0, 1.0, 1.0) == 0.0
    assert wait_quantile(0.99, 100, 100.0, 1.0, 1.0) == math.inf
    assert mean_wait(100, 150.0, 1.0, 1.0) == math.inf
    # M/M/1, q = 0.9: ln(ρ/0.1)/(μ − λ) = ln(5)/0.5 at ρ = 0.5.
    assert wait_quantile(0.9, 1, 0.5, 1.0, 1.0) == pytest.approx(math.log(5) / 0.5, rel=1e-14)


def test_wait_quantile_vectorizes_over_servers_and_arrival_scv() -> None:
    waits = wait_quantile(
        0.99, np.array([90, 100, 120]), 85.0, 1.0, 1.0, arrival_scv=np.array([1.0, 1.0, 3.0])
    )
    assert waits.shape == (3,)
    assert waits[1] == pytest.approx(0.134193842939744, rel=1e-13)


# --- the fewest servers that meet a wait budget (what the planner's sizing searches for) ---------


def _fewest_servers(budget_s: float, rate: float, service_rate: float, scv: float, q: float = 0.99) -> int:
    """The smallest c with λ < cμ and W_q(c) ≤ budget, by a plain upward loop over c."""
    servers = math.floor(rate / service_rate) + 1
    while wait_quantile(q, servers, rate, service_rate, scv) > budget_s:
        servers += 1
    return servers


@pytest.mark.parametrize(
    "servers,arrival_rate,published_p99_s",
    [(100, 85.0, 0.134193842939744), (10, 8.0, 1.85578521628342), (14, 10.0, 0.714307039488623)],
)
def test_fewest_servers_for_the_published_mmc_p99_waits(
    servers: int, arrival_rate: float, published_p99_s: float
) -> None:
    # FACTS §4 (μ = 1, M/M/c): a budget of exactly the published P99 wait at c servers needs c
    # servers — c − 1 wait longer — and a budget a hair below it needs c + 1.
    assert _fewest_servers(published_p99_s * (1 + 1e-12), arrival_rate, 1.0, 1.0) == servers
    assert _fewest_servers(published_p99_s * (1 - 1e-12), arrival_rate, 1.0, 1.0) == servers + 1


def test_a_zero_budget_is_met_once_erlang_c_is_at_most_one_minus_q() -> None:
    # FACTS §2 item 6: W_q is clamped at 0, and is 0 exactly when C ≤ 1 − q.
    servers = _fewest_servers(0.0, 85.0, 1.0, 1.0)
    assert erlang_c(servers, 85.0) <= 0.01 < erlang_c(servers - 1, 85.0)
    assert wait_quantile(0.99, servers, 85.0, 1.0, 1.0) == 0.0


@pytest.mark.parametrize(
    "override,message",
    [
        ({"service_rate_per_s": 0.0}, "service_rate_per_s: 0 is not allowed; it must be positive and finite"),
        (
            {"service_rate_per_s": math.inf},
            "service_rate_per_s: inf is not allowed; it must be positive and finite",
        ),
        ({"arrival_rate_per_s": -1.0}, "arrival_rate_per_s: -1 is not allowed; it must be finite and ≥ 0"),
        (
            {"service_scv": -0.5},
            "service_scv: -0.5 is not allowed; a squared coefficient of variation is ≥ 0",
        ),
        (
            {"arrival_scv": math.nan},
            "arrival_scv: NaN is not allowed",
        ),
        ({"q": 1.0}, "quantile: 1.0 is not allowed; it must be strictly between 0 and 1"),
    ],
)
def test_wait_quantile_rejects_invalid_inputs(override: dict, message: str) -> None:
    kwargs = dict(
        q=0.99, servers=8, arrival_rate_per_s=4.0, service_rate_per_s=1.0, service_scv=1.0, arrival_scv=1.0
    )
    kwargs.update(override)
    for servers in (kwargs["servers"], np.array([kwargs["servers"]])):
        with pytest.raises(ValidationError) as excinfo:
            wait_quantile(**{**kwargs, "servers": servers})
        assert str(excinfo.value) == message


# --- argument checks on both inputs -------------------------------------------------------------


@pytest.mark.parametrize("servers", [0, 0.5, -3, math.inf, np.array([4, 0])])
@pytest.mark.parametrize("function", [wait_quantile, mean_wait])
def test_waits_reject_fewer_than_one_server_on_both_paths(function, servers) -> None:
    """Scalars take the plain-float path, arrays the vectorized one: both refuse c < 1 the same way."""
    args = (servers, 1.0, 1.0, 1.0)
    with pytest.raises(
        ValidationError, match=r"^servers: .* is not allowed; the number of servers must be ≥ 1$"
    ):
        function(0.99, *args) if function is wait_quantile else function(*args)
