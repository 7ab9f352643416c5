"""Exact statistics of the requests that reach one pool, cheap enough for a sweep.

After one O(N log N) preparation per prefill chunk size, a range (lo, hi] of total tokens
costs a handful of binary searches: O(log N) for the moments and O(K log N) for a prefill
quantile, K being the number of distinct prefill-iteration counts (≤ 1 + max input / chunk).
The Compress-and-Route pools at boundary B also need the band above B, prepared once per B
over (B, max(γB, 2B)]; each γ then costs one matrix-vector product over the band's atoms up
to γB. Nothing is sampled: every figure is a finite weighted sum over the workload's atoms
(see :mod:`fleetopt.core.workload`).

Per request (FleetOpt Eq. 4): prefill iterations P = ⌈L_in / chunk⌉, iterations
I = P + L_out, routing length L = L_total. A request compressed by Compress-and-Route at
boundary B keeps L_out and gets L_in' = B − L_out, so its total becomes B (FleetOpt Eq. 15);
a request with L_out ≥ B cannot be compressed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from fleetopt.core.engine.ttft import PromptLevels
from fleetopt.core.routing import compressible as can_compress
from fleetopt.core.workload import Workload

# Columns of the per-atom moment table, each multiplied by the atom's weight w.
_COLUMNS = ("w", "I", "I2", "IL", "I2L", "I2L2", "P", "PL", "L", "J2")
_W, _I, _I2, _IL, _I2L, _I2L2, _P, _PL, _L, _J2 = range(len(_COLUMNS))

# Relative slack when comparing a cumulative weight with q·total (float sums of exact masses).
_QUANTILE_SLACK = 1e-12


@dataclass(frozen=True)
class PoolMoments:
    """The first two moments of a pool's per-request work, normalized over the pool's requests.

    Attributes:
        traffic_fraction: share of all requests that reach the pool (0 for an empty pool).
        mean_iterations: E[I], iterations a request holds its slot.
        mean_sq_iterations: E[I²].
        mean_prefill_iterations: E[P].
        prefill_iterations_quantile: the q-quantile of P (smallest k with P(P ≤ k) ≥ q); None when
            not asked for (the fleet-sim service model uses the mean prefill only).
        quantile: the q used above.
        mean_iter_x_len, mean_sq_iter_x_len, mean_sq_iter_x_sq_len: E[I·L], E[I²·L], E[I²·L²]
            (tokens; the length-scaled service model of the reference implementation needs them).
        mean_prefill_x_len: E[P·L], tokens.
        mean_total_tokens: E[L], tokens.
        max_total_tokens: the longest routed total length in the pool, tokens (0 if empty).
        mean_sq_input_tokens: E[L_in²], tokens² (L_in = L − L_out, after compression).
        prefill_quantile_fraction: where the q-quantile falls inside its prefill level P_q, in
            (0, 1]: the share of that level's weight needed to reach q (1 when not computed).
        prompt_levels: the prompt lengths by prefill level (weights and the moments of the last
            chunk), for the ``engine`` model's TTFT law (:mod:`fleetopt.core.engine.ttft`); None when not
            asked for.
        decode_above: ``decode_above(t)`` = (E[L_out; L > t], E[L_out·L; L > t]) over the pool's
            requests (L the routed total, tokens): what the engine model's KV-read floor needs
            (:meth:`fleetopt.core.service.EngineModel.decode_and_prompt_costs`); exact, memoized.
        mean_cached_tokens: E[L − L_out − L_in], the prompt tokens a prefix cache serves (0 but for a
            workload whose atoms charge their prompts only the uncached part: ``--prefix-caching``).
        mean_cached_x_input_tokens: E[h·L_in], h = L − L_out − L_in the cached tokens, tokens²: the
            (uncached prompt token, cached context token) pairs of a request's attention.
    """

    traffic_fraction: float
    mean_iterations: float
    mean_sq_iterations: float
    mean_prefill_iterations: float
    prefill_iterations_quantile: int | None
    quantile: float
    mean_iter_x_len: float
    mean_sq_iter_x_len: float
    mean_sq_iter_x_sq_len: float
    mean_prefill_x_len: float
    mean_total_tokens: float
    max_total_tokens: int
    mean_sq_input_tokens: float = math.nan
    prefill_quantile_fraction: float = 1.0
    prompt_levels: PromptLevels | None = None
    decode_above: Callable[[float], tuple[float, float]] | None = field(
        default=None, compare=False, repr=False
    )
    mean_cached_tokens: float = 0.0
    mean_cached_x_input_tokens: float = 0.0

    @property
    def is_empty(self) -> bool:
        """True when no traffic reaches the pool."""
        return self.traffic_fraction <= 0.0

    @property
    def iterations_scv(self) -> float:
        """Squared coefficient of variation of I: Var[I] / E[I]²."""
        return max(0.0, self.mean_sq_iterations / self.mean_iterations**2 - 1.0)


def _run_starts(sorted_totals: np.ndarray) -> np.ndarray:
    """Indices where a run of equal totals starts in an ascending array (every range query of
    total lengths begins and ends on one of them)."""
    if sorted_totals.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.concatenate(([True], sorted_totals[1:] != sorted_totals[:-1])))


def _atom_prefix_table(
    prefill_iterations: np.ndarray, output_tokens: np.ndarray, total_tokens: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """Cumulative sums of w·(1, I, I², I·L, I²·L, I²·L², P, P·L, L, L_in²) with a leading zero,
    shape (10, N + 1): prefix[:, k] = Σ_{j<k} column[j]. Built in one buffer, a row per column."""
    table = np.empty((len(_COLUMNS), weights.size + 1))
    table[:, 0] = 0.0
    body = table[:, 1:]
    p = prefill_iterations.astype(np.float64)
    i = p + output_tokens
    length = total_tokens.astype(np.float64)
    body[_W] = weights
    np.multiply(weights, i, out=body[_I])
    np.multiply(body[_I], i, out=body[_I2])
    np.multiply(body[_I], length, out=body[_IL])
    np.multiply(body[_I2], length, out=body[_I2L])
    np.multiply(body[_I2L], length, out=body[_I2L2])
    np.multiply(weights, p, out=body[_P])
    np.multiply(body[_P], length, out=body[_PL])
    np.multiply(weights, length, out=body[_L])
    inputs = length - output_tokens
    np.multiply(weights * inputs, inputs, out=body[_J2])
    np.cumsum(body, axis=1, out=body)
    return table


def _nonzero_atoms(weights: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """(the atoms to sum, where each of ``ends`` falls among them): every atom and ``ends`` when few
    weights are 0; else only the atoms of nonzero weight, and for each end the position of the last
    of them at or before it (−1 if none). Skipping a zero weight leaves every running sum as it is:
    its products are +0.0 (weights ≥ 0, finite factors) and s + 0.0 = s for the sums here (≥ 0),
    so the sums are the same numbers, for a fraction of the work (a C&R band's incompressible
    requests: few or none)."""
    zero = weights == 0
    if 4 * int(np.count_nonzero(zero)) < weights.size:  # a gather would cost more than it saves
        return None, ends
    kept = ~zero
    return np.flatnonzero(kept), np.cumsum(kept)[ends] - 1


def _at(cumulative: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``cumulative[positions]``, with 0 at position −1 (no atom summed yet)."""
    if positions.size and int(positions[0]) < 0:  # positions ascend: only a leading run of −1
        return np.where(positions >= 0, cumulative[np.maximum(positions, 0)], 0.0)
    return cumulative[positions]


