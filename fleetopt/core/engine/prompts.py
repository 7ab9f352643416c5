"""What a prompt token costs the ``engine`` model: τ, or τ and its attention over the context.

A prompt chunk of c tokens computed with h tokens already in the KV cache costs τ·c + τ_a·(c·h +
c(c + 1)/2) on the ``physical`` engine (its ``vllm`` scheduler; :func:`fleetopt.core.hardware.
attention_s_per_token_pair` gives τ_a): each token attends to the context before it and to itself.
Summed over a prompt's chunks, a request of L uncached prompt tokens behind h cached ones costs
τ·L + τ_a·(h·L + L(L + 1)/2), whatever the chunking.

The TTFT law of :mod:`fleetopt.core.engine.ttft` prices prompt tokens at one rate per token. Two
rates keep it: the other requests' prompts at the pool's mean rate τ* (so the work of the prompts,
u = λ_i·τ*·E[L] and every cluster's mean, is exact), and the request's own prompt at the mean rate
of its own prefill level P = k (so its own prefill, the P99's largest part in a pool of long prompts,
is exact on average at every level):

    τ* = τ + τ_a·(E[L(L + 1)/2] + E[h·L]) / E[L],
    τ_k = τ + τ_a·(E[L(L + 1)/2 | k] + c̄·E[L | k]) / E[L | k],   c̄ = E[h·L] / E[L]

(c̄: the cached context an uncached prompt token sees, averaged over prompt tokens). What it leaves
out: how the cost of another request's chunk grows with its position in the prompt (a late chunk of
a long prompt costs more than an early one; only their mean is kept), the spread of attention
within one level, and the KV-read floor of a prefill chunk (binding only where the chunk is small
against its context). Measured on the regime grid (docs/validation.md).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from fleetopt.core.hardware import IterationCosts
from fleetopt.core.poolstats import PoolMoments


class PromptPrice(NamedTuple):
    """What a prompt token costs a pool (module docstring): ``tau_s`` = τ*, the pool's mean per
    prompt token, seconds; and a request's own prompt of L tokens at its level, τ*·L + a·E[L²] +
    b·E[L] (``square_s`` = a, seconds per token², ``linear_s`` = b, seconds per token)."""

    tau_s: float
    square_s: float = 0.0
    linear_s: float = 0.0

    def own_s(self, tokens: Any) -> Any:
        """A prompt of ``tokens`` uncached tokens, seconds (its own chunks, at its own rate)."""
        return tokens * (self.tau_s + self.linear_s) + self.square_s * tokens * tokens


def attention_priced_prompts(moments: PoolMoments, costs: IterationCosts) -> PromptPrice:
    """τ*, a = τ_a/2 and b = τ + τ_a·(1/2 + c̄) − τ* (module docstring): the prompts' attention over
    their context, cached and computed, at τ_a per pair (:attr:`IterationCosts.
    attention_s_per_token_pair`). τ alone where τ_a = 0 (no attention geometry in the profile) or
    the pool has no prompt levels.

    Source: the ``physical`` engine's chunk cost (vLLM computes each prompt token's attention over
    the tokens before it; :func:`fleetopt.core.engines._chunk_excess_s`), averaged as above.
    Alternative: :func:`unpriced_attention` (τ per token: the model before issue 30's grid)."""
    tau, tau_a = costs.per_prefill_token_s, costs.attention_s_per_token_pair
    levels = moments.prompt_levels
    if not tau_a > 0.0 or levels is None or not levels.mean_tokens > 0.0:
        return PromptPrice(tau)
    mean = levels.mean_tokens
    cached_pairs = moments.mean_cached_x_input_tokens
    tau_star = tau + tau_a * (0.5 * (levels.mean_square_tokens + mean) + cached_pairs) / mean
    return PromptPrice(tau_star, 0.5 * tau_a, tau + tau_a * (0.5 + cached_pairs / mean) - tau_star)


def unpriced_attention(moments: PoolMoments, costs: IterationCosts) -> PromptPrice:
    """τ per prompt token, whatever its context: the model before the attention term."""
    return PromptPrice(costs.per_prefill_token_s)
