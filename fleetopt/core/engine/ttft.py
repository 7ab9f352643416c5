"""The law of the time to first token on an iteration-level engine: three cumulants and a quiet part.

One instance of a pool runs iterations of length t = t_d + τ·X: t_d = W + c_d·k is the decode side
(k sequences in flight), X the prompt tokens in the iteration (each prefilling request puts one
chunk of at most C tokens into each of its P = ⌈L_in / C⌉ prefill iterations). A request arriving
at the instance waits for the iteration in progress to end (the residual R of a length-biased
iteration), is admitted at that boundary, prefills in iterations 1 … P and has its first token at
the end of iteration P + 1 (what the ``physical`` simulator does), so

    TTFT = T0 + slot wait + R + Σ_{i=1}^{P+1} t_i.

**Intake.** The other requests' prompts in those iterations come from the instance's intake. One
instance fed by Poisson arrivals at λ_i takes in prompts in proportion to the time it spends, so a
long iteration attracts more prompts into the next one (a branching structure). Behind a
least-loaded router an instance is refilled as its sequences leave, at its iteration boundaries,
not in proportion to the length of its iterations. The intake is modelled as a share f that
follows the instance's own time (Poisson at f·λ_i per second) and a share 1 − f admitted as a
Poisson number of requests with mean (1 − f)·λ_i·t̄ at every boundary (t̄ = t_d / (1 − u) the mean
iteration, u = λ_i·τ·E[L_in] the share of time spent on prompts). f = 1 is one instance, or random
dispatch; f for a least-loaded router is :func:`fleetopt.core.engine.router.least_loaded_time_share`.

**Clusters.** An arrival during window iteration i (0 = the iteration in progress) has r = P + 1 − i
window iterations left; its chunks add τ·c_m(L) to iterations i + 1 + m, and the time-driven
arrivals during that added time add their own clusters. The window time Q_r one such arrival
causes, descendants included, satisfies

    Q_r = Σ_{m < r} [τ·c_m(L) + G_{r−1−m}(τ·c_m(L))],   G_s(x) ~ CompoundPoisson(f·λ_i·x; Q_s),

so, given L, its cumulants are linear in the chunk sizes (a compound Poisson sum's cumulants are
its intensity times its marks' raw moments). Within a prefill level (P = k) the chunks are C and
then the last, partial chunk y = L − (k − 1)·C, so the raw moments of Q_r follow exactly from
E[y^j | P = k], j ≤ 3 (:class:`PromptLevels`). The law of total cumulance (Brillinger 1969)
combines the parts: the residual and the clusters of the arrivals during the iteration in progress
(both driven by its length-biased duration Ť, E[Ť^j] = E[t^{j+1}]/E[t]); the per-boundary
intake; the request's own chunks and decode time and their clusters; the prompts still prefilling
from before (background), which also had a chunk in the iteration in progress and so covary with
its length (mean and variance through the joint cumulants of (t, background)); the slot wait; and
T0. The stationary iteration t has cumulants t̄, τ²λ_i·t̄·s₂/(1 − u_f²) and
(τ³λ_i·t̄·s₃ + 3u_f·τ²·f·λ_i·s₂·κ₂)/(1 − u_f³), s_j = E[Σ_m c_m^j], u_f = f·u (an AR(1) in the
time-driven part); its fourth cumulant is taken as a gamma law's, 3κ₃²/(2κ₂).

**Quiet part.** With probability e^{−ν} no other request's prompt touches the window (ν: the
expected number that do, i.e. those with a chunk in the iteration in progress, λ_i·t̄·E[P] and u
more under its length bias, the per-boundary intake at P + 1 boundaries and the time-driven
arrivals during Ť and iterations 1 … P). Then Ť = t_d and TTFT is T0 + wait + U·t_d + (P + 1)·t_d
+ τ·L_in (U uniform). The law is the mixture of that quiet part and the rest, whose raw moments
are the whole law's less the quiet part's. In a small pool of long prompts overlaps are rare
(ν ≪ 1); three cumulants alone would smear them into a heavy tail and overstate the P99.

**One law per own level.** Everything above is worked out given the request's own prefill level
P = k, and the law is kept as the mixture over k (each level with its quiet part and the rest),
not one law through the whole mixture's cumulants: given k the law is close to unimodal, while a
pool of mostly one-chunk prompts and a few long ones is not (:attr:`TtftCumulants.level_parts`).

**Quantile.** Each part's q-quantile law is the shifted gamma law with its three cumulants (mean,
variance, skewness γ₁: shape 4/γ₁², scale σ·γ₁/2; the normal one when γ₁ ≈ 0); the mixture's
q-quantile is found between the parts' own. A three-moment fit: exact for gamma-like laws, and
measured against the simulation in docs/validation.md (it cannot see that a request's own prefill
is bounded, so it errs a little high where that bound sets the P99).

Everything is evaluated in plain floats (the sizing hot path) or over an array of t_d (the slot
sweep); nothing is sampled. Pools whose longest prompt has more than :data:`PLAIN_FLOAT_MAX_LEVEL`
prefill levels run the recursions with numpy over all levels and lags at once
(:func:`cluster_moments_array`, :func:`background_marks_array`): the same law, to rounding.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from fleetopt.core.backends import ARRAYS, FLOATS, _special

#: Pools whose longest prompt takes at most this many prefill iterations evaluate the law in plain
#: floats, one level (and lag) at a time; above it numpy runs over all levels and lags at once. The
#: plain loops cost about the fourth power of the levels, the arrays their square plus numpy's
#: per-call overhead: one new key costs 0.33 against 0.38 ms at 8 levels, 0.63 against 0.43 at 10.
#: Every bundled measured profile (8,192-token chunks, prompts to 65K) stays plain.
PLAIN_FLOAT_MAX_LEVEL = 8


@dataclass(frozen=True)
class PromptLevels:
    """A pool's prompt lengths by prefill level: for each P = ``levels[j]`` with positive weight,
    its share of the pool's requests ``weights[j]`` and the moments E[y^i | P], i = 1, 2, 3, of its
    last (partial) chunk y = L_in − (P − 1)·C, 0 < y ≤ C (y = 0 at P = 0), tokens^i. A request of
    level P has P − 1 full chunks of C tokens and then y.

    Built by :meth:`from_sums` from per-level weighted sums (what
    :class:`fleetopt.core.poolstats.PoolStatistics` keeps). ``chunk_tokens`` is C.
    """

    chunk_tokens: int
    levels: tuple[int, ...]
    weights: tuple[float, ...]
    last_chunk_1: tuple[float, ...]
    last_chunk_2: tuple[float, ...]
    last_chunk_3: tuple[float, ...]

    def __post_init__(self) -> None:
        c = float(self.chunk_tokens)
        rows = tuple(
            zip(
                self.levels,
                self.weights,
                self.last_chunk_1,
                self.last_chunk_2,
                self.last_chunk_3,
                strict=True,
            )
        )
        object.__setattr__(self, "_chunk_rows", rows)
        object.__setattr__(self, "_clusters", {})  # (τ, time rate) → cluster moments, see ttft_cumulants
        s2 = s3 = mean = 0.0
        for k, w, y1, y2, y3 in rows:
            if k > 0:
                s2 += w * ((k - 1) * c * c + y2)
                s3 += w * ((k - 1) * c**3 + y3)
                mean += w * ((k - 1) * c + y1)
        object.__setattr__(self, "_chunk_powers", (s2, s3))
        object.__setattr__(self, "_mean_tokens", mean)
        object.__setattr__(
            self,
            "_mean_square_tokens",
            sum(
                w * ((k - 1) ** 2 * c * c + 2 * (k - 1) * c * y1 + y2) if k > 0 else w * y2
                for k, w, y1, y2, _ in rows
            ),
        )
        object.__setattr__(
            self, "_mean_levels", sum(w * k for k, w in zip(self.levels, self.weights, strict=True))
        )

    def level_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(P, weight, E[y | P], E[y² | P], E[y³ | P]) over the levels as float arrays (built on
        first use: only the law's array form needs them)."""
        arrays = self.__dict__.get("_level_arrays")
        if arrays is None:
            columns = (self.levels, self.weights, self.last_chunk_1, self.last_chunk_2, self.last_chunk_3)
            arrays = tuple(np.array(column, dtype=np.float64) for column in columns)
            object.__setattr__(self, "_level_arrays", arrays)
        return arrays

    @classmethod
    def from_sums(cls, chunk_tokens: int, sums_by_level) -> PromptLevels:
        """From rows (Σw, Σw·y, Σw·y², Σw·y³) indexed by the prefill level P = 0, 1, … (y: the last chunk)."""
        sums = np.asarray(sums_by_level, dtype=np.float64).reshape(-1, 4)
        total = float(sums[:, 0].sum())
        if not total > 0:
            return cls(int(chunk_tokens), (), (), (), (), ())
        levels = np.flatnonzero(sums[:, 0] > total * 1e-15)
        rows = sums[levels]
        means = rows[:, 1:] / rows[:, :1]
        return cls(
            int(chunk_tokens),
            tuple(levels.tolist()),
            tuple((rows[:, 0] / total).tolist()),
            tuple(means[:, 0].tolist()),
            tuple(means[:, 1].tolist()),
            tuple(means[:, 2].tolist()),
        )

    @property
    def mean_tokens(self) -> float:
        """E[L_in], tokens."""
        return self._mean_tokens

    @property
    def mean_square_tokens(self) -> float:
        """E[L_in²] = Σ_P w_P·((P − 1)²C² + 2(P − 1)C·E[y] + E[y²]), tokens²."""
        return self._mean_square_tokens

    @property
    def mean_prefill_iterations(self) -> float:
        """E[P], the mean number of prefill iterations."""
        return self._mean_levels

    @property
    def max_level(self) -> int:
        """The largest prefill level with positive weight (0 when empty)."""
        return self.levels[-1] if self.levels else 0

    @property
    def token_biased_chunk_tokens(self) -> float:
        """E[Σ_m c_m²] / E[L_in]: the size of the chunk a prompt token is prefilled in, averaged over
        prompt tokens (0 when the pool has no prompt tokens), tokens."""
        return self._chunk_powers[0] / self._mean_tokens if self._mean_tokens > 0 else 0.0

    def chunk_power_means(self) -> tuple[float, float]:
        """(s₂, s₃) = (E[Σ_m c_m²], E[Σ_m c_m³]): per-request sums of squared and cubed chunks."""
        return self._chunk_powers


