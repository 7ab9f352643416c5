"""A plan that relies on Compress-and-Route says so, and shows the fleet without compression beside it
(issue 33 item 3): in its document (``compression``), its report's header and its baselines table.

The fleet without compression is checked against an independent answer: the planner's own best
fleet when nothing can be compressed (p_c = 0), found by the whole sweep over every pool count.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetopt.api import plan_workload
from fleetopt.cli import app

REPO = Path(__file__).resolve().parents[1]
README = {"ttft_slo_s": 0.5, "mean_rate_per_s": 1000}


@pytest.fixture(scope="module")
def compressed():
    return plan_workload("azure-2023", compressibility=1.0, max_pools=3, **README)


@pytest.mark.slow
def test_the_fleet_without_compression_is_the_best_fleet_when_nothing_is_compressed(compressed) -> None:
    plain = plan_workload("azure-2023", compressibility=0.0, max_pools=3, **README)
    best, without = compressed.plan.best, compressed.plan.without_compression
    assert best.gamma > 1 and best.compressed_fraction > 0
    assert without is not None and without.gamma == 1.0 and without.compressed_fraction == 0
    assert without.cost_per_year_usd == pytest.approx(plain.plan.best.cost_per_year_usd, rel=1e-12)
    assert without.total_gpus == plain.plan.best.total_gpus
    assert plain.plan.without_compression is None and plain.document["compression"] is None
    assert best.cost_per_year_usd <= without.cost_per_year_usd  # the sweep includes γ = 1


def test_the_document_and_the_report_say_the_plan_relies_on_compression(compressed) -> None:
    document = compressed.document
    section = document["compression"]
    best, without = document["best"], section["without_compression"]
    # α' − α: the share the first pool serves beyond its own budget (hand arithmetic on the document)
    share = best["short_traffic_fraction"] - best["alpha"]
    assert section["compressed_fraction"] == pytest.approx(share, rel=1e-12)
    rate = document["inputs"]["sizing_rate_per_s"]
    assert section["compressed_rate_per_s"] == pytest.approx(share * rate, rel=1e-12)
    assert section["extra_gpus"] == without["total_gpus"] - best["total_gpus"]
    assert document["inputs"]["max_cut_fraction"] == 0.2
    assert section["gateway"] == "litellm" and "export --to litellm" in section["message"]
    result = CliRunner().invoke(
        app, ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000", "--compressibility", "1"]
    )
    assert result.exit_code == 0, result.output
    header = result.stdout[: result.stdout.index("Pools")]
    assert "This plan relies on prompt compression" in header
    assert f"Without compression: {without['total_gpus']:,} GPUs" in " ".join(header.split())
    row = next(line for line in result.stdout.splitlines() if "without compression (γ = 1)" in line)
    assert f"{without['total_gpus']:,}" in row


def test_the_compression_section_validates_against_the_published_schema(compressed) -> None:
    import json

    import jsonschema

    from fleetopt.io.documents.plan import read_plan_document
    from fleetopt.io.documents.typed import to_document
    from fleetopt.render.output import dumps

    schema = json.loads(CliRunner().invoke(app, ["schema", "plan"]).stdout)
    printed = json.loads(dumps(compressed.document, "json"))
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(printed)) == []
    assert to_document(read_plan_document(printed, "plan")) == printed
    section = schema["$defs"]["CompressionReliance"]
    assert "without_compression" in section["properties"]
    del printed["compression"]["without_compression"]
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(printed))  # a required field


def test_planner_md_quotes_the_message_as_the_code_gives_it(compressed) -> None:
    """docs/planner.md's example is the README plan with --compressibility 1 (its best fleet and the
    fleet without compression have two pools, so --pools 3 gives the same message)."""
    two_pools = compressed.document["compression"]["message"]
    text = (REPO / "docs" / "planner.md").read_text(encoding="utf-8")
    quoted = re.search(r"<!-- generated: compression-header -->\n```text\n(.*?)\n```", text, re.S)
    assert quoted is not None and quoted.group(1) == two_pools, f"docs/planner.md should quote:\n{two_pools}"


def test_export_says_when_only_litellm_deploys_the_plan(compressed, tmp_path) -> None:
    from fleetopt.render.output import dumps

    plan = tmp_path / "plan.json"
    plan.write_text(dumps(compressed.document, "json"))
    runner = CliRunner()
    base = ["export", "--plan", str(plan), "--output-dir", str(tmp_path / "out")]
    other = runner.invoke(app, [*base, "--to", "router", "--to", "markdown"])
    assert other.exit_code == 0, other.output
    assert "relies on prompt compression" in other.stderr and "only --to litellm deploys" in other.stderr
    summary = (tmp_path / "out" / "plan.md").read_text()
    assert "**This plan relies on prompt compression" in summary
    assert "Without compression: 1,048 GPUs" in summary
    litellm = runner.invoke(app, [*base, "--to", "litellm", "--to", "router"])
    assert litellm.exit_code == 0, litellm.output
    assert "relies on prompt compression" not in litellm.stderr


def test_the_readme_quotes_the_default_plan_and_the_compressed_one() -> None:
    """README's figures of `fleetopt plan --cdf azure-2023 --slo 500ms --rate 1000` (the default
    p_c = 0 and two pools at most) and of the same with --compressibility 1, whose fleet without
    compression is the default plan's."""
    text = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    run = plan_workload("azure-2023", compressibility=1.0, **README)
    default, best = run.plan.without_compression, run.plan.best
    assert default.total_gpus == plan_workload("azure-2023", **README).plan.best.total_gpus
    short, long = default.pools
    quoted = (
        f"B_short = {default.b_short_tokens:,}, a short pool of {short.instances} instances at "
        f"{short.slots_per_instance} slots",
        f"a long pool of {long.instances} instances at {long.slots_per_instance} slots",
        f"{default.total_gpus:,} GPUs, ${default.cost_per_year_usd / 1e6:.1f}M/year",
        f"`--compressibility 1` plans {best.total_gpus:,} GPUs",
    )
    for phrase in quoted:
        assert phrase in text, phrase
