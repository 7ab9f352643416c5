"""``fleetopt export``: a plan as vLLM commands, a router file, Kubernetes (and KEDA) manifests or a
markdown summary — printed, or written into ``--output-dir`` (docs/deploy.md)."""

from __future__ import annotations

import enum
from pathlib import Path

import typer

from fleetopt.cli.common import PROFILES_DIR_OPTION
from fleetopt.errors import ValidationError


class ExportTarget(str, enum.Enum):
    """What ``--to`` exports."""

    vllm = "vllm"
    router = "router"
    litellm = "litellm"
    semantic_router = "semantic-router"
    kubernetes = "kubernetes"
    monitoring = "monitoring"
    markdown = "markdown"


TO_HELP = (
    "vllm (a `vllm serve` command per pool), router (the routing rule as YAML), litellm (a LiteLLM proxy "
    "config with fleetopt's routing plugin), semantic-router (a vLLM Semantic Router config, plans "
    "without compression), kubernetes (Deployments, Services, PodDisruptionBudgets, the weight cache), "
    "monitoring (a PodMonitor, the plan's alerts as a PrometheusRule, a Grafana dashboard) or markdown (a "
    "one-page summary); repeat for several."
)
OUTPUT_DIR_HELP = (
    "write the files into this folder (created if missing; each file atomically); default: print."
)
KEDA_HELP = "also KEDA ScaledObjects (cron floors from the plan's schedule, a queue trigger for bursts)."


def register(app: typer.Typer) -> None:
    """Add ``export`` to ``app``."""
    app.command("export")(export)


def export(
    plan: Path = typer.Option(
        ..., "--plan", help="A plan written by fleetopt plan --output (.yaml/.yml/.json)."
    ),
    to: list[ExportTarget] = typer.Option(..., "--to", help=TO_HELP, metavar="TARGET"),
    keda: bool = typer.Option(False, "--keda", help="With --to kubernetes: " + KEDA_HELP),
    output_dir: Path | None = typer.Option(
        None, "--output-dir", "-o", help=OUTPUT_DIR_HELP[0].upper() + OUTPUT_DIR_HELP[1:], file_okay=False
    ),
    model_id: str | None = typer.Option(
        None, "--model-id", help="The checkpoint to serve (default: the model profile's huggingface_id)."
    ),
    namespace: str | None = typer.Option(None, "--namespace", help="Kubernetes namespace of the manifests."),
    name_prefix: str = typer.Option(
        "fleetopt", "--name-prefix", help="Deployments, Services and ScaledObjects are named PREFIX-POOL."
    ),
    image: str | None = typer.Option(
        None,
        "--image",
        help="The vLLM container image (default: vllm/vllm-openai:vVERSION of --vllm-version).",
    ),
    vllm_version: str | None = typer.Option(
        None,
        "--vllm-version",
        help="The vLLM release the flags are written for: 0.11, 0.30, 0.31, 0.32 or 0.33 (default: the "
        "--image tag's, else 0.33.0).",
    ),
    allow_long_context: bool = typer.Option(
        False,
        "--allow-long-context",
        help="Serve a pool whose --max-model-len is beyond the model's context (sets "
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1); without it such a plan is an error.",
    ),
    weight_cache: str = typer.Option(
        "pvc",
        "--weight-cache",
        help="Where pods keep the Hugging Face cache: pvc (a ReadWriteMany claim shared by the fleet), an "
        "absolute host path (hostPath on each node), or none.",
    ),
    storage_class: str | None = typer.Option(
        None, "--storage-class", help="With --weight-cache pvc: the claim's StorageClass (ReadWriteMany)."
    ),
    prefetch_weights: bool = typer.Option(
        False, "--prefetch-weights", help="An init container that downloads the checkpoint into the cache."
    ),
    node_selector: list[str] = typer.Option(
        [],
        "--node-selector",
        metavar="KEY=VALUE",
        help="Node labels the pods need (default: the GPU profile's product label; 'none' for no selector).",
    ),
    toleration: list[str] = typer.Option(
        [],
        "--toleration",
        metavar="KEY[=VALUE]:EFFECT",
        help="Taints the pods tolerate (default: the GPU vendor's, e.g. nvidia.com/gpu:NoSchedule).",
    ),
    surge_gpus: int | None = typer.Option(
        None,
        "--surge-gpus",
        help="GPUs a rollout may start above the plan (default: one instance's); below one instance's, the "
        "rollout stops an instance before starting its successor.",
    ),
    drain_seconds: int | None = typer.Option(
        None,
        "--drain-seconds",
        help="Seconds a stopping pod gets to finish its streams (default: the pool's longest stream at the "
        "plan's TPOT, at most 600).",
    ),
    hf_token_secret: str | None = typer.Option(
        None, "--hf-token-secret", help="A Kubernetes Secret whose key 'token' the pods get as HF_TOKEN."
    ),
    prometheus_url: str | None = typer.Option(
        None, "--prometheus-url", help="With --keda: the Prometheus that scrapes vLLM's /metrics."
    ),
    burst_headroom: str = typer.Option(
        "25%",
        "--burst-headroom",
        help="With --keda: instances KEDA may add above the plan for bursts, e.g. 25% or 0.",
    ),
    histogram_buckets: bool | None = typer.Option(
        None,
        "--histogram-buckets/--no-histogram-buckets",
        help="Add --custom-histogram-buckets (pool boundaries and the SLO as bucket edges; default: when "
        "--vllm-version has the flag, 0.32 and later). An error with an older vLLM, which refuses it.",
    ),
    endpoint: list[str] = typer.Option(
        [],
        "--endpoint",
        metavar="POOL=URL",
        help="With --to litellm or semantic-router: a pool's vLLM server (default: its Kubernetes Service).",
    ),
    max_output_tokens: int | None = typer.Option(
        None,
        "--max-output-tokens",
        help="With --to semantic-router: the most max_tokens clients send (it routes on prompt tokens only).",
    ),
    profiles_dir: Path | None = PROFILES_DIR_OPTION,
) -> None:
    """Turn a plan into what deploys it: vLLM commands, router and gateway configs, Kubernetes and KEDA."""
    from fleetopt.io.plans import read_plan

    plan_file = read_plan(plan)
    write_export(
        plan_file, [t.value for t in to], keda=keda, output_dir=output_dir, inputs=[str(plan)],
        model_id=model_id, profiles_dir=profiles_dir,
        options=export_options(name_prefix, namespace, image, hf_token_secret, prometheus_url, burst_headroom,
                               histogram_buckets, vllm_version=vllm_version,
                               allow_long_context=allow_long_context, weight_cache=weight_cache,
                               storage_class=storage_class, prefetch_weights=prefetch_weights,
                               node_selector=node_selector, toleration=toleration, surge_gpus=surge_gpus,
                               drain_seconds=drain_seconds),
        plan_label=str(plan), gateway=_gateway_options(endpoint, max_output_tokens),
    )  # fmt: skip


