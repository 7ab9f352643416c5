"""Routing noise: what a gateway without a tokenizer does to a fleet's traffic (pool-routing §2.1–2.2).

The planner routes on exact token counts. A gateway that estimates them from bytes (Algorithm 1,
:mod:`fleetopt.core.estimator`) routes on an estimate. This module turns a stream of simulated
requests into what such a gateway sends to each pool, before the pools are simulated:

1. each request gets a content category (``category_shares``) and a byte length: its prompt tokens
   × a bytes-per-token ratio drawn per request from a lognormal around the category's mean
   (``bytes_per_token``, spread ``ratio_cv``) — the documented bytes-per-token model;
2. the gateway's estimator (per-category EMA, conservative by γσ̂, learning from each earlier
   request's true count; ``warm``: after ``warm_observations`` per category) estimates the prompt,
   and the planner's :class:`~fleetopt.core.routing.Routing` routes on that estimate;
3. the outcome, against the exact prompt:

   - **misrouted**: the estimate sent it to a pool whose context cannot hold it (pool-routing's
     mis-routing); the engine refuses it and the gateway's context-window fallback
     (``litellm.yaml``) retries it on the next pool that holds it, which serves it;
   - **sent larger**: the (conservative) estimate sent it to a larger pool than its exact length
     needs, which serves it;
   - **rejected**: longer than the largest pool's context: no pool serves it;
   - **spilled**: its pool was saturated (Algorithm 1's spillover): the next larger pool serves it.
     Saturation is judged first-order: a pool holds about the requests that reached it in the last
     mean service time (Little's law at deterministic service), compared with its in-flight limit
     (instances × slots, what ``export --to litellm`` writes).

A compressed band request keeps its cut: its exact prompt shrinks in proportion to the estimate's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from fleetopt.core.estimator import CATEGORIES, PAPER_COLD_START, TokenEstimator
from fleetopt.core.routing import Routing

#: Pool-routing Table 4's true bytes per token ("True c_k"); structured data as its "mixed/other".
TABLE_4_BYTES_PER_TOKEN: Mapping[str, float] = {"prose": 4.48, "code": 3.52, "cjk": 2.01, "structured": 3.81}


@dataclass(frozen=True)
class BytesModel:
    """The bytes-per-token model of a request stream (module docstring, step 1).

    Attributes:
        category_shares: share of requests per category (normalized).
        bytes_per_token: mean bytes per token per category.
        ratio_cv: coefficient of variation of one request's ratio around its category's mean.
        warm: the estimator starts after ``warm_observations`` per category (else cold, at its
            cold start).
        cold_start: the estimator's cold-start ratios (default: the paper's c₀ = 4.0 everywhere).
        cold_start_deviation_fraction: σ̂ before feedback, as a fraction of the cold start.
        bias: γ of Eq. 5.
    """

    category_shares: Mapping[str, float] = field(
        default_factory=lambda: {"prose": 0.55, "code": 0.25, "cjk": 0.10, "structured": 0.10}
    )
    bytes_per_token: Mapping[str, float] = field(default_factory=lambda: dict(TABLE_4_BYTES_PER_TOKEN))
    ratio_cv: float = 0.08
    warm: bool = True
    warm_observations: int = 50
    cold_start: Mapping[str, float] = field(default_factory=lambda: dict(PAPER_COLD_START))
    cold_start_deviation_fraction: float = 0.0
    bias: float = 1.0

    def __post_init__(self) -> None:
        for name, mapping in (
            ("category shares", self.category_shares),
            ("bytes per token", self.bytes_per_token),
        ):
            unknown = sorted(set(mapping) - set(CATEGORIES))
            if unknown:
                raise ValueError(f"{name}: unknown categories {unknown}")
        if not all(v >= 0 for v in self.category_shares.values()) or sum(self.category_shares.values()) <= 0:
            raise ValueError("category shares must be ≥ 0 and not all 0")
        if not all(v >= 1.0 for v in self.bytes_per_token.values()):
            raise ValueError("bytes per token must be ≥ 1")
        if not (0 <= self.ratio_cv < 2):
            raise ValueError(f"ratio cv: {self.ratio_cv!r} must be in [0, 2)")


@dataclass
class GatewayCounts:
    """What the gateway did to one stream of requests (counts of requests)."""

    requests: int = 0
    misrouted: int = 0
    sent_larger: int = 0
    rejected: int = 0
    spilled: int = 0
    compressed: int = 0
    by_category: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, other: GatewayCounts) -> None:
        for name in ("requests", "misrouted", "sent_larger", "rejected", "spilled", "compressed"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for category, counts in other.by_category.items():
            mine = self.by_category.setdefault(category, {})
            for key, value in counts.items():
                mine[key] = mine.get(key, 0) + value


def draw_bytes(
    inputs: np.ndarray, model: BytesModel, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(category index per request, prompt bytes, the request's own bytes per token)."""
    names = list(CATEGORIES)
    shares = np.array([model.category_shares.get(k, 0.0) for k in names], dtype=float)
    category = rng.choice(len(names), size=inputs.size, p=shares / shares.sum())
    mean = np.array([model.bytes_per_token.get(k, 4.0) for k in names])[category]
    sigma = math.sqrt(math.log1p(model.ratio_cv**2))
    ratio = mean * rng.lognormal(-0.5 * sigma * sigma, sigma, inputs.size) if sigma > 0 else mean
    return category, np.maximum(1, np.rint(inputs * ratio)).astype(np.int64), ratio


