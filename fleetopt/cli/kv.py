"""`fleetopt kv`: KV bytes per token and slots per instance for a model on a GPU (pool-routing Eq. 1–2)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from fleetopt.cli.common import FORMAT_OPTION, PROFILES_DIR_OPTION, profiles_dirs
from fleetopt.render.output import OutputFormat

DEFAULT_MEMORY_UTILIZATION = 0.9  # vLLM's default gpu_memory_utilization; pool-routing §4.7
DEFAULT_ACTIVATION_RESERVE_GB = 10.0  # pool-routing §4.7 (per GPU)
DEFAULT_KV_BLOCK_TOKENS = 16  # vLLM/PagedAttention default block size


def kv_report(
    *,
    model_name: str | None,
    gpu_name: str | None,
    serving_name: str | None,
    tensor_parallel: int | None,
    contexts_tokens: list[int],
    memory_utilization: float | None,
    activation_reserve_gb: float | None,
    weight_dtype: str | None,
    kv_dtype: str | None,
    kv_head_layout: str | None,
    block_tokens: int | None,
    dirs: tuple[Path, ...],
) -> dict[str, Any]:
    """Load the profiles, run the KV arithmetic and return the result dictionary of the command."""
    from fleetopt.core import kv
    from fleetopt.errors import ValidationError
    from fleetopt.io import profiles

    sources: dict[str, str] = {}

    def pick(field: str, flag: Any, from_serving: Any, default: Any) -> Any:
        if flag is not None:
            sources[field] = "flag"
            return flag
        if from_serving is not None:
            sources[field] = "serving profile"
            return from_serving
        sources[field] = "default"
        return default

    serving = None
    if serving_name is not None:
        serving, model_from_serving, gpu_from_serving = profiles.resolve_serving(serving_name, dirs)
        model = profiles.load_model(model_name, dirs) if model_name else model_from_serving
        gpu = profiles.load_gpu(gpu_name, dirs) if gpu_name else gpu_from_serving
    else:
        if model_name is None or gpu_name is None:
            raise ValidationError("give --model and --gpu, or --serving NAME")
        model = profiles.load_model(model_name, dirs)
        gpu = profiles.load_gpu(gpu_name, dirs)

    tp = pick("tensor_parallel", tensor_parallel, serving and serving.tensor_parallel, 1)
    blocks_tokens = pick(
        "kv_block_tokens", block_tokens, serving and serving.kv_block_tokens, DEFAULT_KV_BLOCK_TOKENS
    )
    layout = pick("kv_head_layout", kv_head_layout, serving and serving.kv_head_layout, "even")
    weight_dt = pick("weight_dtype", weight_dtype, serving and serving.weight_dtype, model.weight_dtype)
    kv_dt = pick("kv_dtype", kv_dtype, serving and serving.kv_dtype, model.kv_dtype)
    if sources["weight_dtype"] == "default":
        sources["weight_dtype"] = "model profile"
    if sources["kv_dtype"] == "default":
        sources["kv_dtype"] = "model profile"
    # A serving profile's block budget is used unless a flag changes the instance (then Eq. 2 applies).
    use_blocks = (
        serving is not None
        and serving.kv_blocks is not None
        and memory_utilization is None
        and activation_reserve_gb is None
        and tensor_parallel is None
        and block_tokens is None
        and model_name is None
        and gpu_name is None
    )
    if use_blocks:
        util = reserve_bytes = None
        kv_blocks = serving.kv_blocks  # type: ignore[union-attr]
    else:
        util = pick(
            "gpu_memory_utilization",
            memory_utilization,
            serving and serving.gpu_memory_utilization,
            DEFAULT_MEMORY_UTILIZATION,
        )
        reserve_serving_gb = (
            None
            if serving is None or serving.activation_reserve_bytes_per_gpu is None
            else serving.activation_reserve_bytes_per_gpu / profiles.GB_BYTES
        )
        reserve_gb = pick(
            "activation_reserve_gb_per_gpu",
            activation_reserve_gb,
            reserve_serving_gb,
            DEFAULT_ACTIVATION_RESERVE_GB,
        )
        reserve_bytes = reserve_gb * profiles.GB_BYTES
        kv_blocks = None

    sizing = profiles.kv_sizing(
        model,
        gpu,
        tensor_parallel=tp,
        kv_block_tokens=blocks_tokens,
        gpu_memory_utilization=util,
        activation_reserve_bytes_per_gpu=reserve_bytes,
        kv_blocks=kv_blocks,
        weight_dtype=weight_dt,
        kv_dtype=kv_dt,
        kv_head_layout=layout,
        context="fleetopt kv",
    )
    capacity = sizing.kv_capacity_tokens_per_instance
    max_num_seqs = serving.max_num_seqs if serving is not None else None
    rows = []
    for ctx in contexts_tokens:
        rows.append(
            {
                "context_tokens": ctx,
                "kv_bytes_per_slot_per_instance": sizing.kv_bytes_per_token_per_instance * ctx,
                "kv_bytes_per_slot_per_gpu": sizing.kv_bytes_per_token_per_gpu * ctx,
                "slots_per_instance_token_exact": kv.token_exact_slots_per_instance(capacity, ctx),
                "slots_per_instance_block_rounded": kv.block_slots_per_instance(capacity, ctx, blocks_tokens),
            }
        )
    shortest = min(rows, key=lambda r: r["context_tokens"])
    longest = max(rows, key=lambda r: r["context_tokens"])
    for row in rows:
        row["ratio_to_longest_context"] = kv.cliff_ratio(
            row["slots_per_instance_block_rounded"], longest["slots_per_instance_block_rounded"]
        )

    notes = []
    longest_ctx = longest["context_tokens"]
    if model.kv_formula == "gqa" and model.kv_heads is not None and model.kv_heads < tp and layout == "even":
        replicated = kv.kv_bytes_per_token_per_instance(
            sizing.kv_bytes_per_token_model, "gqa", tp, model.kv_heads, "replicated"
        )
        replicated_capacity = kv.kv_capacity_tokens_from_memory(
            sizing.kv_memory_bytes_per_gpu, tp, replicated
        )
        notes.append(
            f"{model.kv_heads} KV heads < TP {tp}: this splits the cache evenly over the GPUs (the paper's "
            f"arithmetic); vLLM instead replicates KV heads, {replicated // tp:,} bytes/token per GPU, "
            f"{replicated_capacity // longest_ctx:,} "
            f"token-exact slots at {longest_ctx:,} (--kv-head-layout replicated)"
        )
    if model.kv_formula == "mla" and tp > 1:
        notes.append(f"MLA: the latent cache is held whole on each of the {tp} GPUs (not split by heads)")
    if max_num_seqs is not None:
        notes.append(f"the serving profile also caps an instance at max_num_seqs = {max_num_seqs} sequences")
    notes.append("slots count sequences per instance (a TP group of GPUs), not per GPU")

    return {
        "model": model.name,
        "gpu": gpu.name,
        "serving": serving.name if serving is not None else None,
        "tensor_parallel": tp,
        "gpus_per_instance": tp,
        "kv_formula": model.kv_formula,
        "weight_dtype": sizing.weight_dtype,
        "kv_dtype": sizing.kv_dtype,
        "kv_head_layout": sizing.kv_head_layout,
        "kv_bytes_per_token_model": sizing.kv_bytes_per_token_model,
        "kv_bytes_per_token_per_instance": sizing.kv_bytes_per_token_per_instance,
        "kv_bytes_per_token_per_gpu": sizing.kv_bytes_per_token_per_gpu,
        "gpu_memory_bytes": sizing.gpu_memory_bytes,
        "gpu_memory_utilization": sizing.gpu_memory_utilization,
        "weight_bytes_per_gpu": sizing.weight_bytes_per_gpu,
        "activation_reserve_bytes_per_gpu": sizing.activation_reserve_bytes_per_gpu,
        "kv_capacity_method": sizing.kv_capacity_method,
        "kv_blocks_per_instance": kv_blocks,
        "kv_memory_bytes_per_gpu": sizing.kv_memory_bytes_per_gpu,
        "kv_memory_bytes_per_instance": sizing.kv_memory_bytes_per_gpu * tp,
        "kv_capacity_tokens_per_instance": capacity,
        "kv_block_tokens": blocks_tokens,
        "max_num_seqs": max_num_seqs,
        "contexts": rows,
        "cliff_ratio": kv.cliff_ratio(
            shortest["slots_per_instance_block_rounded"], longest["slots_per_instance_block_rounded"]
        ),
        "value_sources": sources,
        "notes": notes,
    }


def _gb(value_bytes: float | None) -> str:
    return "–" if value_bytes is None else f"{value_bytes / 1e9:,.1f} GB ({value_bytes / 2**30:,.1f} GiB)"


def _draw(console, data: Mapping[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    from fleetopt.render.output import fmt_num

    src = data["value_sources"]

    def origin(field: str) -> str:
        return f"  [{src[field]}]" if field in src else ""

    head = f"{data['model']} on {data['gpus_per_instance']} × {data['gpu']}"
    if data["serving"]:
        head += f" (serving profile {data['serving']})"
    console.print(head, markup=False)
    summary = Table(show_header=False, box=None, pad_edge=False)
    summary.add_column()
    summary.add_column()
    lines = [
        ("tensor parallel (GPUs per instance)", f"{data['tensor_parallel']}{origin('tensor_parallel')}"),
        ("KV formula", data["kv_formula"]),
        ("weight dtype / KV dtype", f"{data['weight_dtype']} / {data['kv_dtype']}"),
        ("KV head layout", f"{data['kv_head_layout']}{origin('kv_head_layout')}"),
        ("KV bytes/token, model (one copy)", fmt_num(data["kv_bytes_per_token_model"])),
        ("KV bytes/token per instance", fmt_num(data["kv_bytes_per_token_per_instance"])),
        ("KV bytes/token per GPU", fmt_num(data["kv_bytes_per_token_per_gpu"], 8)),
        ("GPU memory", _gb(data["gpu_memory_bytes"])),
    ]
    if data["kv_capacity_method"] == "memory":
        lines += [
            ("memory utilization", f"{data['gpu_memory_utilization']:g}{origin('gpu_memory_utilization')}"),
            ("weights per GPU", _gb(data["weight_bytes_per_gpu"])),
            (
                "activation reserve per GPU",
                f"{_gb(data['activation_reserve_bytes_per_gpu'])}{origin('activation_reserve_gb_per_gpu')}",
            ),
            ("KV memory per GPU (Eq. 2)", _gb(data["kv_memory_bytes_per_gpu"])),
        ]
    else:
        lines += [
            (
                "KV block budget per instance",
                f"{data['kv_blocks_per_instance']:,} blocks × {data['kv_block_tokens']} tokens",
            ),
            ("KV memory per GPU (implied)", _gb(data["kv_memory_bytes_per_gpu"])),
        ]
    lines += [
        ("KV memory per instance", _gb(data["kv_memory_bytes_per_instance"])),
        ("KV capacity per instance", f"{data['kv_capacity_tokens_per_instance']:,} tokens"),
        ("KV block size", f"{data['kv_block_tokens']} tokens{origin('kv_block_tokens')}"),
    ]
    for label, value in lines:
        summary.add_row(Text(label), Text(str(value)))
    console.print(summary)

    table = Table(title="Slots (sequences) per instance")
    for col in ("context", "KV per slot, instance", "token-exact", "block-rounded", "× longest"):
        table.add_column(col, justify="right")
    for row in data["contexts"]:
        table.add_row(
            f"{row['context_tokens']:,}",
            _gb(row["kv_bytes_per_slot_per_instance"]),
            fmt_num(row["slots_per_instance_token_exact"]),
            fmt_num(row["slots_per_instance_block_rounded"]),
            fmt_num(row["ratio_to_longest_context"]),
        )
    console.print(table)
    console.print(f"cliff ratio slots(shortest)/slots(longest): {fmt_num(data['cliff_ratio'])}", markup=False)
    for note in data["notes"]:
        console.print(f"note: {note}", markup=False, soft_wrap=True)


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
        from fleetopt.core import kv
        from fleetopt.errors import ValidationError
        from fleetopt.io.units import parse_fraction, parse_number_list
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
        emit(data, fmt, _draw)
