"""``fleetopt export``: a plan as deployment files — what each ``--to`` target writes, composed
from ``render/deploy.py``'s writers (a renderer: it turns a plan read by
:func:`fleetopt.io.plans.read_plan` into text; the API below it imports no renderer)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetopt import __version__
from fleetopt.errors import ValidationError, excerpt
from fleetopt.io.data import profile_search_path
from fleetopt.io.names import (
    HOST_PATH,
    HTTP_URL,
    IMAGE,
    SUBDOMAIN,
    check_label,
    check_option_text,
    check_resource_name,
)

# -- export: a plan as vLLM commands, a router file, Kubernetes and KEDA manifests, markdown -----

#: ``fleetopt export --to`` targets, in the order their files are written and printed.
EXPORT_TARGETS = ("vllm", "router", "litellm", "semantic-router", "kubernetes", "monitoring", "markdown")


@dataclass(frozen=True)
class ExportRun:
    """A plan exported (``fleetopt export``): file name → text, in target order, and what the
    operator should know (e.g. a ScaledObject floor without a schedule)."""

    files: dict[str, str]
    notes: list[str]

    def text(self) -> str:
        """Every file, one after the other (what ``fleetopt export`` prints without --output-dir)."""
        return "\n".join(self.files.values())


def export_context(
    plan_file: Any, *, profiles_dir: Path | None = None, model_id: str | None = None,
    name_prefix: str = "fleetopt", plan_label: str | None = None,
) -> Any:  # fmt: skip
    """Everything the export targets need from a plan (:class:`~fleetopt.io.plans.PlanFile`): its pools
    with the vLLM settings of their serving profiles (looked up by name on the profile path)."""
    from fleetopt.io.deploy import engine_settings
    from fleetopt.render.deploy import DeployPool, ExportContext

    dirs = profile_search_path(profiles_dir)
    pools_doc = plan_file.document["best"]["pools"]
    caching = None if plan_file.plan_document is None else plan_file.plan_document.prefix_caching
    cached = {} if caching is None else caching.pools
    settings: dict[str, Any] = {}
    pools = []
    for pool in plan_file.fleet.pools:
        hardware = pool.hardware
        if hardware.serving_name not in settings:
            settings[hardware.serving_name] = engine_settings(
                hardware, dirs, model_id=model_id, source=plan_file.source
            )
        document = pools_doc[pool.name]

        def number(key: str, document: dict[str, Any] = document) -> float | None:
            value = document.get(key)
            return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None

        pools.append(
            DeployPool(
                name=pool.name,
                resource=f"{name_prefix}-{pool.name}",
                instances=pool.instances,
                gpus_per_instance=hardware.gpus_per_instance,
                context_tokens=pool.context_tokens,
                slots_per_instance=pool.slots_per_instance,
                engine=settings[hardware.serving_name],
                serving_profile=hardware.serving_name,
                gpu=hardware.gpu_name,
                arrival_rate_per_s=number("arrival_rate_per_s"),
                mean_service_s=number("mean_service_s"),
                p99_ttft_s=number("p99_ttft_s"),
                p99_wait_s=number("p99_wait_s"),
                iteration_s=number("iteration_s"),
                tpot_limit_s=number("tpot_limit_s"),
                spare_instances=int(number("spare_instances") or 0),
                prefix_cache_hit_rate=cached[pool.name].hit_rate if pool.name in cached else None,
            )
        )
    return ExportContext(
        plan_label=plan_label or plan_file.source.removeprefix("plan "),
        ttft_slo_s=plan_file.options.ttft_slo_s,
        routing=plan_file.fleet.routing,
        pools=tuple(pools),
        workload_sha256=plan_file.summary.digest,
        schedule=plan_file.schedule,
        dispatch=None if plan_file.plan_document is None else plan_file.plan_document.dispatch,
        prefix_caching=caching,
    )


def export_plan(
    plan_file: Any,
    targets: Sequence[str],
    *,
    options: Any = None,
    keda: bool = False,
    profiles_dir: Path | None = None,
    model_id: str | None = None,
    plan_label: str | None = None,
    gateway: Any = None,
) -> ExportRun:
    """The files of each export target for a plan read by :func:`fleetopt.io.plans.read_plan` (or
    built by ``fleetopt plan``): ``vllm-<pool>.sh``, ``router.yaml``, ``kubernetes.yaml`` (and
    ``keda.yaml`` with ``keda``), ``plan.md``. ``options``: a
    :class:`fleetopt.render.deploy.ExportOptions`; ``gateway``: a
    :class:`fleetopt.render.gateway.GatewayOptions` (``litellm.yaml``, ``semantic-router.yaml``)."""
    from fleetopt.render import deploy

    options = options or deploy.ExportOptions()
    unknown = [t for t in targets if t not in EXPORT_TARGETS]
    if unknown or not targets:
        raise ValidationError(
            f"--to: {', '.join(unknown) or 'nothing'} is not a target; use {', '.join(EXPORT_TARGETS)}"
        )
    if keda and "kubernetes" not in targets:
        raise ValidationError("--keda: ScaledObjects scale the Kubernetes Deployments; add --to kubernetes")
    if not (0 <= options.burst_headroom <= 10):
        raise ValidationError(f"--burst-headroom: {options.burst_headroom:.0%} must be between 0% and 1000%")
    check_resource_name(options.name_prefix, "--name-prefix", 63 - len("-pool-8"))
    if options.namespace is not None:
        check_resource_name(options.namespace, "--namespace", 63)
    check_vllm_options(options)
    check_option_text(
        options.image, "--image", IMAGE, 255, "a container image reference such as vllm/vllm-openai:v0.33.0"
    )
    if options.hf_token_secret is not None:
        check_option_text(
            options.hf_token_secret, "--hf-token-secret", SUBDOMAIN, 253,
            "a Kubernetes Secret name (lowercase letters, digits, '-' and '.')",
        )  # fmt: skip
    check_option_text(
        options.prometheus_url, "--prometheus-url", HTTP_URL, 2048,
        "an http:// or https:// URL without spaces or quotes",
    )  # fmt: skip
    label = plan_label or plan_file.source.removeprefix("plan ")
    files: dict[str, str] = {}
    notes: list[str] = []
    context = None
    if any(t != "markdown" for t in targets):
        context = export_context(
            plan_file, profiles_dir=profiles_dir, model_id=model_id, name_prefix=options.name_prefix,
            plan_label=label,
        )  # fmt: skip
        if {"vllm", "kubernetes"} & set(targets):  # the targets that start vLLM
            check_long_context(context, options, plan_file.source)
    for target in EXPORT_TARGETS:
        if target not in targets:
            continue
        if target == "vllm":
            for pool in context.pools:
                files[f"vllm-{pool.name}.sh"] = deploy.vllm_script(context, pool, options)
        elif target == "router":
            files["router.yaml"] = deploy.router_yaml(context, options)
        elif target in ("litellm", "semantic-router"):
            from fleetopt.render import gateway as gateway_render

            files[gateway_render.GATEWAY_FILES[target]] = gateway_render.gateway_file(
                target, context, options, gateway or gateway_render.GatewayOptions()
            )
        elif target == "kubernetes":
            header = [
                f"fleetopt {__version__} export --to kubernetes: {label} (vLLM {options.vllm_version})",
                "Per pool a Deployment (replicas = the planned instances, GPUs = tensor parallelism), a",
                "Service and a PodDisruptionBudget, and the weight cache's PersistentVolumeClaim;",
                "validated against the Kubernetes 1.29-1.32 schemas (docs/deploy.md#kubernetes).",
            ] + [
                f"note: {pool.name}: {note}"
                for pool in context.pools
                for note in deploy.pool_notes(context, pool)
            ]
            files["kubernetes.yaml"] = deploy.manifests_yaml(
                deploy.kubernetes_manifests(context, options), header
            )
            amd = sorted({p.gpu for p in context.pools if deploy.gpu_resource(p.gpu) == "amd.com/gpu"})
            if amd and options.image == deploy.DEFAULT_VLLM_IMAGE:
                notes.append(
                    f"{', '.join(amd)}: {deploy.DEFAULT_VLLM_IMAGE} is vLLM's CUDA image; give a ROCm "
                    "build of vLLM with --image"
                )
            if keda:
                try:
                    scaled, keda_notes = deploy.keda_manifests(context, options)
                except ValueError as exc:
                    raise ValidationError(f"{plan_file.source}: schedule: {exc}") from None
                header = [
                    f"fleetopt export --to kubernetes --keda: {label}",
                    "KEDA ScaledObjects (keda.sh/v1alpha1): cron floors from the plan's schedule, a",
                    "vllm:num_requests_waiting trigger for bursts (docs/deploy.md#autoscaling-with-keda).",
                ] + [f"note: {note}" for note in keda_notes]
                files["keda.yaml"] = deploy.manifests_yaml(scaled, header)
                notes += keda_notes
        elif target == "monitoring":
            from fleetopt.render import monitoring

            cap = plan_file.options.max_utilization
            header = [
                f"fleetopt {__version__} export --to monitoring: {label}",
                "A PodMonitor scraping every vLLM pod and a PrometheusRule alerting on the plan's own",
                "numbers (prometheus-operator monitoring.coreos.com/v1; docs/deploy.md#monitoring).",
            ]
            files["monitoring.yaml"] = deploy.manifests_yaml(
                monitoring.monitoring_manifests(context, options, cap), header
            )
            files["grafana-dashboard.json"] = monitoring.dashboard_json(context, options, cap)
            if ttft_edge_note := _ttft_edge_note(context, options):
                notes.append(ttft_edge_note)
        else:
            try:
                files["plan.md"] = deploy.plan_markdown(plan_file.document, label)
            except (KeyError, TypeError, AttributeError) as exc:
                # the summary echoes parts of the document that read_plan does not need to check
                raise ValidationError(
                    f"plan {label}: the markdown summary needs a field the plan lacks or mangles "
                    f"({type(exc).__name__}: {exc}); re-plan with fleetopt plan --output"
                ) from None
    if context is not None and "litellm" not in targets and context.routing.compresses:
        notes.append(
            f"{label} relies on prompt compression (Compress-and-Route, γ = {context.routing.gamma:g}, "
            f"p_c = {context.routing.compressibility:g}), which only --to litellm deploys: behind any "
            "other gateway its band requests reach a pool sized without them (re-plan with "
            "--compressibility 0 for a fleet that needs no compression)"
        )
    caching = context.prefix_caching if context is not None else None
    if caching is not None and caching.dispatch == "affinity":
        from fleetopt.render.words import PREFIX_AFFINITY_ROUTERS

        notes.append(
            f"the prefix-cache hit rates of {label} assume prefix-affinity dispatch within each pool "
            f"(--prefix-dispatch affinity): route each pool's requests to its instances with a "
            f"prefix-aware router ({PREFIX_AFFINITY_ROUTERS}; router.yaml's dispatch). A Kubernetes "
            "Service or a cache-oblivious balancer hits less (plan with --prefix-dispatch random for "
            "that fleet)"
        )
    return ExportRun(files=files, notes=notes)


def check_vllm_options(options: Any) -> None:
    """Refuse a vLLM version export has no flags for, an image whose tag names another release, and
    a flag the release cannot parse."""
    from fleetopt.render import deploy

    supported = ", ".join(deploy.VLLM_RELEASES)
    try:
        series = deploy.vllm_series(options.vllm_version)
    except ValueError:
        series = None
    if series not in deploy.VLLM_RELEASES:
        raise ValidationError(
            f"--vllm-version: {excerpt(options.vllm_version)} is not a vLLM release export knows the flags "
            f"of; use one of {supported} (a patch release such as 0.33.1 is its series')"
        )
    tag = deploy.image_vllm_version(options.image)
    tag_series = tag and deploy.vllm_series(tag)
    if tag_series not in (None, series) and options.image.split(":")[0].endswith("vllm-openai"):
        raise ValidationError(
            f"--image {excerpt(options.image)} is vLLM {tag_series}, but the flags are for vLLM {series} "
            f"(--vllm-version {options.vllm_version}): give the image's version with --vllm-version"
        )
    if options.histogram_buckets and not options.release.custom_histogram_buckets:
        raise ValidationError(
            f"--histogram-buckets: vLLM {series} has no --custom-histogram-buckets (it is in 0.32 and later) "
            "and refuses to start with it; use --vllm-version 0.32 or later, or leave it out"
        )
    for value, option in ((options.surge_gpus, "--surge-gpus"), (options.drain_s, "--drain-seconds")):
        if value is not None and not (0 <= value <= 100_000):
            raise ValidationError(f"{option}: {value} must be between 0 and 100,000")
    cache = options.weight_cache
    if cache not in ("pvc", "none") and not (cache.startswith("/") and HOST_PATH.fullmatch(cache)):
        raise ValidationError(
            f"--weight-cache: {excerpt(cache)} is not allowed; expected pvc, none or an absolute host path "
            "of letters, digits, '/', '.', '_' and '-'"
        )
    if options.storage_class is not None:
        check_option_text(
            options.storage_class,
            "--storage-class",
            SUBDOMAIN,
            253,
            "a StorageClass name (DNS-1123 subdomain)",
        )
    for key, value in options.node_selector or ():
        check_label(key, value, "--node-selector")
    for key, value, effect in options.tolerations or ():
        check_label(key, value or "", "--toleration")
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ValidationError(
                f"--toleration: effect {excerpt(effect)} is not one of NoSchedule, PreferNoSchedule, "
                "NoExecute"
            )


def check_long_context(context: Any, options: Any, source: str) -> None:
    """A pool whose --max-model-len exceeds its model's context is an error unless allowed."""
    from fleetopt.render import deploy

    for pool in context.pools:
        if deploy.long_context(pool) and not options.allow_long_context:
            raise ValidationError(
                f"{source}: the {pool.name} pool's --max-model-len {pool.context_tokens:,} is beyond its "
                f"model's {pool.engine.max_context_tokens:,}-token context: vLLM refuses it; re-plan with "
                f"--long-context {pool.engine.max_context_tokens}, or pass --allow-long-context to set "
                f"{deploy.LONG_CONTEXT_ENV}=1 (the model then runs past what it was trained on)"
            )


def _ttft_edge_note(context: Any, options: Any) -> str | None:
    from fleetopt.render import deploy

    edge = deploy.ttft_slo_edge(context, options)
    if edge == context.ttft_slo_s:
        return None
    return (
        f"monitoring: vLLM {options.release.series}'s TTFT histogram has no edge at the "
        f"{context.ttft_slo_s * 1e3:g} ms SLO, so the TTFT alert counts at its next edge, {edge:g} s "
        "(vLLM 0.32 and later: --histogram-buckets adds the SLO as an edge)"
    )
