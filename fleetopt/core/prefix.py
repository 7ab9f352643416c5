"""Prefix caching: which prompt tokens an engine finds in its KV cache, from a log's block hashes.

A log that carries prefix identity (Mooncake's ``hash_ids``: one integer per block of
``block_size_tokens`` prompt tokens, equal integers for equal prefixes — the id of a block names
its whole prefix, as vLLM's chained block hashes do) is replayed, request by request in arrival
order, through the cache of the instance each request is dispatched to:

- **what hits**: the longest run of the prompt's leading blocks found in that instance's cache
  (vLLM ``KVCacheManager.get_computed_blocks``), full blocks only, and never the whole prompt: at
  most ⌊(L_in − 1)/block⌋ blocks (vLLM recomputes the last token to get its logits);
- **what is kept**: the prompt's full blocks, ⌊L_in/block⌋ of them (a partial last block is not
  cached); the caches either hold everything (``capacity_blocks=None``: an unbounded cache) or
  evict least recently used blocks beyond ``capacity_blocks`` per instance. A request's blocks are
  touched last block first, so its prefix is the most recent and its tail goes first, as vLLM
  frees a finished request's blocks in reverse order;
- **where a request goes**: ``random`` (uniform over the instances, seeded: what a
  cache-oblivious least-loaded router is to the cache) or ``affinity`` (the instance holding the
  longest cached prefix, ties to the one with fewest requests so far, among the instances under
  a load bound: at most ⌈b·(r + 1)/n⌉ of the first r + 1 requests — consistent hashing with
  bounded loads, Mirrokni, Thorup & Zadimoghaddam, SODA 2018).

Time is not modelled: a block is evictable as soon as its request is dispatched (the pool's KV
left to the cache is what the caller passes as ``capacity_blocks``). The loop runs compiled by
numba when installed (the same source interpreted otherwise, bit-identical results), over an
open-addressing hash table of (instance, block) keys held in numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The dispatch policies the cache simulation knows.
DISPATCH_POLICIES = ("random", "affinity")
#: Mooncake's traces hash prompts in blocks of 512 tokens (kvcache-ai/Mooncake FAST25-release).
MOONCAKE_BLOCK_TOKENS = 512
#: Default load bound b of affinity dispatch (an instance takes at most b × its even share).
DEFAULT_LOAD_BOUND = 1.25

_EMPTY = -1
_HASH_MULTIPLIER = 40503  # odd; keys stay below 2⁴², so key × multiplier < 2⁵⁸ never overflows


@dataclass(frozen=True, eq=False)
class BlockStream:
    """Requests in arrival order with their prompts' block hashes.

    Attributes:
        input_tokens: prompt length of each request, tokens (int64).
        offsets: request r's hashes are ``hashes[offsets[r]:offsets[r + 1]]`` (int64, n + 1 entries).
        hashes: every request's block hashes, concatenated (int64).
        block_size_tokens: tokens per hashed block.
    """

    input_tokens: np.ndarray
    offsets: np.ndarray
    hashes: np.ndarray
    block_size_tokens: int

    @property
    def request_count(self) -> int:
        return int(self.input_tokens.size)

    def subset(self, rows: np.ndarray) -> BlockStream:
        """The requests at ``rows`` (ascending indices), in the same order."""
        starts, ends = self.offsets[rows], self.offsets[rows + 1]
        lengths = ends - starts
        offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        index = np.repeat(starts - offsets[:-1], lengths) + np.arange(int(offsets[-1]), dtype=np.int64)
        return BlockStream(self.input_tokens[rows], offsets, self.hashes[index], self.block_size_tokens)


@dataclass(frozen=True, eq=False)
class CacheHits:
    """What one cache model hit, per request (arrival order).

    Attributes:
        hit_tokens: prompt tokens found in the cache, per request.
        instance: the instance each request was dispatched to.
        input_tokens: the prompts' lengths, tokens.
    """

    hit_tokens: np.ndarray
    instance: np.ndarray
    input_tokens: np.ndarray

    @property
    def hit_rate(self) -> float:
        """Cached prompt tokens over all prompt tokens (0 for no prompt tokens)."""
        total = int(self.input_tokens.sum())
        return float(self.hit_tokens.sum()) / total if total else 0.0

    @property
    def uncached_tokens(self) -> np.ndarray:
        """The prompt tokens each request computes."""
        return self.input_tokens - self.hit_tokens


def _home(key: int, mask: int) -> int:
    return (key * _HASH_MULTIPLIER) & mask


def _find(keys: np.ndarray, key: int, mask: int) -> int:
    """The slot holding ``key``, or −1."""
    slot = _home(key, mask)
    while keys[slot] != _EMPTY:
        if keys[slot] == key:
            return slot
        slot = (slot + 1) & mask
    return -1


def _insert(keys: np.ndarray, values: np.ndarray, key: int, value: int, mask: int) -> bool:
    """Set ``key`` → ``value``; whether the key is new."""
    slot = _home(key, mask)
    while keys[slot] != _EMPTY:
        if keys[slot] == key:
            values[slot] = value
            return False
        slot = (slot + 1) & mask
    keys[slot] = key
    values[slot] = value
    return True


def _delete(keys: np.ndarray, values: np.ndarray, slot: int, mask: int) -> None:
    """Empty ``slot`` of a linear-probing table, shifting later entries of its cluster back."""
    hole = slot
    probe = slot
    while True:
        probe = (probe + 1) & mask
        if keys[probe] == _EMPTY:
            break
        home = _home(keys[probe], mask)
        # the entry may move into the hole unless its home lies cyclically in (hole, probe]
        if hole <= probe:
            stays = hole < home <= probe
        else:
            stays = home > hole or home <= probe
        if stays:
            continue
        keys[hole] = keys[probe]
        values[hole] = values[probe]
        hole = probe
    keys[hole] = _EMPTY


def _cached_run(keys: np.ndarray, hashes: np.ndarray, start: int, count: int, instance: int,
                instances: int, mask: int) -> int:  # fmt: skip
    """How many of the ``count`` blocks from ``start`` lead the prompt in ``instance``'s cache."""
    run = 0
    while run < count and _find(keys, hashes[start + run] * instances + instance, mask) >= 0:
        run += 1
    return run


