"""benchmarks/outside_kernel_check.py: the cached aiconfigurator reference loads, and our side of a
row is the iteration model's arithmetic done by hand from the profile files."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import outside_kernel_check as check  # noqa: E402

H100_TP8 = "llama-3.1-70b-fp8-h100-80gb-tp8-vllm"
# profiles/serving/llama-3.1-70b-fp8-h100-80gb-tp8-vllm.yaml, profiles/models/llama-3.1-70b.yaml,
# profiles/gpus/h100-80gb.yaml
W_S, H_S, TAU_S = 8.908e-3, 0.09533e-3, 30.7e-6
PARAMETERS, LAYERS, HEADS, HEAD_DIM, KV_HEADS = 70.6e9, 80, 64, 128, 8
BANDWIDTH = 8 * 3350e9  # bytes/s of the instance
KV_BYTES_PER_TOKEN = 2 * LAYERS * KV_HEADS * HEAD_DIM * 2  # K and V, BF16, over the 8 GPUs


def test_cached_reference_covers_every_profile_and_phase():
    rows = check.read_rows()
    assert {r.profile for r in rows} == set(check.PROFILES)
    for profile in check.PROFILES:
        mine = [r for r in rows if r.profile == profile]
        assert {r.phase for r in mine} == {"prefill", "decode"}
        assert max(r.input_tokens for r in mine) == 131072
    assert all(r.reference_ms > 0 and 0 <= r.silicon_share <= 1 for r in rows)
    assert all(r.reference.startswith("aiconfigurator ") for r in rows)


def test_prefill_of_a_long_prompt_is_chunks_plus_tokens_plus_attention():
    """131,072 tokens alone: 16 chunks of 8,192, each W + τ·8,192 + its attention; the attention
    over all chunks is τ_a·L(L + 1)/2 pairs, τ_a = τ·4·layers·heads·head_dim / (2·N)."""
    tokens = 131072
    tau_a = TAU_S * 4 * LAYERS * HEADS * HEAD_DIM / (2 * PARAMETERS)
    by_hand = 16 * W_S + TAU_S * tokens + tau_a * tokens * (tokens + 1) / 2
    hw = check.hardware(H100_TP8)
    assert check.predicted_ms(hw, "prefill", tokens, 1) == pytest.approx(by_hand * 1e3, rel=1e-9)
    without = check.predicted_ms(hw, "prefill", tokens, 1, attention=False)
    assert without == pytest.approx((16 * W_S + TAU_S * tokens) * 1e3, rel=1e-9)


def test_decode_step_is_base_plus_each_sequences_kv_read_floor():
    """32 sequences at 8,192 tokens of context: W + 32·max(H, KV bytes·L / bandwidth), L the
    request's total (8,192 + 3 outputs), where the KV read (100 µs) is above H (95 µs)."""
    total = 8192 + check.DECODE_OUTPUTS
    per_sequence = max(H_S, KV_BYTES_PER_TOKEN * total / BANDWIDTH)
    assert per_sequence > H_S
    got = check.predicted_ms(check.hardware(H100_TP8), "decode", 8192, 32)
    assert got == pytest.approx((W_S + 32 * per_sequence) * 1e3, rel=1e-9)


def test_docs_tables_are_the_scripts_output():
    """docs/profiles.md's outside-check tables are what the script computes from the cached
    reference and the bundled profiles now (regenerate: benchmarks/outside_kernel_check.py --markdown)."""
    comparisons = check.compare(check.read_rows())
    docs = (ROOT / "docs" / "profiles.md").read_text()
    for line in check.regime_table(comparisons) + check.length_table(comparisons):
        assert line in docs, line
