"""The ``fleetopt profiles list|show`` tables (drawn from the dictionaries ``--format json|yaml`` prints)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when a table is drawn, not for --format json|yaml
    from rich.console import Console


def draw_profile_list(console: Console, data: Mapping[str, Any]) -> None:
    """One table per profile kind."""
    from fleetopt.io.units import fmt_num
    from fleetopt.render.layout import FitTable

    for kind, rows in data.items():
        table = FitTable(title=kind)
        if kind == "models":
            cols = (
                "name",
                "KV formula",
                "layers",
                "params (B)",
                "active (B)",
                "weights/KV dtype",
                "KV bytes/token",
            )
            cells = [
                (
                    r["name"],
                    r["kv_formula"],
                    str(r["layers"]),
                    fmt_num(r["parameter_count_total"] / 1e9),
                    fmt_num(r["parameter_count_active"] / 1e9),
                    f"{r['weight_dtype']}/{r['kv_dtype']}",
                    fmt_num(r["kv_bytes_per_token"]),
                )
                for r in rows
            ]
        elif kind == "gpus":
            cols = ("name", "memory (GB)", "bandwidth (GB/s)", "$/GPU-hour", "price date")
            cells = [
                (
                    r["name"],
                    fmt_num(r["memory_bytes"] / 1e9),
                    fmt_num(r["memory_bandwidth_bytes_per_s"] / 1e9),
                    f"{r['gpu_hour_usd']:.3g}",
                    r["price_date"],
                )
                for r in rows
            ]
        else:
            cols = (
                "name",
                "model",
                "GPU",
                "TP (GPUs)",
                "calibration",
                "W",
                "H per slot",
                "KV tokens/inst.",
            )
            cells = [
                (
                    r["name"],
                    r["model"],
                    r["gpu"],
                    str(r["gpus_per_instance"]),
                    r["calibration"],
                    f"{r['iteration_base_s'] * 1e3:.3g} ms",
                    f"{r['iteration_per_slot_s'] * 1e3:.3g} ms",
                    fmt_num(r["kv_capacity_tokens_per_instance"]),
                )
                for r in rows
            ]
        for col in cols:
            table.add_column(col, justify="left")
        for cell in cells:
            table.add_row(*cell)
        console.print(table)


def draw_profile(console: Console, data: Mapping[str, Any]) -> None:
    """Every field of one profile, in fleetopt's internal units."""
    from fleetopt.render.layout import FitTable

    table = FitTable(title=f"{data['kind']} profile {data['name']}", show_header=False)
    table.add_column("field", justify="left")
    table.add_column("value", justify="left", wrap=True)
    for key, value in data.items():
        if key in ("kind", "name") or value is None:
            continue
        if isinstance(value, float):
            value = f"{value:g}"
        table.add_row(key, str(value))
    console.print(table)
