"""KV-cache arithmetic (fleetopt.core.kv) against the papers' published figures and hand arithmetic."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fleetopt.core import kv

GIB = 2**30


def test_llama3_70b_bytes_per_token_is_320_kib_pool_routing_eq1_facts_s3() -> None:
    # FACTS §3: 2·80·8·128·2 = 327,680 bytes = 320 KiB per token.
    per_token = kv.gqa_kv_bytes_per_token(80, 8, 128, 2)
    assert per_token == 327_680
    assert per_token == 320 * 1024


def test_llama3_70b_64k_slot_is_20_gib_pool_routing_eq1_facts_s3() -> None:
    assert kv.gqa_kv_bytes_per_token(80, 8, 128, 2) * 65_536 == 20 * GIB


def test_qwen3_235b_mi300x_tp8_per_gpu_bytes_pool_routing_s4_7() -> None:
    # FACTS §3: 94 layers, 4 KV heads, head_dim 128, 16-bit: 192,512 total, 24,064 per GPU at TP 8.
    total = kv.gqa_kv_bytes_per_token(94, 4, 128, 2)
    assert total == 192_512
    instance = kv.kv_bytes_per_token_per_instance(total, "gqa", 8, 4, "even")
    assert instance == total
    assert kv.kv_bytes_per_token_per_gpu(instance, 8) == 24_064


def test_qwen3_235b_mi300x_kv_memory_and_slots_pool_routing_s4_7() -> None:
    # FACTS §3: 192 GB × 0.9 − 29.4 GB FP8 weights − 10 GB = 133.4 GB; 676 at 8K, 169 at 32K (GB = 1e9).
    weights = kv.weight_bytes_per_gpu(235e9, kv.DTYPE_BYTES["fp8"], 8)
    assert weights == pytest.approx(29.4e9, abs=0.05e9)
    kv_memory = kv.kv_memory_bytes_per_gpu(192e9, 0.9, weights, 10e9)
    assert kv_memory == pytest.approx(133.4e9, abs=0.05e9)
    capacity = kv.kv_capacity_tokens_from_memory(kv_memory, 8, 192_512)
    assert kv.token_exact_slots_per_instance(capacity, 8_192) == 676
    assert kv.token_exact_slots_per_instance(capacity, 32_768) == 169
    assert kv.block_slots_per_instance(capacity, 8_192, 16) == 676
    assert kv.block_slots_per_instance(capacity, 32_768, 16) == 169
    # The paper's own rounded input, 133.4 GB, gives the same counts: ⌊133.4e9/(24,064·ctx)⌋.
    assert math.floor(133.4e9 / (24_064 * 8_192)) == 676
    assert math.floor(133.4e9 / (24_064 * 32_768)) == 169


@pytest.mark.parametrize(("context", "slots"), [(65_536, 16), (8_192, 128), (4_096, 256), (1_536, 682)])
def test_paper_a100_block_budget_slots_facts_s1(context: int, slots: int) -> None:
    # FACTS §1: 65,536 blocks × 16 tokens; min(⌊128·8192/ctx⌋, ⌊65536/⌈ctx/16⌉⌋).
    assert kv.block_slots_per_instance(65_536 * 16, context, 16) == slots
    assert slots == min(128 * 8192 // context, 65_536 // math.ceil(context / 16))


def test_block_rounding_loses_slots_when_context_is_not_a_block_multiple() -> None:
    # 100 blocks of 16 = 1,600 tokens; ctx 17 needs 2 blocks → 50 slots, token-exact gives 94.
    assert kv.block_slots_per_instance(1_600, 17, 16) == 50
    assert kv.token_exact_slots_per_instance(1_600, 17) == 94


def test_deepseek_v3_mla_bytes_per_token() -> None:
    # (512 + 64) · 61 · 2 = 70,272 bytes; the latent is held whole on every GPU of a TP group.
    per_token = kv.mla_kv_bytes_per_token(61, 512, 64, 2)
    assert per_token == 70_272
    instance = kv.kv_bytes_per_token_per_instance(per_token, "mla", 8)
    assert instance == 8 * 70_272
    assert kv.kv_bytes_per_token_per_gpu(instance, 8) == 70_272


def test_replicated_kv_heads_when_fewer_heads_than_gpus() -> None:
    # 4 KV heads over 8 GPUs: vLLM keeps one head per GPU → 2 copies of the cache per instance.
    total = kv.gqa_kv_bytes_per_token(94, 4, 128, 2)
    instance = kv.kv_bytes_per_token_per_instance(total, "gqa", 8, 4, "replicated")
    assert instance == 2 * total
    assert kv.kv_bytes_per_token_per_gpu(instance, 8) == 2 * 94 * 1 * 128 * 2
    assert kv.kv_copies_per_instance("gqa", 8, 4, "replicated") == 2
    # No replication when heads divide evenly.
    assert kv.kv_bytes_per_token_per_instance(327_680, "gqa", 8, 8, "replicated") == 327_680


def test_no_kv_memory_left_gives_zero_capacity() -> None:
    left = kv.kv_memory_bytes_per_gpu(24e9, 0.9, 16.06e9, 10e9)
    assert left < 0
    assert kv.kv_capacity_tokens_from_memory(left, 1, 131_072) == 0


def test_cliff_ratio() -> None:
    assert kv.cliff_ratio(676, 169) == 4
    assert kv.cliff_ratio(128, 16) == 8
    assert kv.cliff_ratio(5, 0) == math.inf


@given(
    memory=st.integers(min_value=0, max_value=10**13),
    extra=st.integers(min_value=0, max_value=10**12),
    bytes_per_token=st.integers(min_value=1, max_value=10**6),
    context=st.integers(min_value=1, max_value=2**20),
    shorter=st.integers(min_value=1, max_value=2**20),
    block=st.sampled_from([1, 8, 16, 32, 128]),
)
def test_slots_never_fall_when_memory_grows_or_context_shrinks(
    memory: int, extra: int, bytes_per_token: int, context: int, shorter: int, block: int
) -> None:
    short = min(context, shorter)
    cap = kv.kv_capacity_tokens_from_memory(memory, 1, bytes_per_token)
    cap_more = kv.kv_capacity_tokens_from_memory(memory + extra, 1, bytes_per_token)
    for slots in (kv.token_exact_slots_per_instance, lambda k, c: kv.block_slots_per_instance(k, c, block)):
        assert slots(cap_more, context) >= slots(cap, context)
        assert slots(cap, short) >= slots(cap, context)
    # Block rounding never gives more than the token-exact count.
    assert kv.block_slots_per_instance(cap, context, block) <= kv.token_exact_slots_per_instance(cap, context)


@given(
    memory=st.integers(min_value=1, max_value=10**13),
    bytes_per_token=st.integers(min_value=1, max_value=10**6),
    context=st.integers(min_value=1, max_value=2**20),
)
def test_token_exact_slots_equal_pool_routing_eq2_in_bytes(
    memory: int, bytes_per_token: int, context: int
) -> None:
    # ⌊⌊M/b⌋/ctx⌋ = ⌊M/(b·ctx)⌋: the token form equals Eq. 2's byte form exactly.
    cap = kv.kv_capacity_tokens_from_memory(memory, 1, bytes_per_token)
    assert kv.token_exact_slots_per_instance(cap, context) == memory // (bytes_per_token * context)


@given(
    layers=st.integers(min_value=1, max_value=200),
    factor=st.integers(min_value=1, max_value=10),
    kv_heads=st.integers(min_value=1, max_value=128),
    head_dim=st.sampled_from([64, 96, 128, 256]),
    dtype=st.sampled_from(kv.KV_DTYPES),
    rank=st.integers(min_value=1, max_value=1024),
    rope=st.integers(min_value=0, max_value=128),
)
def test_bytes_per_token_scale_linearly_in_layers(
    layers: int, factor: int, kv_heads: int, head_dim: int, dtype: str, rank: int, rope: int
) -> None:
    b = int(kv.DTYPE_BYTES[dtype])
    gqa = kv.gqa_kv_bytes_per_token
    assert gqa(layers * factor, kv_heads, head_dim, b) == factor * gqa(layers, kv_heads, head_dim, b)
    mla = kv.mla_kv_bytes_per_token
    assert mla(layers * factor, rank, rope, b) == factor * mla(layers, rank, rope, b)


@given(
    kv_heads=st.integers(min_value=1, max_value=64),
    tp=st.integers(min_value=1, max_value=64),
    layers=st.integers(min_value=1, max_value=100),
)
def test_replication_never_stores_less_than_one_copy(kv_heads: int, tp: int, layers: int) -> None:
    total = kv.gqa_kv_bytes_per_token(layers, kv_heads, 128, 2)
    replicated = kv.kv_bytes_per_token_per_instance(total, "gqa", tp, kv_heads, "replicated")
    assert replicated >= total
    assert replicated == math.ceil(kv_heads / tp) * tp * 2 * layers * 128 * 2


def test_bad_arguments_raise_value_error() -> None:
    with pytest.raises(ValueError):
        kv.token_exact_slots_per_instance(100, 0)
    with pytest.raises(ValueError):
        kv.kv_copies_per_instance("mha", 8)
    with pytest.raises(ValueError):
        kv.kv_copies_per_instance("gqa", 0)