def _cumulants(m1: Any, m2: Any, m3: Any) -> tuple[Any, Any, Any]:
    return m1, m2 - m1 * m1, m3 - 3 * m1 * m2 + 2 * m1**3


def _raw(k1: Any, k2: Any, k3: Any) -> tuple[Any, Any, Any]:
    return k1, k2 + k1 * k1, k3 + 3 * k1 * k2 + k1**3


def _conditional_raw(
    a1: Any, b1: float, a2: Any, b2: float, a3: Any, b3: float, y1: float, y2: float, y3: float
) -> tuple[Any, Any, Any]:
    """Raw moments of Z when, given y, Z has cumulants (a1 + b1·y, a2 + b2·y, a3 + b3·y), from
    E[y], E[y²], E[y³]: E[Z] = E[κ₁], E[Z²] = E[κ₂] + E[κ₁²], E[Z³] = E[κ₃] + 3E[κ₁κ₂] + E[κ₁³]."""
    m1 = a1 + b1 * y1
    sq = a1 * a1 + 2 * a1 * b1 * y1 + b1 * b1 * y2
    cu = a1**3 + 3 * a1 * a1 * b1 * y1 + 3 * a1 * b1 * b1 * y2 + b1**3 * y3
    cross = a1 * a2 + (a1 * b2 + a2 * b1) * y1 + b1 * b2 * y2
    return m1, (a2 + b2 * y1) + sq, (a3 + b3 * y1) + 3 * cross + cu


def cluster_moments(levels: PromptLevels, tau_s: float, time_rate_per_s: float, depth: int) -> list:
    """[E[Q_r], E[Q_r²], E[Q_r³]] for r = 0 … ``depth`` (Q_0 = 0): the window time one arrival with r
    window iterations left causes, its time-driven descendants (rate ``time_rate_per_s`` per second
    of added time) included. Seconds^j.

    Chunk m of a request in level k is C for m < k − 1 and the partial chunk y for m = k − 1; the
    chunk landing with j iterations left attracts G_j, so with prefix sums S_j of E[Q^·] over r the
    full chunks contribute τC·(min(r, k−1) + λ·(S(r) − S(r − min(r, k−1)))) and the partial chunk
    (when k ≤ r) τ·(1 + λ·E[Q_{r−k}]) per token."""
    lam = time_rate_per_s
    tc = tau_s * levels.chunk_tokens
    rows = levels._chunk_rows
    q = [(0.0, 0.0, 0.0)]
    pre = [(0.0, 0.0, 0.0)]  # pre[x] = Σ_{i<x} Q_i
    for r in range(1, depth + 1):
        last = pre[-1]
        pre.append((last[0] + q[r - 1][0], last[1] + q[r - 1][1], last[2] + q[r - 1][2]))
        t1 = t2 = t3 = 0.0
        for k, w, y1, y2, y3 in rows:
            if k == 0:
                continue
            full = min(r, k - 1)
            hi, lo = pre[r], pre[r - full]
            a1 = tc * (full + lam * (hi[0] - lo[0]))
            a2 = tc * lam * (hi[1] - lo[1])
            a3 = tc * lam * (hi[2] - lo[2])
            if k <= r:
                qm = q[r - k]
                b1, b2, b3 = tau_s * (1.0 + lam * qm[0]), tau_s * lam * qm[1], tau_s * lam * qm[2]
            else:
                b1 = b2 = b3 = 0.0
            m1, m2, m3 = _conditional_raw(a1, b1, a2, b2, a3, b3, y1, y2, y3)
            t1 += w * m1
            t2 += w * m2
            t3 += w * m3
        q.append((t1, t2, t3))
    return q


class LevelColumns:
    """:attr:`TtftCumulants.level_parts` of a law worked out with numpy over the levels: the eight
    quantities as columns (share of requests over the levels; the rest over the levels, or levels ×
    t_d when the law sweeps t_d, the quiet third cumulant over the levels only). Iterates as the
    rows the plain form gives; the law's survival function and quantile read the columns at once."""

    __slots__ = ("columns",)

    def __init__(self, columns: tuple[np.ndarray, ...]):
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns[0])

    def __iter__(self) -> Any:
        share, *rest = self.columns
        return iter(zip(share.tolist(), *(c.tolist() if c.ndim == 1 else c for c in rest), strict=True))

    def shifted(self, offset_s: float) -> LevelColumns:
        """The same with ``offset_s`` taken off both means."""
        share, mean, var, third, w0, q_mean, q_var, q_third = self.columns
        return LevelColumns((share, mean - offset_s, var, third, w0, q_mean - offset_s, q_var, q_third))


