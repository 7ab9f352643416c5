"""The M/G/c queue of a pool of KV-cache slots: Erlang B/C in log space and wait quantiles.

A pool of ``n`` instances with ``s`` slots each is an M/G/c queue with c = n·s servers, each
serving at μ = 1/E[S] per second (FleetOpt §3.1, Eq. 5–6). Offered load a = λ/μ (Erlangs),
utilization ρ = a/c.

Erlang B and C are evaluated in O(1) per point, in log space, through the Poisson identity

    B(c, a) = p(c; a) / P(c; a),     p = Poisson pmf, P = Poisson cdf (Σ_{k≤c} p(k; a)),
    C(c, a) = B / (1 − ρ(1 − B)) = c·B / (c − a + a·B),

with log p(c; a) in Loader's saddle-point form −stirlerr(c) − bd0(c, a) − ½·ln(2πc) (no
cancellation between c·ln a, a and lgamma(c+1), which costs ~1e-9 at c = 10⁷), and
ln P(c; a) = log1p(−Q), Q = P(X > c) = the regularized lower incomplete gamma γ(c+1, a)
(scipy, Temme's uniform expansion near the transition). So log C is exact to ~1e-14 even
where C itself underflows double precision (c = 10⁵, a = 85,000: C ≈ 1.7e-546). See
``docs/queueing.md`` for the derivation, sources and measured accuracy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from fleetopt.core.backends import ARRAYS, FLOATS, TINY
from fleetopt.errors import ValidationError

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
# atanh(v)-series cutoff for bd0: below it the all-positive series is used (no cancellation).
_BD0_SERIES_MAX_V = 0.5
_BD0_SERIES_TERMS = 30  # 0.5**(2·30) ≈ 9e-19: enough for full double precision at v ≤ 0.5
_LOG_BD0_SERIES_TOLERANCE = math.log(1e-17)
# Stirling's series for stirlerr(n) is accurate to < 1e-17 from this n on.
_STIRLERR_SERIES_MIN_N = 16.0
# Beyond this (a − c)/√a the Poisson cdf at c underflows; the Legendre continued fraction takes over.
_CF_MIN_Z = 30.0
_CF_ITERATIONS = 60
# Band of the Poisson tail where the lower-incomplete-gamma continued fraction replaces scipy.
_LOWER_CF_MIN_SHAPE = 200.0
_LOWER_CF_MIN_Z = 4.0
_LOWER_CF_MAX_Z = 10.0
_LOWER_CF_MAX_TERMS = 1200
# Up to this shape the continued fraction gives Q everywhere below the servers (≤ ~530 terms,
# ≤ 1e-13 relative, checked against mpmath in tests/test_queueing_mpmath.py), so planning pools
# of up to 10⁵ servers never imports scipy (~0.12 s of start-up); above it scipy's Temme
# expansion is both faster and more accurate near the mean.
_OWN_CF_MAX_SHAPE = 1e5


# ---------------------------------------------------------------------------------------------
# Poisson building blocks (Loader 2000, "Fast and accurate computation of binomial probabilities")
# ---------------------------------------------------------------------------------------------


def _stirlerr(xp: Any, n: Any) -> Any:
    """stirlerr(n) = ln Γ(n+1) − (n+½)·ln n + n − ½·ln(2π), the Stirling-series remainder, n ≥ 1."""
    big = xp.maximum(n, _STIRLERR_SERIES_MIN_N)
    nn = big * big
    series = (1.0 / 12 - (1.0 / 360 - (1.0 / 1260 - (1.0 / 1680 - (1.0 / 1188) / nn) / nn) / nn) / nn) / big
    small = xp.minimum(n, _STIRLERR_SERIES_MIN_N)
    direct = xp.lgamma(small + 1.0) - (small + 0.5) * xp.log(small) + small - _HALF_LOG_2PI
    return xp.where(n >= _STIRLERR_SERIES_MIN_N, series, direct)


def _bd0_series_terms(v2_max: float) -> int:
    """Terms of Σ_k v^{2k}/(2k+1) that matter in double precision: v^{2K} ≤ 1e-17 (≤ 30 at |v| ≤ ½).

    The tail left out is below v^{2K+2}/((2K+3)(1 − v²)), under 1e-17 of the leading v²."""
    if not v2_max > 0:
        return 1
    return min(_BD0_SERIES_TERMS, max(1, math.ceil(_LOG_BD0_SERIES_TOLERANCE / math.log(v2_max))))


def _bd0(xp: Any, x: Any, mean: Any) -> Any:
    """bd0(x, m) = x·ln(x/m) + m − x ≥ 0, the Poisson deviance term, without cancellation, m > 0.

    With v = (x − m)/(x + m): bd0 = (x + m)·g(v), g(v) = (1 + v)·atanh(v) − v
    = v² + Σ_{k≥1} (v^{2k+1} + v^{2k+2})/(2k+1), an all-positive series for |v| small.
    """
    total = x + mean
    v = (x - mean) / total  # x − m is exact (Sterbenz) whenever m is within a factor 2 of x
    near = xp.abs(v) <= _BD0_SERIES_MAX_V
    v_series = xp.where(near, v, 0.0)
    v2 = v_series * v_series
    # Horner evaluation of Σ_{k≥1} v^{2k}/(2k+1), then g = v² + (v + v²)·that sum.
    tail = 0.0
    for k in range(_bd0_series_terms(xp.largest(v2)), 0, -1):
        tail = (tail + 1.0 / (2 * k + 1)) * v2
    series = total * (v2 + (v_series + v2) * tail)
    # Far from the mean (x/m > 3 or < 1/3) the direct form has only mild cancellation; atanh(v)
    # would be ill-conditioned there (v → ±1), ln(x/m) is not.
    direct = x * xp.log(x / mean) + (mean - x)
    return xp.where(near, series, direct)


def _poisson_log_pmf(xp: Any, k: Any, mean: Any) -> Any:
    """ln p(k; m) = −stirlerr(k) − bd0(k, m) − ½·ln(2πk) (Loader's saddle-point form), k ≥ 1, m > 0."""
    return -_stirlerr(xp, k) - _bd0(xp, k, mean) - _HALF_LOG_2PI - 0.5 * xp.log(k)


def _log_upper_gamma_ratio_cf(xp: Any, s: Any, x: Any) -> Any:
    """ln[Γ(s, x) / (e^{−x}·x^s)] by Legendre's continued fraction (modified Lentz), for x ≫ s.

    Used only where the Poisson cdf underflows (load far above the servers, Erlang B only);
    it converges in under ten terms there.
    """
    b = x + 1.0 - s
    c = 1.0 / TINY
    d = 1.0 / b
    h = d
    for i in range(1, _CF_ITERATIONS):
        an = -i * (i - s)
        b = b + 2.0
        d = 1.0 / xp.not_tiny(an * d + b)
        c = xp.not_tiny(b + an / c)
        h = h * d * c
    return xp.log(h)


def _lower_gamma_ratio_cf(xp: Any, s: Any, x: Any) -> Any:
    """r = γ(s, x) / (x^s·e^{−x}) by the continued fraction (DLMF 8.9.2), modified Lentz, x < s.

    γ(s, x) = x^s e^{−x} / (s − s·x/(s+1 + x/(s+2 − (s+1)·x/(s+3 + 2x/(s+4 − …))))). Used where
    (s − x)/√s ≥ 4: it converges there in ≤ ~60 terms whatever s is (measured up to s = 10⁹),
    where the power series (scipy's path, capped at 2,000 terms) needs ~40/(1 − x/s) terms
    and loses up to 1e-5 relative at s ≥ 10⁶. On arrays it stops when every point has converged.
    """
    f = c = s
    d = 0.0
    for n in range(1, _LOWER_CF_MAX_TERMS + 1):
        a_n = -(s + (n - 1) // 2) * x if n % 2 == 1 else (n // 2) * x
        b_n = s + n
        d = 1.0 / xp.not_tiny(b_n + a_n * d)
        c = xp.not_tiny(b_n + a_n / c)
        delta = c * d
        f = f * delta
        if n % 8 == 0 and xp.all(xp.abs(delta - 1.0) < 1e-16):
            break
    return 1.0 / f


# ---------------------------------------------------------------------------------------------
# Erlang B, Erlang C and the waits (each written once; ``xp`` is ``FLOATS`` or ``ARRAYS``)
# ---------------------------------------------------------------------------------------------


def _upper_tail_by_continued_fraction(xp: Any, s: Any, load: Any, log_pmf: Any) -> Any:
    return _lower_gamma_ratio_cf(xp, s, load) * load * xp.exp(log_pmf)


def _upper_tail_by_scipy(xp: Any, s: Any, load: Any, log_pmf: Any) -> Any:
    return xp.gammainc(s, load)


def _log_erlang_b_below_servers(xp: Any, servers: Any, load: Any, log_pmf: Any) -> Any:
    """ln B = ln p(c; a) − ln P(c; a) for a < c, ln P = log1p(−Q), Q = P(X > c) = γ(c+1, a)/Γ(c+1).

    Q ≤ ~½ here, so log1p(−Q) is accurate to ~1e-16. Q = r·a·p(c; a) with r from the continued
    fraction above wherever c + 1 ≤ 10⁵ (≤ ~530 terms, ≤ 1e-13 relative), and in the band
    4 ≤ (c+1 − a)/√(c+1) ≤ 10 at any c, where scipy falls back to a truncated power series.
    Elsewhere Q comes from scipy's regularized incomplete gamma (Temme's uniform expansion near
    the mean, ≤ 1e-14 relative as measured); beyond the band Q < 1e-20 and its relative accuracy
    no longer matters.
    """
    s = servers + 1.0
    z = (s - load) / xp.sqrt(s)
    in_band = (s > _LOWER_CF_MIN_SHAPE) & (z >= _LOWER_CF_MIN_Z) & (z <= _LOWER_CF_MAX_Z)
    band = (s <= _OWN_CF_MAX_SHAPE) | in_band
    upper_tail = xp.piecewise(band, _upper_tail_by_continued_fraction, _upper_tail_by_scipy, s, load, log_pmf)
    return log_pmf - xp.log1p(-upper_tail)


def _log_erlang_b_far_above_servers(xp: Any, servers: Any, load: Any, log_pmf: Any) -> Any:
    return -_log_upper_gamma_ratio_cf(xp, servers + 1.0, load) - xp.log(load)


def _log_erlang_b_near_above_servers(xp: Any, servers: Any, load: Any, log_pmf: Any) -> Any:
    return log_pmf - xp.log_or_minus_inf(xp.gammaincc(servers + 1.0, load))


def _log_erlang_b_above_servers(xp: Any, servers: Any, load: Any, log_pmf: Any) -> Any:
    """ln B(c, a) for a ≥ c (Erlang B beyond saturation only).

    ln p(c; a) − ln P(c; a) with P from scipy's regularized upper incomplete gamma, except where
    P would underflow, (a − c) ≥ 30·√a: there P = R·a·p(c; a), R = Γ(c+1, a)/(e^{−a}·a^{c+1}) by
    Legendre's continued fraction (under ten terms that far out), so B = 1/(a·R) exactly, with
    no cancellation of the huge ln p(c; a).
    """
    far = (load - servers) >= _CF_MIN_Z * xp.sqrt(load)
    return xp.piecewise(
        far, _log_erlang_b_far_above_servers, _log_erlang_b_near_above_servers, servers, load, log_pmf
    )


def _log_erlang_b(xp: Any, servers: Any, load: Any) -> Any:
    """ln B(c, a) = ln p(c; a) − ln P(c; a), c ≥ 1, a > 0."""
    log_pmf = _poisson_log_pmf(xp, servers, load)
    log_b = xp.piecewise(
        load < servers, _log_erlang_b_below_servers, _log_erlang_b_above_servers, servers, load, log_pmf
    )
    return xp.minimum(log_b, 0.0)


def _log_erlang_b_or_zero_load(xp: Any, servers: Any, load: Any) -> Any:
    """ln B(c, a) for c ≥ 1, a ≥ 0: −inf at a = 0."""
    return xp.piecewise(load > 0, _log_erlang_b, _minus_inf, servers, load)


def _minus_inf(xp: Any, servers: Any, load: Any) -> float:
    return -math.inf


def _log_erlang_c_stable(xp: Any, servers: Any, load: Any) -> Any:
    """ln C = ln(c·B / (c − a + a·B)) for 0 < a < c; c − a is exact when a ≥ c/2 (Sterbenz),
    so 1 − ρ never loses digits as a → c."""
    log_b = _log_erlang_b(xp, servers, load)
    return xp.minimum(log_b + xp.log(servers) - xp.log((servers - load) + load * xp.exp(log_b)), 0.0)


def _log_erlang_c_edges(xp: Any, servers: Any, load: Any) -> Any:
    """ln C at a = 0 (−inf: nobody waits) and a ≥ c (0: every arrival waits)."""
    return xp.where(load == 0, -math.inf, 0.0)


def _log_erlang_c(xp: Any, servers: Any, load: Any) -> Any:
    """ln C(c, a) for c ≥ 1, a ≥ 0 (−inf at a = 0, 0 for a ≥ c); see ``log_erlang_c``."""
    return xp.piecewise(
        (load > 0) & (load < servers), _log_erlang_c_stable, _log_erlang_c_edges, servers, load
    )


def _stable_waits(
    xp: Any, log_no_wait: float, servers: Any, rate: Any, service_rate: Any, variability: Any
) -> tuple[Any, Any]:
    """W_q = max(0, ln C − ln(1 − q))·v/(cμ − λ) and E[W] = C·v/(cμ − λ) for λ < cμ, v = variability."""
    log_c = _log_erlang_c(xp, servers, rate / service_rate)
    slack_per_s = servers * service_rate - rate
    excess = xp.maximum(log_c - log_no_wait, 0.0)
    quantile_wait = xp.where(excess > 0, excess * variability / slack_per_s, 0.0)
    prob_wait = xp.exp(log_c)
    mean = xp.where(prob_wait > 0, prob_wait * variability / slack_per_s, 0.0)
    return quantile_wait, mean


def _unstable_waits(
    xp: Any, log_no_wait: float, servers: Any, rate: Any, service_rate: Any, variability: Any
) -> tuple[float, float]:
    return math.inf, math.inf


def _wait_statistics(xp: Any, q: Any, servers: Any, rate: Any, service_rate: Any, variability: Any) -> Any:
    """(q-quantile, mean) of the wait, seconds; (inf, inf) when λ ≥ cμ. ``variability`` is
    (C_a² + C_s²)/2; see ``wait_quantile`` and ``mean_wait`` for the model."""
    stable = rate < servers * service_rate
    log_no_wait = math.log1p(-q)
    return xp.piecewise(
        stable, _stable_waits, _unstable_waits, log_no_wait, servers, rate, service_rate, variability
    )


def peakedness(arrival_scv: float) -> float:
    """z = (1 + C_a²)/2, the peakedness of an arrival stream with SCV C_a² (Whitt 1992): 1 for Poisson."""
    return 0.5 * (1.0 + arrival_scv)


def unchecked_wait_statistics(
    q: float, servers: float, arrival_rate_per_s: float, service_rate_per_s: float, service_scv: float,
    arrival_scv: float = 1.0,
) -> tuple[float, float]:  # fmt: skip
    """(q-quantile, mean) of the wait for one point, unchecked (valid arguments assumed), seconds.

    The formulas of ``unchecked_wait_statistics_arrays``, evaluated on plain floats.
    """
    variability = 0.5 * (arrival_scv + service_scv)
    return _wait_statistics(FLOATS, q, servers, arrival_rate_per_s, service_rate_per_s, variability)


# ---------------------------------------------------------------------------------------------
# Argument handling
# ---------------------------------------------------------------------------------------------


def _as_array(value: Any, name: str) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValidationError(f"{name}: {value!r} is not a number") from None
    if np.any(np.isnan(array)):
        raise ValidationError(f"{name}: NaN is not allowed")
    return array


def _check_servers(c: np.ndarray) -> None:
    if np.any(~np.isfinite(c)) or np.any(c < 1):
        bad = c[~np.isfinite(c) | (c < 1)].flat[0]
        raise ValidationError(f"servers: {bad:g} is not allowed; the number of servers must be ≥ 1")


def _servers_and_load(servers: Any, offered_load: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    c = _as_array(servers, "servers")
    a = _as_array(offered_load, "offered_load")
    _check_servers(c)
    if np.any(a < 0) or np.any(~np.isfinite(a)):
        bad = a[(a < 0) | ~np.isfinite(a)].flat[0]
        raise ValidationError(
            f"offered_load: {bad:g} is not allowed; the load (Erlangs) must be finite and ≥ 0"
        )
    scalar = c.ndim == 0 and a.ndim == 0
    c, a = np.broadcast_arrays(c, a)
    return c, a, scalar


def _plain(value: Any) -> float | None:
    """``value`` as a float when it is one real number (Python or NumPy, not bool), else None."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return float(value)
    return None


def _valid_point(servers: Any, offered_load: Any) -> tuple[float, float] | None:
    """(c, a) as floats when both are plain numbers in the domain (c ≥ 1, a ≥ 0, finite), else None
    (then the checked array path runs and raises the usual errors)."""
    c, a = _plain(servers), _plain(offered_load)
    if c is None or a is None or not (math.isfinite(c) and c >= 1 and math.isfinite(a) and a >= 0):
        return None
    return c, a


def _out(values: np.ndarray, scalar: bool) -> float | np.ndarray:
    return float(values) if scalar else values


# ---------------------------------------------------------------------------------------------
# Public: Erlang B and C
# ---------------------------------------------------------------------------------------------


def log_erlang_b(servers: Any, offered_load: Any) -> float | np.ndarray:
    """ln B(c, a), the Erlang-B (M/M/c/c loss) probability, natural log; −inf at a = 0.

    B(c, a) = (a^c/c!) / Σ_{k=0}^{c} a^k/k! = p(c; a)/P(c; a) (Poisson pmf over cdf).
    ``servers`` c ≥ 1 (integers; real c gives the usual incomplete-gamma extension),
    ``offered_load`` a = λ/μ ≥ 0 in Erlangs. Broadcasts; scalars in → float out.
    """
    point = _valid_point(servers, offered_load)
    if point is not None:
        return _log_erlang_b_or_zero_load(FLOATS, *point)
    c, a, scalar = _servers_and_load(servers, offered_load)
    if scalar:
        return _log_erlang_b_or_zero_load(FLOATS, float(c), float(a))
    return _log_erlang_b_or_zero_load(ARRAYS, c, a)


def erlang_b(servers: Any, offered_load: Any) -> float | np.ndarray:
    """B(c, a), the Erlang-B blocking probability of an M/M/c/c loss system (see ``log_erlang_b``)."""
    return _exp_keep(log_erlang_b(servers, offered_load))


def log_erlang_c(servers: Any, offered_load: Any) -> float | np.ndarray:
    """ln C(c, a), the Erlang-C probability that an arrival waits (M/M/c), natural log.

    C = B / (1 − ρ(1 − B)) = c·B / (c − a + a·B), ρ = a/c (FleetOpt Eq. 5 and Eq. 16 are the
    same quantity written as sums). ``servers`` c ≥ 1, ``offered_load`` a = λ/μ ≥ 0 Erlangs.
    Returns −inf at a = 0 and 0 (C = 1: every arrival waits; the queue is unstable) for a ≥ c.
    Finite even where C underflows (e.g. c = 10⁵, a = 85,000: ln C ≈ −1256.3).
    """
    point = _valid_point(servers, offered_load)
    if point is not None:
        return _log_erlang_c(FLOATS, *point)
    c, a, scalar = _servers_and_load(servers, offered_load)
    if scalar:
        return _log_erlang_c(FLOATS, float(c), float(a))
    return _log_erlang_c(ARRAYS, c, a)


def erlang_c(servers: Any, offered_load: Any) -> float | np.ndarray:
    """C(c, a), the Erlang-C probability of waiting (FleetOpt Eq. 5); 1 for a ≥ c. See ``log_erlang_c``."""
    return _exp_keep(log_erlang_c(servers, offered_load))


def _exp_keep(log_value: float | np.ndarray) -> float | np.ndarray:
    if isinstance(log_value, float):
        return math.exp(log_value)
    return np.exp(log_value)


# ---------------------------------------------------------------------------------------------
# Public: waits
# ---------------------------------------------------------------------------------------------


def _rates(
    servers: Any, arrival_rate_per_s: Any, service_rate_per_s: Any, service_scv: Any, arrival_scv: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    c = _as_array(servers, "servers")
    lam = _as_array(arrival_rate_per_s, "arrival_rate_per_s")
    mu = _as_array(service_rate_per_s, "service_rate_per_s")
    cs2 = _as_array(service_scv, "service_scv")
    ca2 = _as_array(arrival_scv, "arrival_scv")
    _check_servers(c)
    if np.any(~np.isfinite(mu) | (mu <= 0)):
        bad = mu[~np.isfinite(mu) | (mu <= 0)].flat[0]
        raise ValidationError(f"service_rate_per_s: {bad:g} is not allowed; it must be positive and finite")
    if np.any(~np.isfinite(lam) | (lam < 0)):
        bad = lam[~np.isfinite(lam) | (lam < 0)].flat[0]
        raise ValidationError(f"arrival_rate_per_s: {bad:g} is not allowed; it must be finite and ≥ 0")
    for name, value in (("service_scv", cs2), ("arrival_scv", ca2)):
        if np.any(~np.isfinite(value) | (value < 0)):
            bad = value[~np.isfinite(value) | (value < 0)].flat[0]
            raise ValidationError(
                f"{name}: {bad:g} is not allowed; a squared coefficient of variation is ≥ 0"
            )
    scalar = all(np.ndim(x) == 0 for x in (c, lam, mu, cs2, ca2))
    c, lam, mu, cs2, ca2 = np.broadcast_arrays(c, lam, mu, cs2, ca2)
    variability = 0.5 * (ca2 + cs2)
    return c, lam, mu, variability, scalar


def _waits(
    q: float,
    servers: Any,
    arrival_rate_per_s: Any,
    service_rate_per_s: Any,
    service_scv: Any,
    arrival_scv: Any,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """(q-quantile, mean) of the wait from one evaluation of ln C; see ``wait_quantile``/``mean_wait``."""
    if not (isinstance(q, (int, float)) and 0.0 < q < 1.0):
        raise ValidationError(f"quantile: {q!r} is not allowed; it must be strictly between 0 and 1")
    point = [_plain(v) for v in (servers, arrival_rate_per_s, service_rate_per_s, service_scv, arrival_scv)]
    if all(v is not None for v in point):
        c, lam, mu, cs2, ca2 = point
        if (
            math.isfinite(c) and c >= 1 and math.isfinite(lam) and lam >= 0 and math.isfinite(mu) and mu > 0
            and math.isfinite(cs2) and cs2 >= 0 and math.isfinite(ca2) and ca2 >= 0
        ):  # fmt: skip
            quantile_wait, mean = unchecked_wait_statistics(q, c, lam, mu, cs2, ca2)
            return np.float64(quantile_wait), np.float64(mean), True
    c, lam, mu, variability, scalar = _rates(
        servers, arrival_rate_per_s, service_rate_per_s, service_scv, arrival_scv
    )
    if scalar:
        quantile_wait, mean = _wait_statistics(FLOATS, q, float(c), float(lam), float(mu), float(variability))
        return np.float64(quantile_wait), np.float64(mean), True
    quantile_wait, mean = unchecked_wait_statistics_arrays(q, c, lam, mu, variability)
    return quantile_wait, mean, False


def unchecked_wait_statistics_arrays(
    q: float, c: np.ndarray, lam: np.ndarray, mu: np.ndarray, variability: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray]:
    """(q-quantile, mean) of the wait on valid, broadcast float arrays (unchecked), seconds.

    ``variability`` is (C_a² + C_s²)/2 (an array of the same shape, or one float). The formulas
    of ``unchecked_wait_statistics``, evaluated on arrays.
    """
    if not isinstance(variability, float) and np.ndim(variability) == 0:
        variability = float(variability)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _wait_statistics(ARRAYS, q, np.asarray(c, dtype=float), lam, mu, variability)


def wait_quantile(
    q: float,
    servers: Any,
    arrival_rate_per_s: Any,
    service_rate_per_s: Any,
    service_scv: Any,
    arrival_scv: Any = 1.0,
) -> float | np.ndarray:
    """The q-quantile of the queueing wait (seconds), two-moment exponential-tail approximation.

    W_q = max(0, ln(C/(1 − q))) · (C_a² + C_s²)/2 / (cμ − λ); +inf when λ ≥ cμ.

    P(W > t) ≈ C·exp(−(cμ − λ)·t / ((C_a² + C_s²)/2)) — exact for M/M/c (C_a² = C_s² = 1); at
    C_a² = 1, q = 0.99 it is FleetOpt Eq. 6, an exponential-tail heuristic built on Kimura's
    (1994) mean-wait correction, clamped at 0 (FACTS §2 item 6). ``servers`` c (slots),
    ``service_rate_per_s`` μ per server (1/E[S]), SCVs ≥ 0. ln C comes from ``log_erlang_c``,
    so it stays right where C underflows. Broadcasts over every array argument.
    """
    quantile_wait, _, scalar = _waits(
        q, servers, arrival_rate_per_s, service_rate_per_s, service_scv, arrival_scv
    )
    return _out(quantile_wait, scalar)


def mean_wait(
    servers: Any,
    arrival_rate_per_s: Any,
    service_rate_per_s: Any,
    service_scv: Any,
    arrival_scv: Any = 1.0,
) -> float | np.ndarray:
    """Mean queueing wait (seconds): E[W] ≈ C/(cμ − λ) · (C_a² + C_s²)/2; +inf when λ ≥ cμ.

    Exact for M/M/c at C_a² = C_s² = 1; the (C_a² + C_s²)/2 factor is the two-moment
    correction (Kimura 1994, the form FleetOpt §3.1 uses). Units and broadcasting as ``wait_quantile``.
    """
    _, mean, scalar = _waits(0.5, servers, arrival_rate_per_s, service_rate_per_s, service_scv, arrival_scv)
    return _out(mean, scalar)


def wait_statistics(
    q: float,
    servers: Any,
    arrival_rate_per_s: Any,
    service_rate_per_s: Any,
    service_scv: Any,
    arrival_scv: Any = 1.0,
) -> tuple[float | np.ndarray, float | np.ndarray]:
    """(``wait_quantile``, ``mean_wait``) at once, from a single Erlang-C evaluation (seconds)."""
    quantile_wait, mean, scalar = _waits(
        q, servers, arrival_rate_per_s, service_rate_per_s, service_scv, arrival_scv
    )
    return _out(quantile_wait, scalar), _out(mean, scalar)


# ---------------------------------------------------------------------------------------------
# Public: an arbitrary-precision reference (``fleetopt queue --exact``)
# ---------------------------------------------------------------------------------------------

#: Up to this many servers the exact path runs the Erlang-B recursion; above, the Poisson identity.
EXACT_RECURSION_MAX_SERVERS = 2_000


@dataclass(frozen=True)
class ExactErlang:
    """Erlang B and C at ``digits`` significant decimal digits (mpmath), as decimal strings.

    Attributes:
        digits: working precision, decimal digits.
        erlang_b, erlang_c: the probabilities, to ``digits`` significant digits (strings, so that
            values below double precision's range survive JSON).
        log10_erlang_c: log₁₀ C as a float.
        relative_difference_erlang_c: |fast / exact − 1| for the double-precision ``erlang_c`` where
            C ≥ 1e-300, else the same on ln C (|Δ ln C| / max(1, |ln C|)).
        method: ``recursion`` (B_k = a·B_{k−1} / (k + a·B_{k−1}), B_0 = 1) or ``incomplete gamma``
            (B = p(c; a) / P(c; a) with mpmath's regularized upper incomplete gamma).
    """

    digits: int
    erlang_b: str
    erlang_c: str
    log10_erlang_c: float
    relative_difference_erlang_c: float
    method: str


def exact_erlang(servers: int, offered_load: float, digits: int = 50) -> ExactErlang:
    """Erlang B and C of (c, a) with mpmath at ``digits`` digits, beside the fast double path.

    c ≤ 2,000: the Erlang-B recursion, every term positive (no cancellation), O(c). Above it,
    B = p(c; a) / P(c; a): ln p = c·ln a − a − ln Γ(c+1) and P = Γ(c+1, a)/Γ(c+1) (mpmath's
    regularized incomplete gamma, the lower one when a ≤ 0.99c). C = c·B / (c − a + a·B). Needs
    0 < a < c (a stable queue); slow by design (milliseconds to seconds at c = 10⁷).
    """
    import mpmath

    c, a = int(servers), float(offered_load)
    if not (c >= 1 and 0 < a < c):
        raise ValidationError(
            f"exact Erlang C needs servers ≥ 1 and 0 < load < servers; got servers {servers!r}, load {a!r}"
        )
    # ln p = c·ln a − a − ln Γ(c+1) cancels about log₁₀(20c) digits: carry them as guard digits.
    with mpmath.workdps(digits + 10 + len(str(20 * c))):
        load = mpmath.mpf(a)
        if c <= EXACT_RECURSION_MAX_SERVERS:
            b = mpmath.mpf(1)
            for k in range(1, c + 1):
                b = load * b / (k + load * b)
            method = "recursion"
        else:
            n = mpmath.mpf(c)
            log_pmf = n * mpmath.log(load) - load - mpmath.loggamma(n + 1)
            if load <= mpmath.mpf("0.99") * n:
                cdf = 1 - mpmath.gammainc(n + 1, 0, load, regularized=True)
            else:
                cdf = mpmath.gammainc(n + 1, load, mpmath.inf, regularized=True)
            b = mpmath.exp(log_pmf) / cdf
            method = "incomplete gamma"
        n = mpmath.mpf(c)
        erlang_c_exact = n * b / (n - load + load * b)
        log_exact = mpmath.log(erlang_c_exact)
        fast_log = _log_erlang_c(FLOATS, float(c), a)
        if erlang_c_exact >= mpmath.mpf("1e-300"):
            difference = abs(mpmath.mpf(math.exp(fast_log)) / erlang_c_exact - 1)
        else:
            difference = abs(mpmath.mpf(fast_log) - log_exact) / max(1, abs(log_exact))
        return ExactErlang(
            digits=digits,
            erlang_b=mpmath.nstr(b, digits, min_fixed=-4, max_fixed=4),
            erlang_c=mpmath.nstr(erlang_c_exact, digits, min_fixed=-4, max_fixed=4),
            log10_erlang_c=float(log_exact / mpmath.log(10)),
            relative_difference_erlang_c=float(difference),
            method=method,
        )
