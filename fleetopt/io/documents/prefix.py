"""The plan's prefix-caching section (``prefix_caching``; only in plans made with
``--prefix-caching auto`` or ``hit-rate:F``): what share of each pool's prompt tokens the plan
assumed an engine finds in its prefix cache, where that figure came from, and the GPUs it saved."""

from typing import Literal

from fleetopt.io.documents.typed import Document, document, field


@document
class PoolCacheDocument(Document):
    """One pool's assumed prefix-cache hit rate.

    Attributes:
        hit_rate: cached prompt tokens over the pool's prompt tokens.
        source: ``given`` (``hit-rate:F``), ``simulated`` (the log's block hashes replayed through
            the pool's caches, docs/math.md "Prefix caching") or ``reported`` (the cached tokens
            the log itself reports: the hit rate of the production fleet where the log was taken,
            not of the fleet planned).
        instances: the instance count the caches were simulated at (null when given).
        cache_tokens_per_instance: KV left to the cache per instance, tokens (null when given).
    """

    hit_rate: float = field(minimum=0, maximum=1)
    source: Literal["given", "simulated", "reported"]
    instances: int | None = field(minimum=1)
    cache_tokens_per_instance: int | None = field(minimum=0)


@document
class PrefixCachingDocument(Document):
    """How the plan charged prompts: only their uncached tokens.

    Attributes:
        mode: ``auto`` (the log's evidence) or ``hit-rate`` (a given share).
        dispatch: the dispatch the simulated caches assumed, ``random`` or ``affinity`` (null when
            given or reported).
        block_size_tokens: tokens per hashed block of the log (null when given or reported).
        hit_rate: cached prompt tokens over all prompt tokens, fleet-wide.
        pools: each pool's hit rate, by pool name.
        gpus_without_caching: GPUs of the best fleet with ``--prefix-caching off``.
        gpus_saved: those GPUs minus this plan's.
        rounds: plans made until the caches' instance counts matched the fleet's (1 when given).
    """

    mode: Literal["auto", "hit-rate"]
    dispatch: Literal["random", "affinity"] | None
    block_size_tokens: int | None = field(minimum=1)
    hit_rate: float = field(minimum=0, maximum=1)
    pools: dict[str, PoolCacheDocument]
    gpus_without_caching: int = field(minimum=0)
    gpus_saved: int
    rounds: int = field(minimum=1)