def _gateway_options(endpoints: list[str], max_output_tokens: int | None):
    from fleetopt.render.gateway import GatewayOptions

    return GatewayOptions(tuple(endpoints), max_output_tokens)


def export_options(
    name_prefix: str = "fleetopt",
    namespace: str | None = None,
    image: str | None = None,
    hf_token_secret: str | None = None,
    prometheus_url: str | None = None,
    burst_headroom: str = "25%",
    histogram_buckets: bool | None = None,
    *,
    vllm_version: str | None = None,
    allow_long_context: bool = False,
    weight_cache: str = "pvc",
    storage_class: str | None = None,
    prefetch_weights: bool = False,
    node_selector: list[str] = (),
    toleration: list[str] = (),
    surge_gpus: int | None = None,
    drain_seconds: int | None = None,
):
    """The :class:`~fleetopt.render.deploy.ExportOptions` of the command line's strings. Without
    ``vllm_version``, an image tagged with a known vLLM release (``…:v0.11.0``) gives the version;
    without ``image``, the version gives the image."""
    import dataclasses

    from fleetopt.io.units import parse_fraction
    from fleetopt.render.deploy import (
        DEFAULT_VLLM_VERSION,
        VLLM_RELEASES,
        ExportOptions,
        image_vllm_version,
        vllm_image,
        vllm_series,
    )  # fmt: skip

    if vllm_version is None:
        tag = image_vllm_version(image or "")
        vllm_version = tag if tag and vllm_series(tag) in VLLM_RELEASES else DEFAULT_VLLM_VERSION
    if image is None:
        full = vllm_version.removeprefix("v")
        image = vllm_image(full if full.count(".") >= 2 else f"{full}.0")
    return dataclasses.replace(
        ExportOptions(),
        name_prefix=name_prefix,
        namespace=namespace,
        image=image,
        hf_token_secret=hf_token_secret,
        prometheus_url=prometheus_url or ExportOptions().prometheus_url,
        burst_headroom=parse_fraction(burst_headroom, field="--burst-headroom", allow_above_one=True),
        histogram_buckets=histogram_buckets,
        vllm_version=vllm_version,
        allow_long_context=allow_long_context,
        weight_cache=weight_cache,
        storage_class=storage_class,
        prefetch_weights=prefetch_weights,
        node_selector=_node_selector(node_selector),
        tolerations=tuple(_toleration(t) for t in toleration) or None,
        surge_gpus=surge_gpus,
        drain_s=drain_seconds,
    )


def _node_selector(values: list[str]) -> tuple[tuple[str, str], ...] | None:
    if not values:
        return None
    if list(values) == ["none"]:
        return ()
    pairs = []
    for value in values:
        key, equals, label = value.partition("=")
        if not equals:
            raise ValidationError(f"--node-selector: {value!r} is not KEY=VALUE (or 'none')")
        pairs.append((key, label))
    return tuple(pairs)


def _toleration(value: str) -> tuple[str, str | None, str]:
    key_value, colon, effect = value.rpartition(":")
    if not colon:
        raise ValidationError(f"--toleration: {value!r} is not KEY[=VALUE]:EFFECT")
    key, equals, label = key_value.partition("=")
    return key, (label if equals else None), effect


def write_export(
    plan_file,
    targets: list[str],
    *,
    keda: bool,
    output_dir: Path | None,
    inputs: list[str],
    options=None,
    model_id: str | None = None,
    profiles_dir: Path | None = None,
    plan_label: str | None = None,
    echo_written: bool = True,
    gateway=None,
) -> None:
    """Export and print the files, or write them into ``output_dir`` (never over an input file)."""
    from fleetopt.io.plans import refuse_overwriting_input, write_files_atomically
    from fleetopt.render.export import export_plan

    run = export_plan(
        plan_file, targets, options=options, keda=keda, profiles_dir=profiles_dir, model_id=model_id,
        plan_label=plan_label, gateway=gateway,
    )  # fmt: skip
    for name in run.files if output_dir is not None else ():
        message = f"--output-dir {output_dir}: {name} would replace the input file {{input}}"
        refuse_overwriting_input(output_dir / name, inputs, message)
    for note in run.notes:
        typer.echo(f"note: {note}", err=True)
    if output_dir is None:
        typer.echo(run.text(), nl=False)
        return
    for path in write_files_atomically(output_dir, run.files):
        if echo_written:
            typer.echo(f"wrote {path}")
