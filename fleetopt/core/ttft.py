"""The distribution of time to first token on an iteration-level engine, by its first three cumulants.

One instance of a pool runs iterations of length t = t_d + τ·X: t_d = W + c_d·k is the decode side
(k sequences in flight), X the prompt tokens in the iteration (each prefilling request puts one
chunk of at most C tokens into each of its P = ⌈L_in / C⌉ prefill iterations). A request arriving
at the instance waits for the iteration in progress to end (the residual R of a length-biased
iteration), is admitted at that boundary, prefills in iterations 1 … P and has its first token at
the end of iteration P + 1 (what the ``physical`` simulator does), so

    TTFT = T0 + slot wait + R + Σ_{i=1}^{P+1} t_i.

**Intake.** The other requests' prompts in those iterations come from the instance's intake. One
instance fed by Poisson arrivals at λ_i = λ/n takes in prompts in proportion to the time it
spends, so a long iteration attracts more prompts into the next one (a branching structure). A
pool of n instances behind a least-loaded (join-the-shortest-queue) router feeds an instance as
its sequences leave, at its iteration boundaries, not in proportion to the length of its
iterations. We model the intake as a share f = 1/n that follows the instance's own time
(Poisson at f·λ_i per second: exact for one instance) and a share 1 − f admitted as a Poisson
number of requests with mean (1 − f)·λ_i·t̄ at every boundary, t̄ = t_d / (1 − u) the mean
iteration, u = λ_i·τ·E[L_in] the share of time spent on prompts. ``time_share=1`` gives random
(Poisson-splitting) dispatch. Both limits are exact forms of this linear model; f = 1/n between
them is our interpolation, checked against the simulation (docs/validation.md).

**Clusters.** An arrival during window iteration i (0 = the iteration in progress) has r = P + 1 − i
window iterations left; its chunks add τ·c_m(L) to iterations i + 1 + m, and the time-driven
arrivals during that added time add their own clusters. The window time Q_r that one such
arrival causes, descendants included, satisfies

    Q_r = Σ_{m < r} [τ·c_m(L) + G_{r−1−m}(τ·c_m(L))],   G_s(x) ~ CompoundPoisson(f·λ_i·x; Q_s),

so, given L, its cumulants are linear in the chunk sizes: mean Σ τc_m(1 + fλ_i E[Q_{r−1−m}]),
variance Σ τc_m·fλ_i·E[Q²], third cumulant Σ τc_m·fλ_i·E[Q³] (the cumulants of a compound Poisson
sum are its intensity times the raw moments of its marks). Within a prefill level (P = k) every
c_m is linear in L, so the raw moments of Q_r follow exactly from E[L^j | P = k], j ≤ 3
(:class:`PromptLevels`). The law of total cumulance (Brillinger 1969) then combines the parts:
the residual and the clusters of the arrivals during the iteration in progress (both driven by
its length-biased duration Ť, whose moments are E[t^{j+1}]/E[t]), the per-boundary intake, the
requests' own chunks and decode time and their clusters, the prompts still prefilling from
before (background), the slot wait, and T0. The stationary iteration t itself has cumulants
t̄, τ²λ_i t̄ s₂ / (1 − u_f²) and (τ³λ_i t̄ s₃ + 3u_f τ² fλ_i s₂ κ₂)/(1 − u_f³), s_j = E[Σ_m c_m^j],
u_f = f·u; its fourth cumulant is taken as a gamma law's, 3κ₃²/(2κ₂).

**Quantile.** The q-quantile is that of the shifted gamma law with the same three cumulants
(mean, variance, skewness γ₁: shape 4/γ₁², scale σγ₁/2), the normal one when γ₁ ≈ 0. A
three-moment fit: exact for gamma-like laws, and measured against the simulation in
docs/validation.md (it overstates the P99 of small pools of very long prompts, where rare
overlaps make the tail heavier than a gamma's).

Everything is evaluated in plain floats (the sizing hot path); nothing is sampled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import gammaincinv, ndtri


@dataclass(frozen=True)
class PromptLevels:
    """A pool's prompt lengths by prefill level: for each P = ``levels[j]`` with positive weight,
    its share of the pool's requests ``weights[j]`` and E[L_in^i | P], i = 1, 2, 3 (tokens^i).

    Built by :meth:`from_sums` from per-level weighted sums (what
    :class:`fleetopt.core.poolstats.PoolStatistics` keeps). ``chunk_tokens`` is C.
    """

    chunk_tokens: int
    levels: tuple[int, ...]
    weights: tuple[float, ...]
    mean_1: tuple[float, ...]
    mean_2: tuple[float, ...]
    mean_3: tuple[float, ...]

    @classmethod
    def from_sums(cls, chunk_tokens: int, sums_by_level) -> PromptLevels:
        """From rows (Σw, Σw·L, Σw·L², Σw·L³) indexed by the prefill level P = 0, 1, …"""
        total = float(sum(row[0] for row in sums_by_level))
        levels, weights, m1, m2, m3 = [], [], [], [], []
        if total > 0:
            for level, row in enumerate(sums_by_level):
                w = float(row[0])
                if w <= total * 1e-15:
                    continue
                levels.append(level)
                weights.append(w / total)
                m1.append(float(row[1]) / w)
                m2.append(float(row[2]) / w)
                m3.append(float(row[3]) / w)
        return cls(int(chunk_tokens), tuple(levels), tuple(weights), tuple(m1), tuple(m2), tuple(m3))

    @property
    def mean_tokens(self) -> float:
        """E[L_in], tokens."""
        return sum(w * m for w, m in zip(self.weights, self.mean_1, strict=True))

    @property
    def max_level(self) -> int:
        """The largest prefill level with positive weight (0 when empty)."""
        return self.levels[-1] if self.levels else 0

    def chunk_power_means(self) -> tuple[float, float]:
        """(s₂, s₃) = (E[Σ_m c_m²], E[Σ_m c_m³]): per-request sums of squared and cubed chunks."""
        c = self.chunk_tokens
        s2 = s3 = 0.0
        for k, w, e1, e2, e3 in self._rows():
            if k == 0:
                continue
            shift = (k - 1) * c  # the last chunk is L − (k − 1)·C
            last2 = e2 - 2 * shift * e1 + shift * shift
            last3 = e3 - 3 * shift * e2 + 3 * shift * shift * e1 - shift**3
            s2 += w * ((k - 1) * c * c + last2)
            s3 += w * ((k - 1) * c**3 + last3)
        return s2, s3

    def _rows(self):
        return zip(self.levels, self.weights, self.mean_1, self.mean_2, self.mean_3, strict=True)


def _linear_raw(a: float, b: float, e1: float, e2: float, e3: float) -> tuple[float, float, float]:
    """E[f], E[f²], E[f³] for f = a + b·L, from E[L], E[L²], E[L³]."""
    return (
        a + b * e1,
        a * a + 2 * a * b * e1 + b * b * e2,
        a**3 + 3 * a * a * b * e1 + 3 * a * b * b * e2 + b**3 * e3,
    )


def _cumulants(m1: float, m2: float, m3: float) -> tuple[float, float, float]:
    return m1, m2 - m1 * m1, m3 - 3 * m1 * m2 + 2 * m1**3


def _raw(k1: float, k2: float, k3: float) -> tuple[float, float, float]:
    return k1, k2 + k1 * k1, k3 + 3 * k1 * k2 + k1**3


def _conditional_raw(
    a1: float, b1: float, a2: float, b2: float, a3: float, b3: float, e1: float, e2: float, e3: float
) -> tuple[float, float, float]:
    """Raw moments of Z when, given L, Z has cumulants (a1 + b1·L, a2 + b2·L, a3 + b3·L):
    E[Z] = E[κ₁], E[Z²] = E[κ₂] + E[κ₁²], E[Z³] = E[κ₃] + 3E[κ₁κ₂] + E[κ₁³]."""
    f1, f1sq, f1cu = _linear_raw(a1, b1, e1, e2, e3)
    f1f2 = a1 * a2 + (a1 * b2 + a2 * b1) * e1 + b1 * b2 * e2
    return f1, (a2 + b2 * e1) + f1sq, (a3 + b3 * e1) + 3 * f1f2 + f1cu


def cluster_moments(levels: PromptLevels, tau_s: float, time_rate_per_s: float, depth: int) -> list:
    """[E[Q_r], E[Q_r²], E[Q_r³]] for r = 0 … ``depth`` (Q_0 = 0): the window time one arrival with r
    window iterations left causes, its time-driven descendants (rate ``time_rate_per_s`` per second
    of added time) included. Seconds^j."""
    c = levels.chunk_tokens
    lam = time_rate_per_s
    q = [(0.0, 0.0, 0.0)]
    for r in range(1, depth + 1):
        t1 = t2 = t3 = 0.0
        for k, w, e1, e2, e3 in levels._rows():
            a1 = b1 = a2 = b2 = a3 = b3 = 0.0
            for m in range(min(r, k)):
                qm = q[r - 1 - m]
                if m < k - 1:
                    base, slope = tau_s * c, 0.0
                else:  # the last, partial chunk: τ·(L − (k − 1)·C)
                    base, slope = -tau_s * (k - 1) * c, tau_s
                grow = 1.0 + lam * qm[0]
                a1 += base * grow
                b1 += slope * grow
                a2 += base * lam * qm[1]
                b2 += slope * lam * qm[1]
                a3 += base * lam * qm[2]
                b3 += slope * lam * qm[2]
            m1, m2, m3 = _conditional_raw(a1, b1, a2, b2, a3, b3, e1, e2, e3)
            t1 += w * m1
            t2 += w * m2
            t3 += w * m3
        q.append((t1, t2, t3))
    return q


@dataclass(frozen=True)
class TtftCumulants:
    """The first three cumulants of TTFT (seconds, s², s³; floats, or arrays over a swept t_d) and
    the mean iteration t̄ and prompt share u they were built from."""

    mean_s: Any
    variance_s2: Any
    third_s3: Any
    mean_iteration_s: Any
    prompt_share: float

    def quantile_s(self, q: float) -> Any:
        """The q-quantile of the shifted gamma law with these cumulants (:func:`shifted_gamma_quantile`)."""
        if isinstance(self.mean_s, np.ndarray):
            return shifted_gamma_quantiles(self.mean_s, self.variance_s2, self.third_s3, q)
        return shifted_gamma_quantile(self.mean_s, self.variance_s2, self.third_s3, q)


def ttft_cumulants(
    levels: PromptLevels,
    *,
    tau_s: float,
    decode_iteration_s: Any,
    rate_per_instance_per_s: float,
    time_share: float,
    overhead_s: float = 0.0,
    wait_raw_moments: tuple[Any, Any, Any] = (0.0, 0.0, 0.0),
) -> TtftCumulants:
    """Cumulants of TTFT on one instance (module docstring).

    Args:
        levels: the pool's prompt lengths by prefill level.
        tau_s: τ, seconds per prompt token in an iteration.
        decode_iteration_s: t_d = W + c_d·k, the iteration without prompts, seconds (a float, or an
            array: everything below is rational in t_d, so the same code sweeps it).
        rate_per_instance_per_s: λ_i.
        time_share: f, the share of the intake that follows the instance's own time (1/n behind a
            least-loaded router; 1 for random dispatch or one instance).
        overhead_s: T0, added to every TTFT.
        wait_raw_moments: E[D], E[D²], E[D³] of the wait D for a slot (independent of the rest;
            floats or arrays like t_d).

    Needs u = λ_i·τ·E[L_in] < 1 (the instance keeps up with its prompts); infinite otherwise.
    """
    lam = rate_per_instance_per_s
    u = lam * tau_s * levels.mean_tokens
    if not u < 1.0:
        return TtftCumulants(math.inf, math.inf, math.inf, math.inf, u)
    t_d = decode_iteration_s
    f = time_share
    lam_time = f * lam
    u_time = f * u
    tbar = t_d / (1.0 - u)
    per_boundary = (1.0 - f) * lam * tbar  # μ: requests admitted per boundary, independent of t
    c = levels.chunk_tokens
    # the stationary iteration and the length-biased one in progress
    s2, s3 = levels.chunk_power_means()
    # κ₂ = B·t̄, κ₃ = A·t̄, κ₄ = (3A²/2B)·t̄ (all proportional to t̄), so the moments of the
    # length-biased Ť, E[Ť^j] = E[t^{j+1}]/t̄, need no division by t̄
    b_ = tau_s**2 * lam * s2 / (1.0 - u_time * u_time)
    if b_ > 0:
        a_ = (tau_s**3 * lam * s3 + 3.0 * u_time * tau_s**2 * lam_time * s2 * b_) / (1.0 - u_time**3)
        c_ = 1.5 * a_ * a_ / b_
    else:  # no prompt time reaches the instance: every iteration lasts t_d
        a_ = b_ = c_ = 0.0
    e_t = b_ + tbar
    e_t2 = a_ + 3.0 * b_ * tbar + tbar * tbar
    e_t3 = c_ + (4.0 * a_ + 3.0 * b_ * b_) * tbar + 6.0 * b_ * tbar * tbar + tbar**3
    var_t = e_t2 - e_t * e_t
    k3_t = e_t3 - 3 * e_t * e_t2 + 2 * e_t**3
    depth = levels.max_level + 1
    q = cluster_moments(levels, tau_s, lam_time, depth)
    # prefix sums of Q_r over r (the per-boundary intake and own-chunk clusters sum over r)
    q_sum = [(0.0, 0.0, 0.0)]
    for r in range(1, depth + 1):
        prev = q_sum[-1]
        q_sum.append((prev[0] + q[r][0], prev[1] + q[r][1], prev[2] + q[r][2]))
    bg_rows = _background_marks(levels, tau_s, lam_time, q) if levels.max_level >= 2 else None
    m1 = m2 = m3 = 0.0
    for k, w, e1, e2, e3 in levels._rows():
        p = k  # own prefill iterations; first token at the end of iteration p + 1
        qp = q[p + 1]
        # the residual R = U·Ť and the clusters of the arrivals during Ť (r = p + 1)
        g = 0.5 + lam_time * qp[0]
        c1 = g * e_t
        c2 = e_t2 / 12.0 + lam_time * qp[1] * e_t + g * g * var_t
        c3 = (
            lam_time * qp[2] * e_t
            + 3.0 * g * ((e_t3 - e_t * e_t2) / 12.0 + lam_time * qp[1] * var_t)
            + g**3 * k3_t
        )
        # per-boundary intake at boundaries 1 … p + 1: Poisson(μ) clusters Q_{p+1}, …, Q_1
        qs = q_sum[p + 1]
        c1 += per_boundary * qs[0]
        c2 += per_boundary * qs[1]
        c3 += per_boundary * qs[2]
        # own decode time and chunks, and the clusters they attract: iteration i = 1 … p carries
        # t_d + τ·c_{i−1}(L), whose arrivals have p + 1 − i iterations left; iteration p + 1 only t_d
        own_q = q_sum[p]  # Σ_{r=1}^{p} Q_r
        a1 = (p + 1) * t_d + lam_time * t_d * own_q[0]
        a2 = lam_time * t_d * own_q[1]
        a3 = lam_time * t_d * own_q[2]
        b1, b2, b3 = tau_s, 0.0, 0.0
        if p >= 1:
            full = q_sum[p][0] - q[1][0], q_sum[p][1] - q[1][1], q_sum[p][2] - q[1][2]  # r = 2 … p
            a1 += lam_time * tau_s * c * full[0]
            a2 += lam_time * tau_s * c * full[1]
            a3 += lam_time * tau_s * c * full[2]
            # the last chunk τ·(L − (p − 1)·C) lands in iteration p: its arrivals have r = 1
            shift = -(p - 1) * c
            a1 += lam_time * tau_s * shift * q[1][0]
            a2 += lam_time * tau_s * shift * q[1][1]
            a3 += lam_time * tau_s * shift * q[1][2]
            b1 += lam_time * tau_s * q[1][0]
            b2 += lam_time * tau_s * q[1][1]
            b3 += lam_time * tau_s * q[1][2]
        own = _cumulants(*_conditional_raw(a1, b1, a2, b2, a3, b3, e1, e2, e3))
        c1, c2, c3 = c1 + own[0], c2 + own[1], c3 + own[2]
        if bg_rows is not None:
            # requests admitted before the iteration in progress, still prefilling: λ_i·t̄ per lag
            bg = bg_rows[p]
            c1 += lam * tbar * bg[0]
            c2 += lam * tbar * bg[1]
            c3 += lam * tbar * bg[2]
        r1, r2, r3 = _raw(c1, c2, c3)
        m1 += w * r1
        m2 += w * r2
        m3 += w * r3
    mean, var, third = _cumulants(m1, m2, m3)
    d1, d2, d3 = wait_raw_moments
    wait = _cumulants(d1, d2, d3)
    return TtftCumulants(mean + wait[0] + overhead_s, var + wait[1], third + wait[2], tbar, u)


def _background_marks(levels: PromptLevels, tau_s: float, lam_time: float, q: list) -> dict:
    """For each own level p: Σ over lags j ≥ 1 of the raw moments of the window time that one request
    admitted j iterations before the iteration in progress still causes (its chunks j … j + p land
    in window iterations 1 … p + 1; chunk j + i − 1 in iteration i, whose arrivals have p + 1 − i
    iterations left). Multiplied by the intensity λ_i·t̄ per lag by the caller."""
    c = levels.chunk_tokens
    out = {}
    for p in levels.levels:
        t1 = t2 = t3 = 0.0
        for j in range(1, levels.max_level):
            for k, w, e1, e2, e3 in levels._rows():
                if k <= j:  # no chunk j: prefill done before the window
                    continue
                a1 = b1 = a2 = b2 = a3 = b3 = 0.0
                for i in range(1, p + 2):
                    m = j + i - 1
                    if m >= k:
                        break
                    if m < k - 1:
                        base, slope = tau_s * c, 0.0
                    else:
                        base, slope = -tau_s * (k - 1) * c, tau_s
                    qm = q[p + 1 - i]
                    grow = 1.0 + lam_time * qm[0]
                    a1 += base * grow
                    b1 += slope * grow
                    a2 += base * lam_time * qm[1]
                    b2 += slope * lam_time * qm[1]
                    a3 += base * lam_time * qm[2]
                    b3 += slope * lam_time * qm[2]
                r1, r2, r3 = _conditional_raw(a1, b1, a2, b2, a3, b3, e1, e2, e3)
                t1 += w * r1
                t2 += w * r2
                t3 += w * r3
        out[p] = (t1, t2, t3)
    return out


def shifted_gamma_quantile(mean: float, variance: float, third: float, q: float) -> float:
    """The q-quantile of the shifted gamma law with mean, variance and third cumulant given:
    skewness γ₁ = κ₃/κ₂^{3/2}, shape 4/γ₁², scale √κ₂·γ₁/2, shift mean − shape·scale (mirrored for
    γ₁ < 0); the normal quantile when |γ₁| < 10⁻⁶."""
    if not math.isfinite(mean) or not math.isfinite(variance):
        return math.inf
    if variance <= 0.0:
        return mean
    sd = math.sqrt(variance)
    skew = third / (variance * sd)
    if abs(skew) < 1e-6:
        return mean + sd * float(ndtri(q))
    shape = 4.0 / (skew * skew)
    scale = sd * abs(skew) / 2.0
    if skew > 0:
        return mean - shape * scale + scale * float(gammaincinv(shape, q))
    return mean + shape * scale - scale * float(gammaincinv(shape, 1.0 - q))


def shifted_gamma_quantiles(
    mean: np.ndarray, variance: np.ndarray, third: np.ndarray, q: float
) -> np.ndarray:
    """:func:`shifted_gamma_quantile` over arrays (the same law, element by element)."""
    mean, variance, third = np.broadcast_arrays(
        np.asarray(mean, dtype=np.float64),
        np.asarray(variance, dtype=np.float64),
        np.asarray(third, dtype=np.float64),
    )
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        sd = np.sqrt(np.maximum(variance, 0.0))
        skew = np.where(sd > 0, third / (np.maximum(variance, 1e-300) * sd), 0.0)
        tiny = np.abs(skew) < 1e-6
        safe = np.where(tiny, 1.0, skew)
        shape = 4.0 / (safe * safe)
        scale = sd * np.abs(safe) / 2.0
        upper = mean - shape * scale + scale * gammaincinv(shape, q)
        lower = mean + shape * scale - scale * gammaincinv(shape, 1.0 - q)
        value = np.where(tiny, mean + sd * float(ndtri(q)), np.where(skew > 0, upper, lower))
        value = np.where(sd > 0, value, mean)
    return np.where(np.isfinite(mean) & np.isfinite(variance), value, np.inf)
