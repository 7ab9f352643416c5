"""The ``fleetopt kv`` report for people (drawn from the dictionary ``--format json|yaml`` prints)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when a table is drawn, not for --format json|yaml
    from rich.console import Console


def _gb(value_bytes: float | None) -> str:
    return "–" if value_bytes is None else f"{value_bytes / 1e9:,.1f} GB ({value_bytes / 2**30:,.1f} GiB)"


def draw_kv(console: Console, data: Mapping[str, Any]) -> None:
    """Model, GPU and KV figures, then the slots per instance at each context."""
    from fleetopt.io.units import fmt_num
    from fleetopt.render.layout import FitTable, bullets

    src = data["value_sources"]

    def origin(field: str) -> str:
        return f"  [{src[field]}]" if field in src else ""

    head = f"{data['model']} on {data['gpus_per_instance']} × {data['gpu']}"
    if data["serving"]:
        head += f" (serving profile {data['serving']})"
    console.print(head, markup=False)
    summary = FitTable(show_header=False, plain=True)
    summary.add_column(justify="left", wrap=True)
    summary.add_column(justify="left", wrap=True)
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
        summary.add_row(label, str(value))
    console.print(summary)

    table = FitTable(title="Slots (sequences) per instance")
    for col in ("context", "KV per slot, instance", "token-exact", "block-rounded", "× longest"):
        table.add_column(col)
    for row in data["contexts"]:
        table.add_row(
            f"{row['context_tokens']:,}",
            _gb(row["kv_bytes_per_slot_per_instance"]),
            fmt_num(row["slots_per_instance_token_exact"]),
            fmt_num(row["slots_per_instance_block_rounded"]),
            fmt_num(row["ratio_to_longest_context"]),
        )
    console.print(table)
    cliff = data["cliff_ratio"]
    if cliff is None or not math.isfinite(cliff):
        longest = max(row["context_tokens"] for row in data["contexts"])
        cliff_text = f"– (no sequence of {longest:,} tokens fits an instance)"
    else:
        cliff_text = fmt_num(cliff)
    console.print(f"cliff ratio slots(shortest)/slots(longest): {cliff_text}", markup=False)
    if data["notes"]:
        console.print(bullets(data["notes"], marker="note: "))
