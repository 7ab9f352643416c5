"""``fleetopt export --to litellm`` and ``--to semantic-router``: the plan as a gateway's config.

- ``litellm.yaml``: the LiteLLM proxy config (``litellm --config litellm.yaml``): one model group
  per pool (``hosted_vllm`` deployments at the pools' endpoints), the fleetopt plugin as a
  callback with the plan's routing in ``callback_settings.fleetopt`` (read by
  :func:`fleetopt.io.gateway_config.gateway_config`), the served model name aliased to the last pool
  (what holds any request if the plugin is bypassed) and context-window fallbacks from each pool
  to the next larger one (a request the estimate sent too short is retried there, not lost);
- ``semantic-router.yaml``: vLLM Semantic Router's canonical v0.3 config (``vllm-sr config
  validate``): one provider model per pool, a ``context`` signal band per pool and a decision that
  sends the band to it. Its context signal counts prompt tokens only, so each band is the pool's
  context less the largest ``max_tokens`` clients send (``--max-output-tokens``), and it cannot
  compress: a plan that relies on Compress-and-Route is refused.

Everything goes through ``yaml.safe_dump``; names and endpoints are validated first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from fleetopt import __version__
from fleetopt.errors import ValidationError
from fleetopt.io.gateway_config import GATEWAY_KIND, GATEWAY_SCHEMA_VERSION, MODEL_NAME, gateway_config
from fleetopt.render.deploy import ExportContext, ExportOptions, pool_endpoint

#: The LiteLLM provider prefix of a vLLM OpenAI-compatible server.
LITELLM_VLLM_PROVIDER = "hosted_vllm"
#: The plugin LiteLLM loads (``litellm_settings.callbacks``).
LITELLM_CALLBACK = "fleetopt.gateway.litellm_plugin.handler"
#: vLLM Semantic Router's config schema version written.
SEMANTIC_ROUTER_VERSION = "v0.3"
SEMANTIC_ROUTER_PORT = 8899


def _safe_yaml(document: Mapping[str, Any], header: Sequence[str]) -> str:
    import yaml

    comments = "".join(f"# {line}\n" for line in header)
    return comments + yaml.safe_dump(
        dict(document), sort_keys=False, allow_unicode=True, default_flow_style=False
    )


def parse_endpoints(values: Sequence[str], pool_names: Sequence[str]) -> dict[str, str]:
    """``--endpoint POOL=URL`` values as {pool: URL}; each URL http(s)://host[:port][/path]."""
    endpoints: dict[str, str] = {}
    for value in values:
        pool, sep, url = value.partition("=")
        if not sep or pool not in pool_names:
            raise ValidationError(
                f"--endpoint: {value!r} must be POOL=URL with POOL one of {', '.join(pool_names)}"
            )
        parts = urlsplit(url)
        try:
            port_ok = parts.port is None or 0 < parts.port < 65536
        except ValueError:
            port_ok = False
        if (
            parts.scheme not in ("http", "https")
            or not parts.hostname
            or not port_ok
            or parts.query
            or parts.fragment
            or parts.username
            or any(c.isspace() or ord(c) < 32 for c in url)
        ):
            raise ValidationError(
                f"--endpoint {pool}: {url!r} is not an http(s) URL of a server (http://HOST[:PORT][/PATH])"
            )
        if pool in endpoints:
            raise ValidationError(f"--endpoint: {pool} is given twice")
        endpoints[pool] = url.rstrip("/")
    return endpoints


def _served_model(context: ExportContext) -> str:
    models = sorted({pool.engine.model_id for pool in context.pools})
    if len(models) != 1:
        raise ValidationError(
            f"the plan's pools serve different models ({', '.join(models)}); a gateway config needs one"
        )
    if not MODEL_NAME.match(models[0]):
        raise ValidationError(f"--model-id: {models[0]!r} is not a model id (letters, digits, . _ / : - @ +)")
    return models[0]


def _openai_base(url: str) -> str:
    """An OpenAI-compatible base URL: the endpoint with ``/v1`` (vLLM serves the API there)."""
    return url if url.endswith("/v1") else f"{url}/v1"