def estimate_stream(
    prompt_bytes: np.ndarray,
    inputs: np.ndarray,
    category: np.ndarray,
    model: BytesModel,
    rng: np.random.Generator,
) -> np.ndarray:
    """The estimator's prompt estimate for each request in arrival order, learning from the exact
    count of every earlier one (the response's ``usage.prompt_tokens``)."""
    estimator = TokenEstimator(
        cold_start=model.cold_start, cold_start_deviation_fraction=model.cold_start_deviation_fraction,
        bias=model.bias, min_observed_bytes=0,
    )  # fmt: skip
    names = list(CATEGORIES)
    if model.warm:
        for name in names:
            mean = model.bytes_per_token.get(name, 4.0)
            sigma = math.sqrt(math.log1p(model.ratio_cv**2))
            for r in mean * rng.lognormal(-0.5 * sigma * sigma, sigma, model.warm_observations):
                estimator.observe(int(round(4096 * r)), name, 4096)
    estimates = np.empty(inputs.size, dtype=np.int64)
    for i in range(inputs.size):
        name = names[int(category[i])]
        estimates[i] = estimator.estimate(int(prompt_bytes[i]), name)
        estimator.observe(int(prompt_bytes[i]), name, int(inputs[i]))
    return estimates


def gateway_route(
    routing: Routing,
    context_tokens: Sequence[int],
    inputs: np.ndarray,
    outputs: np.ndarray,
    coin: np.ndarray,
    rng: np.random.Generator,
    model: BytesModel,
    arrival_s: np.ndarray | None = None,
    in_flight_limits: Sequence[int | None] | None = None,
    mean_service_s: Sequence[float] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, GatewayCounts]:
    """The pool each request reaches through the gateway (−1: rejected), its exact prompt and total
    after any compression, and the counts (module docstring)."""
    contexts = np.asarray(context_tokens)
    last = contexts.size - 1
    total = inputs + outputs
    category, prompt_bytes, _ = draw_bytes(inputs, model, rng)
    estimate = estimate_stream(prompt_bytes, inputs, category, model, rng)
    planned, est_inputs, _ = routing.route(estimate + outputs, estimate, outputs, coin)
    compressed = est_inputs < estimate
    # the compressor cuts the same share of the exact prompt as of the estimated one
    true_inputs = np.where(compressed, np.ceil(inputs * est_inputs / np.maximum(estimate, 1)), inputs).astype(
        np.int64
    )
    true_total = true_inputs + outputs
    pool = planned.copy()
    counts = GatewayCounts(requests=int(inputs.size), compressed=int(compressed.sum()))
    spilled = np.zeros(inputs.size, dtype=bool)
    if arrival_s is not None and in_flight_limits is not None and mean_service_s is not None:
        for k, (limit, service) in enumerate(zip(in_flight_limits, mean_service_s, strict=True)):
            if limit is None or not service > 0 or k == last:
                continue
            mine = np.flatnonzero(pool == k)
            times = arrival_s[mine]
            recent = np.arange(mine.size) - np.searchsorted(times, times - service, side="left")
            over = mine[recent >= limit]
            pool[over] = k + 1
            spilled[over] = True
    fits = np.searchsorted(contexts, true_total, side="left")  # the smallest pool that holds it
    misrouted = true_total > contexts[np.minimum(pool, last)]
    pool = np.maximum(pool, fits)  # the engine refuses it; the fallback walks up to one that holds it
    rejected = fits > last
    own = np.searchsorted(contexts, total, side="left")
    sent_larger = (pool > own) & ~rejected & ~compressed & ~spilled
    pool = np.where(rejected, -1, pool)
    counts.misrouted = int((misrouted & ~rejected).sum())
    counts.rejected = int(rejected.sum())
    counts.sent_larger = int(sent_larger.sum())
    counts.spilled = int(spilled.sum())
    for k, name in enumerate(CATEGORIES):
        mask = category == k
        if mask.any():
            counts.by_category[name] = {
                "requests": int(mask.sum()),
                "misrouted": int((misrouted & ~rejected & mask).sum()),
                "sent_larger": int((sent_larger & mask).sum()),
            }
    return pool, true_inputs, true_total, counts