def _cache_kernel(
    offsets: np.ndarray,
    hashes: np.ndarray,
    full_blocks: np.ndarray,
    hit_cap_blocks: np.ndarray,
    instances: int,
    capacity_blocks: int,
    affinity: bool,
    load_bound: float,
    choices: np.ndarray,
    table_bits: int,
    hit_blocks: np.ndarray,
    chosen: np.ndarray,
) -> None:
    """Replay the requests through the caches (module docstring); fills ``hit_blocks`` and
    ``chosen``. ``capacity_blocks < 0``: unbounded."""
    mask = (1 << table_bits) - 1
    keys = np.full(mask + 1, _EMPTY, np.int64)
    values = np.zeros(mask + 1, np.int64)
    log_size = int(full_blocks.sum())
    log_key = np.zeros(max(log_size, 1), np.int64)
    log_next = np.full(max(log_size, 1), -1, np.int64)
    head = np.full(instances, -1, np.int64)
    tail = np.full(instances, -1, np.int64)
    size = np.zeros(instances, np.int64)
    assigned = np.zeros(instances, np.int64)
    entry = 0
    for r in range(offsets.size - 1):
        start = offsets[r]
        full = full_blocks[r]
        if instances == 1:
            target = 0
        elif not affinity:
            target = choices[r]
        else:
            limit = int(np.ceil(load_bound * (r + 1) / instances))
            target = -1
            best = -1
            for i in range(instances):
                if assigned[i] + 1 > limit:
                    continue
                run = _cached_run(keys, hashes, start, full, i, instances, mask)
                if run > best or (run == best and assigned[i] < assigned[target]):
                    best = run
                    target = i
        assigned[target] += 1
        chosen[r] = target
        run = _cached_run(keys, hashes, start, full, target, instances, mask)
        hit_blocks[r] = min(run, hit_cap_blocks[r])
        for b in range(full - 1, -1, -1):  # last block first: the prefix ends most recent
            key = hashes[start + b] * instances + target
            if _insert(keys, values, key, entry, mask):
                size[target] += 1
            log_key[entry] = key
            if tail[target] >= 0:
                log_next[tail[target]] = entry
            else:
                head[target] = entry
            tail[target] = entry
            entry += 1
        if capacity_blocks >= 0:
            while size[target] > capacity_blocks:
                oldest = head[target]
                head[target] = log_next[oldest]
                if head[target] < 0:
                    tail[target] = -1
                slot = _find(keys, log_key[oldest], mask)
                if slot >= 0 and values[slot] == oldest:  # not touched again since
                    _delete(keys, values, slot, mask)
                    size[target] -= 1


_HELPERS = (_home, _find, _insert, _delete, _cached_run)
_KERNEL: list = []


def _kernel():
    """The compiled kernel (numba, when the simulator's engines use it) or the plain one."""
    from fleetopt.core.engines import jit_available

    if not jit_available():
        return _cache_kernel
    if not _KERNEL:
        import numba
        from numba.extending import register_jitable

        for helper in _HELPERS:
            register_jitable(helper)
        _KERNEL.append(numba.njit(cache=True, nogil=True)(_cache_kernel))
    return _KERNEL[0]


def _dense(hashes: np.ndarray) -> np.ndarray:
    """Hash ids as small non-negative integers (as given when they already are)."""
    if hashes.size == 0 or (int(hashes.min()) >= 0 and int(hashes.max()) < 1 << 31):
        return hashes.astype(np.int64, copy=False)
    return np.unique(hashes, return_inverse=True)[1].astype(np.int64).reshape(-1)