def _run_prefix_table(
    prefill_iterations: np.ndarray,
    output_tokens: np.ndarray,
    total_tokens: np.ndarray,
    weights: np.ndarray,
    run_starts: np.ndarray,
) -> np.ndarray:
    """Cumulative sums of w·(1, I, I², I·L, I²·L, I²·L², P, P·L, L, L_in²) at the start of every run
    of equal total (and past the last atom), shape (10, runs + 1): table[:, k] sums the atoms before
    run k. The sums run atom by atom, as a per-atom table would (same numbers), one column at a
    time, so only the entries a range query can land on are kept; atoms of weight 0 are skipped
    when many are (:func:`_nonzero_atoms`: the same numbers)."""
    table = np.empty((len(_COLUMNS), run_starts.size + 1))
    table[:, 0] = 0.0
    if run_starts.size == 0:
        return table
    ends = np.append(run_starts[1:], total_tokens.size) - 1  # last atom of each run
    atoms, ends = _nonzero_atoms(weights, ends)
    if atoms is not None:
        if atoms.size == 0:
            table[:, 1:] = 0.0
            return table
        prefill_iterations, output_tokens = prefill_iterations[atoms], output_tokens[atoms]
        total_tokens, weights = total_tokens[atoms], weights[atoms]
    elif run_starts.size == total_tokens.size:  # every total distinct (a CDF): one row per atom
        return _atom_prefix_table(prefill_iterations, output_tokens, total_tokens, weights)

    def put(column: int, values: np.ndarray) -> None:
        table[column, 1:] = _at(np.cumsum(values), ends)

    # one weighted column at a time, each product formed as a per-atom table would form it, and
    # every intermediate dropped as soon as the columns that need it are done
    put(_W, weights)
    length = total_tokens.astype(np.float64)
    p = prefill_iterations.astype(np.float64)
    # every prompt in one chunk (a band below the chunk size): w·P = w·1 is w itself, bit for bit,
    # so the P and P·L columns are the W and L columns (copied below)
    single_chunk = bool((prefill_iterations == 1).all())
    if not single_chunk:
        wp = weights * p
        put(_P, wp)
        put(_PL, wp * length)
        del wp
    i = p + output_tokens
    del p
    wi = weights * i
    put(_I, wi)
    put(_IL, wi * length)
    wi2 = wi * i
    del wi, i
    put(_I2, wi2)
    wi2 *= length
    put(_I2L, wi2)
    wi2 *= length
    put(_I2L2, wi2)
    del wi2
    put(_L, weights * length)
    if single_chunk:
        table[_P], table[_PL] = table[_W], table[_L]
    length -= output_tokens  # the input lengths now
    put(_J2, weights * length * length)
    return table


