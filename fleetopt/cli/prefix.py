"""``fleetopt workload cache``: the prefix-cache hit rates a log's block hashes give."""

from __future__ import annotations

from pathlib import Path

import typer

from fleetopt.cli.common import FORMAT_OPTION, PROFILES_DIR_OPTION
from fleetopt.render.output import OutputFormat

#: ``--block-size``: tokens per block of a log's ``hash_ids`` (``plan`` and ``workload cache``).
BLOCK_SIZE_OPTION = typer.Option(512, "--block-size", min=1, help="Tokens per block of the log's hash_ids.")


def cache(
    log: Path = typer.Argument(
        ...,
        metavar="LOG",
        help="A Mooncake-style JSON lines log with hash_ids (block hashes of each prompt).",
    ),
    block_size: int = typer.Option(
        512, "--block-size", min=1, help="Tokens per block of the log's hash_ids."
    ),
    cache_tokens: int | None = typer.Option(
        None,
        "--cache-tokens",
        min=0,
        help="KV tokens each instance gives the cache. Default: the KV of one instance of --serving.",
    ),
    serving: str | None = typer.Option(
        None, "--serving", help="Serving profile whose instance KV sizes the cache (default: plan's default)."
    ),
    instances: str = typer.Option(
        "1,4,16",
        "--instances",
        help="Instance counts to simulate, a comma list (random and affinity dispatch).",
    ),
    profiles_dir: Path | None = PROFILES_DIR_OPTION,
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Hit rates of an unbounded cache and of per-instance LRU caches (random or prefix-affinity dispatch)."""
    from fleetopt.api.prefix import cache_report
    from fleetopt.io.units import parse_number_list
    from fleetopt.render.output import emit
    from fleetopt.render.prefix import draw_cache_report

    counts = tuple(parse_number_list(instances, field="--instances", integer=True))
    report = cache_report(
        str(log),
        block_size_tokens=block_size,
        cache_tokens_per_instance=cache_tokens,
        serving=serving,
        instances=counts,
        profiles_dir=profiles_dir,
    )
    emit(report, fmt, draw_cache_report)
