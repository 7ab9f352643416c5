"""Speed and accuracy of fleetopt's Erlang C against the O(c) log-sum loop and mpmath, same run.

Run: ``python benchmarks/bench_queueing.py`` (about half a minute on 2 cores).

Speed: evaluations per second of the vectorized ``erlang_c`` on 10⁵ loads (utilization spread
over 0.5–0.999, which includes the Poisson-tail band handled by the continued fraction) at
c = 10², 10⁴, 10⁶, next to the papers' reference method — an O(c) log-sum-exp loop over the
terms of FleetOpt Eq. 5, written here — and mpmath at 50 digits. Accuracy: the largest relative
error against mpmath over random (c, a) with c log-uniform in [1, 10⁷] and 1 − ρ log-uniform
in [3e-7, 1] (on C where C ≥ 1e-300, on ln C below).
"""

from __future__ import annotations

import math
import time

import mpmath
import numpy as np

from fleetopt.core.queueing import (
    erlang_c,
    log_erlang_c,
    unchecked_wait_statistics,
    unchecked_wait_statistics_arrays,
    wait_quantile,
)

LOADS_PER_CALL = 100_000
SERVER_COUNTS = (100, 10_000, 1_000_000)
ACCURACY_SAMPLES = 3000


def erlang_c_log_sum_loop(servers: int, load: float) -> float:
    """FleetOpt Eq. 5 by an O(c) log-sum-exp loop over the terms a^k/k! (the papers' reference method)."""
    log_load = math.log(load)
    log_last = servers * log_load - math.lgamma(servers + 1) - math.log1p(-load / servers)
    log_term = 0.0  # k = 0
    running_max = max(log_term, log_last)
    total = math.exp(log_term - running_max)
    for k in range(1, servers):
        log_term += log_load - math.log(k)
        if log_term > running_max:
            total *= math.exp(running_max - log_term)
            running_max = log_term
        total += math.exp(log_term - running_max)
    log_denominator = running_max + math.log(total + math.exp(log_last - running_max))
    return math.exp(log_last - log_denominator)


def erlang_c_mpmath(servers: int, load: float, digits: int = 50) -> mpmath.mpf:
    """C at ``digits`` digits: B = p(c; a)/P(c; a) via mpmath's incomplete gamma, C = cB/(c − a + aB)."""
    with mpmath.workdps(digits):
        c, a = mpmath.mpf(servers), mpmath.mpf(load)
        log_pmf = c * mpmath.log(a) - a - mpmath.loggamma(c + 1)
        if a <= mpmath.mpf("0.99") * c:
            cdf = 1 - mpmath.gammainc(c + 1, 0, a, regularized=True)
        else:
            cdf = mpmath.gammainc(c + 1, a, mpmath.inf, regularized=True)
        b = mpmath.exp(log_pmf) / cdf
        return c * b / (c - a + a * b)


def _rate(function, count: int, repeats: int = 3) -> float:
    """Evaluations per second, best of ``repeats`` runs of ``function()`` doing ``count`` evaluations."""
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return count / best


def _timed_loop(function, args_list: list[tuple[int, float]], budget_s: float = 1.0) -> float:
    done, start = 0, time.perf_counter()
    while done < len(args_list) and (done == 0 or time.perf_counter() - start < budget_s):
        function(*args_list[done])
        done += 1
    return done / (time.perf_counter() - start)


def speed_table() -> list[tuple[int, float, float, float]]:
    rows = []
    for servers in SERVER_COUNTS:
        utilizations = np.linspace(0.5, 0.999, LOADS_PER_CALL)
        loads = servers * utilizations
        erlang_c(servers, loads[:10])  # warm-up
        vectorized = _rate(lambda loads=loads, servers=servers: erlang_c(servers, loads), LOADS_PER_CALL)
        sample = [(servers, float(servers * u)) for u in np.linspace(0.5, 0.999, 50)]
        loop = _timed_loop(erlang_c_log_sum_loop, sample)
        exact = _timed_loop(erlang_c_mpmath, sample)
        rows.append((servers, vectorized, loop, exact))
    return rows