@dataclass(frozen=True)
class TtftCumulants:
    """The TTFT law (seconds; floats, or arrays over a swept t_d) as a mixture of up to four parts,
    each given by its first three cumulants and read as a shifted gamma law:

    - with probability ``quiet_probability`` = e^{−ν} no other request's prompt touches the
      request's window (ν: the expected number that do), and the law without the slot wait has the
      ``quiet_*`` cumulants (a prompt-free residual, the request's own prefill and first decode, T0);
      otherwise the rest, whose raw moments are the whole law's (``base_*``) less the quiet part's;
    - independently, with probability ``wait_probability`` the request waits for a slot, an
      exponential wait of mean ``wait_mean_s`` (the chain's, :mod:`fleetopt.core.engine.occupancy`).

    ``level_parts``: the same given the request's own prefill level P = k, one row per level, as
    (share of requests, mean, variance, third cumulant, quiet probability, quiet mean, quiet
    variance, quiet third cumulant), T0 included in the means; the law is their mixture, each row
    split into its quiet part and the rest (None: one row, the whole law; :class:`LevelColumns`
    from the numpy form, whose mixture is evaluated with numpy over its parts). ``mean_s``,
    ``variance_s2``, ``third_s3`` are the whole law's, wait included; ``mean_iteration_s`` and
    ``prompt_share`` (t̄ and u) are what it was built from."""

    base_mean_s: Any
    base_variance_s2: Any
    base_third_s3: Any
    mean_iteration_s: Any
    prompt_share: float
    quiet_probability: Any = 0.0
    quiet_mean_s: Any = 0.0
    quiet_variance_s2: Any = 0.0
    quiet_third_s3: Any = 0.0
    wait_probability: Any = 0.0
    wait_mean_s: Any = 0.0
    level_parts: tuple | None = None

    def without_wait_and_overhead(self, overhead_s: float) -> TtftCumulants:
        """The same law from a free slot to the first token: no slot wait, and the T0 that
        :func:`ttft_cumulants` added to every part (``overhead_s``) taken off."""
        rows = self.level_parts
        if isinstance(rows, LevelColumns):
            rows = rows.shifted(overhead_s)
        elif rows is not None:
            rows = tuple(
                (w, mean - overhead_s, var, third, w0, q_mean - overhead_s, q_var, q_third)
                for w, mean, var, third, w0, q_mean, q_var, q_third in rows
            )
        return replace(
            self, base_mean_s=self.base_mean_s - overhead_s, quiet_mean_s=self.quiet_mean_s - overhead_s,
            wait_probability=0.0, wait_mean_s=0.0, level_parts=rows,
        )  # fmt: skip

    @property
    def _wait_cumulants(self) -> tuple[Any, Any, Any]:
        p, m = self.wait_probability, self.wait_mean_s
        return _cumulants(p * m, 2.0 * p * m * m, 6.0 * p * m**3)

    @property
    def mean_s(self) -> Any:
        """E[TTFT], seconds."""
        return self.base_mean_s + self._wait_cumulants[0]

    @property
    def variance_s2(self) -> Any:
        """Var[TTFT], s²."""
        return self.base_variance_s2 + self._wait_cumulants[1]

    @property
    def third_s3(self) -> Any:
        """The third cumulant of TTFT, s³."""
        return self.base_third_s3 + self._wait_cumulants[2]

    def components(self, drop_empty: bool = False) -> list[tuple[Any, Any, Any, Any]]:
        """The parts as (weight, mean, variance, third cumulant): for each prefill level (or the whole
        law when there are no level parts), its quiet part and the rest, each without and with the
        slot wait (an exponential of mean m adds m, m², 2m³). A quiet part whose probability within
        its level is below 10⁻⁹ (or above 1 − 10⁻⁹) is merged into the rest (weight 0; its
        cumulants then are the neighbour's, never used). ``drop_empty`` (a law at one t_d): leave
        out the parts of weight 0 instead."""
        array = isinstance(self.base_mean_s, np.ndarray)
        if self.level_parts is None:
            rows: Any = (
                (1.0, self.base_mean_s, self.base_variance_s2, self.base_third_s3, self.quiet_probability,
                 self.quiet_mean_s, self.quiet_variance_s2, self.quiet_third_s3),
            )  # fmt: skip
        else:
            rows = self.level_parts
        p, m = self.wait_probability, self.wait_mean_s
        m2, m3 = m * m, 2.0 * m**3
        parts = []
        for share, mean, var, third, w0, q_mean, q_var, q_third in rows:
            w0, quiet, rest = _quiet_and_rest(w0, (mean, var, third), (q_mean, q_var, q_third), array)
            for weight, law in ((w0, quiet), (1.0 - w0, rest)):
                if drop_empty and not share * weight > 0.0:
                    continue
                if not (drop_empty and p == 1.0):
                    parts.append((share * weight * (1.0 - p), *law))
                if not (drop_empty and p == 0.0):
                    parts.append((share * weight * p, law[0] + m, law[1] + m2, law[2] + m3))
        return parts

    def _part_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`components` of a law with :class:`LevelColumns` as four arrays (weight, mean,
        variance, third cumulant) over the parts (parts × t_d when the law sweeps t_d)."""
        share, mean, var, third, w0, q_mean, q_var, q_third = self.level_parts.columns
        if mean.ndim == 2:
            share, q_third = share[:, None], q_third[:, None]
        w0, quiet, rest = _quiet_and_rest(w0, (mean, var, third), (q_mean, q_var, q_third), True)
        p, m = self.wait_probability, self.wait_mean_s
        blocks = []
        for weight, law in ((w0, quiet), (1.0 - w0, rest)):
            blocks.append((share * weight * (1.0 - p), *law))
            blocks.append((share * weight * p, law[0] + m, law[1] + m * m, law[2] + 2.0 * m**3))
        shape = np.broadcast_shapes(*(np.shape(x) for block in blocks for x in block))
        weight, mean, var, third = (
            np.concatenate([np.broadcast_to(b[i], shape) for b in blocks]) for i in range(4)
        )
        return weight, mean, var, third

    def quantile_s(self, q: float) -> float:
        """The q-quantile of the mixture of shifted gamma laws (:func:`shifted_gamma_quantile`)."""
        if isinstance(self.base_mean_s, np.ndarray):
            raise TypeError("quantile_s takes a law at one t_d; use exceeds() for arrays")
        if not (math.isfinite(self.base_mean_s) and math.isfinite(self.wait_mean_s * self.wait_probability)):
            return math.inf
        if isinstance(self.level_parts, LevelColumns):
            weight, *law = self._part_arrays()
            keep = weight > 1e-12
            if np.count_nonzero(keep) == 1:  # one part: its own quantile, in plain floats
                return shifted_gamma_quantile(*(float(x[keep][0]) for x in law), q)
            return float(_mixture_quantile([(weight[keep], *(x[keep] for x in law))], q))
        return _mixture_quantile([part for part in self.components() if part[0] > 1e-12], q)

    def exceeds_one(self, level_s: float, q: float) -> bool:
        """:meth:`exceeds` for a law at one t_d, in plain floats (the sizing hot path)."""
        return self.survival_one(level_s) > 1.0 - q

    def survival_one(self, level_s: float) -> float:
        """P(TTFT > ``level_s``) under the mixture of :meth:`quantile_s`, for a law at one t_d (1 when
        the law is infinite)."""
        if not (math.isfinite(self.base_mean_s) and math.isfinite(self.wait_mean_s * self.wait_probability)):
            return 1.0
        if isinstance(self.level_parts, LevelColumns):
            weight, *law = self._part_arrays()
            keep = weight > 1e-12
            return float(weight[keep] @ shifted_gamma_survival(*(x[keep] for x in law), level_s))
        tail = 0.0
        for weight, mean, variance, third in self.components(drop_empty=True):
            if weight > 1e-12:
                tail += weight * _survival(_Floats, _gamma_law(_Floats, mean, variance, third), level_s)
        return tail

    def exceeds(self, level_s: float, q: float) -> Any:
        """Whether the q-quantile exceeds ``level_s`` (arrays allowed): P(TTFT > level) > 1 − q under
        the mixture of :meth:`quantile_s`, by its survival function."""
        mean = np.asarray(self.base_mean_s, dtype=np.float64)
        tail = np.zeros_like(mean)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if isinstance(self.level_parts, LevelColumns):
                weight, *law = self._part_arrays()
                survival = shifted_gamma_survival(*law, level_s)
                tail = np.where(weight > 0.0, weight * survival, 0.0).sum(axis=0)
            else:
                for weight, *law in self.components():
                    weight = np.asarray(weight, dtype=np.float64) * np.ones_like(mean)
                    tail = tail + np.where(weight > 0.0, weight * shifted_gamma_survival(*law, level_s), 0.0)
            finite = np.isfinite(mean) & np.isfinite(np.asarray(self.wait_mean_s * self.wait_probability))
        return ~finite | (tail > 1.0 - q)


def _quiet_and_rest(w0: Any, whole: tuple, quiet: tuple, array: bool) -> tuple[Any, tuple, tuple]:
    """(w0, quiet cumulants, rest cumulants) of a law with cumulants ``whole`` of which the quiet
    part, of probability ``w0`` and cumulants ``quiet``, is one part: the rest's raw moments are the
    whole's less w0 times the quiet part's, over 1 − w0. w0 within 10⁻⁹ of 0 or 1 is rounded there
    (the rest, or the quiet part, is then the whole law)."""
    if array:
        w0 = np.where((w0 > 1e-9) & (w0 < 1.0 - 1e-9), w0, np.where(w0 >= 1.0 - 1e-9, 1.0, 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            busy = np.where(w0 < 1.0, 1.0 - w0, 1.0)
            raw_q, raw_w = _raw(*quiet), _raw(*whole)
            rest = _cumulants(*((a - w0 * b) / busy for a, b in zip(raw_w, raw_q, strict=True)))
            rest = tuple(np.where(w0 > 0.0, r, f) for r, f in zip(rest, whole, strict=True))
            quiet = tuple(np.where(w0 > 0.0, x, f) for x, f in zip(quiet, whole, strict=True))
        return w0, quiet, rest
    if not 1e-9 < w0 < 1.0 - 1e-9:
        w0 = 1.0 if w0 >= 1.0 - 1e-9 else 0.0
    if 0.0 < w0 < 1.0:  # (1 − w0 > 10⁻⁹: no division by zero)
        (q1, q2, q3), (w1, w2, w3) = _raw(*quiet), _raw(*whole)
        busy = 1.0 - w0
        rest = _cumulants((w1 - w0 * q1) / busy, (w2 - w0 * q2) / busy, (w3 - w0 * q3) / busy)
        return w0, quiet, rest
    return w0, whole, whole


def _mixture_quantile(blocks: list, q: float) -> float:
    """The q-quantile of Σ w_i·SG(part_i) (shifted gamma laws by their cumulants): it lies between the
    parts' own q-quantiles; found there by Newton's method on the log survival function, kept
    inside the shrinking bracket (a bisection step when Newton leaves it), to 10⁻¹⁰ relative.

    ``blocks``: the parts as (weight, mean, variance, third cumulant), each part a block of floats,
    or all of them one block of arrays over the parts; Newton starts at the heaviest part's own
    quantile (the first of the heaviest)."""
    xp = _backend(blocks[0][0])
    with xp.quiet():
        laws = []
        for weight, mean, variance, third in blocks:
            law = _gamma_law(xp, mean, variance, third)
            laws.append((weight, law, _quantile(xp, law, q)))
        lo, hi = min(xp.lowest(own) for _, _, own in laws), max(xp.highest(own) for _, _, own in laws)
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo <= 1e-12 * max(abs(hi), 1e-300):
            return hi if math.isfinite(hi) else math.inf
        start = max((xp.heaviest(weight, own) for weight, _, own in laws), key=lambda pair: pair[0])[1]
        prepared = [(weight, law, _log_gamma_shape(xp, law)) for weight, law, _ in laws]

        def tail_and_density(x: float) -> tuple[float, float]:
            tail = density = 0.0
            for weight, law, log_gamma_shape in prepared:
                survival, density_at = _survival_and_density(xp, law, log_gamma_shape, x)
                tail += xp.dot(weight, survival)
                density += xp.dot(weight, density_at)
            return tail, density

        return _newton_quantile(tail_and_density, start, lo, hi, q)


def _newton_quantile(tail_and_density: Any, x: float, lo: float, hi: float, q: float) -> float:
    """The x in [lo, hi] where the survival function of ``tail_and_density`` (x → (S(x), S′ = −f))
    is 1 − q, from x: Newton on log S, safeguarded (:func:`_mixture_quantile`)."""
    log_target = math.log(1.0 - q)
    width = hi - lo
    for _ in range(200):
        # Newton on g(x) = log S(x) − log(1 − q) (a tail's log survival is close to linear), safeguarded
        # as rtsafe does: bisect when the step leaves the bracket or shrinks it too slowly
        tail, density = tail_and_density(x)
        value = math.log(tail) - log_target if tail > 0.0 else -math.inf
        if value == 0.0:
            return x
        if value > 0.0:
            lo = x
        else:
            hi = x
        if hi - lo <= 1e-10 * max(abs(hi), 1e-12):
            return 0.5 * (lo + hi)
        slope = density / tail if tail > 0.0 else 0.0
        step = x + value / slope if slope > 0.0 and math.isfinite(value) else math.nan
        if not lo < step < hi or abs(step - x) > 0.5 * width:
            step = 0.5 * (lo + hi)
        width = abs(step - x)
        x = step
    return x


def ttft_cumulants(
    levels: PromptLevels,
    *,
    tau_s: float,
    decode_iteration_s: Any,
    rate_per_instance_per_s: float,
    time_share: float,
    overhead_s: float = 0.0,
    slot_wait: tuple[Any, Any] = (0.0, 0.0),
    own_excess: tuple[float, float] = (0.0, 0.0),
    first_token_iteration: int = 1,
) -> TtftCumulants:
    """Cumulants of TTFT on one instance (module docstring).

    Args:
        levels: the pool's prompt lengths by prefill level.
        tau_s: τ, seconds per prompt token in an iteration.
        decode_iteration_s: t_d = W + c_d·k, the iteration without prompts, seconds (a float, or an
            array: everything below is rational in t_d, so the same code sweeps it).
        rate_per_instance_per_s: λ_i.
        time_share: f, the share of the intake that follows the instance's own time.
        overhead_s: T0, added to every TTFT.
        slot_wait: (P(wait), mean wait given a wait) for a slot: an exponential wait with that
            probability, independent of the rest (floats or arrays like t_d).
        own_excess: (a, b): the request's own prompt of L tokens at level k costs τ·E[L | k] +
            a·E[L² | k] + b·E[L | k], priced at τ_k = τ + (a·E[L² | k] + b·E[L | k]) / E[L | k]
            per token (its attention: :mod:`fleetopt.core.engine.prompts`); (0, 0): τ.
        first_token_iteration: o, where the first token comes: 1, one iteration after the last
            prompt chunk (the window is iterations 1 … P + 1: the ``slots`` engine, FleetOpt Eq. 7);
            0, with the last prompt chunk (iterations 1 … P: vLLM's V1 engine samples it in the
            step that computes the prompt's last tokens, as the ``vllm`` scheduler does). A
            request without a prompt (P = 0) waits one iteration either way.

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
    # The stationary iteration and the length-biased one in progress. κ₂ = B·t̄, κ₃ = A·t̄,
    # κ₄ = (3A²/2B)·t̄ (all proportional to t̄), so E[Ť^j] = E[t^{j+1}]/t̄ needs no division by t̄.
    s2, s3 = levels.chunk_power_means()
    b_ = tau_s**2 * lam * s2 / (1.0 - u_time * u_time)
    if b_ > 0:
        a_ = (tau_s**3 * lam * s3 + 3.0 * u_time * tau_s**2 * lam_time * s2 * b_) / (1.0 - u_time**3)
        c_ = 1.5 * a_ * a_ / b_
    else:  # no prompt time reaches the instance: every iteration lasts t_d
        a_ = c_ = 0.0
    e_t = b_ + tbar
    e_t2 = a_ + 3.0 * b_ * tbar + tbar * tbar
    e_t3 = c_ + (4.0 * a_ + 3.0 * b_ * b_) * tbar + 6.0 * b_ * tbar * tbar + tbar**3
    var_t = e_t2 - e_t * e_t
    k3_t = e_t3 - 3 * e_t * e_t2 + 2 * e_t**3
    depth = levels.max_level + 1
    key = (tau_s, lam_time, first_token_iteration)
    memo = levels._clusters.get(key)
    plain = levels.max_level <= PLAIN_FLOAT_MAX_LEVEL
    if memo is None:  # sizing evaluates one instance count at several t_d: memoized per (τ, f·λ_i)
        if len(levels._clusters) > 256:
            levels._clusters.clear()
        clusters = _cluster_lists if plain else _cluster_arrays
        memo = levels._clusters[key] = clusters(levels, tau_s, lam_time, depth, first_token_iteration)
    # other requests with a chunk in the iteration in progress, on average (λ_i·t̄·E[P], and u more
    # under its length bias): part of every level's ν
    in_progress = lam * tbar * levels.mean_prefill_iterations + u
    last = memo[0][first_token_iteration]  # Q_o: the clusters of arrivals during the last chunk
    q_last = last if plain else tuple(last.tolist())
    exp = math.exp if isinstance(tbar, float) and plain else np.exp
    window = _Window._make((
        levels.chunk_tokens, q_last, tau_s, t_d, lam, lam_time, tbar, per_boundary, b_,
        (e_t, e_t2, e_t3, var_t, k3_t), in_progress, exp, own_excess, first_token_iteration,
    ))  # fmt: skip
    m1, m2, m3, quiet, z1, z2, z3, rows = (_level_sums_plain if plain else _level_sums_array)(
        levels, memo, window, overhead_s
    )
    mean, var, third = _cumulants(m1, m2, m3)
    if isinstance(quiet, float):  # (one t_d: plain floats, no numpy warnings to silence)
        q_mean, q_var, q_third = (
            (0.0, 0.0, 0.0) if quiet == 0.0 else _cumulants(z1 / quiet, z2 / quiet, z3 / quiet)
        )
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            q_mean, q_var, q_third = _cumulants(z1 / quiet, z2 / quiet, z3 / quiet)
    p_wait, wait_mean = slot_wait
    return TtftCumulants(
        mean + overhead_s, var, third, tbar, u,
        quiet, q_mean + overhead_s, q_var, q_third, p_wait, wait_mean, rows,
    )  # fmt: skip


def _cluster_lists(levels: PromptLevels, tau_s: float, lam_time: float, depth: int, offset: int) -> tuple:
    """(Q_r, Σ_{i≤r} Q_i, background marks by own level, for windows of P + ``offset`` iterations) in
    plain floats, for few levels."""
    q = cluster_moments(levels, tau_s, lam_time, depth)
    q_sum = [(0.0, 0.0, 0.0)]  # q_sum[r] = Σ_{i=1}^{r} Q_i
    for r in range(1, depth + 1):
        prev = q_sum[-1]
        q_sum.append((prev[0] + q[r][0], prev[1] + q[r][1], prev[2] + q[r][2]))
    background = _background_marks(levels, tau_s, lam_time, q, offset) if levels.max_level >= 2 else None
    return q, q_sum, background


class _Window(NamedTuple):
    """What the law of every own level shares (:func:`ttft_cumulants`): the chunk size C, the
    clusters Q_o of the arrivals during the request's last chunk, τ, t_d, λ_i, f·λ_i, t̄, the
    per-boundary intake μ, the stationary iteration's B (κ₂ = B·t̄), the length-biased iteration's
    moments (E[t], E[t²], E[t³], Var, κ₃) and the other requests with a chunk in the iteration in
    progress (λ_i·t̄·E[P] + u); ``exp``: math's on floats, numpy's where t_d is an array;
    ``own_excess``: (a, b) of the request's own prompt price (:func:`ttft_cumulants`);
    ``first_token_iteration``: o."""

    chunk_tokens: int
    q_last: tuple
    tau_s: float
    t_d: Any
    lam: float
    lam_time: float
    tbar: Any
    per_boundary: Any
    b_: float
    moments_t: tuple
    in_progress: Any
    exp: Any
    own_excess: tuple[float, float]
    first_token_iteration: int


def _window_iterations(p: Any, offset: int) -> Any:
    """m = max(P + o, 1): the iterations of a request's window, its first token at the end of the
    last (:func:`ttft_cumulants`' ``first_token_iteration`` o; an int, or an array of levels)."""
    return p + offset + (p + offset < 1)


def _level_law(
    p: Any, y1: Any, y2: Any, y3: Any, qp: tuple, qs: tuple, before: tuple, bg: tuple | None, window: _Window
) -> tuple:
    """The law of TTFT given the request's own prefill level P = ``p``, without T0 and the slot wait
    (module docstring): (c₁, c₂, c₃) its cumulants, the probability that no other request's prompt
    touches the window, and the quiet part's (mean, variance, third cumulant). One level in plain
    floats (or against an array of t_d), or a column of levels (numpy): the same formulas.

    The window is m = P + o iterations (at least 1; o = ``window.first_token_iteration``): the
    request's own chunks in iterations 1 … P, its first token at the end of iteration m.
    ``y1``–``y3``: E[y^i | P] of the last chunk; ``qp``, ``qs``, ``before``: the clusters' raw
    moments Q_m, Σ_{i≤m} Q_i and Σ_{i≤m−1} Q_i (three each); ``bg``: the marks of the prompts
    still prefilling from before (None: there are none); ``window``: what every level shares."""
    (
        chunk, q_last, tau_s, t_d, lam, lam_time, tbar, per_boundary, b_, moments_t, in_progress, exp,
        excess, offset,
    ) = window  # fmt: skip
    e_t, e_t2, e_t3, var_t, k3_t = moments_t
    tc = tau_s * chunk
    prefilling = (p >= 1) * 1.0  # 1 where the request has a prompt to prefill (P ≥ 1)
    own_tokens = prefilling * (p - 1.0) * chunk + y1  # (P − 1)⁺ full chunks and the last
    # the request's own prompt tokens at its level's price τ_k (τ where there is no excess)
    full = prefilling * (p - 1.0) * chunk
    own_extra = excess[0] * (full * full + 2.0 * full * y1 + y2) + excess[1] * own_tokens
    tau_own = tau_s + own_extra / (own_tokens + (own_tokens <= 0.0))
    m = _window_iterations(p, offset)
    # other requests that touch the window, on average (ν): those with a chunk in the iteration in
    # progress (``in_progress``), the per-boundary intake at boundaries 1 … m and the time-driven
    # arrivals during Ť and iterations 1 … m − 1 (the request's own chunks there included)
    own_before_last = own_tokens if offset else full
    others = in_progress + per_boundary * m + lam_time * (e_t + (m - 1.0) * tbar + tau_own * own_before_last)
    still = exp(-others)
    # quiet: Ť = t_d, so R = U·t_d; then m iterations of t_d and the request's own chunks
    quiet_mean = t_d / 2.0 + m * t_d + tau_own * own_tokens
    quiet_var = t_d * t_d / 12.0 + tau_own**2 * (y2 - y1 * y1)
    quiet_third = tau_own**3 * (y3 - 3.0 * y1 * y2 + 2.0 * y1**3)
    # the residual R = U·Ť and the clusters of the arrivals during Ť (m iterations left)
    g = 0.5 + lam_time * qp[0]
    c1 = g * e_t
    c2 = e_t2 / 12.0 + lam_time * qp[1] * e_t + g * g * var_t
    c3 = (
        lam_time * qp[2] * e_t
        + 3.0 * g * ((e_t3 - e_t * e_t2) / 12.0 + lam_time * qp[1] * var_t)
        + g**3 * k3_t
    )
    # the per-boundary intake at boundaries 1 … m: Poisson(μ) clusters Q_m, …, Q_1
    c1 = c1 + per_boundary * qs[0]
    c2 = c2 + per_boundary * qs[1]
    c3 = c3 + per_boundary * qs[2]
    tc_own = tau_own * chunk
    # the request's own decode time and chunks and the clusters they attract: iteration i = 1 … m
    # carries t_d (+ τ·c_{i−1} for i ≤ p), whose arrivals have m − i iterations left. The full
    # chunks (iterations 1 … p − 1: r = m − 1 … m − p + 1), then the partial one y (r = o), p ≥ 1.
    a1 = (
        m * t_d
        + lam_time * t_d * before[0]
        + prefilling * tc_own * ((p - 1.0) + lam_time * (before[0] - q_last[0]))
    )
    a2 = lam_time * t_d * before[1] + prefilling * (tc_own * lam_time * (before[1] - q_last[1]))
    a3 = lam_time * t_d * before[2] + prefilling * (tc_own * lam_time * (before[2] - q_last[2]))
    b1 = prefilling * (tau_own * (1.0 + lam_time * q_last[0]))
    b2 = prefilling * (tau_own * lam_time * q_last[1])
    b3 = prefilling * (tau_own * lam_time * q_last[2])
    o1, o2, o3 = _conditional_raw(a1, b1, a2, b2, a3, b3, y1, y2, y3)
    c1 = c1 + o1
    c2 = c2 + o2 - o1 * o1
    c3 = c3 + o3 - 3.0 * o1 * o2 + 2.0 * o1**3
    if bg is not None:
        # Requests admitted before the iteration in progress and still prefilling (λ_i·t̄ per lag):
        # each also has a full chunk in that iteration, so under its length bias they are more
        # (E[tB]/E[t]) and covary with Ť (second order, through the joint cumulants of (t, B)).
        joint = lam * tc * bg[0]  # κ₁₁(t, B)/t̄
        cov = joint * (tbar - b_) + lam * tc * tc * bg[0]  # Cov(Ť, B) under the length bias
        c1 = c1 + lam * tbar * bg[0] + joint
        c2 = c2 + lam * tbar * bg[1] + lam * tc * bg[1] - joint * joint + 2.0 * g * cov
        c3 = c3 + lam * tbar * bg[2]
    return c1, c2, c3, still, quiet_mean, quiet_var, quiet_third


def _level_sums_plain(levels: PromptLevels, memo: tuple, window: _Window, overhead_s: float) -> tuple:
    """The per-level part of :func:`ttft_cumulants`, one prefill level at a time in plain floats (or
    over an array of t_d): Σ_P w_P·(E[X], E[X²], E[X³]) of the law without T0 and the slot wait, the
    quiet probability and the quiet part's raw moments weighted by it, and the law by level
    (:attr:`TtftCumulants.level_parts`, T0 = ``overhead_s`` in its means). ``memo``:
    :func:`_cluster_lists`; ``window``: what the law of every level shares."""
    q, q_sum, background = memo
    m1 = m2 = m3 = 0.0
    z1 = z2 = z3 = 0.0  # raw moments of the quiet part, weighted by its probability
    quiet = 0.0
    rows = []  # per own level: its share and its law (see TtftCumulants.level_parts)
    offset = window.first_token_iteration
    for p, w, y1, y2, y3 in levels._chunk_rows:
        bg = None if background is None else background[p]
        m = _window_iterations(p, offset)
        c1, c2, c3, still, quiet_mean, quiet_var, quiet_third = _level_law(
            p, y1, y2, y3, q[m], q_sum[m], q_sum[m - 1], bg, window
        )
        r = _raw(quiet_mean, quiet_var, quiet_third)
        quiet = quiet + w * still
        z1 = z1 + w * still * r[0]
        z2 = z2 + w * still * r[1]
        z3 = z3 + w * still * r[2]
        rows.append((w, c1 + overhead_s, c2, c3, still, quiet_mean + overhead_s, quiet_var, quiet_third))
        r1, r2, r3 = _raw(c1, c2, c3)
        m1 = m1 + w * r1
        m2 = m2 + w * r2
        m3 = m3 + w * r3
    return m1, m2, m3, quiet, z1, z2, z3, rows


def _background_marks(levels: PromptLevels, tau_s: float, lam_time: float, q: list, offset: int) -> dict:
    """For each own level p (a window of m = max(p + ``offset``, 1) iterations): Σ over lags j ≥ 1
    of the raw moments of the window time that one request admitted j iterations before the
    iteration in progress still causes (its chunks j … j + m − 1 land in window iterations 1 … m;
    chunk j + i − 1 in iteration i, whose arrivals have m − i iterations left). Multiplied by the
    intensity λ_i·t̄ per lag by the caller."""
    tc = tau_s * levels.chunk_tokens
    out = {}
    for p in levels.levels:
        window = _window_iterations(p, offset)
        t1 = t2 = t3 = 0.0
        for j in range(1, levels.max_level):
            for k, w, y1, y2, y3 in levels._chunk_rows:
                if k <= j:  # no chunk j: its prefill ended before the window
                    continue
                a1 = a2 = a3 = b1 = b2 = b3 = 0.0
                for i in range(1, window + 1):
                    m = j + i - 1
                    if m >= k:
                        break
                    qm = q[window - i]
                    if m < k - 1:
                        a1 += tc * (1.0 + lam_time * qm[0])
                        a2 += tc * lam_time * qm[1]
                        a3 += tc * lam_time * qm[2]
                    else:
                        b1 += tau_s * (1.0 + lam_time * qm[0])
                        b2 += tau_s * lam_time * qm[1]
                        b3 += tau_s * lam_time * qm[2]
                r1, r2, r3 = _conditional_raw(a1, b1, a2, b2, a3, b3, y1, y2, y3)
                t1 += w * r1
                t2 += w * r2
                t3 += w * r3
        out[p] = (t1, t2, t3)
    return out


def _cluster_arrays(levels: PromptLevels, tau_s: float, lam_time: float, depth: int, offset: int) -> tuple:
    """(Q_r, Σ_{i≤r} Q_i, background marks by own level, for windows of P + ``offset`` iterations) as
    arrays: :func:`cluster_moments_array`, its running sum and :func:`background_marks_array`."""
    q = cluster_moments_array(levels, tau_s, lam_time, depth)
    q_sum = np.cumsum(q, axis=0)
    return q, q_sum, background_marks_array(levels, tau_s, lam_time, q, q_sum, offset)


#: The monomials of the cumulants' coefficients (κ_j = a_j + b_j·y given the last chunk y) that
#: :func:`_conditional_raw` needs, a row each: 0 a₁, 1 a₂, 2 b₁, 3 b₂, 4 a₃, 5 b₃, 6 a₁², 7 a₁a₂,
#: 8 a₁b₁, 9 a₁b₂, 10 b₁a₂, 11 b₁², 12 b₁b₂, 13 a₁³, 14 a₁²b₁, 15 a₁b₁², 16 b₁³ (built by
#: :func:`_monomials`). Row m multiplies E[y^i] with i its degree in b: ``_MONOMIAL_Y_POWER[m]``.
_MONOMIAL_Y_POWER = np.array((0, 0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 2, 2, 0, 1, 2, 3))
_MONOMIAL_ROWS = np.arange(_MONOMIAL_Y_POWER.size)
#: E[Z], E[Z²], E[Z³] (:func:`_conditional_raw`) as combinations of the monomials times E[y^i]
_RAW_FROM_MONOMIALS = np.array(
    (
        (1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        (0, 1, 0, 1, 0, 0, 1, 0, 2, 0, 0, 1, 0, 0, 0, 0, 0),
        (0, 0, 0, 0, 1, 1, 0, 3, 0, 3, 3, 0, 3, 1, 3, 3, 1),
    ),
    dtype=np.float64,
)


def _monomials(gathered: np.ndarray, scale: np.ndarray, offset: Any, a1_extra: Any) -> np.ndarray:
    """The 17 monomial rows (:data:`_MONOMIAL_Y_POWER`) over columns, from (a₁, a₂, b₁, b₂, a₃, b₃) =
    ``gathered`` · ``scale`` + ``offset`` (row-wise), ``a1_extra`` added to a₁."""
    mono = np.empty((17, gathered.shape[1]))
    np.multiply(gathered, scale, out=mono[:6])
    mono[:6] += offset
    mono[0] += a1_extra
    np.multiply(mono[0], mono[0:4], out=mono[6:10])
    np.multiply(mono[2], mono[1:4], out=mono[10:13])
    np.multiply(mono[6], mono[0:3:2], out=mono[13:15])
    np.multiply(mono[11], mono[0:3:2], out=mono[15:17])
    return mono


def _history(q: np.ndarray, q_sum: np.ndarray) -> np.ndarray:
    """Columns x of (S₁, S₂, Q₁, Q₂, S₃, Q₃): S_j = Σ_{i≤x} E[Q_i^j], Q_j = E[Q_x^j]. One gather at x
    gives a window sum of clusters ending at x (with the window's own S) and the cluster Q_x, in
    the order of :func:`_monomials`' (a₁, a₂, b₁, b₂, a₃, b₃)."""
    return np.stack((q_sum[:, 0], q_sum[:, 1], q[:, 0], q[:, 1], q_sum[:, 2], q[:, 2]))


def cluster_moments_array(
    levels: PromptLevels, tau_s: float, time_rate_per_s: float, depth: int
) -> np.ndarray:
    """:func:`cluster_moments` as an array (``depth`` + 1 rows r, columns E[Q_r^j], j = 1, 2, 3), one
    step of r at a time with numpy over the levels: the levels above r all contribute the same r full
    chunks (their share of the weight times one value); a level k ≤ r contributes k − 1 full chunks,
    whose clusters are a window sum S(r − 1) − S(r − k) of the running sums, and its partial chunk,
    whose cluster is Q_{r−k}. In each step the monomials that :func:`_conditional_raw` needs are
    formed for all levels at once and weighted by the levels' w·E[y^i] in one matrix product.
    O(depth · levels) arithmetic in O(depth) numpy steps."""
    lam = time_rate_per_s
    k_all, w_all, y1_all, y2_all, y3_all = levels.level_arrays()
    prefilling = k_all > 0
    k = k_all[prefilling].astype(np.intp)
    w = w_all[prefilling]
    # (levels, 4): w·E[y^i | k], i = 0 … 3
    weights = np.stack((w, w * y1_all[prefilling], w * y2_all[prefilling], w * y3_all[prefilling]), axis=1)
    tc = tau_s * levels.chunk_tokens
    tc_lam, tau_lam = tc * lam, tau_s * lam
    tc_full = tc * (k - 1.0)  # τC·(k − 1): a level's full chunks
    at_most = np.searchsorted(k, np.arange(depth + 1), side="right").tolist()  # levels k ≤ r
    above = np.append(np.cumsum(w[::-1])[::-1], 0.0)[at_most].tolist()  # their weight Σ_{k>r} w
    history = np.zeros((6, depth + 1))  # :func:`_history`, filled as Q grows
    scale = np.array((-tc_lam, -tc_lam, tau_lam, tau_lam, -tc_lam, tau_lam))[:, None]
    q = np.zeros((depth + 1, 3))
    s1 = s2 = s3 = 0.0  # Σ_{i<r} E[Q_i^j]
    t1 = t2 = t3 = 0.0  # E[Q_{r−1}^j]
    for r in range(1, depth + 1):
        s1, s2, s3 = s1 + t1, s2 + t2, s3 + t3
        history[:, r - 1] = (s1, s2, t1, t2, s3, t3)
        t1 = t2 = t3 = 0.0
        weight = above[r]
        if weight > 0.0:  # levels k > r: r full chunks, no partial one, the same for all
            a1 = tc * r + tc_lam * s1
            a2, a3 = tc_lam * s2, tc_lam * s3
            t1, t2, t3 = weight * a1, weight * (a2 + a1 * a1), weight * (a3 + 3.0 * a1 * a2 + a1**3)
        n = at_most[r]
        if n:  # levels k ≤ r: a = τC·(k − 1 + λ·(S(r − 1) − S(r − k))), b = τ·(1 + λ·Q_{r−k})
            offset = np.array((tc_lam * s1, tc_lam * s2, tau_s, 0.0, tc_lam * s3, 0.0))[:, None]
            mono = _monomials(history[:, r - k[:n]], scale, offset, tc_full[:n])
            sums = (mono @ weights[:n])[_MONOMIAL_ROWS, _MONOMIAL_Y_POWER]
            m1, m2, m3 = (_RAW_FROM_MONOMIALS @ sums).tolist()
            t1, t2, t3 = t1 + m1, t2 + m2, t3 + m3
        q[r] = (t1, t2, t3)
    return q


def background_marks_array(
    levels: PromptLevels, tau_s: float, lam_time: float, q: np.ndarray, q_sum: np.ndarray, offset: int = 1
) -> np.ndarray:
    """:func:`_background_marks` as an array (a row per entry of ``levels.levels``), in closed form
    over the lags. A request of level k admitted j iterations before the one in progress has
    d = k − j chunks left; in a window of p + 1 iterations its full chunks land in iterations
    1 … min(p + 1, d − 1) (clusters Q_p … Q_{p+1−n}: a window sum of the running sums) and its
    partial chunk, when d ≤ p + 1, in iteration d (cluster Q_{p+1−d}). So the marks depend on
    (p, d) only, and the sum over levels and lags is Σ_d Σ_i g_i(p, d)·Σ_{k>d} w_k·E[y^i | k]: for
    d > p + 1 (every chunk left is full) one value times Σ_{d>p+1} Σ_{k>d} w_k, for d ≤ p + 1 one
    numpy step per lag d over the own levels p ≥ d − 1. O(levels · depth) arithmetic.
    ``q_sum``: the running sums of ``q``. Written for windows of p + 1 iterations; a window of
    m = max(p + ``offset``, 1) iterations is the same with p = m − 1 (the marks see p only through
    the window)."""
    k_all, w, y1, y2, y3 = levels.level_arrays()
    level = k_all.astype(np.intp)
    own = _window_iterations(level, offset) - 1  # p of a window of p + 1 iterations
    top = levels.max_level
    out = np.zeros((3, own.size))
    if top < 2:
        return out.T
    lam = lam_time
    tc = tau_s * levels.chunk_tokens
    tc_lam, tau_lam = tc * lam, tau_s * lam
    # tail[i, d] = Σ_{k>d} w_k·E[y^i | k], d = 0 … top (0 at d = top)
    dense = np.zeros((4, top + 1))
    dense[:, level] = (w, w * y1, w * y2, w * y3)
    tail = np.zeros((4, top + 1))
    tail[:, :-1] = np.cumsum(dense[:, :0:-1], axis=1)[:, ::-1]
    # d > p + 1 (lags j = 1 … k − p − 2): p + 1 full chunks, Σ_{d=p+2}^{top−1} tail[0, d]
    upto = np.cumsum(tail[0])  # upto[x] = Σ_{d ≤ x} tail[0, d]
    flat = upto[top - 1] - upto[np.minimum(own + 1, top - 1)]
    window = q_sum[own].T  # Σ_{i≤p} Q_i
    a1 = tc * (own + 1.0) + tc_lam * window[0]
    a2, a3 = tc_lam * window[1], tc_lam * window[2]
    out[0] = flat * a1
    out[1] = flat * (a2 + a1 * a1)
    out[2] = flat * (a3 + 3.0 * a1 * a2 + a1**3)
    # d = 1 … min(p + 1, top − 1): d − 1 full chunks (a = τC·(d − 1 + λ·(S(p) − S(p + 1 − d))))
    # and the partial one (b = τ·(1 + λ·Q_{p+1−d})), weighted by tail[·, d]
    history = _history(q, q_sum)
    scale = np.array((-tc_lam, -tc_lam, tau_lam, tau_lam, -tc_lam, tau_lam))[:, None]
    base = np.zeros((6, own.size))
    base[0], base[1], base[2], base[4] = tc_lam * window[0], tc_lam * window[1], tau_s, tc_lam * window[2]
    by_lag = _RAW_FROM_MONOMIALS[None, :, :] * tail[_MONOMIAL_Y_POWER].T[:, None, :]  # (lag, 3, 17)
    firsts = np.searchsorted(own, np.arange(top - 1), side="left").tolist()  # own levels p ≥ d − 1
    for d in range(1, top):
        first = firsts[d - 1]
        mono = _monomials(history[:, own[first:] + (1 - d)], scale, base[:, first:], tc * (d - 1))
        out[:, first:] += by_lag[d] @ mono
    return out.T


def _level_sums_array(levels: PromptLevels, memo: tuple, window: _Window, overhead_s: float) -> tuple:
    """:func:`_level_sums_plain` with numpy over the levels (a column of levels against an array of
    t_d); ``memo``: :func:`_cluster_arrays`."""
    q, q_sum, background = memo
    k_all, w, y1, y2, y3 = levels.level_arrays()
    own = k_all.astype(np.intp)
    sweep = isinstance(window.tbar, np.ndarray) and window.tbar.ndim > 0

    def column(x: np.ndarray) -> np.ndarray:
        return x[:, None] if sweep else x

    def columns(moments: np.ndarray) -> tuple:
        return tuple(column(moments[:, j]) for j in range(3))

    m = _window_iterations(own, window.first_token_iteration)
    c1, c2, c3, still, quiet_mean, quiet_var, quiet_third = _level_law(
        column(k_all), column(y1), column(y2), column(y3), columns(q[m]), columns(q_sum[m]),
        columns(q_sum[m - 1]), columns(background), window,
    )  # fmt: skip
    weighted_still = column(w) * still
    quiet = weighted_still.sum(axis=0)
    z1, z2, z3 = ((weighted_still * r).sum(axis=0) for r in _raw(quiet_mean, quiet_var, quiet_third))
    # (einsum, not BLAS: a levels × t_d product past ~10⁴ entries would wake OpenBLAS's threads)
    m1, m2, m3 = (np.einsum("k,k...->...", w, r) for r in _raw(c1, c2, c3))
    by_level = (c1 + overhead_s, c2, c3, still, quiet_mean + overhead_s, quiet_var)
    if not sweep:
        rows = LevelColumns((w, *by_level, quiet_third))
        return float(m1), float(m2), float(m3), float(quiet), float(z1), float(z2), float(z3), rows
    shape = (w.size, np.shape(window.tbar)[0])
    rows = LevelColumns((w, *(np.broadcast_to(x, shape) for x in by_level), quiet_third[:, 0]))
    return m1, m2, m3, quiet, z1, z2, z3, rows


# -- The shifted gamma law, written once: on one point in plain floats (the sizing hot path), and over
# -- arrays of parts (a law of many prefill levels, a sweep of t_d)


_SCALAR_SPECIAL: Any = None


def _scalar_special() -> Any:
    """scipy.special.cython_special, imported on first use: scipy.special's kernels on one point
    without a ufunc's dispatch (0.09 against 0.9 µs a call; the same C functions, so the same bits)."""
    global _SCALAR_SPECIAL
    if _SCALAR_SPECIAL is None:
        from scipy.special import cython_special

        _SCALAR_SPECIAL = cython_special
    return _SCALAR_SPECIAL


#: one side of a branch: a function of (xp, …)
_Side = Callable[..., Any]


class _Floats(FLOATS):
    """:class:`~fleetopt.core.backends.FLOATS` and what the shifted gamma law also needs, on one point."""

    erfc = staticmethod(math.erfc)

    @staticmethod
    def gammaincinv(a: float, p: float) -> float:
        return _scalar_special().gammaincinv(a, p)

    @staticmethod
    def ndtri(p: float) -> float:
        return _scalar_special().ndtri(p)

    @staticmethod
    def gamma_tail(upper: bool, shape: float, z: float) -> float:
        """P(G > z) where ``upper``, else P(G ≤ z), for G ~ Gamma(shape) and any z (1 or 0 at z ≤ 0)."""
        if z > 0.0:
            special = _scalar_special()
            return (special.gammaincc if upper else special.gammainc)(shape, z)
        return 1.0 if upper else 0.0

    #: Σ weight·value over a block of parts: one part, on one point
    dot = staticmethod(operator.mul)

    @staticmethod
    def lowest(x: float) -> float:
        """The least value of a block of parts (one part)."""
        return x

    highest = lowest

    @staticmethod
    def heaviest(weight: float, values: float) -> tuple[float, float]:
        """(the largest weight of a block of parts, the value at it): one part."""
        return weight, values

    @staticmethod
    def branch(condition: bool, if_true: _Side, if_false: _Side) -> _Side:
        """The function to apply, ``if_true`` where ``condition`` holds, else ``if_false`` (each takes
        (xp, …)): on one point only the side taken is worked out."""
        return if_true if condition else if_false


class _Arrays(ARRAYS):
    """:class:`~fleetopt.core.backends.ARRAYS` and what the shifted gamma law also needs, element by
    element."""

    @staticmethod
    def erfc(x: Any) -> np.ndarray:
        return _special().erfc(x)

    @staticmethod
    def gammaincinv(a: Any, p: Any) -> np.ndarray:
        return _special().gammaincinv(a, p)

    @staticmethod
    def gamma_tail(upper: Any, shape: Any, z: Any) -> np.ndarray:
        special = _special()
        tail = np.where(upper, special.gammaincc(shape, z), special.gammainc(shape, z))
        return np.where(z > 0.0, tail, np.where(upper, 1.0, 0.0))

    dot = staticmethod(np.dot)

    @staticmethod
    def lowest(x: np.ndarray) -> float:
        return float(x.min())

    @staticmethod
    def highest(x: np.ndarray) -> float:
        return float(x.max())

    @staticmethod
    def heaviest(weight: np.ndarray, values: np.ndarray) -> tuple[float, float]:
        """(the largest weight, the value at the first part that has it)."""
        i = int(np.argmax(weight))
        return float(weight[i]), float(values[i])

    @staticmethod
    def branch(condition: Any, if_true: _Side, if_false: _Side) -> _Side:
        """A function that works out both sides on every point and picks (a law's placeholders keep
        both defined)."""

        def both(xp: Any, *args: Any) -> np.ndarray:
            return np.where(condition, if_true(xp, *args), if_false(xp, *args))

        return both


def _backend(*values: Any) -> type[_Floats] | type[_Arrays]:
    """:class:`_Arrays` when any of ``values`` is an array, else :class:`_Floats`."""
    return _Arrays if any(isinstance(value, np.ndarray) for value in values) else _Floats


class _GammaLaw(NamedTuple):
    """Shifted gamma laws by their mean, variance and third cumulant (floats, or arrays that broadcast
    together): skewness γ₁ = κ₃/σ³, shape 4/γ₁², scale σ|γ₁|/2 and shift mean − shape·scale, the
    gamma law's lower end (``upper``: γ₁ > 0); mirrored for γ₁ < 0 (shift mean + shape·scale, its
    upper end). Where ``gamma`` is false the law is read as normal (|γ₁| < 10⁻⁶), or as a point at
    the mean where the variance is ≤ 0 (``point``). The fields are finite where the cumulants are
    (placeholders where a kind does not use them: variance and σ 1 at a point, |γ₁| 1 where
    normal), so every kind's formula is defined everywhere: on one point :meth:`_Floats.branch`
    works out only the kind's own, an array works out all and picks."""

    mean: Any
    variance: Any
    sd: Any
    point: Any
    gamma: Any
    upper: Any
    shape: Any
    scale: Any
    shift: Any


def _gamma_law(xp: Any, mean: Any, variance: Any, third: Any) -> _GammaLaw:
    """The :class:`_GammaLaw` with these cumulants (``xp``: :class:`_Floats` or :class:`_Arrays`)."""
    point = variance <= 0.0
    variance = xp.where(point, 1.0, variance)
    sd = xp.sqrt(variance)
    skew = third / (variance * sd)
    size = xp.abs(skew)
    normal = size < 1e-6
    size = xp.where(normal, 1.0, size)
    shape = 4.0 / (size * size)
    scale = sd * size / 2.0
    upper = skew > 0.0
    shift = xp.where(upper, mean - shape * scale, mean + shape * scale)
    gamma = xp.logical_not(point | normal)
    # (tuple.__new__: a third of the NamedTuple's own constructor's cost, on the sizing hot path)
    return _NEW_TUPLE(_GammaLaw, (mean, variance, sd, point, gamma, upper, shape, scale, shift))


_NEW_TUPLE = tuple.__new__


def _gamma_z(xp: Any, law: _GammaLaw, x: Any) -> Any:
    """Where x falls in the gamma law's own units: (x − shift)/scale, mirrored for γ₁ < 0."""
    return xp.where(law.upper, x - law.shift, law.shift - x) / law.scale


def _survival(xp: Any, law: _GammaLaw, x: Any) -> Any:
    """P(X > x)."""
    return xp.branch(law.gamma, _gamma_survival, _normal_or_point_survival)(xp, law, x)


def _gamma_survival(xp: Any, law: _GammaLaw, x: Any) -> Any:
    """Q(shape, z) above the lower end (P(shape, z) below a mirrored law's upper end)."""
    return xp.gamma_tail(law.upper, law.shape, _gamma_z(xp, law, x))


def _normal_or_point_survival(xp: Any, law: _GammaLaw, x: Any) -> Any:
    """½·erfc((x − mean)/√(2σ²)); for a point, 1 below it and 0 from it on."""
    normal = 0.5 * xp.erfc((x - law.mean) / xp.sqrt(2.0 * law.variance))
    return xp.where(law.point, xp.where(law.mean > x, 1.0, 0.0), normal)


def _log_gamma_shape(xp: Any, law: _GammaLaw) -> Any:
    """log Γ(shape), what the density needs (0 where the law is not a gamma law)."""
    return xp.lgamma(xp.where(law.gamma, law.shape, 1.0))


def _survival_and_density(xp: Any, law: _GammaLaw, log_gamma_shape: Any, x: Any) -> tuple[Any, Any]:
    """(P(X > x), the density at x), what a quantile's Newton steps need (``log_gamma_shape``:
    :func:`_log_gamma_shape`)."""
    return xp.branch(law.gamma, _gamma_survival_and_density, _normal_or_point_survival_and_density)(
        xp, law, log_gamma_shape, x
    )


def _gamma_survival_and_density(xp: Any, law: _GammaLaw, log_gamma_shape: Any, x: Any) -> tuple[Any, Any]:
    z = _gamma_z(xp, law, x)
    density = xp.branch(z > 0.0, _gamma_density_inside, _no_density)(xp, law, log_gamma_shape, z)
    return xp.gamma_tail(law.upper, law.shape, z), density


def _normal_or_point_survival_and_density(xp: Any, law: _GammaLaw, log_gamma_shape: Any, x: Any) -> tuple:
    return _normal_or_point_survival(xp, law, x), _normal_or_point_density(xp, law, log_gamma_shape, x)


def _gamma_density_inside(xp: Any, law: _GammaLaw, log_gamma_shape: Any, z: Any) -> Any:
    """z^(shape − 1)·e^(−z)/(Γ(shape)·scale) at z > 0 (NaN elsewhere, where an array does not use it)."""
    return xp.exp((law.shape - 1.0) * xp.log(z) - z - log_gamma_shape) / law.scale


def _no_density(xp: Any, *_: Any) -> float:
    """Outside a gamma law's support."""
    return 0.0


def _normal_or_point_density(xp: Any, law: _GammaLaw, log_gamma_shape: Any, x: Any) -> Any:
    """The normal density; 0 for a point."""
    u = (x - law.mean) / law.sd
    return xp.where(law.point, 0.0, xp.exp(-0.5 * u * u) / (law.sd * math.sqrt(2.0 * math.pi)))


def _quantile(xp: Any, law: _GammaLaw, q: float) -> Any:
    """The q-quantile (∞ where the mean or the variance is not finite)."""
    value = xp.branch(law.gamma, _gamma_quantile, _normal_or_point_quantile)(xp, law, q)
    return xp.where(xp.isfinite(law.mean) & xp.isfinite(law.variance), value, math.inf)


def _gamma_quantile(xp: Any, law: _GammaLaw, q: float) -> Any:
    """shift + scale·P⁻¹(shape, q) (shift − scale·P⁻¹(shape, 1 − q) for a mirrored law)."""
    g = xp.gammaincinv(law.shape, xp.where(law.upper, q, 1.0 - q))
    return xp.where(law.upper, law.shift + law.scale * g, law.shift - law.scale * g)


def _normal_or_point_quantile(xp: Any, law: _GammaLaw, q: float) -> Any:
    """mean + σ·Φ⁻¹(q); the mean for a point."""
    return xp.where(law.point, law.mean, law.mean + law.sd * xp.ndtri(q))


def shifted_gamma_quantile(mean: Any, variance: Any, third: Any, q: float) -> Any:
    """The q-quantile of the shifted gamma law with mean, variance and third cumulant given
    (:class:`_GammaLaw`; floats, or arrays element by element): shift + scale·P⁻¹(shape, q) for
    γ₁ > 0, shift − scale·P⁻¹(shape, 1 − q) for γ₁ < 0, the normal quantile when |γ₁| < 10⁻⁶, the
    mean when the variance is ≤ 0, ∞ when the mean or the variance is not finite."""
    xp = _backend(mean, variance, third)
    with xp.quiet():
        return _quantile(xp, _gamma_law(xp, mean, variance, third), q)


def shifted_gamma_survival(mean: Any, variance: Any, third: Any, x: float) -> Any:
    """P(X > x) for the shifted gamma law with these cumulants (:func:`shifted_gamma_quantile`'s;
    floats, or arrays element by element)."""
    xp = _backend(mean, variance, third)
    with xp.quiet():
        return _survival(xp, _gamma_law(xp, mean, variance, third), x)