def litellm_document(
    context: ExportContext, options: ExportOptions, endpoints: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The LiteLLM proxy config (module docstring); ``endpoints`` override pools' Services."""
    endpoints = endpoints or {}
    model = _served_model(context)
    routing = context.routing
    pools = []
    model_list = []
    for pool in context.pools:
        group = pool.resource
        url = endpoints.get(pool.name) or pool_endpoint(pool, options)
        model_list.append(
            {
                "model_name": group,
                "litellm_params": {
                    "model": f"{LITELLM_VLLM_PROVIDER}/{model}",
                    "api_base": _openai_base(url),
                },
                "model_info": {"fleetopt_pool": pool.name},
            }
        )
        pools.append(
            {
                "name": pool.name,
                "model_group": group,
                "max_budget_tokens": pool.context_tokens,
                # the planned concurrency: every slot of every instance busy
                "max_in_flight": pool.instances * pool.slots_per_instance,
            }
        )
    settings: dict[str, Any] = {
        "kind": GATEWAY_KIND,
        "schema_version": GATEWAY_SCHEMA_VERSION,
        "plan": {"file": context.plan_label, "workload_sha256": context.workload_sha256},
        "model": model,
        "pools": pools,
    }
    if routing.compresses:
        settings["compress_and_route"] = {
            "gamma": routing.gamma,
            "compressibility": routing.compressibility,
            "max_cut_fraction": routing.max_cut_fraction,
        }
    gateway_config(settings, "litellm.yaml callback_settings.fleetopt")  # what the plugin will read
    groups = [p["model_group"] for p in pools]
    router_settings: dict[str, Any] = {"model_group_alias": {model: groups[-1]}}
    if len(groups) > 1:
        router_settings["context_window_fallbacks"] = [
            {group: [groups[k + 1]]} for k, group in enumerate(groups[:-1])
        ]
    return {
        "model_list": model_list,
        "router_settings": router_settings,
        # the plugin learns from the backends' usage; LiteLLM's own token counts need no tokenizer
        # download from the Hugging Face Hub (which an air-gapped cluster cannot reach)
        "litellm_settings": {"callbacks": [LITELLM_CALLBACK], "disable_hf_tokenizer_download": True},
        "callback_settings": {"fleetopt": settings},
        # LiteLLM refuses to start without a master key: it reads it from the environment
        "general_settings": {"master_key": "os.environ/LITELLM_MASTER_KEY"},
    }


def litellm_yaml(
    context: ExportContext, options: ExportOptions, endpoints: Mapping[str, str] | None = None
) -> str:
    document = litellm_document(context, options, endpoints)
    settings = document["callback_settings"]["fleetopt"]
    band = settings.get("compress_and_route")
    header = [
        f"fleetopt {__version__} export --to litellm: {context.plan_label}",
        "The LiteLLM proxy config of the plan (docs/gateway.md): pip install 'fleetopt[gateway]',",
        "then LITELLM_MASTER_KEY=sk-… litellm --config litellm.yaml. Clients ask for the served model;",
        "the plugin picks the pool by token budget (prompt + max_tokens; no max_tokens: the last pool)",
        "and spills a request to the next larger pool when its pool has every slot busy.",
        (
            f"Compress-and-Route: band requests are compressed with probability {band['compressibility']:g}, "
            f"at most {band['max_cut_fraction']:.0%} of a prompt cut, never code or structured data."
            if band
            else "No compression: the plan does not rely on Compress-and-Route."
        ),
    ]
    return _safe_yaml(document, header)


def _count(tokens: int) -> str:
    return str(int(tokens))


def semantic_router_document(
    context: ExportContext,
    options: ExportOptions,
    endpoints: Mapping[str, str] | None = None,
    max_output_tokens: int | None = None,
) -> dict[str, Any]:
    """vLLM Semantic Router's canonical config (module docstring)."""
    routing = context.routing
    if routing.compresses:
        raise ValidationError(
            f"--to semantic-router: the plan compresses prompts (Compress-and-Route, γ = {routing.gamma:g}, "
            f"p_c = {routing.compressibility:g}) and vLLM Semantic Router cannot: missing compression; "
            "export --to litellm, or re-plan with --compressibility 0"
        )
    pools = context.pools
    if len(pools) > 1 and max_output_tokens is None:
        raise ValidationError(
            "--to semantic-router: its context signal counts prompt tokens only, not max_tokens; missing "
            "--max-output-tokens N (the most output clients ask for): each pool then takes prompts up "
            "to its context less N"
        )
    reserve = int(max_output_tokens or 0)
    endpoints = endpoints or {}
    model = _served_model(context)
    models, cards, signals, decisions = [], [], [], []
    previous = 0
    for k, pool in enumerate(pools):
        url = urlsplit(endpoints.get(pool.name) or pool_endpoint(pool, options))
        host = url.hostname if url.port is None else f"{url.hostname}:{url.port}"
        name = pool.resource
        models.append(
            {
                "name": name,
                "provider_model_id": model,
                "backend_refs": [
                    {
                        "name": pool.name,
                        "provider": "vllm",
                        "endpoint": host,
                        "protocol": url.scheme,
                        "weight": 100,
                    }
                ],
            }
        )
        cards.append({"name": name})
        last = k == len(pools) - 1
        top = pool.context_tokens - reserve
        if top <= previous:
            raise ValidationError(
                f"--max-output-tokens {reserve:,}: pool {pool.name}'s context {pool.context_tokens:,} leaves "
                f"no prompts above the previous pool's {previous:,}"
            )
        rule: dict[str, Any] = {"name": name, "description": f"prompts for pool {pool.name}"}
        if previous > 0:
            rule["min_tokens"] = _count(previous + 1)
        if not last:
            rule["max_tokens"] = _count(top)
        signals.append(rule)
        decisions.append(
            {
                "name": name,
                "description": f"fleetopt pool {pool.name}: prompt tokens in ({previous:,}, "
                + (f"{top:,}]" if not last else "∞)"),
                "priority": 100 + 10 * (len(pools) - k),
                "rules": {"operator": "AND", "conditions": [{"type": "context", "name": name}]},
                "modelRefs": [{"model": name, "use_reasoning": False}],
            }
        )
        previous = top
    return {
        "version": SEMANTIC_ROUTER_VERSION,
        "listeners": [
            {
                "name": f"http-{SEMANTIC_ROUTER_PORT}",
                "address": "0.0.0.0",
                "port": SEMANTIC_ROUTER_PORT,
                "timeout": "600s",
            }
        ],
        "providers": {"defaults": {"model": models[-1]["name"]}, "models": models},
        "routing": {"modelCards": cards, "signals": {"context": signals}, "decisions": decisions},
    }


def semantic_router_yaml(
    context: ExportContext,
    options: ExportOptions,
    endpoints: Mapping[str, str] | None = None,
    max_output_tokens: int | None = None,
) -> str:
    document = semantic_router_document(context, options, endpoints, max_output_tokens)
    header = [
        f"fleetopt {__version__} export --to semantic-router: {context.plan_label}",
        "vLLM Semantic Router's config (canonical v0.3; check it with vllm-sr config validate).",
        "Its context signal counts prompt tokens only: each pool takes prompts up to its context less",
        f"--max-output-tokens {int(max_output_tokens or 0):,}; clients must not ask for more output.",
    ]
    return _safe_yaml(document, header)


@dataclass(frozen=True)
class GatewayOptions:
    """``fleetopt export``'s gateway options: ``--endpoint POOL=URL`` values and ``--max-output-tokens``."""

    endpoints: tuple[str, ...] = ()
    max_output_tokens: int | None = None


#: The gateway targets and the file each writes.
GATEWAY_FILES = {"litellm": "litellm.yaml", "semantic-router": "semantic-router.yaml"}


def gateway_file(target: str, context: ExportContext, options: ExportOptions, gateway: GatewayOptions) -> str:
    """The text of a gateway target's file (``GATEWAY_FILES``)."""
    endpoints = parse_endpoints(gateway.endpoints, [p.name for p in context.pools])
    if gateway.max_output_tokens is not None and gateway.max_output_tokens < 1:
        raise ValidationError(f"--max-output-tokens: {gateway.max_output_tokens} must be a whole number ≥ 1")
    if target == "litellm":
        return litellm_yaml(context, options, endpoints)
    return semantic_router_yaml(context, options, endpoints, gateway.max_output_tokens)


def gateway_effect_document(effect: Any, plan_label: str) -> dict[str, Any]:
    """``fleetopt simulate --gateway`` as data: counts and each pool's share and P99, exact vs gateway."""
    counts = effect.counts
    n = max(1, counts.requests)
    pools = {}
    for k, name in enumerate(effect.pool_names):
        exact, noisy = effect.exact.pools[k], effect.gateway.pools[k]
        pools[name] = {
            "share_exact": exact.routed_fraction.mean,
            "share_gateway": noisy.routed_fraction.mean,
            "p99_ttft_exact_s": exact.ttft_p99_s.mean,
            "p99_ttft_gateway_s": noisy.ttft_p99_s.mean,
            "p99_ttft_gateway_ci95_s": noisy.ttft_p99_s.ci95_half_width,
        }
    model = effect.model
    return {
        "kind": "fleetopt-gateway-simulation",
        "plan": plan_label,
        "bytes_model": {
            "category_shares": dict(model.category_shares),
            "bytes_per_token": dict(model.bytes_per_token),
            "ratio_cv": model.ratio_cv,
            "warm": model.warm,
        },
        "requests": counts.requests,
        "misrouted": counts.misrouted,
        "misrouted_fraction": counts.misrouted / n,
        "rejected": counts.rejected,
        "spilled": counts.spilled,
        "sent_larger": counts.sent_larger,
        "compressed": counts.compressed,
        "by_category": counts.by_category,
        "pools": pools,
    }


def gateway_effect_text(data: Mapping[str, Any]) -> str:
    """``gateway_effect_document`` in words and a small table."""
    n = max(1, data["requests"])
    lines = [
        f"Through a gateway estimating prompt tokens from bytes ({data['plan']}, "
        f"{data['requests']:,} requests):",
        f"  misrouted (sent to a pool too short, retried on the next): {data['misrouted']:,} "
        f"({data['misrouted'] / n:.2%}); sent to a larger pool than needed: {data['sent_larger']:,} "
        f"({data['sent_larger'] / n:.2%}); spilled: {data['spilled']:,}; rejected (longer than every pool): "
        f"{data['rejected']:,}; compressed: {data['compressed']:,}",
        f"  {'pool':<12} {'share exact':>12} {'via gateway':>12} {'P99 TTFT exact':>15} {'via gateway':>18}",
    ]
    for name, pool in data["pools"].items():
        lines.append(
            f"  {name:<12} {pool['share_exact']:12.2%} {pool['share_gateway']:12.2%} "
            f"{pool['p99_ttft_exact_s'] * 1e3:12.1f} ms {pool['p99_ttft_gateway_s'] * 1e3:9.1f} ± "
            f"{pool['p99_ttft_gateway_ci95_s'] * 1e3:.1f} ms"
        )
    return "\n".join(lines)