def simulate_prefix_cache(
    stream: BlockStream,
    *,
    instances: int = 1,
    capacity_blocks: int | None = None,
    dispatch: str = "random",
    seed: int = 0,
    load_bound: float = DEFAULT_LOAD_BOUND,
) -> CacheHits:
    """Replay ``stream`` through ``instances`` caches of ``capacity_blocks`` blocks each (None:
    unbounded) under ``dispatch`` (:data:`DISPATCH_POLICIES`); see the module docstring."""
    if instances < 1:
        raise ValueError("a cache simulation needs at least one instance")
    if instances >= 1 << 10:
        raise ValueError("at most 1,023 instances per pool")
    if dispatch not in DISPATCH_POLICIES:
        raise ValueError(f"dispatch {dispatch!r}: one of {', '.join(DISPATCH_POLICIES)}")
    if load_bound < 1:
        raise ValueError("the load bound must be ≥ 1")
    n = stream.request_count
    block = int(stream.block_size_tokens)
    counts = np.diff(stream.offsets)
    full = np.minimum(stream.input_tokens // block, counts).astype(np.int64)
    cap = np.minimum(np.maximum(stream.input_tokens - 1, 0) // block, full).astype(np.int64)
    live = int(full.sum()) if capacity_blocks is None else min(int(full.sum()), instances * capacity_blocks)
    live += int(full.max()) if n else 0
    bits = max(4, int(2 * live + 1).bit_length())
    choices = (
        np.random.default_rng(seed).integers(0, instances, n).astype(np.int64)
        if dispatch == "random" and instances > 1
        else np.zeros(n, np.int64)
    )
    hit_blocks = np.zeros(n, np.int64)
    chosen = np.zeros(n, np.int64)
    _kernel()(
        stream.offsets.astype(np.int64),
        _dense(stream.hashes),
        full,
        cap,
        int(instances),
        -1 if capacity_blocks is None else int(capacity_blocks),
        dispatch == "affinity",
        float(load_bound),
        choices,
        bits,
        hit_blocks,
        chosen,
    )
    return CacheHits(hit_blocks * block, chosen, stream.input_tokens.astype(np.int64))


def uncached_input_tokens(input_tokens: np.ndarray, hit_fraction: float) -> np.ndarray:
    """Each prompt with a share ``hit_fraction`` of its tokens cached (rounded down), at least one
    token still computed (an engine recomputes the last prompt token)."""
    input_tokens = np.asarray(input_tokens, dtype=np.int64)
    cached = np.floor(input_tokens * float(hit_fraction)).astype(np.int64)
    return np.maximum(input_tokens - cached, np.minimum(input_tokens, 1))


#: The cached tokens of a request whose log row does not report them (:class:`ReportedCache`).
NOT_REPORTED = -1


@dataclass(frozen=True, eq=False)
class ReportedCache:
    """The cached prompt tokens a log reports request by request (OpenAI's
    ``usage.prompt_tokens_details.cached_tokens`` and each gateway's name for it): the exact
    histogram of (input, output, cached) → requests, ``cached_tokens`` = :data:`NOT_REPORTED` on the
    rows that do not report it. These are the hits of the fleet the log was taken on (the
    production fleet, its instances, cache sizes and router), not of a fleet being planned.

    Rows that do not report count as 0 cached tokens (charged in full: the plan never assumes a hit
    the log does not show); :attr:`reporting_hit_rate` is the rate over the reporting rows alone.

    Attributes:
        input_tokens, output_tokens, cached_tokens, counts: the histogram (int64, one row per
            distinct triple).
        field: the log field read (for messages), None when not known (a summary).
    """

    input_tokens: np.ndarray
    output_tokens: np.ndarray
    cached_tokens: np.ndarray
    counts: np.ndarray
    field: str | None = None

    @property
    def requests(self) -> int:
        return int(self.counts.sum())

    @property
    def reported(self) -> np.ndarray:
        """Which histogram rows report their cached tokens."""
        return self.cached_tokens != NOT_REPORTED

    @property
    def reporting_requests(self) -> int:
        return int(self.counts[self.reported].sum())

    @property
    def prompt_tokens(self) -> int:
        return int(np.dot(self.input_tokens, self.counts))

    @property
    def cached_prompt_tokens(self) -> int:
        return int(np.dot(np.maximum(self.cached_tokens, 0), self.counts))

    @property
    def hit_rate(self) -> float:
        """Cached prompt tokens over all prompt tokens (rows that do not report: 0 cached)."""
        prompt = self.prompt_tokens
        return self.cached_prompt_tokens / prompt if prompt else 0.0

    @property
    def reporting_hit_rate(self) -> float:
        """Cached prompt tokens over the prompt tokens of the rows that report them."""
        prompt = int(np.dot(self.input_tokens[self.reported], self.counts[self.reported]))
        return self.cached_prompt_tokens / prompt if prompt else 0.0

    def uncached_input_tokens(self) -> np.ndarray:
        """Each row's prompt less its reported cached tokens, at least one token still computed
        (as :func:`uncached_input_tokens`); a row that does not report is charged in full."""
        inputs = self.input_tokens
        return np.maximum(inputs - np.maximum(self.cached_tokens, 0), np.minimum(inputs, 1))
