"""KV-cache slot arithmetic (pool-routing paper Eq. 1–2; FACTS §3)."""

from __future__ import annotations

import math


def block_slots_per_instance(kv_capacity_tokens: int, context_tokens: int, block_tokens: int) -> int:
    """Sequences of ``context_tokens`` that fit in a block budget: ⌊⌊K/b⌋ / ⌈ctx/b⌉⌋.

    K is the instance's KV capacity in tokens and b the KV block size in tokens (PagedAttention
    allocates whole blocks). The papers' A100 profile (65,536 blocks of 16 tokens) gives
    16 slots at 65,536, 128 at 8,192, 256 at 4,096 and 682 at 1,536 (FACTS §1).
    """
    if context_tokens < 1 or block_tokens < 1 or kv_capacity_tokens < 0:
        raise ValueError("context and block size must be ≥ 1 token, capacity ≥ 0")
    return (kv_capacity_tokens // block_tokens) // math.ceil(context_tokens / block_tokens)