def accuracy(samples: int = ACCURACY_SAMPLES, seed: int = 7) -> tuple[float, float, int]:
    rng = np.random.default_rng(seed)
    worst_value, worst_log, underflowed = 0.0, 0.0, 0
    for _ in range(samples):
        servers = int(round(10 ** rng.uniform(0, 7)))
        load = float(servers * (1 - 10 ** rng.uniform(-6.5, 0)))
        if load <= 0:
            continue
        exact = erlang_c_mpmath(servers, load)
        with mpmath.workdps(50):
            log_exact = mpmath.log(exact)
            log_error = abs(mpmath.mpf(log_erlang_c(servers, load)) - log_exact) / max(1, abs(log_exact))
            worst_log = max(worst_log, float(log_error))
            if exact >= mpmath.mpf("1e-300"):
                worst_value = max(worst_value, float(abs(mpmath.mpf(erlang_c(servers, load)) / exact - 1)))
            else:
                underflowed += 1
    return worst_value, worst_log, underflowed


def main() -> None:
    print(
        f"Erlang C, evaluations per second (vectorized: one call on {LOADS_PER_CALL:,} loads, ρ = 0.5–0.999)"
    )
    header = ("servers c", "vectorized", "O(c) loop", "mpmath 50d", "vec/loop", "vec/mpmath")
    print(" ".join(f"{h:>12}" for h in header))
    rows = speed_table()
    for servers, vectorized, loop, exact in rows:
        print(
            f"{servers:>12,} {vectorized:>12.3g} {loop:>12.3g} {exact:>12.3g} "
            f"{vectorized / loop:>12.3g} {vectorized / exact:>12.3g}"
        )
    print(f"O(1) check: vectorized rate at c = 10⁶ / at c = 10² = {rows[-1][1] / rows[0][1]:.2f}")

    slots = np.arange(1, 10_001) * 8
    wait_rate = _rate(lambda: wait_quantile(0.99, slots, 1000.0, 0.5, 2.0), slots.size)
    print(f"wait_quantile over an array of {slots.size:,} slot counts: {wait_rate:.3g} evaluations/s")
    # One point at a time (what the planner's sizing loops do): the float backend against the
    # same point as a 1-element array through the array backend, in the same run; and the
    # planner's unchecked one-point entry against the same points batched into one array call.
    points = [(int(c), float(c) * u) for c in (10, 1_000, 100_000) for u in (0.5, 0.9, 0.99)]
    scalar_rate = _rate(lambda: [log_erlang_c(c, a) for c, a in points], len(points))
    array_points = [(np.array([c]), np.array([a])) for c, a in points]
    one_element_rate = _rate(lambda: [log_erlang_c(c, a) for c, a in array_points], len(points))
    print(
        f"one point per call: float backend {scalar_rate:.3g}/s, "
        f"1-element arrays {one_element_rate:.3g}/s ({scalar_rate / one_element_rate:.1f}× faster)"
    )
    servers = np.array([float(c) for c, _ in points])
    loads = np.array([a for _, a in points])
    unchecked_rate = _rate(
        lambda: [unchecked_wait_statistics(0.99, c, a, 1.0, 1.5) for c, a in points], len(points)
    )
    batched_rate = _rate(
        lambda: unchecked_wait_statistics_arrays(0.99, servers, loads, np.ones(len(points)), 1.25),
        len(points),
    )
    print(
        f"unchecked_wait_statistics, one point per call: {unchecked_rate:.3g}/s; the same "
        f"{len(points)} points in one unchecked_wait_statistics_arrays call: {batched_rate:.3g}/s"
    )
    worst_value, worst_log, underflowed = accuracy()
    print(
        f"accuracy vs mpmath ({ACCURACY_SAMPLES:,} random points, c ≤ 10⁷): max relative error of C "
        f"{worst_value:.2e} (where C ≥ 1e-300); max |Δ ln C|/max(1, |ln C|) {worst_log:.2e} "
        f"({underflowed} points with C < 1e-300)"
    )


if __name__ == "__main__":
    main()