class _PrefillHistogram:
    """Weight of atoms with total in (lo, hi], split by prefill-iteration count, by binary search.

    Atoms are sorted by the composite key P·M + L (M > every L), so the atoms with a given P
    and L in (lo, hi] form one contiguous run; all K runs are found with two vectorized
    searches. Only distinct keys are kept, with the cumulative weight at the end of each (the
    same numbers as per atom, since a search lands only on the end of a run of equal keys): a big
    log has far fewer distinct (P, L) pairs than atoms. ``other_weights`` gives histograms of the
    same atoms under other weights from the same sort. With ``last_chunk_tokens`` (y = L_in −
    (P − 1)·chunk per atom) it also keeps Σw·y, Σw·y², Σw·y³ per run, for
    :meth:`prompt_sums_by_level` (y ≤ chunk keeps those sums well conditioned).
    """

    def __init__(
        self,
        prefill_iterations: np.ndarray,
        total_tokens: np.ndarray,
        weights: np.ndarray,
        other_weights: tuple[np.ndarray, ...] = (),
        last_chunk_tokens: np.ndarray | None = None,
    ):
        self.modulus = int(total_tokens.max(initial=0)) + 1
        self.levels = int(prefill_iterations.max(initial=0)) + 1
        keys = prefill_iterations.astype(np.int64) * self.modulus + total_tokens
        if bool(np.all(keys[1:] >= keys[:-1])):  # in key order already (one level, a sorted band)
            order = None
        elif self.levels <= 2**16 and bool(np.all(total_tokens[1:] >= total_tokens[:-1])):
            # Atoms already in L order: a stable sort on P alone (a radix sort on 16 bits) gives
            # the same order as sorting the composite key.
            order = np.argsort(prefill_iterations.astype(np.uint16), kind="stable")
        else:
            order = np.argsort(keys, kind="stable")
        if order is not None:
            keys = keys[order]
        # positions (in the sorted atoms) just past each run of equal keys, and one key per run
        run_ends = np.flatnonzero(np.concatenate((keys[1:] != keys[:-1], [True]))) + 1 if keys.size else keys
        self.keys = keys[run_ends - 1] if keys.size else keys
        self.level_offsets = np.arange(self.levels, dtype=np.int64) * self.modulus
        last = None if last_chunk_tokens is None else _ordered(last_chunk_tokens, order).astype(np.float64)
        self.cumulative_weight, self._prompt_sums = _run_cumulative(weights, order, run_ends, last)
        self.others = tuple(
            self._with(*_run_cumulative(other, order, run_ends, last)) for other in other_weights
        )

    def _with(self, cumulative_weight: np.ndarray, prompt_sums: np.ndarray | None) -> _PrefillHistogram:
        """This histogram's keys with other cumulative weights (and prompt sums)."""
        other = object.__new__(_PrefillHistogram)
        other.modulus, other.levels, other.keys = self.modulus, self.levels, self.keys
        other.level_offsets, other.cumulative_weight, other.others = self.level_offsets, cumulative_weight, ()
        other._prompt_sums = prompt_sums
        return other

    def _runs(self, lo_tokens: int, hi_tokens: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Per level, the [left, right) runs of the atoms with lo < L ≤ hi (None when empty)."""
        lo = min(max(lo_tokens, -1), self.modulus - 1)
        hi = min(max(hi_tokens, -1), self.modulus - 1)
        if hi <= lo:
            return None
        left = self.keys.searchsorted(self.level_offsets + lo, side="right")
        right = self.keys.searchsorted(self.level_offsets + hi, side="right")
        return left, right

    def weights_by_level(self, lo_tokens: int, hi_tokens: int) -> np.ndarray:
        """Array h[k] = weight of atoms with P = k and lo < L ≤ hi (integers, clamped)."""
        runs = self._runs(lo_tokens, hi_tokens)
        if runs is None:
            return np.zeros(self.levels)
        return self.cumulative_weight[runs[1]] - self.cumulative_weight[runs[0]]

    def prompt_sums_by_level(self, lo_tokens: int, hi_tokens: int) -> np.ndarray:
        """Rows k = 0 … levels − 1 of (Σw, Σw·y, Σw·y², Σw·y³) over the atoms with P = k and
        lo < L ≤ hi, y the last chunk of the prompt, shape (levels, 4)."""
        if self._prompt_sums is None:
            raise ValueError("the prefill histogram was built without the prompts' last chunks")
        runs = self._runs(lo_tokens, hi_tokens)
        if runs is None:
            return np.zeros((self.levels, 4))
        sums = np.empty((self.levels, 4))
        sums[:, 0] = self.cumulative_weight[runs[1]] - self.cumulative_weight[runs[0]]
        sums[:, 1:] = self._prompt_sums[runs[1]] - self._prompt_sums[runs[0]]
        return sums

    def level_sums(
        self, lo_tokens: int, hi_tokens: int, prompts: bool
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """(:meth:`weights_by_level`, :meth:`prompt_sums_by_level` when ``prompts``) in one search."""
        if not prompts:
            return self.weights_by_level(lo_tokens, hi_tokens), None
        sums = self.prompt_sums_by_level(lo_tokens, hi_tokens)
        return sums[:, 0], sums


def _ordered(values: np.ndarray, order: np.ndarray | None) -> np.ndarray:
    """``values`` in ``order`` (None: as they are)."""
    return values if order is None else values[order]


def _run_cumulative(
    weights: np.ndarray, order: np.ndarray | None, run_ends: np.ndarray, last_chunk: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """([0, cumulative weight (atoms in ``order``, None: as they are) at the end of each run of equal
    keys], the same of w·y, w·y², w·y³ as rows when the last chunks y, in ``order``, are given);
    atoms of weight 0 are skipped when many are (:func:`_nonzero_atoms`: the same numbers)."""
    if weights.size == 0:
        return np.zeros(1), (None if last_chunk is None else np.zeros((1, 3)))
    ordered = _ordered(weights, order)
    atoms, ends = _nonzero_atoms(ordered, run_ends - 1)
    if atoms is not None:
        if atoms.size == 0:
            return np.zeros(run_ends.size + 1), (
                None if last_chunk is None else np.zeros((run_ends.size + 1, 3))
            )
        ordered = ordered[atoms]
        last_chunk = None if last_chunk is None else last_chunk[atoms]
    cumulative = np.concatenate(([0.0], _at(np.cumsum(ordered), ends)))
    if last_chunk is None:
        return cumulative, None
    prompts = np.zeros((run_ends.size + 1, 3))
    power = ordered * last_chunk
    for j in range(3):
        prompts[1:, j] = _at(np.cumsum(power), ends)
        if j < 2:
            power = power * last_chunk
    return cumulative, prompts


def _quantile_level(histogram: np.ndarray, quantile: float) -> int:
    """Smallest k with Σ_{j≤k} h[j] ≥ q · Σ h (the inverted-CDF quantile of a discrete law)."""
    return _quantile_level_and_fraction(histogram, quantile)[0]


def _quantile_level_and_fraction(histogram: np.ndarray, quantile: float) -> tuple[int, float]:
    """(k, f): the quantile level of :func:`_quantile_level` and the share f ∈ (0, 1] of h[k] needed
    to reach q · Σ h."""
    cumulative = histogram.cumsum()
    total = float(cumulative[-1]) if cumulative.size else 0.0
    if total <= 0:
        return 0, 1.0
    target = quantile * total * (1.0 - _QUANTILE_SLACK)
    level = int(cumulative.searchsorted(target, side="left"))
    below = float(cumulative[level - 1]) if level > 0 else 0.0
    mass = float(histogram[level])
    fraction = min(1.0, max(0.0, (target - below) / mass)) if mass > 0 else 1.0
    return level, fraction


def _floor_tokens(value: float) -> int:
    """Integer bound equivalent to a real one for integer lengths: L ≤ x ⇔ L ≤ ⌊x⌋."""
    if math.isinf(value):
        return 2**62 if value > 0 else -1
    return math.floor(value)


class PoolStatistics:
    """Exact per-pool moments of a workload for one prefill chunk size.

    ``lo`` / ``hi`` bounds are in tokens and select total lengths lo < L ≤ hi. With
    ``prompt_levels=True`` pools can also carry their prompts by prefill level
    (:attr:`PoolMoments.prompt_levels`, what the ``engine`` model needs).
    """

    def __init__(self, workload: Workload, prefill_chunk_tokens: int, *, prompt_levels: bool = False):
        if prefill_chunk_tokens < 1:
            raise ValueError("prefill chunk must be ≥ 1 token")
        self.workload = workload
        self.prefill_chunk_tokens = int(prefill_chunk_tokens)
        self._total_weight = workload.total_weight
        self._weights = workload.weights / self._total_weight
        self._totals = workload.total_tokens
        self._prefill = -(-workload.input_tokens // self.prefill_chunk_tokens)  # ⌈L_in / chunk⌉
        # Range queries select whole runs of equal total length, so the prefix sums are kept per
        # run (distinct lengths: far fewer than atoms in a big log), not per atom.
        runs = _run_starts(self._totals)
        self._run_totals = self._totals[runs]
        self._prefix = _run_prefix_table(
            self._prefill, workload.output_tokens, self._totals, self._weights, runs
        )
        # the prompts by prefill level (the engine model's TTFT law), only when asked: extra sums
        self.prompt_levels = bool(prompt_levels)
        self._histogram = _PrefillHistogram(
            self._prefill,
            self._totals,
            self._weights,
            last_chunk_tokens=self._last_chunks(workload.input_tokens, self._prefill),
        )
        # _last_positive[k]: index of the last run below k with positive weight (−1 if none).
        positive = np.add.reduceat(self._weights, runs) > 0 if runs.size else np.zeros(0, dtype=bool)
        positive_index = np.where(positive, np.arange(runs.size), -1)
        self._last_positive = np.concatenate(([-1], np.maximum.accumulate(positive_index)))
        # prefix caching: the prompt tokens each atom does not compute (total − output − input),
        # summed per run; None for every workload without them (the moments are then as before)
        # (a CDF's split can make L_in + L_out exceed L — L = 1 is split 1 + 1 — which caches nothing)
        cached = np.maximum(0, self._totals - workload.output_tokens - workload.input_tokens)
        ends = np.append(runs[1:], self._totals.size) - 1
        self._cached_prefix = (
            np.stack(
                (
                    _at(np.cumsum(self._weights * cached), ends),
                    _at(np.cumsum(self._weights * cached * workload.input_tokens.astype(np.float64)), ends),
                ),
                axis=1,
            )
            if cached.any()
            else None
        )
        self._bands: dict[tuple[int, float], _CompressionBand] = {}
        self._ranges: dict[tuple[int, int, float, bool, bool], PoolMoments] = {}
        self._cdf: dict[int, float] = {}

    def _last_chunks(self, input_tokens: np.ndarray, prefill_iterations: np.ndarray) -> np.ndarray | None:
        """y = L_in − (P − 1)·chunk per atom (0 when P = 0), when prompt levels are kept; else None."""
        if not self.prompt_levels:
            return None
        return input_tokens - np.maximum(prefill_iterations - 1, 0) * self.prefill_chunk_tokens

    def _with_cached(self, moments: PoolMoments, i0: int, i1: int, compressed: bool = False) -> PoolMoments:
        """``moments`` with the mean cached prompt tokens of the runs i0 … i1 − 1 (as they are
        without prefix caching)."""
        if self._cached_prefix is None or moments.is_empty:
            return moments
        if compressed:
            raise ValueError("prefix caching and Compress-and-Route are not modelled together")
        start = self._cached_prefix[i0 - 1] if i0 > 0 else np.zeros(2)
        cached, pairs = (self._cached_prefix[i1 - 1] - start) if i1 > i0 else np.zeros(2)
        return dataclasses.replace(
            moments,
            mean_cached_tokens=float(cached) / moments.traffic_fraction,
            mean_cached_x_input_tokens=float(pairs) / moments.traffic_fraction,
        )

    def _check_prompt_levels(self, asked: bool) -> bool:
        if asked and not self.prompt_levels:
            raise ValueError(
                "prompt levels were asked of pool statistics built without them (prompt_levels=True)"
            )
        return asked

    # -- plain ranges ---------------------------------------------------------------------
    def _index(self, bound_tokens: int) -> int:
        """Atoms with total ≤ bound: the first ``_index`` atoms."""
        return int(self._totals.searchsorted(bound_tokens, side="right"))

    def _run_index(self, bound_tokens: int) -> int:
        """Runs of equal total ≤ bound: the first ``_run_index`` runs."""
        return int(self._run_totals.searchsorted(bound_tokens, side="right"))

    def _sums_between(self, i0: int, i1: int) -> np.ndarray:
        """Sums over the runs i0 … i1 − 1."""
        if i1 <= i0:
            return np.zeros(len(_COLUMNS))
        return self._prefix[:, i1] - self._prefix[:, i0]

    def cdf(self, tokens: float) -> float:
        """F(tokens): fraction of requests with total length ≤ tokens (memoized by ⌊tokens⌋)."""
        bound = _floor_tokens(tokens)
        value = self._cdf.get(bound)
        if value is None:
            value = self._cdf[bound] = float(self._prefix[_W, self._run_index(bound)])
        return value

    def range_moments(
        self,
        lo_tokens: float,
        hi_tokens: float,
        quantile: float = 0.99,
        *,
        prefill_quantile: bool = True,
        prompt_levels: bool = False,
    ) -> PoolMoments:
        """Moments of the requests with lo < L ≤ hi, at their original lengths.

        ``prefill_quantile=False`` skips the prefill-iteration quantile (left None), the one part
        that costs more than a few lookups; ``prompt_levels=True`` adds the prompts by prefill level
        (the statistics must have been built with them)."""
        lo, hi = _floor_tokens(lo_tokens), _floor_tokens(hi_tokens)
        key = (lo, hi, quantile, prefill_quantile, self._check_prompt_levels(prompt_levels))
        if key not in self._ranges:
            i0, i1 = self._run_index(lo), self._run_index(hi)
            histogram, prompts = (
                self._histogram.level_sums(lo, hi, prompt_levels)
                if prefill_quantile or prompt_levels
                else (None, None)
            )
            self._ranges[key] = self._with_cached(
                self._moments(
                    self._sums_between(i0, i1),
                    histogram if prefill_quantile else None,
                    prompts,
                    quantile,
                    self._max_total_between(i0, i1),
                    lambda t, lo=lo, hi=hi: self._decode_sums(max(lo, t), hi),
                ),
                i0,
                i1,
            )
        return self._ranges[key]

    # -- Compress-and-Route pools ------------------------------------------------------------
    def short_pool(
        self,
        b_short_tokens: int,
        gamma: float,
        compressibility: float,
        quantile: float = 0.99,
        *,
        prompt_levels: bool = False,
        max_cut_fraction: float = 1.0,
    ):
        """The short pool: L ≤ B, plus a share p_c of the compressible band B < L ≤ γB, compressed.

        FleetOpt Eq. 1 and 14–15: α' = F(B) + p_c · (compressible part of F(γB) − F(B)).
        """
        b = int(b_short_tokens)
        hi = _floor_tokens(gamma * b)
        i_b = self._run_index(b)
        sums = self._sums_between(0, i_b)
        histogram, prompts = self._histogram.level_sums(-1, b, self._check_prompt_levels(prompt_levels))
        max_total = self._max_total_between(0, i_b)
        if compressibility > 0 and hi > b:
            band = self._band(b, hi, max_cut_fraction)
            band_sums = band.compressed_sums(hi)
            if band_sums[_W] > 0:
                sums = sums + compressibility * band_sums
                band_histogram, band_prompts = band.compressed_histogram.level_sums(b, hi, prompt_levels)
                histogram = _add_padded(histogram, compressibility * band_histogram)
                if prompts is not None:
                    prompts = _add_padded(prompts, compressibility * band_prompts)
                max_total = b
        compressed = compressibility * band.compressed_sums(hi) if compressibility > 0 and hi > b else None

        def decode_above(t: float) -> np.ndarray:
            tail = self._decode_sums(max(-1, t), b)
            if compressed is not None and b > t:  # compressed requests all have L = B
                out = compressed[_I] - compressed[_P]
                tail = tail + np.array((out, b * out))
            return tail

        moments = self._moments(sums, histogram, prompts, quantile, max_total, decode_above)
        return self._with_cached(moments, 0, i_b, compressed is not None and compressed[_W] > 0)

    def long_pool(
        self,
        b_short_tokens: int,
        gamma: float,
        compressibility: float,
        quantile: float = 0.99,
        hi_tokens: float = math.inf,
        *,
        prompt_levels: bool = False,
        max_cut_fraction: float = 1.0,
    ):
        """The pool above B: γB < L ≤ ``hi_tokens``, plus the band requests that were not
        compressed (original lengths). The band must end by ``hi_tokens`` (γB ≤ hi).

        A band request stays long when it is not compressed (probability 1 − p_c) or cannot be
        (L_out ≥ B). With p_c = 1 this is exactly "the requests above γB" (FleetOpt §6, the
        recalibrated μ_l). A finite ``hi_tokens`` makes it the second pool of a K-pool fleet.
        """
        b = int(b_short_tokens)
        hi = _floor_tokens(gamma * b)
        top = _floor_tokens(hi_tokens)
        if hi > top:
            raise ValueError(f"the C&R band ends at {hi} tokens, above the pool's top {top}")
        i_hi = self._run_index(hi)
        i_end = self._run_totals.size if math.isinf(hi_tokens) else self._run_index(top)
        sums = self._sums_between(i_hi, i_end)
        histogram, prompts = self._histogram.level_sums(hi, top, self._check_prompt_levels(prompt_levels))
        max_total = self._max_total_between(i_hi, i_end)
        if hi > b:
            band = self._band(b, hi, max_cut_fraction)
            stay = 1.0 - compressibility
            # with p_c = 1 nothing compressible stays: its terms would add 0·x = +0.0 to sums ≥ 0
            # (the same numbers), so they are neither added nor built
            stay_sums = band.incompressible_sums(hi)
            if stay > 0:
                stay_sums = stay_sums + stay * band.original_sums(hi)
            if stay_sums[_W] > 0:
                sums = sums + stay_sums
                fixed_histogram, fixed_prompts = band.incompressible_histogram.level_sums(
                    b, hi, prompt_levels
                )
                histogram = _add_padded(histogram, fixed_histogram)
                if prompts is not None:
                    prompts = _add_padded(prompts, fixed_prompts)
                if stay > 0:
                    stay_histogram, stay_prompts = band.original_histogram.level_sums(b, hi, prompt_levels)
                    histogram = _add_padded(histogram, stay * stay_histogram)
                    if prompts is not None:
                        prompts = _add_padded(prompts, stay * stay_prompts)
                max_total = max(max_total, self._max_total_between(self._run_index(b), i_hi))
        stay = 1.0 - compressibility

        def decode_above(t: float) -> np.ndarray:
            tail = self._decode_sums(max(hi, t), top)
            if hi > b:  # the band requests that stay, at their own lengths in (max(B, t), γB]
                band = self._band(b, hi, max_cut_fraction)
                for name, share in (("_incompressible", 1.0), ("_original", stay)):
                    if share > 0:
                        table = getattr(band, name)
                        part = table[:, band._end(hi)] - table[:, band._end(min(hi, max(b, math.floor(t))))]
                        tail = tail + share * np.array((part[_I] - part[_P], part[_IL] - part[_PL]))
            return tail

        moments = self._moments(sums, histogram, prompts, quantile, max_total, decode_above)
        first = self._run_index(b) if hi > b else i_hi  # with p_c = 0 the band stays whole
        return self._with_cached(moments, first, i_end, stay < 1.0 and hi > b)

    def compressible_fraction(
        self, b_short_tokens: int, gamma: float, max_cut_fraction: float = 1.0
    ) -> float:
        """Share of all requests in B < L ≤ γB that C&R can compress (L_out < B, the cut within the
        cap: :func:`fleetopt.core.routing.compressible`)."""
        b = int(b_short_tokens)
        hi = _floor_tokens(gamma * b)
        return float(self._band(b, hi, max_cut_fraction).original_sums(hi)[_W]) if hi > b else 0.0

    # -- helpers ----------------------------------------------------------------------------
    def _band(self, b_short_tokens: int, hi_tokens: int, max_cut_fraction: float = 1.0) -> _CompressionBand:
        """The band above B, covering totals up to at least ``hi_tokens`` (kept per B and cap).

        Built up to max(hi, 2B) so that a γ ≤ 2 sweep builds each B's band once; a wider γ
        rebuilds it (at least twice as wide).
        """
        key = (b_short_tokens, float(max_cut_fraction))
        band = self._bands.get(key)
        if band is None or band.hi_tokens < hi_tokens:
            covered = band.hi_tokens if band is not None else b_short_tokens
            band = _CompressionBand(self, b_short_tokens, max(hi_tokens, 2 * covered), max_cut_fraction)
            self._bands[key] = band
        return band

    def _max_total_between(self, i0: int, i1: int) -> int:
        last = int(self._last_positive[i1])
        return int(self._run_totals[last]) if last >= i0 else 0

    def _decode_sums(self, lo_tokens: float, hi_tokens: float) -> np.ndarray:
        """(Σw·L_out, Σw·L_out·L) over the atoms with lo < L ≤ hi (L_out = I − P, from the prefix table)."""
        lo, hi = _floor_tokens(lo_tokens), _floor_tokens(hi_tokens)
        part = self._sums_between(self._run_index(lo), self._run_index(hi))
        return np.array((part[_I] - part[_P], part[_IL] - part[_PL]))

    def _moments(
        self,
        sums: np.ndarray,
        histogram: np.ndarray | None,
        prompt_sums: np.ndarray | None,
        quantile: float,
        max_total: int,
        decode_sums: Callable[[float], np.ndarray] | None = None,
    ) -> PoolMoments:
        weight = float(sums[_W])
        if weight <= 1e-15:
            nan = math.nan
            return PoolMoments(0.0, nan, nan, nan, 0, quantile, nan, nan, nan, nan, nan, 0, nan)
        mean = (sums / weight).tolist()
        level, fraction = (0, 1.0) if histogram is None else _quantile_level_and_fraction(histogram, quantile)
        return PoolMoments(
            traffic_fraction=weight,
            mean_iterations=mean[_I],
            mean_sq_iterations=mean[_I2],
            mean_prefill_iterations=mean[_P],
            prefill_iterations_quantile=None if histogram is None else level,
            quantile=quantile,
            mean_iter_x_len=mean[_IL],
            mean_sq_iter_x_len=mean[_I2L],
            mean_sq_iter_x_sq_len=mean[_I2L2],
            mean_prefill_x_len=mean[_PL],
            mean_total_tokens=mean[_L],
            max_total_tokens=max_total,
            mean_sq_input_tokens=mean[_J2],
            prefill_quantile_fraction=fraction,
            prompt_levels=(
                None
                if prompt_sums is None
                else PromptLevels.from_sums(self.prefill_chunk_tokens, prompt_sums)
            ),
            decode_above=None if decode_sums is None else _normalized_memo(decode_sums, weight),
        )


class _CompressionBand:
    """Sums over the atoms in B < L ≤ ``hi_tokens``, split into those C&R can compress (L_out < B
    and the cut within the cap) and not; queries must stay within ``hi_tokens``.

    Compressible atoms are counted twice, as compressed (L_in' = B − L_out) and as they are; all
    tables and histograms are keyed by the ORIGINAL total, so that (B, γB] selects the band. Each
    kind of sum is a prefix table over the band's runs of equal total, built once per B one column
    at a time (nothing is kept per atom), so every γ is a lookup.
    """

    def __init__(
        self, stats: PoolStatistics, b_short_tokens: int, hi_tokens: int, max_cut_fraction: float = 1.0
    ):
        start, end = stats._index(b_short_tokens), stats._index(hi_tokens)
        self.hi_tokens = hi_tokens
        totals = stats._totals[start:end]
        outputs = stats.workload.output_tokens[start:end]
        prefill = stats._prefill[start:end]
        compressible = can_compress(b_short_tokens, totals, outputs, max_cut_fraction)
        weights = np.where(compressible, stats._weights[start:end], 0.0)
        fixed_weights = np.where(compressible, 0.0, stats._weights[start:end])
        self.totals = totals
        compressed_prefill = -(
            -(b_short_tokens - np.minimum(outputs, b_short_tokens)) // stats.prefill_chunk_tokens
        )
        compressed_totals = np.full_like(totals, b_short_tokens)
        runs = _run_starts(totals)
        self._run_totals = totals[runs]
        self._compressed = _run_prefix_table(compressed_prefill, outputs, compressed_totals, weights, runs)
        self._incompressible = _run_prefix_table(prefill, outputs, totals, fixed_weights, runs)
        compressed_inputs = b_short_tokens - np.minimum(outputs, b_short_tokens)
        self.compressed_histogram = _PrefillHistogram(
            compressed_prefill,
            totals,
            weights,
            last_chunk_tokens=stats._last_chunks(compressed_inputs, compressed_prefill),
        )
        # what only some pools read is built when first read (properties below): the band's
        # requests at their own lengths (a long pool reads them with p_c < 1) and the histogram of
        # the incompressible ones (only a band that has some)
        self._atoms = (prefill, outputs, totals, weights, fixed_weights, runs)
        self._original_last_chunks = lambda: stats._last_chunks(
            stats.workload.input_tokens[start:end], prefill
        )

    @cached_property
    def _original(self) -> np.ndarray:
        """The prefix table of the compressible requests at their own lengths."""
        prefill, outputs, totals, weights, _, runs = self._atoms
        return _run_prefix_table(prefill, outputs, totals, weights, runs)

    @cached_property
    def original_histogram(self) -> _PrefillHistogram:
        """The prefill histogram of the compressible requests at their own lengths."""
        prefill, _, totals, weights, _, _ = self._atoms
        return _PrefillHistogram(prefill, totals, weights, last_chunk_tokens=self._original_last_chunks())

    @cached_property
    def incompressible_histogram(self) -> _PrefillHistogram:
        """The prefill histogram of the requests C&R cannot compress (L_out ≥ B)."""
        prefill, _, totals, _, fixed_weights, _ = self._atoms
        return _PrefillHistogram(
            prefill, totals, fixed_weights, last_chunk_tokens=self._original_last_chunks()
        )

    def _end(self, hi_tokens: int) -> int:
        return int(self._run_totals.searchsorted(hi_tokens, side="right"))

    def compressed_sums(self, hi_tokens: int) -> np.ndarray:
        return self._compressed[:, self._end(hi_tokens)]

    def original_sums(self, hi_tokens: int) -> np.ndarray:
        return self._original[:, self._end(hi_tokens)]

    def incompressible_sums(self, hi_tokens: int) -> np.ndarray:
        return self._incompressible[:, self._end(hi_tokens)]


def _normalized_memo(
    sums: Callable[[float], np.ndarray], weight: float
) -> Callable[[float], tuple[float, float]]:
    """``sums(t) / weight`` as a pair of floats, memoized by t."""
    memo: dict[float, tuple[float, float]] = {}

    def decode_above(threshold_tokens: float) -> tuple[float, float]:
        value = memo.get(threshold_tokens)
        if value is None:
            out, out_len = sums(threshold_tokens) / weight
            value = memo[threshold_tokens] = (float(out), float(out_len))
        return value

    return decode_above


def _pad(histogram: np.ndarray, levels: int) -> np.ndarray:
    """A per-level array (1-D, or rows of sums) padded with zero levels to ``levels``."""
    if histogram.shape[0] >= levels:
        return histogram[:levels]
    return np.concatenate((histogram, np.zeros((levels - histogram.shape[0], *histogram.shape[1:]))))


def _add_padded(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    size = max(a.shape[0], b.shape[0])
    return _pad(a, size) + _pad(b, size)
