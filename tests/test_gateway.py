"""The gateway's parts without LiteLLM: the estimator (pool-routing Eq. 3–5 by hand), the
compressor's invariants, the dispatch against the planner's Routing (hypothesis), the router's
spillover and content gate, the plugin settings' validation and the exported gateway configs."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from fleetopt.cli import app as _app
from fleetopt.core.compressor import (
    KEEP_FIRST,
    KEEP_LAST,
    bytes_token_counter,
    compress_text,
    split_sentences,
)
from fleetopt.core.dispatch import Outcome, decide
from fleetopt.core.estimator import TokenEstimator, classify_text
from fleetopt.core.routing import Routing
from fleetopt.errors import ValidationError
from fleetopt.gateway.router import GatewayError, TokenBudgetRouter
from fleetopt.io.gateway_config import gateway_config

REPO = Path(__file__).resolve().parents[1]
MODEL = "meta-llama/Llama-3.1-70B-Instruct"
_runner = CliRunner()


# -- the estimator -----------------------------------------------------------------------------------


def test_the_ema_and_the_conservative_ratio_follow_equations_4_and_5_by_hand() -> None:
    est = TokenEstimator(cold_start={"prose": 4.0}, cold_start_deviation_fraction=0.0, min_observed_bytes=0)
    assert est.estimate(4001, "prose") == 1001  # ⌈4001 / 4.0⌉
    est.observe(1000, "prose", 200)  # c_obs = 5.0
    # ĉ = 0.95·4 + 0.05·5 = 4.05; σ̂ = 0.95·0 + 0.05·|5 − 4.05| = 0.0475
    assert est.states["prose"].ratio == pytest.approx(4.05)
    assert est.states["prose"].deviation == pytest.approx(0.0475)
    assert est.route_ratio("prose") == pytest.approx(4.05 - 0.0475)
    assert est.estimate(4000, "prose") == math.ceil(4000 / (4.05 - 0.0475))


def test_short_prompts_and_nonsense_counts_do_not_move_the_estimate() -> None:
    est = TokenEstimator()
    before = est.states["code"].ratio
    assert not est.observe(100, "code", 90)  # below MIN_OBSERVED_BYTES: the template dominates
    assert not est.observe(5000, "code", 0)
    assert est.states["code"].ratio == before
    assert est.observe(5000, "code", 1)  # clipped to 16 bytes per token, not 5,000
    assert est.states["code"].ratio == pytest.approx(0.95 * before + 0.05 * 16.0)


def test_the_estimate_converges_to_the_true_ratio_and_leans_long() -> None:
    rng = np.random.default_rng(3)
    est = TokenEstimator()
    for _ in range(200):
        n = int(rng.integers(2000, 20000))
        est.observe(n, "cjk", round(n / (2.01 * rng.lognormal(0, 0.05))))
    assert est.states["cjk"].ratio == pytest.approx(2.01, rel=0.03)
    assert est.route_ratio("cjk") < est.states["cjk"].ratio  # over-counts tokens: the safer pool


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("The plan sizes each pool. It says why. Then it deploys them.", "prose"),
        ("这是一个测试。我们今天去公园。天气很好。", "cjk"),
        ("def f(x):\n    return x + 1\n\nclass A:\n    pass\n", "code"),
        ('{"a": [1, 2, 3], "b": {"c": "d"}}', "structured"),
        ("\n".join(f"{i},{i * 2},{i * 3},{i * 4}" for i in range(20)), "structured"),
    ],
)
def test_the_classifier_names_the_obvious_cases(text: str, category: str) -> None:
    assert classify_text(text) == category


# -- the compressor ----------------------------------------------------------------------------------

_SENTENCE = st.text(st.sampled_from("abcdefgh ijklmnop"), min_size=1, max_size=60).map(
    lambda s: s.strip().capitalize() or "X"
)


@given(st.lists(_SENTENCE, min_size=1, max_size=60), st.integers(1, 400))
def test_compression_fits_the_budget_keeps_the_ends_and_the_order(sentences: list[str], budget: int) -> None:
    text = "".join(f"{s}. " for s in sentences)
    count = bytes_token_counter(4.0)
    result = compress_text(text, budget, count)
    pieces = split_sentences(text)
    assert "".join(pieces) == text
    if not result.fits:
        assert result.text == text
        ends = pieces[:KEEP_FIRST] + pieces[max(KEEP_FIRST, len(pieces) - KEEP_LAST) :]
        assert sum(count(p) for p in ends) > budget
        return
    assert result.tokens <= budget or result.tokens == result.original_tokens <= budget
    kept = split_sentences(result.text) if result.text else []
    assert sum(count(p) for p in kept) == result.tokens
    # the first 3 and last 2 sentences are kept, and the kept ones are in their original order
    assert result.text.startswith("".join(pieces[:KEEP_FIRST]))
    assert result.text.endswith("".join(pieces[-KEEP_LAST:]))
    position = 0
    for piece in kept:
        position = text.index(piece, position) + len(piece)


def test_compression_removes_what_is_repeated_before_what_is_new() -> None:
    filler = "The cat sat on the mat. " * 30
    text = (
        "Intro one. Intro two. Intro three. "
        + filler
        + "A unique finding about Erlang C queues. End one. End two."
    )
    count = bytes_token_counter(4.0)
    result = compress_text(text, count(text) // 2, count)
    assert result.fits and "Erlang C" in result.text and result.text.count("The cat sat") < 30


# -- the dispatch against the planner's Routing ---------------------------------------------------------


@given(
    st.lists(st.integers(256, 30_000), min_size=1, max_size=3, unique=True).map(sorted),
    st.floats(1.0, 2.0),
    st.floats(0.0, 1.0),
    st.floats(0.05, 1.0),
    st.integers(1, 70_000),
    st.one_of(st.none(), st.integers(1, 8_000)),
    st.floats(0.0, 0.999),
)
def test_the_gateway_routes_every_request_as_the_planners_routing_does(
    bounds, gamma, p_c, cut, prompt, max_tokens, coin
) -> None:
    try:
        routing = Routing(tuple(bounds), gamma, p_c, cut)
    except ValidationError:
        return
    contexts = routing.context_tokens(65_536)
    d = decide(routing, contexts, prompt, max_tokens, coin)
    if max_tokens is None:
        assert (d.outcome, d.pool_index) == (
            (Outcome.REJECTED, None) if prompt >= 65_536 else (Outcome.ROUTED, len(contexts) - 1)
        )
        return
    total = prompt + max_tokens
    index, inputs, totals = routing.route(
        np.array([total]), np.array([prompt]), np.array([max_tokens]), np.array([coin])
    )
    if total > contexts[-1] and int(index[0]) == len(contexts) - 1:
        assert d.outcome is Outcome.REJECTED
        return
    assert d.pool_index == int(index[0])
    if d.outcome is Outcome.COMPRESS:
        assert d.compress_to_tokens == int(inputs[0]) == bounds[0] - max_tokens
        assert total - bounds[0] <= cut * prompt  # within the cap
        assert d.fallback_index == int(np.searchsorted(bounds, total)) >= 1
    else:
        assert total <= contexts[d.pool_index]


def test_spillover_goes_to_the_next_larger_pool_that_has_room_and_never_smaller() -> None:
    routing = Routing((4096, 16384), 1.5, 1.0)
    ctx = routing.context_tokens(65_536)
    assert decide(routing, ctx, 1000, 100, 0.5, [True, False, False]).pool_index == 1
    assert decide(routing, ctx, 1000, 100, 0.5, [True, True, False]).pool_index == 2
    assert decide(routing, ctx, 1000, 100, 0.5, [True, True, True]).outcome is Outcome.ROUTED
    assert decide(routing, ctx, 9000, 100, 0.5, [True, False, False]).pool_index == 1  # not saturated
    assert decide(routing, ctx, 9000, 100, 0.5, [False, True, False]).pool_index == 2
    band = decide(routing, ctx, 4900, 100, 0.5, [True, False, False])  # compression into a full pool
    assert (band.outcome, band.pool_index) == (Outcome.SPILLED, 1)


# -- the router -------------------------------------------------------------------------------------------


def _settings(**extra) -> dict:
    return {
        "kind": "fleetopt-gateway", "schema_version": 1, "model": MODEL,
        "pools": [
            {"name": "short", "model_group": "fleetopt-short", "max_budget_tokens": 4096, "max_in_flight": 2},
            {"name": "long", "model_group": "fleetopt-long", "max_budget_tokens": 65536},
        ],
        "compress_and_route": {"gamma": 1.9, "compressibility": 1.0, "max_cut_fraction": 0.5},
        "seed": 1,
        **extra,
    }  # fmt: skip


def _chat(text: str, max_tokens: int | None = 100) -> dict:
    body = {"model": MODEL, "messages": [{"role": "user", "content": text}]}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return body


def test_the_router_spills_when_the_pool_is_full_and_frees_slots_as_requests_finish() -> None:
    router = TokenBudgetRouter(gateway_config(_settings()))
    first, second = router.route(_chat("hi")), router.route(_chat("hello"))
    assert (first.pool, second.pool) == ("short", "short")
    third = router.route(_chat("hey"))
    assert (third.pool, third.outcome) == ("long", "spilled")
    router.complete(first.request_id, 10)
    assert router.route(_chat("again")).pool == "short"
    assert router.in_flight() == {"short": 2, "long": 1}
    assert router.metrics.counts["spilled", "short", "long"] == 1


def test_the_router_compresses_prose_in_the_band_and_never_code() -> None:
    prose = " ".join(
        f"Sentence number {i} says something about queues and pools and the cost of GPUs." for i in range(250)
    )
    router = TokenBudgetRouter(gateway_config(_settings()))
    routed = router.route(_chat(prose, 200))
    assert routed.outcome == "compressed" and routed.pool == "short"
    new_text = routed.body_updates["messages"][0]["content"]
    assert len(new_text) < len(prose) and routed.prompt_tokens + 200 <= 4096
    code = (REPO / "fleetopt" / "core" / "planner.py").read_text()[:16_000]  # ~6,000 tokens: the band
    routed = router.route(_chat(code, 200))
    assert routed.outcome == "fallback" and routed.pool == "long" and routed.body_updates == {}
    assert router.metrics.counts["not_compressed", "content"] == 1


def test_the_router_refuses_malformed_requests_and_passes_other_models_through() -> None:
    router = TokenBudgetRouter(gateway_config(_settings()))
    assert router.route({"model": "other", "messages": []}) is None
    assert router.route(_chat("hi"), "embeddings") is None
    for body in (
        {"model": MODEL},
        {"model": MODEL, "messages": "hi"},
        {"model": MODEL, "messages": [{"role": "user", "content": [{"type": "text", "text": None}]}]},
        {"model": MODEL, "messages": [{"role": "user", "content": 42}]},
        {**_chat("hi"), "max_tokens": -1},
        {**_chat("hi"), "max_tokens": True},
    ):
        with pytest.raises(GatewayError) as info:
            router.route(body)
        assert info.value.status == 400
    assert router.in_flight() == {"short": 0, "long": 0}


def test_the_router_learns_the_ratio_from_usage() -> None:
    router = TokenBudgetRouter(gateway_config(_settings()))
    prose = "A plain English sentence about capacity planning. " * 40
    before = router.estimator.states["prose"].ratio
    routed = router.route(_chat(prose))
    router.complete(routed.request_id, len(prose.encode()) // 5)
    assert router.estimator.states["prose"].ratio > before
    assert router.metrics.counts["estimate_errors", "prose"] == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "router"}, "kind"),
        ({"surprise": 1}, "unknown key 'surprise'"),
        ({"model": "has space"}, "model"),
        ({"pools": []}, "pools"),
        ({"compress_and_route": {"gamma": 0.5, "compressibility": 1.0}}, "compress_and_route.gamma"),
        ({"compress_and_route": {"gamma": 1.5, "compressibility": 1.0, "max_cut_fraction": 0}}, "max_cut"),
        ({"metrics_port": 70000}, "metrics_port"),
        ({"tokenizer": {"tiktoken": "a", "huggingface_file": "b"}}, "tokenizer"),
    ],
)
def test_bad_plugin_settings_are_refused_naming_the_field(change: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        gateway_config(_settings(**change))


# -- export -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plans(tmp_path_factory) -> dict[str, Path]:
    """The README plan (no compression) and the same with C&R (p_c = 1, capped), written as files."""
    out = tmp_path_factory.mktemp("plans")
    paths = {}
    for name, extra in (("cr", ["--compressibility", "1"]), ("plain", [])):
        path = out / f"{name}.yaml"
        done = _runner.invoke(
            _app,
            [
                "plan",
                "--cdf",
                "azure-2023",
                "--slo",
                "500ms",
                "--rate",
                "1000",
                "--output",
                str(path),
                *extra,
            ],
        )
        assert done.exit_code == 0, done.output
        paths[name] = path
    return paths


def _export(plan: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fleetopt", "export", "--plan", str(plan), *args],
        capture_output=True,
        text=True,
    )


def test_litellm_export_carries_the_plans_routing(plans) -> None:
    from fleetopt.io.plans import read_plan

    done = _export(plans["cr"], "--to", "litellm", "--endpoint", "short=http://10.0.0.5:8000")
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load(done.stdout)
    settings = gateway_config(config["callback_settings"]["fleetopt"])
    assert settings.routing == read_plan(plans["cr"]).fleet.routing  # the planner's own Routing
    groups = [m["model_name"] for m in config["model_list"]]
    assert groups == [p.model_group for p in settings.pools] == ["fleetopt-short", "fleetopt-long"]
    assert config["model_list"][0]["litellm_params"]["api_base"] == "http://10.0.0.5:8000/v1"
    assert config["model_list"][1]["litellm_params"]["api_base"] == "http://fleetopt-long:8000/v1"
    assert config["litellm_settings"]["callbacks"] == ["fleetopt.gateway.litellm_plugin.handler"]
    assert config["router_settings"]["context_window_fallbacks"] == [{"fleetopt-short": ["fleetopt-long"]}]
    assert config["router_settings"]["model_group_alias"] == {MODEL: "fleetopt-long"}


def test_the_router_file_and_litellm_yaml_carry_the_plans_cut_cap(plans, tmp_path) -> None:
    """The gateway compresses no more than the plan assumed: the plan's cap (here edited to 5%)
    reaches both files, and a band request needing an 8% cut, compressed under the default 20%, is
    not compressed under it."""
    from fleetopt.io.deploy import read_router
    from fleetopt.io.plans import read_plan

    document = yaml.safe_load(plans["cr"].read_text())
    assert document["inputs"]["max_cut_fraction"] == 0.2
    document["inputs"]["max_cut_fraction"] = 0.05
    edited = tmp_path / "plan.yaml"
    edited.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
    planned = read_plan(edited).fleet.routing
    assert planned.max_cut_fraction == 0.05
    done = _export(edited, "--to", "router", "--to", "litellm", "--output-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    router = read_router(tmp_path / "router.yaml")
    litellm = yaml.safe_load((tmp_path / "litellm.yaml").read_text())
    settings = gateway_config(litellm["callback_settings"]["fleetopt"])
    assert router.routing == settings.routing == planned
    b = planned.b_short_tokens
    prompt = round((b - 100) / 0.92)  # a cut of 8% of the prompt brings it to B − max_tokens
    assert b < prompt + 100 <= planned.band_top_tokens
    assert router.route(prompt, 100, coin=0.0) == ("long", prompt)
    default = Routing(planned.boundaries_tokens, planned.gamma, planned.compressibility)
    index, inputs, _ = default.route(*(np.array([v]) for v in (prompt + 100, prompt, 100, 0.0)))
    assert (index[0], inputs[0]) == (0, b - 100)  # under the default 20% cap it is compressed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--endpoint", "medium=http://x:1"], "--endpoint"),
        (["--endpoint", "short=ftp://x"], "not an http"),
        (["--endpoint", "short=http://x:1/ y"], "not an http"),
        (["--endpoint", "short=http://a:1", "--endpoint", "short=http://b:1"], "twice"),
    ],
)
def test_litellm_export_refuses_bad_endpoints(plans, args, message) -> None:
    done = _export(plans["cr"], "--to", "litellm", *args)
    assert done.returncode == 1 and message in done.stderr and "Traceback" not in done.stderr


def test_semantic_router_export_refuses_a_plan_that_compresses_naming_what_is_missing(plans) -> None:
    done = _export(plans["cr"], "--to", "semantic-router", "--max-output-tokens", "1024")
    assert done.returncode == 1 and "missing compression" in done.stderr
    done = _export(plans["plain"], "--to", "semantic-router")
    assert done.returncode == 1 and "missing --max-output-tokens" in done.stderr


def test_semantic_router_export_bands_prompt_tokens_and_passes_its_validator(plans, tmp_path) -> None:
    done = _export(
        plans["plain"], "--to", "semantic-router", "--max-output-tokens", "1024", "-o", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load((tmp_path / "semantic-router.yaml").read_text())
    from fleetopt.io.plans import read_plan

    b = read_plan(plans["plain"]).fleet.routing.boundaries_tokens[0]
    rules = config["routing"]["signals"]["context"]
    assert rules[0] == {
        "name": "fleetopt-short",
        "description": "prompts for pool short",
        "max_tokens": str(b - 1024),
    }
    assert rules[1]["min_tokens"] == str(b - 1024 + 1) and "max_tokens" not in rules[1]
    schema = _vllm_sr_schema()
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    assert not [e.message for e in validator.iter_errors(config)]
    broken = {
        **config,
        "routing": {**config["routing"], "signals": {"context": [{"name": "x", "min_tokens": 5}]}},
    }
    assert list(validator.iter_errors(broken))  # the schema does reject a malformed band


def _vllm_sr_schema() -> dict:
    """The canonical config schema vLLM Semantic Router's own package ships (``pip install vllm-sr``)."""
    import importlib.metadata
    import json

    try:
        files = importlib.metadata.files("vllm-sr") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("vllm-sr is not installed (pip install vllm-sr): its schema was not checked")
    path = next(f for f in files if f.name == "router-config-v0.3.schema.json")
    return json.loads(Path(path.locate()).read_text())


