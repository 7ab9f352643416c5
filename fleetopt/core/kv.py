"""KV-cache slot arithmetic (pool-routing paper Eq. 1–2 and §4.7; FleetOpt §5; FACTS §1, §3).

Everything here counts per *instance* (one tensor-parallel group of ``tensor_parallel`` GPUs)
unless a name says ``per_gpu``. Bytes are bytes (not GB), contexts and capacities are tokens.

KV bytes per token of one copy of the model's cache (pool-routing Eq. 1 divided by C_max):

- GQA/MHA: ``2 · layers · kv_heads · head_dim · bytes(kv_dtype)`` (K and V per layer and head);
- MLA (DeepSeek-V2/V3): ``(kv_lora_rank + qk_rope_head_dim) · layers · bytes(kv_dtype)``
  (one compressed latent plus the decoupled RoPE key per layer, shared by all heads).

Under tensor parallelism the cache of an instance is spread over its GPUs:

- GQA, ``kv_head_layout="even"``: the paper's arithmetic (pool-routing §4.7): the total is
  split evenly, ``per GPU = total / TP``, even when ``kv_heads < TP``.
- GQA, ``kv_head_layout="replicated"``: what vLLM does: each GPU holds ``⌈kv_heads / TP⌉``
  heads, so with ``kv_heads < TP`` the heads are copied and the instance stores
  ``⌈kv_heads / TP⌉ · TP / kv_heads`` copies of the cache.
- MLA: the latent is not split by heads; every GPU of the group holds the whole latent
  (vLLM's TP MLA), so per GPU = total and the instance stores TP copies.
"""

from __future__ import annotations

import math

#: Bytes per element of the supported data types (weights and KV cache).
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "int8": 1,
    "int4": 0.5,
}
#: Data types allowed for the KV cache (whole bytes per element).
KV_DTYPES: tuple[str, ...] = ("fp32", "bf16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2", "int8")
#: Data types allowed for weights.
WEIGHT_DTYPES: tuple[str, ...] = tuple(DTYPE_BYTES)
KV_FORMULAS: tuple[str, ...] = ("gqa", "mla")
KV_HEAD_LAYOUTS: tuple[str, ...] = ("even", "replicated")


def gqa_kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, kv_dtype_bytes: int) -> int:
    """KV bytes per token, GQA/MHA: 2 · layers · kv_heads · head_dim · bytes (pool-routing Eq. 1).

    Llama-3-70B (80 layers, 8 KV heads, head_dim 128, 16-bit): 327,680 bytes = 320 KiB (FACTS §3).
    """
    return 2 * layers * kv_heads * head_dim * kv_dtype_bytes


def mla_kv_bytes_per_token(layers: int, kv_lora_rank: int, qk_rope_head_dim: int, kv_dtype_bytes: int) -> int:
    """KV bytes per token, MLA: (kv_lora_rank + qk_rope_head_dim) · layers · bytes.

    DeepSeek-V3 (61 layers, rank 512, RoPE dim 64, 16-bit): 576 · 61 · 2 = 70,272 bytes.
    """
    return (kv_lora_rank + qk_rope_head_dim) * layers * kv_dtype_bytes


def tensor_parallel_problem(
    tensor_parallel: int, attention_heads: int | None, kv_heads: int | None, kv_formula: str = "gqa"
) -> str | None:
    """Why vLLM refuses ``tensor_parallel`` for a model (None when it accepts it; a count that is not
    known is not checked).

    vLLM's rule (vllm-project/vllm): the attention heads are split evenly over the GPUs —
    ``ModelConfig.verify_with_parallel_config`` (vllm/config/model.py) raises "Total number of
    attention heads (…) must be divisible by tensor parallel size (…)"; the KV heads of a GQA model
    are split evenly when there are at least TP of them, and otherwise each is replicated on
    TP / kv_heads GPUs, which must be whole — ``QKVParallelLinear.__init__``
    (vllm/model_executor/layers/linear.py, commit 0036d38d): ``divide(total_num_kv_heads, tp_size)``
    or ``num_kv_head_replicas = divide(tp_size, total_num_kv_heads)``, ``divide`` asserting
    divisibility. MLA's latent is not split by heads (only the attention heads are).
    """
    if attention_heads is not None and attention_heads % tensor_parallel:
        return f"its {attention_heads} attention heads are not divisible by {tensor_parallel}"
    if kv_formula != "gqa" or kv_heads is None:
        return None
    if kv_heads >= tensor_parallel and kv_heads % tensor_parallel:
        return f"its {kv_heads} KV heads are not divisible by {tensor_parallel}"
    if kv_heads < tensor_parallel and tensor_parallel % kv_heads:
        return (
            f"{tensor_parallel} is not a multiple of its {kv_heads} KV heads (vLLM replicates each KV "
            "head on TP / kv_heads GPUs)"
        )
    return None


def valid_tensor_parallel_sizes(
    attention_heads: int | None, kv_heads: int | None, kv_formula: str = "gqa", largest: int = 64
) -> list[int]:
    """The tensor-parallel sizes up to ``largest`` that vLLM accepts for the model."""
    return [
        tp
        for tp in range(1, largest + 1)
        if tensor_parallel_problem(tp, attention_heads, kv_heads, kv_formula) is None
    ]


