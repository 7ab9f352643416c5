"""`fleetopt kv`: KV bytes per token and slots per instance for a model on a GPU (pool-routing Eq. 1–2).

Parse → :func:`fleetopt.api.kv_report` → :func:`fleetopt.render.kv.draw_kv`."""

from __future__ import annotations

from pathlib import Path

import typer

from fleetopt.cli.common import FORMAT_OPTION, PROFILES_DIR_OPTION, profiles_dirs
from fleetopt.defaults import (
    DEFAULT_ACTIVATION_RESERVE_GB,
    DEFAULT_KV_BLOCK_TOKENS,
    DEFAULT_MEMORY_UTILIZATION,
)
from fleetopt.render.output import OutputFormat


def register(app: typer.Typer) -> None:
    """Add ``fleetopt kv`` to ``app``."""

    @app.command("kv")
    def kv_command(
        context: str = typer.Option(
            ..., "--context", "-c", help="Context windows in tokens, comma-separated, e.g. 8192,32768."
        ),
        model: str | None = typer.Option(None, "--model", "-m", help="Model profile name or YAML path."),
        gpu: str | None = typer.Option(None, "--gpu", "-g", help="GPU profile name or YAML path."),
        tp: int | None = typer.Option(
            None, "--tp", min=1, help="Tensor-parallel size = GPUs per instance [1]."
        ),
        serving: str | None = typer.Option(
            None,
            "--serving",
            "-s",
            help="Take model, GPU, TP, utilization and reserves from a serving profile.",
        ),
        memory_utilization: str | None = typer.Option(
            None,
            "--memory-utilization",
            help=f"Fraction of GPU memory the engine may use: 0.9 or 90% [{DEFAULT_MEMORY_UTILIZATION:g}].",
        ),
        activation_reserve_gb: float | None = typer.Option(
            None,
            "--activation-reserve-gb",
            min=0.0,
            help=f"GB (10^9 bytes) per GPU held for activations [{DEFAULT_ACTIVATION_RESERVE_GB:g}].",
        ),
        weight_dtype: str | None = typer.Option(
            None, "--weight-dtype", help="Override the model's weight dtype."
        ),
        kv_dtype: str | None = typer.Option(None, "--kv-dtype", help="Override the model's KV-cache dtype."),
        kv_head_layout: str | None = typer.Option(
            None,
            "--kv-head-layout",
            help="GQA with KV heads < TP: 'even' splits the cache evenly (the paper) or "
            "'replicated' copies heads as vLLM does [even].",
        ),
        block_tokens: int | None = typer.Option(
            None, "--block-tokens", min=1, help=f"KV block size in tokens [{DEFAULT_KV_BLOCK_TOKENS}]."
        ),
        profiles_dir: Path | None = PROFILES_DIR_OPTION,
        fmt: OutputFormat = FORMAT_OPTION,
    ) -> None:
        """KV bytes per token, KV memory per GPU and slots per instance at each context window."""
        from fleetopt.api import kv_report
        from fleetopt.core import kv
        from fleetopt.errors import ValidationError
        from fleetopt.io.units import parse_fraction, parse_number_list
        from fleetopt.render.kv import draw_kv
        from fleetopt.render.output import emit

        contexts = [int(c) for c in parse_number_list(context, field="--context", integer=True)]
        for ctx in contexts:
            if ctx < 1:
                raise ValidationError(f"--context: {ctx} is not allowed; each context must be ≥ 1 token")
        util = None
        if memory_utilization is not None:
            util = parse_fraction(memory_utilization, field="--memory-utilization")
            if util <= 0:
                raise ValidationError(f"--memory-utilization: {memory_utilization!r} must be in (0, 1]")
        for flag, value, allowed in (
            ("--weight-dtype", weight_dtype, kv.WEIGHT_DTYPES),
            ("--kv-dtype", kv_dtype, kv.KV_DTYPES),
            ("--kv-head-layout", kv_head_layout, kv.KV_HEAD_LAYOUTS),
        ):
            if value is not None and value not in allowed:
                raise ValidationError(f"{flag}: {value!r} is not allowed; use one of {', '.join(allowed)}")
        data = kv_report(
            model_name=model,
            gpu_name=gpu,
            serving_name=serving,
            tensor_parallel=tp,
            contexts_tokens=contexts,
            memory_utilization=util,
            activation_reserve_gb=activation_reserve_gb,
            weight_dtype=weight_dtype,
            kv_dtype=kv_dtype,
            kv_head_layout=kv_head_layout,
            block_tokens=block_tokens,
            dirs=profiles_dirs(profiles_dir),
        )
        emit(data, fmt, draw_kv)
