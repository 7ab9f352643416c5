"""Words the tables draw from a document (the words documents carry are made below the API, in
:mod:`fleetopt.io.documents.words`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fleetopt.io.documents.plan import RateBasis
from fleetopt.io.documents.typed import from_document
from fleetopt.io.documents.words import duration_words


def basis_sentence(basis: RateBasis | Mapping[str, Any]) -> str:
    """What a plan sized for, with the log's peak/mean (``basis``: the document's ``rate_basis``).

    "sized for the peak 1-min window: 1,754 req/s, 1.754 × the mean 1,000 req/s (the log's peak
    window ran 1.784 × its mean; 0.0306 × of that was Poisson counting noise, ... left out)"
    """
    if isinstance(basis, Mapping):
        basis = from_document(RateBasis, dict(basis), "plan", "inputs.rate_basis")
    name, window = basis.basis, basis.window_s
    span = "" if window is None else f" {duration_words(window)} window"
    mean, sizing = basis.mean_rate_per_s, basis.sizing_rate_per_s
    ratio = basis.peak_to_mean_ratio
    peak = "" if ratio is None else f" (the log's peak/mean {ratio:.3g})"
    if name == "mean":
        return f"sized for the mean rate {mean:,.4g} req/s{peak}"
    what = "peak" if name == "peak" else f"{name[1:]}th-percentile"
    bursts = " and its bursts within windows" if basis.arrival_dispersion else ""
    noise, observed = basis.counting_noise_factor, basis.observed_factor
    if noise is not None and observed is not None and noise >= 0.0005:
        # how much of the log's basis over its mean was Poisson counting noise (left out)
        peak = (
            f" (the log's {what} window ran {observed:.4g} × its mean; {noise:.3g} × of that was Poisson "
            "counting noise, which does not grow with the traffic, and is left out)"
        )
    return (
        f"sized for the {what}{span}{bursts}: {sizing:,.4g} req/s, {basis.factor:.4g} × the mean "
        f"{mean:,.4g} req/s{peak}"
    )


#: What each dispatch policy is in the routers users run (the sources: fleetopt.core.simulate's
#: DISPATCH_POLICIES and docs/validation.md, "Dispatch policies").
DISPATCH_ROUTER_SETTINGS = {
    "round-robin": "request k of the pool to instance k mod n (vLLM production-stack router: --routing-logic "
    "roundrobin)",
    "least-loaded": "the instance with the fewest outstanding requests, running and waiting (llm-d: "
    "active-request-scorer; a least-request load balancer)",
    "least-kv": "the instance with the lowest KV-cache usage (llm-d: kv-cache-utilization-scorer)",
    "least-waiting": "the instance with the fewest waiting requests (llm-d: queue-scorer)",
    "least-tokens": "the instance with the fewest prompt tokens outstanding (llm-d: token-load-scorer)",
    "random": "an instance uniformly at random (a random or hash load balancer)",
    "pooled": "one queue per pool that any free instance takes from (the M/G/c assumption; no deployed "
    "router does this exactly)",
}


#: Prefix-affinity dispatch in the routers users run (vllm-project/production-stack
#: src/vllm_router/routers/routing_logic.py ``PrefixAwareRouter``, ``--routing-logic`` of its
#: parsers/parser.py; llm-d's inference scheduler: the ``prefix-cache-scorer`` and
#: ``precise-prefix-cache-scorer`` plugins).
PREFIX_AFFINITY_ROUTERS = (
    "vLLM production-stack router: --routing-logic prefixaware, which has no load bound; llm-d: "
    "prefix-cache-scorer or precise-prefix-cache-scorer, weighted with a load scorer such as queue-scorer"
)


def dispatch_router_setting(
    policy: str, caching: Any = None, hit_rates: Mapping[str, float] | None = None, load_bound: float = 1.0
) -> dict[str, Any]:
    """The router file's ``dispatch``: the policy the plan states and what it is in real routers.
    ``caching`` (the plan's :class:`~fleetopt.io.documents.prefix.PrefixCachingDocument`) with
    ``hit_rates``, the rate it charged each pool: stated, and with its ``affinity`` dispatch the
    policy is ``prefix-affinity`` with ``load_bound``, the bound the cache simulation applied."""
    setting: dict[str, Any] = {"policy": policy, "within_pool": DISPATCH_ROUTER_SETTINGS.get(policy, policy)}
    if caching is None:
        return setting
    if caching.dispatch == "affinity":
        setting = {
            "policy": "prefix-affinity",
            "within_pool": (
                "the instance holding the longest cached prefix of the prompt, among those that have taken "
                f"at most {load_bound:g} × their even share of the pool's requests; ties (a prompt cached "
                f"nowhere too) to the one that has taken the fewest ({PREFIX_AFFINITY_ROUTERS})"
            ),
            "load_bound": load_bound,
            "sized_for": policy,
        }
    setting["prefix_cache"] = {
        "mode": caching.mode,
        "dispatch": caching.dispatch,
        "block_size_tokens": caching.block_size_tokens,
        "hit_rates": dict(hit_rates or {}),
    }
    return setting


__all__ = ["basis_sentence", "dispatch_router_setting", "duration_words"]
