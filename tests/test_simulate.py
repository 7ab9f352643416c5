"""The fleet simulator against independent queueing truth.

Truth used here: Erlang C computed directly with mpmath (FleetOpt Eq. 5), Pollaczek–Khinchine
for M/G/1 and M/D/1, P(wait > 0) = ρ for M/G/1, Little's law with PASTA, exact routing fractions
α' = F(B) + p_c·(F(γB) − F(B)) (FleetOpt Eq. 1), exact offered load λ·E[S]/c from the
workload's atoms, and hand-derivable iteration arithmetic. Statistical checks compare a mean over
independent replications with the truth inside a Student-t 99.9% band, and also require the band
to be narrow, so the test can fail.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import t as student_t

from fleetopt.core.routing import Routing
from fleetopt.core.simulate import (
    DISPATCH_POLICIES,
    SimulatedPool,
    fcfs_start_times,
    simulate_fleet,
)
from fleetopt.core.workload import workload_from_cdf, workload_from_requests
from fleetopt.errors import ValidationError


def erlang_c(servers: int, offered_load: float) -> float:
    """Erlang C by its defining sum (FleetOpt Eq. 5) at 50 digits."""
    mpmath.mp.dps = 50
    a = mpmath.mpf(offered_load)
    rho = a / servers
    top = a**servers / (mpmath.factorial(servers) * (1 - rho))
    return float(top / (mpmath.fsum(a**k / mpmath.factorial(k) for k in range(servers)) + top))


def assert_within_band(samples: list[float], truth: float, max_relative_band: float) -> None:
    """Mean of independent replications within t_{0.9995}·sd/√k of ``truth``; the band is narrow."""
    values = np.asarray(samples)
    band = student_t.ppf(0.9995, values.size - 1) * values.std(ddof=1) / math.sqrt(values.size)
    assert band < max_relative_band * abs(truth), f"band {band} too wide for truth {truth}"
    assert abs(values.mean() - truth) <= band, f"mean {values.mean()} vs truth {truth} ± {band}"


def test_erlang_c_reference_values_of_the_test_helper() -> None:
    # FACTS §4: C(3, 2) = 4/9, C(5, 4) = 128/231, C(14, 10) = 0.1741319335950498.
    assert erlang_c(3, 2.0) == pytest.approx(4 / 9, rel=1e-14)
    assert erlang_c(5, 4.0) == pytest.approx(128 / 231, rel=1e-14)
    assert erlang_c(14, 10.0) == pytest.approx(0.1741319335950498, rel=1e-14)


@pytest.mark.parametrize("servers", [1, 2, 5])
@pytest.mark.parametrize("rho", [0.7, 0.9])
def test_mmc_wait_probability_and_mean_wait_match_erlang_c(servers: int, rho: float) -> None:
    """M/M/c: P(wait > 0) = C(c, a) and E[W] = C / (cμ − λ) with μ = 1 (Erlang C, FleetOpt Eq. 5)."""
    arrival_rate = rho * servers
    wait_probability, mean_wait = [], []
    for seed in range(10):
        rng = np.random.default_rng(seed)
        arrival = np.cumsum(rng.exponential(1 / arrival_rate, 30_000))
        service = rng.exponential(1.0, arrival.size)
        wait = (fcfs_start_times(arrival, service, servers) - arrival)[5_000:]
        wait_probability.append(float((wait > 0).mean()))
        mean_wait.append(float(wait.mean()))
    c_prob = erlang_c(servers, arrival_rate)
    assert_within_band(wait_probability, c_prob, 0.08)
    assert_within_band(mean_wait, c_prob / (servers - arrival_rate), 0.3)


def _naive_fcfs(arrival: list[float], service: list[float], servers: int) -> list[float]:
    free = [0.0] * servers
    starts = []
    for a, s in zip(arrival, service, strict=True):
        k = min(range(servers), key=free.__getitem__)
        begin = max(a, free[k])
        starts.append(begin)
        free[k] = begin + s
    return starts


@settings(max_examples=60, deadline=None)
@given(
    gaps=st.lists(st.floats(0.0, 3.0), min_size=1, max_size=60),
    services=st.lists(st.floats(0.01, 10.0), min_size=60, max_size=60),
    servers=st.integers(1, 6),
)
def test_fcfs_start_times_equal_a_naive_multiserver_queue(gaps, services, servers) -> None:
    arrival = np.cumsum(gaps)
    service = np.asarray(services[: arrival.size])
    expected = _naive_fcfs(arrival.tolist(), service.tolist(), servers)
    assert np.allclose(fcfs_start_times(arrival, service, servers), expected, rtol=0, atol=1e-9)


def _one_pool(slots: int = 1, instances: int = 1, w: float = 0.01, h: float = 0.0, ctx: int = 8192):
    return SimulatedPool("pool", instances, slots, ctx, w, h, 512, 8192)


@pytest.mark.parametrize("service_model", ["lockstep", pytest.param("physical", marks=pytest.mark.slow)])
def test_md1_mean_wait_is_pollaczek_khinchine(service_model: str) -> None:
    """One slot, one request shape: S = (⌈512/512⌉ + 9)·10 ms = 0.1 s; λ = 8 → ρ = 0.8.

    P-K: E[W] = λ·S² / (2(1 − ρ)) = 8·0.01 / 0.4 = 0.2 s; P(wait > 0) = ρ = 0.8.
    With one slot the physical model's iteration is W + H·1, the same as lockstep.
    """
    workload = workload_from_requests(np.array([512]), np.array([9]), name="md1")
    result = simulate_fleet(
        workload,
        [_one_pool()],
        Routing(),
        arrival_rate_per_s=8.0,
        service_model=service_model,
        requests=20_000,
        seeds=range(8),
        scheduler="slots",
    )
    pool = result.pools[0]
    assert pool.service_mean_s.mean == pytest.approx(0.1, rel=1e-12)
    assert_within_band(list(pool.wait_mean_s.values), 0.2, 0.15)
    assert_within_band(list(pool.wait_probability.values), 0.8, 0.02)
    assert_within_band(list(pool.utilization.values), 0.8, 0.02)


def test_mg1_two_point_service_matches_pollaczek_khinchine() -> None:
    """Two shapes, weights 3:1: I = 1 + 3 = 4 and 2 + 30 = 32 iterations of 10 ms.

    E[S] = (3·0.04 + 0.32)/4 = 0.11 s, E[S²] = (3·0.0016 + 0.1024)/4 = 0.0268 s²; λ = 7.5 →
    ρ = 0.825, E[W] = λE[S²]/(2(1 − ρ)) = 0.574286 s, P(wait > 0) = ρ (M/G/1).
    """
    workload = workload_from_requests(np.array([500, 500, 500, 1000]), np.array([3, 3, 3, 30]), name="mg1")
    result = simulate_fleet(
        workload, [_one_pool()], Routing(), arrival_rate_per_s=7.5, requests=40_000, seeds=range(8)
    )
    pool = result.pools[0]
    assert_within_band(list(pool.service_mean_s.values), 0.11, 0.02)
    assert_within_band(list(pool.wait_mean_s.values), 7.5 * 0.0268 / (2 * (1 - 0.825)), 0.2)
    assert_within_band(list(pool.wait_probability.values), 0.825, 0.03)


def _geometric_workload():
    rng = np.random.default_rng(7)
    outputs = rng.geometric(1 / 60, 4000)
    inputs = rng.integers(1, 3000, 4000)
    return workload_from_requests(inputs, outputs, name="geom")


@pytest.mark.parametrize("service_model", ["lockstep", "fleet-sim"])
def test_utilization_equals_offered_load(service_model: str) -> None:
    """Busy slot-time / (c·window) = λ·E[S]/c, E[S] exact over the atoms (FleetOpt §7.4 ρ_ana)."""
    workload = _geometric_workload()
    pool = SimulatedPool("pool", 4, 8, 8192, 0.008, 0.00065, 512, 8192)
    p = workload.weights / workload.weights.sum()
    iterations = -(-workload.input_tokens // 512) + workload.output_tokens
    if service_model == "lockstep":
        service = iterations * (0.008 + 0.00065 * 8)
    else:
        service = iterations * (0.008 + 0.00065 * (workload.total_tokens / 8192) * 8)
    exact_mean_service = float((p * service).sum())
    arrival_rate = 0.8 * 32 / exact_mean_service
    result = simulate_fleet(
        workload,
        [pool],
        Routing(),
        arrival_rate_per_s=arrival_rate,
        service_model=service_model,
        requests=20_000,
        seeds=range(6),
    )
    assert_within_band(list(result.pools[0].utilization.values), 0.8, 0.03)
    assert_within_band(list(result.pools[0].service_mean_s.values), exact_mean_service, 0.03)


@pytest.mark.parametrize("dispatch", DISPATCH_POLICIES)
def test_littles_law_number_seen_by_arrivals_equals_rate_times_sojourn(dispatch: str) -> None:
    """L = λ·W (Little), with L the mean number in system seen by Poisson arrivals (PASTA).

    Run on the physical model, the one whose service times are not known in advance, with a KV
    cache small enough to preempt.
    """
    workload = _geometric_workload()
    pool = SimulatedPool("pool", 3, 4, 8192, 0.008, 0.004, 512, 8192, kv_capacity_tokens=8192)
    result = simulate_fleet(
        workload,
        [pool],
        Routing(),
        arrival_rate_per_s=7.0,
        service_model="physical",
        dispatch=dispatch,
        requests=30_000,
        seeds=(11,),
        keep_requests=True,
    )
    trace = result.traces[0]
    departed = np.searchsorted(np.sort(trace.departure_s), trace.arrival_s, side="right")
    in_system_seen = (np.arange(trace.arrival_s.size) - departed)[trace.measured]
    sojourn = (trace.departure_s - trace.arrival_s)[trace.measured]
    rate = trace.measured.sum() / result.window_s[0]
    assert in_system_seen.mean() == pytest.approx(rate * sojourn.mean(), rel=0.04)
    assert result.pools[0].utilization.mean > 0.5  # a loaded system, so the check has teeth
    assert result.pools[0].preempted_fraction.mean > 0.0  # and one whose KV runs out


@pytest.mark.parametrize("dispatch", ["pooled", "round-robin", "least-loaded"])
def test_physical_with_one_slot_per_instance_equals_hand_schedule(dispatch: str) -> None:
    """With s = 1 an instance holds one request, so its iterations cost W + τ·(its chunk) while it
    prefills and W + H while it decodes: service S = P·W + τ·L_in + L_out·(W + H), first token
    P·W + τ·L_in + (W + H) after admission, and a slot frees exactly at a boundary of an instance
    that is then idle. The engine must reproduce that FCFS schedule request by request."""
    from fleetopt.core.simulate import dispatch_known_service as _dispatch_known_service

    workload = _geometric_workload()
    w, h, tau, chunk = 0.008, 0.002, 0.00004, 512
    pool = SimulatedPool("pool", 5, 1, 8192, w, h, chunk, 8192, prefill_per_token_s=tau)
    trace = simulate_fleet(
        workload, [pool], Routing(), arrival_rate_per_s=5.0, service_model="physical",
        dispatch=dispatch, requests=5_000, seeds=(3,), keep_requests=True, scheduler="slots",
    ).traces[0]  # fmt: skip
    inputs = trace.iterations - np.round((trace.departure_s - trace.first_token_s) / (w + h)).astype(
        np.int64
    )  # P + 1 iterations precede the first token; the rest decode
    del inputs
    assert (trace.slot_start_s > trace.arrival_s).mean() > 0.1  # there is queueing to reproduce
    prefill_s = trace.first_token_s - trace.admission_s - (w + h)
    decode_s = trace.departure_s - trace.first_token_s
    outputs = np.round(decode_s / (w + h)).astype(np.int64) + 1
    assert np.allclose(decode_s, (outputs - 1) * (w + h), rtol=1e-9, atol=1e-9)
    prefill_iterations = trace.iterations - outputs
    input_tokens = (prefill_s - prefill_iterations * w) / tau
    assert np.allclose(input_tokens, np.round(input_tokens), atol=1e-6)
    assert (-(-np.round(input_tokens).astype(np.int64) // chunk) == prefill_iterations).all()
    service = prefill_s + outputs * (w + h)
    start = _dispatch_known_service(trace.arrival_s, service, 5, 1, dispatch)
    assert np.allclose(trace.slot_start_s, start, rtol=1e-9, atol=1e-9)
    assert np.allclose(trace.admission_s, trace.slot_start_s, rtol=1e-9, atol=1e-9)


def test_physical_iteration_arithmetic_with_constant_iteration_time() -> None:
    """H = 0: every iteration lasts W = 10 ms whatever the batch, so a request admitted at a
    boundary leaves exactly I·W later, has its first token (P + 1)·W after admission, and waits
    for admission less than one iteration after getting a slot (the ``slots`` scheduler)."""
    workload = _geometric_workload()
    pool = SimulatedPool("pool", 2, 8, 8192, 0.01, 0.0, 512, 8192)
    trace = simulate_fleet(
        workload,
        [pool],
        Routing(),
        arrival_rate_per_s=20.0,
        service_model="physical",
        requests=5_000,
        seeds=(5,),
        keep_requests=True,
        scheduler="slots",
    ).traces[0]
    assert np.allclose(trace.departure_s - trace.admission_s, trace.iterations * 0.01, rtol=1e-9)
    to_first_token = trace.first_token_s - trace.admission_s
    prefill = np.round(to_first_token / 0.01) - 1
    assert np.allclose(to_first_token, (prefill + 1) * 0.01, rtol=1e-9)
    assert (prefill >= 0).all() and (prefill < trace.iterations).all()
    alignment = trace.admission_s - trace.slot_start_s
    assert (alignment >= 0).all() and (alignment < 0.01 + 1e-12).all()
    assert (trace.slot_start_s >= trace.arrival_s).all()


def test_physical_iteration_time_lies_between_one_and_s_active_sequences() -> None:
    workload = _geometric_workload()
    w, h, s = 0.008, 0.00065, 16
    pool = SimulatedPool("pool", 3, s, 8192, w, h, 512, 8192)
    result = simulate_fleet(
        workload,
        [pool],
        Routing(),
        arrival_rate_per_s=40.0,
        service_model="physical",
        requests=5_000,
        seeds=(2,),
        keep_requests=True,
        scheduler="slots",
    )
    trace = result.traces[0]
    per_iteration = (trace.departure_s - trace.admission_s) / trace.iterations
    assert per_iteration.min() >= w * (1 - 1e-12)  # τ = 0: a prefill iteration of its own costs W
    assert per_iteration.max() <= (w + h * s) * (1 + 1e-12)
    # Lockstep assumes s active sequences at all times, an upper bound on the physical TPOT.
    assert result.pools[0].tpot_p99_s.mean <= w + h * s


def test_routing_fractions_equal_alpha_prime() -> None:
    """Short-pool share = F(B) + p_c·(F(γB) − F(B)) (FleetOpt Eq. 1) within binomial error.

    CDF: F(1,000) = 0.5, F(2,000) = 0.8, F(4,000) = 1, piecewise linear. B = 1,500, γ = 2,
    p_c = 0.6: F(1,500) = 0.65, F(3,000) = 0.9, α' = 0.65 + 0.6·0.25 = 0.8. The 0.8 split gives
    L_out = 0.2·L < B everywhere in the band, so every band request is eligible.
    """
    workload = workload_from_cdf(np.array([1000, 2000, 4000]), np.array([0.5, 0.8, 1.0]), name="cdf")
    pools = [
        SimulatedPool("short", 50, 64, 1500, 0.008, 0.00065, 512, 8192),
        SimulatedPool("long", 50, 16, 4000, 0.008, 0.00065, 512, 8192),
    ]
    result = simulate_fleet(
        workload,
        pools,
        Routing.two_pool(1500, 2.0, 0.6, 1.0),
        arrival_rate_per_s=100.0,
        requests=50_000,
        warmup_fraction=0.0,
        seeds=range(4),
    )
    share = np.mean(result.pools[0].routed_fraction.values)
    sd = math.sqrt(0.8 * 0.2 / (50_000 * 4))
    assert abs(share - 0.8) < 4.5 * sd
    assert np.allclose(
        np.add(result.pools[0].routed_fraction.values, result.pools[1].routed_fraction.values), 1
    )


def test_band_requests_with_long_outputs_are_never_compressed() -> None:
    """B = 1,000, γ = 2, p_c = 1: (in 900, out 100) ≤ B → short; (in 1,100, out 100) is in the
    band → compressed to (900, 100), short; (in 100, out 1,000) has L_out ≥ B → long;
    (in 2,500, out 100) is beyond γB → long. Weights 1:1:1:1 → short share exactly 0.5 ± binomial."""
    workload = workload_from_requests(
        np.array([900, 1100, 100, 2500]), np.array([100, 100, 1000, 100]), name="band"
    )
    pools = [
        SimulatedPool("short", 10, 8, 1000, 0.008, 0.00065, 512, 8192),
        SimulatedPool("long", 10, 8, 4000, 0.008, 0.00065, 512, 8192),
    ]
    result = simulate_fleet(
        workload,
        pools,
        Routing.two_pool(1000, 2.0, 1.0, 1.0),
        arrival_rate_per_s=5.0,
        requests=20_000,
        warmup_fraction=0.0,
        seeds=(1,),
        keep_requests=True,
    )
    short, long = result.traces
    assert abs(short.arrival_s.size / 20_000 - 0.5) < 4.5 * math.sqrt(0.25 / 20_000)
    # Short-pool requests are (900, 100) before or after compression: ⌈900/512⌉ + 100 iterations.
    assert set(short.iterations.tolist()) == {102}
    assert set(long.iterations.tolist()) == {1 + 1000, 5 + 100}


def test_same_seed_same_result_and_other_seed_differs() -> None:
    workload = _geometric_workload()
    pool = SimulatedPool("pool", 2, 4, 8192, 0.008, 0.002, 512, 8192)
    kwargs = dict(arrival_rate_per_s=3.0, service_model="physical", requests=3_000)
    first = simulate_fleet(workload, [pool], Routing(), seeds=(4,), **kwargs)
    again = simulate_fleet(workload, [pool], Routing(), seeds=(4,), **kwargs)
    other = simulate_fleet(workload, [pool], Routing(), seeds=(5,), **kwargs)
    assert first.per_seed == again.per_seed
    assert first.per_seed != other.per_seed


def test_replay_scales_the_log_to_the_target_rate_and_repeats_it() -> None:
    """Times 0, 1, 3 (log rate 2 / 3 s): at 4 req/s they become 0, 1/6, 1/2 (× 1/6); the copy
    starts one mean gap (1/4 s) after the last: 3/4, 11/12, 5/4."""
    workload = workload_from_requests(np.array([10]), np.array([1]), name="one")
    pool = _one_pool(slots=4, instances=2)
    result = simulate_fleet(
        workload,
        [pool],
        Routing(),
        arrival_rate_per_s=4.0,
        requests=6,
        warmup_fraction=0.0,
        seeds=(1,),
        arrival_times_s=np.array([3.0, 0.0, 1.0]),
        keep_requests=True,
    )
    expected = np.array([0, 1 / 6, 1 / 2, 3 / 4, 11 / 12, 5 / 4])
    assert np.allclose(result.traces[0].arrival_s, expected, rtol=1e-12)


def test_progress_reaches_the_total() -> None:
    workload = _geometric_workload()
    calls: list[tuple[int, int]] = []
    for model in ("lockstep", "physical"):
        calls.clear()
        simulate_fleet(
            workload,
            [_one_pool(slots=8, instances=4)],
            Routing(),
            arrival_rate_per_s=5.0,
            service_model=model,
            requests=9_000,
            seeds=(1, 2),
            progress=lambda done, total: calls.append((done, total)),
        )
        assert calls[-1] == (18_000, 18_000)
        assert all(b[0] >= a[0] for a, b in zip(calls, calls[1:], strict=False))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"service_model": "exact"}, "service model: 'exact' is not one of lockstep, fleet-sim, physical"),
        (
            {"dispatch": "fastest"},
            "dispatch: 'fastest' is not one of pooled, round-robin, least-loaded, least-kv, least-waiting, "
            "random, least-tokens",
        ),
        (
            {"dispatch": "least-kv"},
            "dispatch: 'least-kv' reads the engine's KV cache or waiting queue, which only the physical "
            "service model has; lockstep takes pooled, round-robin, least-loaded",
        ),
        ({"scheduler": "v0"}, "scheduler: 'v0' is not one of vllm, slots"),
        ({"arrival_rate_per_s": 0.0}, "arrival rate: 0.0 req/s must be a finite number > 0"),
        ({"warmup_fraction": 1.0}, "warm-up fraction: 1.0 must be in [0, 1)"),
    ],
)
def test_bad_arguments_raise_validation_errors(kwargs: dict, message: str) -> None:
    workload = workload_from_requests(np.array([10]), np.array([1]), name="one")
    arguments = {"arrival_rate_per_s": 1.0, "requests": 10} | kwargs
    with pytest.raises(ValidationError) as error:
        simulate_fleet(workload, [_one_pool()], Routing(), **arguments)
    assert str(error.value) == message


def test_request_longer_than_the_last_pool_context_is_refused() -> None:
    workload = workload_from_requests(np.array([9000]), np.array([1]), name="big")
    with pytest.raises(ValidationError, match="longest request \\(9001 tokens\\) exceeds pool 'pool'"):
        simulate_fleet(workload, [_one_pool()], Routing(), arrival_rate_per_s=1.0, requests=10)


def test_a_routing_needs_one_pool_per_range() -> None:
    workload = workload_from_requests(np.array([10]), np.array([1]), name="one")
    with pytest.raises(ValidationError, match=r"a routing with 1 boundaries takes 2 pool\(s\), got 1"):
        simulate_fleet(workload, [_one_pool()], Routing.two_pool(1000), arrival_rate_per_s=1.0, requests=10)


def test_short_warm_up_is_flagged_and_biases_the_time_average_low() -> None:
    """One shape of S = (1 + 99)·0.1 s = 10 s, λ = 200, c = 4,000: λ·S/c = 0.5 (nobody waits).

    A 0.3 s warm-up leaves the window's first 9.7 s under-occupied (requests a stationary system
    would have brought in before time 0 are missing: λ·9.7²/2 = 9,409 slot-s of 4,000 × 59.7,
    0.0394 of utilization): flagged, time average low; the work-based estimate does not depend on
    the warm-up.
    A 12 s warm-up covers S: both ≈ 0.5.
    """
    workload = workload_from_requests(np.array([512]), np.array([99]), name="d")
    pool = SimulatedPool("pool", 500, 8, 8192, 0.1, 0.0, 512, 8192)
    kwargs = dict(arrival_rate_per_s=200.0, requests=12_000, seeds=range(8))
    short = simulate_fleet(workload, [pool], Routing(), warmup_fraction=0.005, **kwargs).pools[0]
    long = simulate_fleet(workload, [pool], Routing(), warmup_fraction=0.2, **kwargs).pools[0]
    assert not short.warmed_up and long.warmed_up
    assert_within_band(list(short.utilization.values), 0.5 - 200 * 9.7**2 / 2 / (4000 * 59.7), 0.02)
    assert_within_band(list(long.utilization.values), 0.5, 0.02)
    assert_within_band(list(short.work_utilization.values), 0.5, 0.02)


# -- the compiled kernels (issue 18) ----------------------------------------------------------------


@settings(max_examples=12, deadline=None)
@given(
    st.integers(1, 12),
    st.integers(1, 6),
    st.integers(2, 2000),
    st.floats(0.3, 1.4),
    st.booleans(),
    st.integers(0, 2**31 - 1),
)
def test_compiled_and_interpreted_engines_start_every_request_at_the_same_time(
    instances: int, slots: int, count: int, load: float, ties: bool, seed: int
) -> None:
    """Request-level dispatch: the numba kernels (FCFS heap loop, least-loaded) and the plain
    Python paths they replace give bit-identical start times, ties in arrivals and ends included."""
    from fleetopt.core import engines

    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1.0, count))
    service = rng.exponential(instances * slots * load, count)
    if ties:  # equal arrival times and equal end times
        arrival, service = np.round(arrival), np.round(service) + 0.5
    for dispatch in ("pooled", "round-robin", "least-loaded"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(engines.JIT_ENV, "0")
            interpreted = engines.dispatch_known_service(arrival, service, instances, slots, dispatch)
        patch_free = engines.dispatch_known_service(arrival, service, instances, slots, dispatch)
        assert np.array_equal(interpreted, patch_free), dispatch


def test_the_kernels_are_compiled_when_numba_is_installed() -> None:
    pytest.importorskip("numba")
    from fleetopt.core import engines

    assert engines.jit_available()
    engines.dispatch_known_service(np.arange(5.0), np.ones(5), 2, 1, "least-loaded")
    assert type(engines._compiled(engines._least_loaded_kernel)).__module__.startswith("numba")


@pytest.mark.parametrize("jit", ["0", "1"])
def test_a_decoding_sequence_costs_its_kv_read_where_that_exceeds_h(jit: str) -> None:
    """One request alone on one instance (interpreted and compiled engines): L_in = 1,000 prefilled in
    one iteration of W + τ·1,000, then L_out = 100 decode iterations of W + max(H, κ_read·L),
    L = 1,100 — by hand: the departure comes 101 iterations after admission."""
    from fleetopt.core import engines

    w, h, tau = 0.01, 1e-4, 3e-5
    workload = workload_from_requests(np.array([1000]), np.array([100]), name="one")
    for kv_read, decode_s in ((1e-6, 1.1e-3), (1e-8, h)):  # κ·L = 1.1 ms > H; 11 µs < H
        pool = SimulatedPool(
            "one", 1, 4, 4096, w, h, 8192, prefill_per_token_s=tau, kv_read_s_per_token=kv_read
        )
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(engines.JIT_ENV, jit)
            trace = simulate_fleet(
                workload, [pool], Routing.homogeneous(), arrival_rate_per_s=1e-3, service_model="physical",
                requests=3, warmup_fraction=0.0, seeds=(1,), keep_requests=True, scheduler="slots",
            ).traces[0]  # fmt: skip
        expected = (w + tau * 1000) + 100 * (w + decode_s)
        np.testing.assert_allclose(trace.departure_s - trace.admission_s, expected, rtol=1e-12)
