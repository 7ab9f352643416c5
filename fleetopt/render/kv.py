"""The ``fleetopt kv`` report for people (drawn from the dictionary ``--format json|yaml`` prints)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when a table is drawn, not for --format json|yaml
    from rich.console import Console


def _gb(value_bytes: float | None) -> str:
    return "–" if value_bytes is None else f"{value_bytes / 1e9:,.1f} GB ({value_bytes / 2**30:,.1f} GiB)"


def draw_kv(console: Console, data: Mapping[str, Any]) -> None:
    """Model, GPU and KV figures, then the slots per instance at each context."""
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
