"""The router file (``kind: fleetopt-router``, schema version 1): what ``fleetopt export --to
router`` writes (``router.yaml``) and :func:`fleetopt.io.deploy.read_router` reads back, as typed
dataclasses — the one definition of its fields (``fleetopt schema router`` prints its JSON Schema;
docs/deploy.md explains the rule). Besides the type checks here, the reader checks that budgets
increase and that the C&R band agrees with γ.

Written by ``render/deploy.py``'s ``router_document``; hand-written files need only the fields
without a default.
"""

from typing import Literal

from fleetopt.io.documents.typed import Document, document, field

ROUTER_KIND = "fleetopt-router"
#: Version 1: pools with max_budget_tokens and endpoints, one C&R band at the first boundary.
ROUTER_SCHEMA_VERSION = 1
#: What a request without ``max_tokens`` gets: the last pool (the only one that holds any output).
WITHOUT_MAX_TOKENS = "last_pool"


@document
class RouterPlan(Document):
    """The plan the file was exported from.

    Attributes:
        file: the plan file (or how the plan was made).
        workload_sha256: the planned workload's hash (its fingerprint's ``sha256``).
    """

    file: str | None = field(since=None)
    workload_sha256: str | None = field(since=None)


@document
class RouterBudget(Document):
    """What a request's token budget is.

    Attributes:
        tokens: ``prompt_tokens + max_tokens``.
        prompt_tokens: how the prompt is counted.
        without_max_tokens: a request without ``max_tokens`` goes to the last pool.
    """

    tokens: str | None = field(since=None)
    prompt_tokens: str | None = field(since=None)
    without_max_tokens: Literal["last_pool"]


@document
class RouterPoolDocument(Document):
    """One pool: requests whose budget is at most ``max_budget_tokens`` (and above the previous
    pool's) go to it.

    Attributes:
        name: the pool's name.
        max_budget_tokens: the largest budget it serves, tokens (its vLLM ``--max-model-len``).
        endpoint: its address (a Kubernetes Service), or null.
        model: the model it serves (``--served-model-name``), or null.
        instances: its planned instances, or null.
    """

    name: str = field(non_empty=True)
    max_budget_tokens: int = field(minimum=1)
    endpoint: str | None = field(since=None)
    model: str | None = field(since=None)
    instances: int | None = field(since=None, minimum=0)


@document
class CompressAndRoute(Document):
    """Compress-and-Route (FleetOpt §5.1): a request with B < L ≤ ⌊γB⌋, ``max_tokens`` < B and a cut
    L − B of at most ``max_cut_fraction`` of its prompt is, with probability ``compressibility``,
    compressed to a prompt of B − ``max_tokens`` tokens and served by ``pool``.

    Attributes:
        pool: the first pool (B = its ``max_budget_tokens``).
        above_budget_tokens: B, tokens.
        up_to_budget_tokens: ⌊γ·B⌋, tokens.
        gamma: γ.
        compressibility: p_c, the share of band requests compressed.
        max_cut_fraction: the largest share of a prompt the gateway may cut, the plan's cap
            (files written before it read as 1, the papers' rule).
        only_if_max_tokens_below: B: a request asking for more output cannot be compressed into the pool.
        compress_prompt_to_tokens: the compressed prompt's length, ``B - max_tokens``.
    """

    pool: str = field(non_empty=True)
    above_budget_tokens: int = field(minimum=1)
    up_to_budget_tokens: int = field(minimum=1)
    gamma: float = field(minimum=1)
    compressibility: float = field(minimum=0, maximum=1)
    max_cut_fraction: float = field(exclusive_minimum=0, maximum=1, since=1.0)
    only_if_max_tokens_below: int = field(minimum=1)
    compress_prompt_to_tokens: str | None = field(since=None)


@document
class RouterPrefixCache(Document):
    """The prefix-cache hit rates the plan charged (plans made with ``--prefix-caching auto`` or
    ``hit-rate:F``; the plan's ``prefix_caching`` section): each pool's vLLM runs with
    ``--enable-prefix-caching`` where its rate is above 0.

    Attributes:
        mode: ``auto`` (simulated from the log's block hashes) or ``hit-rate`` (given).
        dispatch: the dispatch the simulated caches assumed, ``affinity`` or ``random`` (null when given).
        block_size_tokens: tokens per hashed block of the log (null when given).
        hit_rates: each pool's assumed share of prompt tokens found in its cache, by pool name
            (vLLM's ``vllm:prefix_cache_hits_total`` over ``vllm:prefix_cache_queries_total``).
    """

    mode: Literal["auto", "hit-rate"]
    dispatch: Literal["random", "affinity"] | None
    block_size_tokens: int | None = field(minimum=1)
    hit_rates: dict[str, float] = field(minimum=0, maximum=1)


@document
class RouterDispatch(Document):
    """How a pool's router picks one of its instances: the policy the plan was sized (and refined) for.

    Attributes:
        policy: the plan's ``dispatch`` (``least-loaded``, ``round-robin``, ``least-waiting``,
            ``least-kv``, ``least-tokens``, ``random`` or ``pooled``), or ``prefix-affinity`` when
            the plan's cache hit rates assumed it (``--prefix-dispatch affinity``).
        within_pool: what that is, and its setting in the routers that have it, in words.
        load_bound: with ``prefix-affinity``: b, an instance takes at most b × its even share of
            the pool's requests.
        sized_for: with ``prefix-affinity``: the plan's ``dispatch``, what its queues were sized
            (and refined) for.
        prefix_cache: the hit rates the plan charged (absent in plans without prefix caching).
    """

    policy: str = field(non_empty=True)
    within_pool: str
    load_bound: float | None = field(default=None, omit_if_none=True, minimum=1)
    sized_for: str | None = field(default=None, omit_if_none=True)
    prefix_cache: RouterPrefixCache | None = field(default=None, omit_if_none=True)


@document
class RouterDocument(Document):
    """Which pool serves each request of a planned fleet (``fleetopt export --to router``).

    Attributes:
        kind: always ``fleetopt-router``.
        schema_version: this file's version.
        fleetopt_version: the fleetopt that wrote it.
        plan: the plan it was exported from.
        model: the model every pool serves (null when they differ).
        budget: what a request's token budget is.
        pools: the pools in order of their budgets; a request goes to the first whose
            ``max_budget_tokens`` holds its budget.
        longer_than_every_pool: ``reject``: no pool's context holds such a request.
        compress_and_route: the C&R band (absent when C&R can compress nothing).
        dispatch: how each pool picks an instance (absent in files before it).
    """

    kind: Literal["fleetopt-router"]
    schema_version: Literal[1]
    fleetopt_version: str | None = field(since=None)
    plan: RouterPlan | None = field(since=None)
    model: str | None = field(since=None)
    budget: RouterBudget
    pools: list[RouterPoolDocument] = field(min_items=1)
    longer_than_every_pool: Literal["reject"] = field(since="reject")
    compress_and_route: CompressAndRoute | None = field(default=None, omit_if_none=True)
    dispatch: RouterDispatch | None = field(default=None, omit_if_none=True)
