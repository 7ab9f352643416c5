"""Words for prefix caching: the plan's assumed hit rates (``plan --prefix-caching``) and the hit
rates a log's block hashes give (``workload cache``)."""

from __future__ import annotations

from typing import Any

from fleetopt.render.layout import FitTable


def _table(title: str | None, key: str, *headers: str) -> FitTable:
    table = FitTable(title=title)
    table.add_column(key, justify="left")
    for header in headers:
        table.add_column(header)
    return table


#: The words of each pool's hit-rate source in the plan's table.
SOURCE_WORDS = {
    "given": "given",
    "simulated": "simulated",
    "reported": "log (production fleet)",
}


def draw_plan_caching(console: Any, caching: Any) -> None:
    """The plan's ``prefix_caching`` section: per pool the hit rate it assumed and its source."""
    how = ""
    if caching.dispatch:
        how = f"{caching.dispatch} dispatch, blocks of {caching.block_size_tokens} tokens"
    elif any(pool.source == "reported" for pool in caching.pools.values()):
        how = (
            "the cached tokens the log reports: the production fleet's hit rate where the log was taken, "
            "not the planned fleet's"
        )
    console.print(
        f"[bold]Prefix caching[/bold] ({caching.mode}{'; ' + how if how else ''}): "
        f"{caching.hit_rate:.1%} of prompt tokens cached; {caching.gpus_saved:,} GPUs saved against "
        f"--prefix-caching off ({caching.gpus_without_caching:,} GPUs)"
    )
    table = _table(None, "pool", "hit rate", "from", "instances", "cache/instance (tokens)")
    for name, pool in caching.pools.items():
        table.add_row(
            name,
            f"{pool.hit_rate:.1%}",
            SOURCE_WORDS.get(pool.source, pool.source),
            "—" if pool.instances is None else f"{pool.instances:,}",
            "—" if pool.cache_tokens_per_instance is None else f"{pool.cache_tokens_per_instance:,}",
        )
    console.print(table)


def draw_reported_cache(console: Any, report: dict[str, Any]) -> None:
    """``workload show`` of a log that reports cached prompt tokens: the hit rate it reports."""
    field = f" ({report['field']})" if report.get("field") else ""
    console.print(
        f"[bold]Prefix-cache hit rate the log reports[/bold]{field}: {report['hit_rate']:.1%} of "
        f"{report['prompt_tokens']:,} prompt tokens cached ({report['cached_prompt_tokens']:,}); "
        f"{report['reporting_requests']:,} of {report['requests']:,} requests report it. The production "
        "fleet's rate, measured where the log was taken (plan --prefix-caching auto charges it as given)."
    )


def draw_cache_report(console: Any, report: dict[str, Any]) -> None:
    """``workload cache``: the hit rate of each cache model."""
    console.print(
        f"[bold]Prefix-cache hit rates[/bold] — {report['source']}: {report['requests']:,} requests, "
        f"{report['prompt_tokens']:,} prompt tokens in blocks of {report['block_size_tokens']} tokens; "
        f"LRU caches sized by {report['cache_size_origin']}"
    )
    table = _table(None, "cache", "instances", "cache/instance (tokens)", "dispatch", "hit rate")
    for row in report["models"]:
        size = row["cache_tokens_per_instance"]
        table.add_row(
            row["cache"],
            f"{row['instances']:,}",
            "unbounded" if size is None else f"{size:,}",
            row["dispatch"],
            f"{row['hit_rate']:.1%}",
        )
    console.print(table)
