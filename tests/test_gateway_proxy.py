"""The plan's routing on a real LiteLLM proxy: one proxy process on loopback (started once for the
module) in front of two mock vLLM pools over real HTTP, configured by ``fleetopt export --to
litellm`` from a real plan.

Every request reaches the pool the planner's ``Routing`` names for its token budget (prompt tokens
counted by the same tokenizer as the mock "model" + ``max_tokens``; no ``max_tokens``: the last
pool), or the documented outcome: compressed into the first pool (prose in the C&R band), the
pool its own budget names when the content gate refuses (code), the next pool when the first
refuses for its context (LiteLLM's context-window fallback). None is lost or served twice, streams
arrive whole, and bad input gets a clear HTTP error without taking the proxy down.

Skipped when LiteLLM is not installed (``pip install '.[gateway]'``; CI installs it).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import secrets
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

if importlib.util.find_spec("litellm") is None:  # (found, not imported: the proxy is a process of its own)
    pytest.skip("could not find 'litellm' (pip install '.[gateway]')", allow_module_level=True)
tiktoken = pytest.importorskip("tiktoken")

from gateway_mocks import (  # noqa: E402
    MockPool,
    code_corpus,
    free_port,
    litellm_tiktoken_cache,
    prose_corpus,
    start_litellm,
    stop_process,
)

from fleetopt.core.routing import Routing  # noqa: E402

pytestmark = pytest.mark.xdist_group("litellm-proxy")  # (one worker per file: --dist loadfile)

REPO = Path(__file__).resolve().parents[1]
MODEL = "meta-llama/Llama-3.1-70B-Instruct"
PER_MESSAGE = 4  # chat-template tokens per message, the same for the gateway and the mock "model"
START_TIMEOUT_S = 120.0
REQUEST_TIMEOUT_S = 60.0


class Gateway:
    """The running proxy: its URL, key, mock pools, metrics port and the planner's routing."""

    def __init__(self, url, key, pools, metrics_url, routing, count):
        self.url, self.key, self.pools, self.metrics_url = url, key, pools, metrics_url
        self.routing, self.count = routing, count

    def post(self, body, *, raw: bytes | None = None, stream: bool = False):
        data = raw if raw is not None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}/v1/chat/completions",
            data=data,
            headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                payload = response.read().decode()
                return response.status, payload
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def served(self) -> dict[str, list[dict]]:
        return {p.name: list(p.requests) for p in self.pools}


@pytest.fixture(
    scope="session"
)  # one proxy per worker (a module fixture restarts it when xdist interleaves modules)
def gateway(tmp_path_factory):
    from fleetopt.api import plan_workload
    from fleetopt.render.export import export_plan
    from fleetopt.render.gateway import GatewayOptions

    os.environ["TIKTOKEN_CACHE_DIR"] = litellm_tiktoken_cache()
    encoding = tiktoken.get_encoding("cl100k_base")

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    run = plan_workload("azure-2023", ttft_slo_s=0.5, mean_rate_per_s=1000)
    routing = run.plan.best.routing
    contexts = routing.context_tokens(65_536)
    pools = [
        MockPool(name, ctx, count, PER_MESSAGE).start()
        for name, ctx in zip(run.plan.best.pool_names, contexts, strict=True)
    ]
    workdir = tmp_path_factory.mktemp("gateway")
    plan_file = _plan_file(run, workdir)
    endpoints = tuple(f"{p.name}={p.url}" for p in pools)
    exported = export_plan(plan_file, ["litellm"], gateway=GatewayOptions(endpoints)).files["litellm.yaml"]
    import yaml

    config = yaml.safe_load(exported)
    metrics_port = free_port()
    settings = config["callback_settings"]["fleetopt"]
    settings.update(
        tokenizer={"tiktoken": "cl100k_base", "tokens_per_message": PER_MESSAGE},
        seed=7,
        metrics_port=metrics_port,
    )
    config["litellm_settings"]["request_timeout"] = 1  # MOCK-SLOW answers after SLOW_S
    config["router_settings"]["num_retries"] = 0
    config_path = workdir / "litellm.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    key = "sk-" + secrets.token_hex(24)
    try:
        try:
            proxy, url, _ = start_litellm(config_path, workdir, REPO, key, START_TIMEOUT_S)
        except RuntimeError as exc:
            pytest.fail(str(exc))
        try:
            yield Gateway(url, key, pools, f"http://127.0.0.1:{metrics_port}/metrics", routing, count)
        finally:
            stop_process(proxy)
    finally:
        for pool in pools:
            pool.stop()


