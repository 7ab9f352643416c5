"""The engine model's prompt price (fleetopt/core/engine/prompts.py) against a brute force over each
prompt's chunks, and the first token's iteration in the TTFT law against hand arithmetic."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from fleetopt.core.engine.prompts import attention_priced_prompts, unpriced_attention
from fleetopt.core.engine.ttft import PromptLevels, ttft_cumulants

TAU, TAU_A, CHUNK = 30e-6, 6e-10, 2048


def _levels(prompts: np.ndarray) -> PromptLevels:
    """Prompt levels from their definition: P = ⌈L / C⌉, the last chunk y = L − (P − 1)·C."""
    levels = -(-prompts // CHUNK)
    last = prompts - np.maximum(levels - 1, 0) * CHUNK
    sums = np.zeros((int(levels.max()) + 1, 4))
    for level, y in zip(levels, last, strict=True):
        sums[level] += (1.0, y, y * y, y**3)
    return PromptLevels.from_sums(CHUNK, sums)


def _brute_force_s(prompt: int, cached: int) -> float:
    """One prompt chunk by chunk as the physical engine charges it: τ·c + τ_a·(c·context + c(c + 1)/2),
    the context the cached tokens and the chunks before."""
    total, context = 0.0, cached
    for start in range(0, prompt, CHUNK):
        c = min(CHUNK, prompt - start)
        total += TAU * c + TAU_A * (c * context + c * (c + 1) / 2)
        context += c
    return total


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_pools_mean_price_charges_exactly_the_prompts_work(seed: int) -> None:
    rng = np.random.default_rng(seed)
    prompts = rng.integers(1, 20_000, 300)
    cached = rng.integers(0, 30_000, 300) * (rng.random(300) < 0.6)
    moments = SimpleNamespace(
        prompt_levels=_levels(prompts), mean_cached_x_input_tokens=float(np.mean(cached * prompts))
    )
    price = attention_priced_prompts(
        moments, SimpleNamespace(per_prefill_token_s=TAU, attention_s_per_token_pair=TAU_A)
    )
    work = np.mean([_brute_force_s(int(p), int(h)) for p, h in zip(prompts, cached, strict=True)])
    assert price.tau_s * prompts.mean() == pytest.approx(work, rel=1e-12)


def test_a_requests_own_prompt_costs_its_levels_mean_exactly() -> None:
    """Without a cache: at every level k, τ*·E[L | k] + a·E[L² | k] + b·E[L | k] is the mean of the
    level's prompts charged chunk by chunk."""
    prompts = np.random.default_rng(7).integers(1, 12_000, 400)
    moments = SimpleNamespace(prompt_levels=_levels(prompts), mean_cached_x_input_tokens=0.0)
    price = attention_priced_prompts(
        moments, SimpleNamespace(per_prefill_token_s=TAU, attention_s_per_token_pair=TAU_A)
    )
    levels = -(-prompts // CHUNK)
    for k in np.unique(levels):
        own = prompts[levels == k].astype(np.float64)
        modelled = (price.tau_s + price.linear_s) * own.mean() + price.square_s * np.mean(own * own)
        assert modelled == pytest.approx(np.mean([_brute_force_s(int(p), 0) for p in own]), rel=1e-12)
    plain = unpriced_attention(
        moments, SimpleNamespace(per_prefill_token_s=TAU, attention_s_per_token_pair=TAU_A)
    )
    assert (plain.tau_s, plain.square_s, plain.linear_s) == (TAU, 0.0, 0.0)


@pytest.mark.parametrize("offset", [0, 1])
def test_alone_the_first_token_comes_after_p_plus_o_iterations(offset: int) -> None:
    """One prompt of 5,000 tokens (P = 3 chunks) on an idle instance, no other request: the law is its
    quiet part, R + (P + o)·t_d + its own prompt, R uniform on (0, t_d) — by hand."""
    prompt, t_d, t0 = 5_000, 0.012, 0.02
    levels = _levels(np.array([prompt]))
    a, b = TAU_A / 2, TAU_A / 2  # τ* = τ·(1) + τ_a·(L + 1)/2 per token here; its own price the same
    tau_star = TAU + TAU_A * (prompt + 1) / 2
    law = ttft_cumulants(
        levels, tau_s=tau_star, decode_iteration_s=t_d, rate_per_instance_per_s=0.0, time_share=1.0,
        overhead_s=t0, own_excess=(a, b + TAU - tau_star), first_token_iteration=offset,
    )  # fmt: skip
    own = TAU * prompt + TAU_A * prompt * (prompt + 1) / 2
    assert law.mean_s == pytest.approx(t0 + t_d / 2 + (3 + offset) * t_d + own, rel=1e-12)
    assert math.isclose(law.variance_s2, t_d * t_d / 12, rel_tol=1e-9)