@pytest.mark.slow
def test_semantic_router_export_passes_vllm_sr_config_validate(plans, tmp_path) -> None:
    """vllm-sr's own validator (12 s of CPU: slow)."""
    done = _export(
        plans["plain"], "--to", "semantic-router", "--max-output-tokens", "1024", "-o", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    validator = Path(sys.executable).parent / "vllm-sr"
    if not validator.exists():
        pytest.skip("vllm-sr is not installed (pip install vllm-sr): its validator did not run")
    checked = subprocess.run(
        [str(validator), "config", "validate", "--config", str(tmp_path / "semantic-router.yaml")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_planner_and_the_core_never_import_litellm() -> None:
    probe = (
        "import sys, fleetopt.cli, fleetopt.core.dispatch, fleetopt.gateway.router, fleetopt.render.gateway\n"
        "heavy = ('litellm', 'fastapi', 'prometheus_client')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))"
    )
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


# -- routing noise in the simulator ---------------------------------------------------------------------


def test_gateway_noise_with_an_exact_estimate_changes_nothing_and_a_short_one_misroutes() -> None:
    from fleetopt.core.gateway_sim import BytesModel, gateway_route

    rng = np.random.default_rng(0)
    inputs = rng.integers(100, 12_000, 5000)
    outputs = rng.integers(1, 500, 5000)
    routing = Routing((4096,), 1.0, 0.0)
    contexts = routing.context_tokens(65_536)
    exact_pool, _, _ = routing.route(inputs + outputs, inputs, outputs, np.zeros(5000))
    # every request's ratio is its category's, and the estimator already knows it: no noise
    perfect = BytesModel(ratio_cv=0.0, bias=0.0, warm=True)
    pool, _, total, counts = gateway_route(routing, contexts, inputs, outputs, np.zeros(5000), rng, perfect)
    assert counts.misrouted == counts.rejected == counts.spilled == 0
    assert counts.sent_larger <= 0.001 * inputs.size  # ⌈bytes / c⌉ rounds up by at most a token
    assert np.mean(pool == exact_pool) > 0.999 and (total == inputs + outputs).all()
    # a cold estimator that believes CJK is 4 bytes per token under-counts it by half: misroutes
    cjk = BytesModel(category_shares={"cjk": 1.0}, warm=False)
    pool, _, total, counts = gateway_route(routing, contexts, inputs, outputs, np.zeros(5000), rng, cjk)
    assert counts.misrouted > 0 and (pool >= np.searchsorted(contexts, total)).all()  # none left too short


def test_simulate_gateway_reports_misrouting_and_each_pools_p99(tmp_path) -> None:
    plan = tmp_path / "plan.yaml"
    made = _runner.invoke(
        _app,
        ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "100", "--service-model", "lockstep",
         "--serving", "llama-3-70b-a100-80gb-tp8", "--rate-basis", "mean", "-o", str(plan)],
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    result = _runner.invoke(
        _app,
        ["simulate", "--plan", str(plan), "--gateway", "--requests", "4000", "--seeds", "1", "-f", "json"],
    )
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(result.stdout)
    assert data["requests"] == 4000 and set(data["pools"]) == {"short", "long"}
    assert 0 <= data["misrouted"] < 4000 and data["rejected"] == 0
    shares = [p["share_gateway"] for p in data["pools"].values()]
    assert sum(shares) == pytest.approx(1.0)


def test_a_configured_tokenizer_counts_exactly(tmp_path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate("the plan sizes each pool".split())}}
    tokenizer = tokenizers.Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    settings = _settings(tokenizer={"huggingface_file": str(path), "tokens_per_message": 3})
    router = TokenBudgetRouter(gateway_config(settings))
    text = "the plan sizes each pool " * 800  # 4,000 words: 4,000 tokens + 3
    assert router.route(_chat(text, 93)).pool == "short"  # 4,003 + 93 = 4,096
    assert router.route(_chat(text + "pool", 93)).outcome in ("compressed", "fallback")  # 4,097: the band


def test_shadow_compression_measures_p_c_without_changing_requests() -> None:
    settings = _settings(shadow_compression={"gamma": 1.9, "max_cut_fraction": 0.5})
    del settings["compress_and_route"]  # the plan does not compress
    router = TokenBudgetRouter(gateway_config(settings))
    prose = " ".join(
        f"Sentence {i} says something about queues, pools and the cost of GPUs." for i in range(250)
    )
    code = (REPO / "fleetopt" / "core" / "planner.py").read_text()[:16_000]
    for text in (prose, code):
        routed = router.route(_chat(text, 200))
        assert routed.pool == "long" and routed.body_updates == {}  # routed as planned, untouched
    assert (
        router.metrics.counts["shadow_band", "yes"] == 1 and router.metrics.counts["shadow_band", "no"] == 1
    )