def _plan_file(run, workdir: Path):
    """The plan as ``fleetopt plan --output`` writes it, read back as ``fleetopt export`` does."""
    from fleetopt.io.plans import read_plan, write_document_atomically
    from fleetopt.render.output import dumps

    path = workdir / "plan.yaml"
    write_document_atomically(path, dumps(run.document, "yaml"))
    return read_plan(path)


@functools.cache
def _tokens(kind: str) -> list[int]:
    """The project's docs (prose) or core source (code), in cl100k tokens (the first 30,000)."""
    text = prose_corpus(REPO) if kind == "prose" else code_corpus(REPO)
    return tiktoken.get_encoding("cl100k_base").encode(text[:150_000], disallowed_special=())[:30_000]


def _prompt(kind: str, tokens: int, marker: str) -> str:
    """A prompt of about ``tokens`` tokens of ``kind`` text, starting with ``marker``."""
    body = tiktoken.get_encoding("cl100k_base").decode(_tokens(kind)[: max(1, tokens)])
    return f"{marker}. {body}"


def _expected_pool(gateway: Gateway, prompt_tokens: int, max_tokens: int | None) -> int:
    """The planner's answer: Routing.route on L = prompt + max_tokens (no max_tokens: the last pool)."""
    if max_tokens is None:
        return len(gateway.pools) - 1
    total = prompt_tokens + max_tokens
    index, _, _ = gateway.routing.route(
        np.array([total]), np.array([prompt_tokens]), np.array([max_tokens]), np.array([0.0])
    )
    return int(index[0])


def _own_pool(routing: Routing, total: int) -> int:
    return int(np.searchsorted(np.asarray(routing.boundaries_tokens), total, side="left"))


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_every_request_reaches_the_pool_the_planner_routes_it_to(gateway: Gateway, stream: bool) -> None:
    rng = np.random.default_rng(11 if stream else 5)
    before = {p.name: len(p.requests) for p in gateway.pools}
    b = gateway.routing.boundaries_tokens[0]
    top = gateway.routing.band_top_tokens
    cases = []
    for k in range(40):
        kind = "code" if k % 5 == 4 else "prose"
        # lengths across the short pool, the C&R band and the long pool
        tokens = int(
            rng.choice(
                [rng.integers(20, b - 600), rng.integers(b - 300, top - 100), rng.integers(top, top + 2000)]
            )
        )
        max_tokens = None if k % 7 == 3 else int(rng.integers(16, 400))
        marker = f"REQ-{'S' if stream else 'J'}{k:03d}"
        cases.append((marker, kind, tokens, max_tokens))

    def send(case):
        marker, kind, tokens, max_tokens = case
        content = _prompt(kind, tokens, marker)
        body = {"model": MODEL, "messages": [{"role": "user", "content": content}], "stream": stream}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        return case, content, gateway.post(body)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(send, cases))
    served = {p.name: p.requests[before[p.name] :] for p in gateway.pools}
    names = [p.name for p in gateway.pools]
    for (marker, kind, _, max_tokens), content, (status, payload) in results:
        assert status == 200, (marker, payload[:500])
        hits = [
            (name, r) for name in names for r in served[name] if marker in r["body"]["messages"][0]["content"]
        ]
        assert len(hits) == 1, f"{marker} served {len(hits)} times"
        name, request = hits[0]
        prompt_tokens = gateway.count(content) + PER_MESSAGE
        expected = _expected_pool(gateway, prompt_tokens, max_tokens)
        got = names.index(name)
        if max_tokens is not None and expected == 0 and prompt_tokens + max_tokens > b:
            # the C&R band: prose is compressed into the first pool; code goes where its budget fits
            if kind == "prose" and got == 0:
                assert request["prompt_tokens"] + max_tokens <= b
                assert request["body"]["messages"][0]["content"] != content
                continue
            expected = _own_pool(gateway.routing, prompt_tokens + max_tokens)
        assert got == expected, (marker, kind, prompt_tokens, max_tokens, name)
        assert request["body"]["messages"][0]["content"] == content  # not compressed: untouched
        reply = _reply_text(payload, stream)
        assert reply == f"pool={name} prompt_tokens={request['prompt_tokens']}"


