"""The prefix-cache simulation against hand-counted traces and a brute-force LRU written from the
rules alone (Python lists, no hash table, no linked log)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetopt.core.prefix import BlockStream, simulate_prefix_cache, uncached_input_tokens


def stream_of(requests: list[tuple[int, list[int]]], block: int = 4) -> BlockStream:
    inputs = np.array([r[0] for r in requests], np.int64)
    lengths = [len(r[1]) for r in requests]
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    hashes = np.array([h for r in requests for h in r[1]], np.int64)
    return BlockStream(inputs, offsets, hashes, block)


def brute_force(requests, block, instances, capacity, dispatch, choices, load_bound=1.25):
    """Per-instance caches as lists ordered least recently used first."""
    caches: list[list[int]] = [[] for _ in range(instances)]
    assigned = [0] * instances
    hits, chosen = [], []

    def run(cache, hashes, full):
        k = 0
        while k < full and hashes[k] in cache:
            k += 1
        return k

    for r, (tokens, hashes) in enumerate(requests):
        full = min(tokens // block, len(hashes))
        if instances == 1:
            target = 0
        elif dispatch == "random":
            target = int(choices[r])
        else:
            limit = -(-load_bound * (r + 1) // instances)
            eligible = [i for i in range(instances) if assigned[i] + 1 <= limit]
            target = max(eligible, key=lambda i: (run(caches[i], hashes, full), -assigned[i], -i))
        assigned[target] += 1
        chosen.append(target)
        cap = min(max(tokens - 1, 0) // block, full)
        hits.append(min(run(caches[target], hashes, full), cap) * block)
        cache = caches[target]
        for b in reversed(range(full)):
            if hashes[b] in cache:
                cache.remove(hashes[b])
            cache.append(hashes[b])
        if capacity is not None:
            del cache[: max(0, len(cache) - capacity)]
    return np.array(hits), np.array(chosen)


def test_hand_counted_unbounded() -> None:
    # block 4: a 10-token prompt has 2 full blocks (8 tokens) and a partial one
    requests = [
        (10, [1, 2, 3]),  # cold: 0
        (10, [1, 2, 3]),  # same prompt: both full blocks hit (8 tokens); the partial never does
        (8, [1, 2]),  # whole prompt cached: the last block is recomputed → 1 block (4 tokens)
        (12, [1, 5, 6]),  # shares block 1 only: 4
        (12, [7, 2, 3]),  # block 2 is cached but not as a prefix: 0
        (3, [1]),  # shorter than a block: 0
    ]
    hits = simulate_prefix_cache(stream_of(requests))
    assert hits.hit_tokens.tolist() == [0, 8, 4, 4, 0, 0]
    assert hits.hit_rate == pytest.approx(16 / 55)
    assert hits.uncached_tokens.tolist() == [10, 2, 4, 8, 12, 3]


def test_hand_counted_lru_evicts_tails_first() -> None:
    # one instance holding 3 blocks: A=[1,2,3] fills it; B=[4] evicts A's tail block 3 (touched
    # first), not its prefix; A again hits blocks 1, 2 (8 tokens), then re-inserts 3 (evicting 4)
    requests = [(13, [1, 2, 3, 9]), (5, [4, 8]), (13, [1, 2, 3, 9]), (5, [4, 8])]
    hits = simulate_prefix_cache(stream_of(requests), capacity_blocks=3)
    assert hits.hit_tokens.tolist() == [0, 0, 8, 0]


def test_affinity_follows_the_prefix_and_random_splits_it() -> None:
    # two sessions alternating, each repeating its prompt: affinity keeps each on one instance
    requests = [(9, [1, 2, 3]), (9, [5, 6, 7])] * 20
    stream = stream_of(requests)
    affinity = simulate_prefix_cache(stream, instances=2, capacity_blocks=2, dispatch="affinity")
    assert affinity.hit_tokens.tolist() == [0, 0] + [8] * 38
    assert len(set(affinity.instance[::2])) == 1 and len(set(affinity.instance[1::2])) == 1
    spread = simulate_prefix_cache(stream, instances=2, capacity_blocks=2, dispatch="random", seed=3)
    assert spread.hit_rate < affinity.hit_rate


def _random_requests(draw_seed: int, count: int, vocab: int, block: int) -> list[tuple[int, list[int]]]:
    rng = np.random.default_rng(draw_seed)
    prefixes = [list(rng.integers(0, vocab, size=int(rng.integers(1, 6)))) for _ in range(4)]
    requests = []
    for _ in range(count):
        hashes = list(prefixes[int(rng.integers(0, 4))][: int(rng.integers(1, 6))])
        hashes += list(rng.integers(0, vocab, size=int(rng.integers(0, 3))))
        tokens = int(rng.integers(max(1, (len(hashes) - 1) * block + 1), len(hashes) * block + 1))
        requests.append((tokens, [int(h) for h in hashes]))
    return requests


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    instances=st.integers(1, 4),
    capacity=st.one_of(st.none(), st.integers(0, 12)),
    dispatch=st.sampled_from(["random", "affinity"]),
)
def test_matches_brute_force_lru(seed, instances, capacity, dispatch) -> None:
    requests = _random_requests(seed, 60, vocab=12, block=4)
    hits = simulate_prefix_cache(
        stream_of(requests), instances=instances, capacity_blocks=capacity, dispatch=dispatch, seed=seed
    )
    choices = np.random.default_rng(seed).integers(0, instances, len(requests))
    expected_hits, expected_chosen = brute_force(requests, 4, instances, capacity, dispatch, choices)
    assert hits.hit_tokens.tolist() == expected_hits.tolist()
    assert hits.instance.tolist() == expected_chosen.tolist()


def test_interpreted_and_compiled_agree(monkeypatch) -> None:
    requests = _random_requests(7, 200, vocab=30, block=4)
    stream = stream_of(requests)
    compiled = simulate_prefix_cache(stream, instances=3, capacity_blocks=5, dispatch="affinity")
    monkeypatch.setenv("FLEETOPT_JIT", "0")
    plain = simulate_prefix_cache(stream, instances=3, capacity_blocks=5, dispatch="affinity")
    assert plain.hit_tokens.tolist() == compiled.hit_tokens.tolist()


def test_bounds_order() -> None:
    requests = _random_requests(11, 300, vocab=40, block=4)
    stream = stream_of(requests)
    unbounded = simulate_prefix_cache(stream).hit_rate
    one = simulate_prefix_cache(stream, capacity_blocks=6).hit_rate
    assert 0 < one <= unbounded
    # a larger LRU never hits less (LRU is a stack algorithm: Mattson et al. 1970)
    rates = [simulate_prefix_cache(stream, capacity_blocks=c).hit_tokens for c in (2, 4, 8, 16)]
    for small, large in zip(rates, rates[1:], strict=False):
        assert (large >= small).all()


def test_subset_keeps_each_requests_hashes() -> None:
    stream = stream_of([(4, [1]), (8, [2, 3]), (12, [4, 5, 6])])
    part = stream.subset(np.array([0, 2]))
    assert part.offsets.tolist() == [0, 1, 4] and part.hashes.tolist() == [1, 4, 5, 6]


def test_uncached_input_tokens() -> None:
    assert uncached_input_tokens(np.array([100, 1, 7]), 0.5).tolist() == [50, 1, 4]
    assert uncached_input_tokens(np.array([100, 1]), 1.0).tolist() == [1, 1]
    assert uncached_input_tokens(np.array([100]), 0.0).tolist() == [100]


def _engine(prompts, cached, kv_blocks, arrivals=None, attention=0.0, dispatch="round-robin"):
    from fleetopt.core.engines import IterationSettings, run_iteration_engine

    count = len(prompts)
    settings = IterationSettings(8192, None, kv_blocks, 16, 0, attention_s_per_token_pair=attention)
    return run_iteration_engine(
        np.zeros(count) if arrivals is None else np.asarray(arrivals, float), np.asarray(prompts),
        np.full(count, 3), np.zeros(count), np.zeros(count), instances=1, slots=4, base_s=0.01,
        per_decode_s=0.001, per_prefill_token_s=1e-5, settings=settings, dispatch=dispatch,
        cached_tokens=None if cached is None else np.asarray(cached),
    )  # fmt: skip


def test_engine_computes_only_the_uncached_prompt() -> None:
    # one request alone: its first iteration computes its prompt, W + τ·tokens
    full = _engine([4000], None, None)
    part = _engine([4000], [3000], None)
    assert full.first_token_s[0] == pytest.approx(0.01 + 1e-5 * 4000, rel=1e-12)
    assert part.first_token_s[0] == pytest.approx(0.01 + 1e-5 * 1000, rel=1e-12)
    assert (_engine([4000], [0], None).first_token_s == full.first_token_s).all()  # bit for bit
    # the attention of the uncached chunk is over the cached context: pairs 3000·1000 + 1000·1001/2
    attention = _engine([4000], [3000], None, attention=1e-9)
    expected = 0.01 + 1e-5 * 1000 + 1e-9 * (3000 * 1000 + 1000 * 1001 // 2)
    assert attention.first_token_s[0] == pytest.approx(expected, rel=1e-12)


def test_engine_holds_the_cached_blocks_in_kv() -> None:
    # 260 blocks of 16 tokens: one 4,000-token prompt (250 blocks) fits, two do not — cached or not,
    # since a cached prefix is KV the request holds
    for cached in (None, [3000, 3000]):
        run = _engine([4000, 4000], cached, 260)
        assert run.admission_s[1] >= run.departure_s[0]
