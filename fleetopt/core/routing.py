"""How a fleet routes requests to its pools: boundaries on the token budget and the C&R band.

A fleet of K pools has boundaries B₁ < … < B_{K−1} on the total token budget L = L_in + L_out
(pool-routing §3; FleetOpt Eq. 1): pool k serves B_{k−1} < L ≤ B_k (B₀ = 0, B_K = ∞ at the long
context). Compress-and-Route (FleetOpt §5.1, Eq. 14–15) acts at the first boundary: a request
with B₁ < L ≤ γB₁ and L_out < B₁ is compressed, with probability p_c, to L_in' = B₁ − L_out
(total B₁) and served by the first pool; otherwise it goes where its own L sends it. A cap on the
cut (``max_cut_fraction`` = c) compresses only requests whose cut L − B₁ is at most c·L_in (the
most an extractive compressor removes with acceptable fidelity; docs/gateway.md); c = 1 is the
papers' rule (L − B₁ ≤ L_in ⇔ L_out ≤ B₁, already implied by L_out < B₁). With K = 1
there are no boundaries: one homogeneous pool takes everything.

One object is shared by the pool statistics, the planner, the simulator, drift and audit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from fleetopt.defaults import DEFAULT_MAX_CUT_FRACTION
from fleetopt.errors import ValidationError

#: Names of the pools in plan documents: one pool is ``homogeneous``, two keep the papers'
#: ``short`` and ``long``, more are numbered from the shortest.
ONE_POOL_NAMES = ("homogeneous",)
TWO_POOL_NAMES = ("short", "long")


def pool_names(pool_count: int) -> tuple[str, ...]:
    """The document names of a fleet's pools, shortest first."""
    if pool_count == 1:
        return ONE_POOL_NAMES
    if pool_count == 2:
        return TWO_POOL_NAMES
    return tuple(f"pool-{k}" for k in range(1, pool_count + 1))


@dataclass(frozen=True)
class Routing:
    """Boundaries B₁ < … < B_{K−1} (tokens) and the C&R band (γ, p_c, cap) at B₁.

    Attributes:
        boundaries_tokens: the pool boundaries on total tokens, increasing; () = one pool.
        gamma: γ ≥ 1; the band (B₁, γB₁] may be compressed into the first pool.
        compressibility: p_c ∈ [0, 1], the probability that a band request is compressed.
        max_cut_fraction: c ∈ (0, 1], the largest share of a prompt C&R may cut.
    """

    boundaries_tokens: tuple[int, ...] = ()
    gamma: float = 1.0
    compressibility: float = 0.0
    max_cut_fraction: float = DEFAULT_MAX_CUT_FRACTION

    def __post_init__(self) -> None:
        bounds = self.boundaries_tokens
        if any(b < 1 for b in bounds) or any(b2 <= b1 for b1, b2 in zip(bounds, bounds[1:], strict=False)):
            raise ValidationError(f"pool boundaries: {list(bounds)} must be increasing whole tokens ≥ 1")
        if not (self.gamma >= 1.0 and math.isfinite(self.gamma)):
            raise ValidationError(f"gamma: {self.gamma!r} must be ≥ 1 and finite")
        if not (0.0 <= self.compressibility <= 1.0):
            raise ValidationError(f"compressibility: {self.compressibility!r} must be in [0, 1]")
        if not (0.0 < self.max_cut_fraction <= 1.0):
            raise ValidationError(f"max cut: {self.max_cut_fraction!r} must be in (0, 1]")
        if len(bounds) >= 2 and self.band_top_tokens > bounds[1]:
            raise ValidationError(
                f"gamma: the C&R band (B₁, γB₁] = ({bounds[0]}, {self.band_top_tokens}] "
                f"must end within the second pool (≤ B₂ = {bounds[1]})"
            )

    @classmethod
    def homogeneous(cls) -> Routing:
        """One pool taking every request."""
        return cls(())

    @classmethod
    def two_pool(
        cls,
        b_short_tokens: int | None,
        gamma: float = 1.0,
        compressibility: float = 0.0,
        max_cut_fraction: float = DEFAULT_MAX_CUT_FRACTION,
    ) -> Routing:
        """The papers' short/long routing at B (one pool when B is None)."""
        if b_short_tokens is None:
            return cls((), 1.0, 0.0)
        return cls((int(b_short_tokens),), float(gamma), float(compressibility), float(max_cut_fraction))

    @property
    def pool_count(self) -> int:
        return len(self.boundaries_tokens) + 1

    @property
    def pool_names(self) -> tuple[str, ...]:
        return pool_names(self.pool_count)

    @property
    def b_short_tokens(self) -> int | None:
        """B₁, the first pool's boundary (None for one pool)."""
        return self.boundaries_tokens[0] if self.boundaries_tokens else None

    @property
    def band_top_tokens(self) -> int | None:
        """⌊γB₁⌋, the largest total the C&R band reaches (None for one pool)."""
        b = self.b_short_tokens
        return None if b is None else math.floor(self.gamma * b)

    @property
    def compresses(self) -> bool:
        """Whether C&R can compress any request: a non-empty band (⌊γB₁⌋ > B₁) and p_c > 0."""
        b = self.b_short_tokens
        return b is not None and self.band_top_tokens > b and self.compressibility > 0

    @cached_property
    def pool_ranges(self) -> tuple[tuple[float, float], ...]:
        """(lo, hi] of each pool's own (uncompressed) totals, tokens; the last hi is ∞."""
        edges = (-1.0, *(float(b) for b in self.boundaries_tokens), math.inf)
        return tuple(zip(edges[:-1], edges[1:], strict=False))

    def context_tokens(self, long_context_tokens: int) -> tuple[int, ...]:
        """Each pool's context window (vLLM ``max_model_len``): its boundary, the last the long context."""
        return (*self.boundaries_tokens, int(long_context_tokens))

    def route(
        self, total_tokens: np.ndarray, input_tokens: np.ndarray, output_tokens: np.ndarray, coin: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pool index of each request and its (possibly compressed) input and total tokens.

        ``coin`` holds one uniform [0, 1) draw per request: a band request is compressed when
        coin < p_c.
        """
        if not self.boundaries_tokens:
            return np.zeros(total_tokens.size, dtype=np.int64), input_tokens, total_tokens
        b = self.boundaries_tokens[0]
        in_band = (total_tokens > b) & (total_tokens <= self.gamma * b)
        in_band &= compressible(b, total_tokens, output_tokens, self.max_cut_fraction)
        compressed = in_band & (coin < self.compressibility)
        index = np.searchsorted(np.asarray(self.boundaries_tokens), total_tokens, side="left")
        index = np.where(compressed, 0, index).astype(np.int64)
        new_inputs = np.where(compressed, b - output_tokens, input_tokens)
        new_total = np.where(compressed, b, total_tokens)
        return index, new_inputs, new_total


def compressible(
    b_short_tokens: int, total_tokens: np.ndarray, output_tokens: np.ndarray, max_cut_fraction: float
) -> np.ndarray:
    """Whether C&R may compress a band request to total B: L_out < B and the cut L − B is at most
    ``max_cut_fraction`` of the prompt L_in = L − L_out (the one test the planner's pool statistics,
    the simulator and the gateway share)."""
    inputs = total_tokens - output_tokens
    return (output_tokens < b_short_tokens) & (total_tokens - b_short_tokens <= max_cut_fraction * inputs)