def _reply_text(payload: str, stream: bool) -> str:
    if not stream:
        return json.loads(payload)["choices"][0]["message"]["content"]
    lines = [line[6:] for line in payload.splitlines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return "".join(json.loads(line)["choices"][0]["delta"].get("content") or "" for line in lines[:-1])


BAD = {
    "malformed JSON": (b'{"model": "' + MODEL.encode() + b'", "messages": [', 400),
    "missing messages": (json.dumps({"model": MODEL, "max_tokens": 5}).encode(), 400),
    "non-string text part": (
        json.dumps(
            {"model": MODEL, "messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}
        ).encode(),
        400,
    ),
    "unknown content part": (
        json.dumps(
            {"model": MODEL, "messages": [{"role": "user", "content": [{"type": "hologram"}]}]}
        ).encode(),
        400,
    ),
    "message not an object": (json.dumps({"model": MODEL, "messages": ["hello"]}).encode(), 400),
    "max_tokens not a number": (
        json.dumps(
            {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": "many"}
        ).encode(),
        400,
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_gets_a_clear_http_error_and_reaches_no_pool(gateway: Gateway, case: str) -> None:
    before = {p.name: len(p.requests) + len(p.refused) for p in gateway.pools}
    raw, status = BAD[case]
    got, payload = gateway.post(None, raw=raw)
    assert got == status, payload
    assert "error" in json.loads(payload)
    assert {p.name: len(p.requests) + len(p.refused) for p in gateway.pools} == before
    assert (
        gateway.post(
            {"model": MODEL, "messages": [{"role": "user", "content": "still up?"}], "max_tokens": 5}
        )[0]
        == 200
    )


def test_media_goes_to_the_last_pool_and_a_prompt_longer_than_every_pool_is_refused(gateway: Gateway) -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    content = [{"type": "text", "text": "MEDIA-1 what is this?"}, image]
    body = {"model": MODEL, "max_tokens": 8, "messages": [{"role": "user", "content": content}]}
    status, payload = gateway.post(body)
    assert status == 200 and json.loads(payload)["choices"][0]["message"]["content"].startswith("pool=long")
    before = {p.name: len(p.requests) for p in gateway.pools}
    huge = "All work and no play makes a dull plan. " * 60_000  # ~540K tokens, 2.4 MB
    status, payload = gateway.post({"model": MODEL, "messages": [{"role": "user", "content": huge}]})
    assert status == 400 and "more than the largest pool" in payload
    assert {p.name: len(p.requests) for p in gateway.pools} == before


def test_backend_errors_and_timeouts_come_back_as_errors_and_free_the_slot(gateway: Gateway) -> None:
    status, payload = gateway.post(
        {"model": MODEL, "messages": [{"role": "user", "content": "MOCK-FAIL-500 please"}], "max_tokens": 5}
    )
    assert status >= 500 and "error" in json.loads(payload)
    status, payload = gateway.post(
        {"model": MODEL, "messages": [{"role": "user", "content": "MOCK-SLOW please"}], "max_tokens": 5}
    )
    assert status in (408, 500, 504) and "error" in json.loads(payload)
    ok = gateway.post(
        {"model": MODEL, "messages": [{"role": "user", "content": "after the errors"}], "max_tokens": 5}
    )
    assert ok[0] == 200
    # LiteLLM runs its failure callbacks (which free the slot) after it has answered the client:
    # read the gauges until they are back to 0, for at most 10 s
    deadline = time.monotonic() + 10.0
    while True:
        with urllib.request.urlopen(gateway.metrics_url, timeout=10) as response:
            metrics = response.read().decode()
        in_flight = {
            line.split('pool="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
            for line in metrics.splitlines()
            if line.startswith("fleetopt_gateway_in_flight{")
        }
        if (in_flight and all(v == 0 for v in in_flight.values())) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert in_flight and all(v == 0 for v in in_flight.values()), in_flight
    assert 'fleetopt_gateway_requests_total{outcome="routed",pool="short"}' in metrics