def kv_copies_per_instance(
    kv_formula: str, tensor_parallel: int, kv_heads: int | None = None, kv_head_layout: str = "even"
) -> float:
    """How many copies of the model's KV cache one instance stores (≥ 1; see module docstring).

    GQA even: 1. GQA replicated: ⌈kv_heads/TP⌉·TP/kv_heads. MLA: TP.
    """
    if tensor_parallel < 1:
        raise ValueError("tensor_parallel must be ≥ 1")
    if kv_formula == "mla":
        return float(tensor_parallel)
    if kv_formula != "gqa":
        raise ValueError(f"unknown kv_formula {kv_formula!r}")
    if kv_head_layout == "even":
        return 1.0
    if kv_head_layout != "replicated" or kv_heads is None or kv_heads < 1:
        raise ValueError("replicated layout needs kv_heads ≥ 1; layouts are 'even' or 'replicated'")
    return math.ceil(kv_heads / tensor_parallel) * tensor_parallel / kv_heads


def kv_bytes_per_token_per_instance(
    kv_bytes_per_token_model: int,
    kv_formula: str,
    tensor_parallel: int,
    kv_heads: int | None = None,
    kv_head_layout: str = "even",
) -> int:
    """KV bytes one instance stores per token of one sequence, replication included (integer).

    = kv_bytes_per_token_model · copies (see :func:`kv_copies_per_instance`).
    """
    if kv_formula == "gqa" and kv_head_layout == "replicated":
        heads_per_gpu = math.ceil(kv_heads / tensor_parallel)  # type: ignore[operator]
        return kv_bytes_per_token_model // kv_heads * heads_per_gpu * tensor_parallel  # type: ignore[operator]
    copies = kv_copies_per_instance(kv_formula, tensor_parallel, kv_heads, kv_head_layout)
    return kv_bytes_per_token_model * int(copies)


def kv_bytes_per_token_per_gpu(kv_bytes_per_token_instance: int, tensor_parallel: int) -> float:
    """KV bytes each GPU of the instance stores per token: instance bytes / TP.

    Qwen3-235B-A22B, 16-bit KV, TP 8, even split: 192,512 / 8 = 24,064 bytes (FACTS §3).
    """
    return kv_bytes_per_token_instance / tensor_parallel


def weight_bytes_per_gpu(parameter_count: float, weight_dtype_bytes: float, tensor_parallel: int) -> float:
    """Weight memory on each GPU: parameters · bytes / TP (weights sharded evenly; embeddings too).

    Qwen3-235B-A22B in FP8 at TP 8: 235e9 · 1 / 8 = 29.4 GB (pool-routing §4.7).
    """
    return parameter_count * weight_dtype_bytes / tensor_parallel


def kv_memory_bytes_per_gpu(
    gpu_memory_bytes: float,
    memory_utilization: float,
    weight_bytes_per_gpu: float,
    activation_reserve_bytes_per_gpu: float,
) -> float:
    """Memory left for the KV cache on one GPU (pool-routing Eq. 2 numerator, per GPU).

    = memory · utilization − weights − activations. May be ≤ 0 (the model does not fit).
    MI300X: 192e9 · 0.9 − 29.4e9 − 10e9 = 133.4e9 bytes (FACTS §3).
    """
    return gpu_memory_bytes * memory_utilization - weight_bytes_per_gpu - activation_reserve_bytes_per_gpu


def kv_capacity_tokens_from_memory(
    kv_memory_bytes_per_gpu: float, tensor_parallel: int, kv_bytes_per_token_instance: int
) -> int:
    """KV capacity of one instance in tokens: ⌊TP · kv_memory_per_gpu / instance_bytes_per_token⌋.

    0 when no memory is left for KV.
    """
    if kv_bytes_per_token_instance < 1 or tensor_parallel < 1:
        raise ValueError("bytes per token and tensor_parallel must be ≥ 1")
    if kv_memory_bytes_per_gpu <= 0:
        return 0
    return math.floor(tensor_parallel * kv_memory_bytes_per_gpu / kv_bytes_per_token_instance)


def token_exact_slots_per_instance(kv_capacity_tokens: int, context_tokens: int) -> int:
    """Sequences of ``context_tokens`` that fit with no block rounding: ⌊K / ctx⌋.

    With K = ⌊M / b⌋ (M bytes of KV, b bytes per token) this equals ⌊M / (b · ctx)⌋, the
    pool-routing paper's Eq. 2 (⌊⌊x⌋/n⌋ = ⌊x/n⌋ for whole n): Qwen3-235B on MI300X TP 8 gives
    676 at 8,192 and 169 at 32,768 (§4.7, FACTS §3).
    """
    if context_tokens < 1 or kv_capacity_tokens < 0:
        raise ValueError("context must be ≥ 1 token, capacity ≥ 0")
    return kv_capacity_tokens // context_tokens


def block_slots_per_instance(kv_capacity_tokens: int, context_tokens: int, block_tokens: int) -> int:
    """Sequences of ``context_tokens`` that fit in a block budget: ⌊⌊K/b⌋ / ⌈ctx/b⌉⌋.

    K is the instance's KV capacity in tokens and b the KV block size in tokens (PagedAttention
    allocates whole blocks). The papers' A100 profile (65,536 blocks of 16 tokens) gives
    16 slots at 65,536, 128 at 8,192, 256 at 4,096 and 682 at 1,536 (FACTS §1).
    """
    if context_tokens < 1 or block_tokens < 1 or kv_capacity_tokens < 0:
        raise ValueError("context and block size must be ≥ 1 token, capacity ≥ 0")
    return (kv_capacity_tokens // block_tokens) // math.ceil(context_tokens / block_tokens)


def cliff_ratio(slots_short: int, slots_long: int) -> float:
    """The papers' cliff ratio ρ = slots(short context) / slots(long context) (∞ if none fit long).

    This is a ratio of concurrency, not of throughput (FACTS §2 item 1).
    """
    if slots_long <= 0:
        return math.inf
    return slots_short / slots_long
