"""``fleetopt observe`` and ``fleetopt drift --prometheus`` against a real Prometheus (Debian's
``prometheus`` package, started on loopback by tests/prometheus_fixture.py) holding vLLM-format
series whose every request is known: counts and rates exact, quantiles inside their bucket,
attainment exact where the SLO is a bucket edge, goodput inside Fréchet's bounds; and the
documents both commands write against their published schemas (``fleetopt schema observe|drift``,
checked by ``jsonschema``): every one validates and reads back the same, and the readers accept
exactly what the schemas accept.

One server per module (about 2 s to backfill and start); the tests only read it.
"""

from __future__ import annotations

import functools
import http.server
import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from document_edits import edited, errors, reads  # noqa: E402
from prometheus_fixture import (  # noqa: E402
    PrometheusServer,
    exposition,
    make_fleet,
    one_two_five,
    prometheus_available,
)

from fleetopt.api.observe import observe_prometheus  # noqa: E402
from fleetopt.io.documents import document_class  # noqa: E402
from fleetopt.io.documents.typed import from_document, to_document  # noqa: E402
from fleetopt.render.output import dumps  # noqa: E402

HOURS = 1
SHORT, LONG = "fleetopt-short-7d9c1-x1q", "fleetopt-long-7d9c0-x0q"
# The plan's pools (fleetopt plan --cdf azure-2023 --slo 500ms --rate 200: short 4,096 tokens,
# long 65,536) with a fleet that runs the short pool at 40 req/s (its plan: 200) and the long
# pool slow (median TTFT 0.6 s: its P99 misses 500 ms).
POOLS = {
    "short": (2, 20.0, 4096, 0.1, 600),
    "long": (1, 0.5, 65536, 0.6, 6000),
    "legacy": (1, 2.0, 8192, 0.1, 300),
}


@pytest.fixture(scope="module")
def server():
    reason = prometheus_available()
    if reason is not None:
        pytest.skip(reason)
    end = (time.time() // 3600) * 3600 - 3600
    fleet = make_fleet(
        pools=POOLS, start_s=end - HOURS * 3600, hours=HOURS, restart=SHORT, gap=LONG, legacy=("legacy",)
    )
    with PrometheusServer(fleet) as running:
        running.end_s = end
        yield running


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("plan") / "plan.yaml"
    subprocess.run(
        [sys.executable, "-m", "fleetopt", "plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "200",
         "--output", str(path)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return path


def _in_span(values: np.ndarray, finish: np.ndarray, start: float, end: float) -> np.ndarray:
    return values[(finish > start) & (finish <= end)]


def _truth(server, pool: str, start: float, end: float, attribute: str) -> np.ndarray:
    pods = [p for p in server.fleet.pods if p.pool == pool]
    return np.concatenate([_in_span(getattr(p, attribute), p.finish_s, start, end) for p in pods])


@pytest.fixture(scope="module")
def observed(server, plan_file):
    return observe_prometheus(
        server.url, since_s=HOURS * 3600, end_s=server.end_s, selector='{namespace="llm"}',
        plan_path=plan_file, tpot_slo_s=0.05,
    )  # fmt: skip


def test_requests_and_windows_are_exact_through_a_restart_and_short_of_a_gap(server, observed) -> None:
    pools = {p.pool: p for p in observed.pools}
    start, end = observed.start_s, observed.end_s
    short = pools["short"]
    truth = _truth(server, "short", start, end, "finish_s")
    assert short.requests == truth.size  # one engine restarted halfway: counted from zero after it
    assert short.resets == 1 and any("reset" in note for note in short.notes)
    # finished requests per 60 s window, exactly
    edges = np.arange(start, end + 1, 60.0)
    counts, _ = np.histogram(truth, bins=edges)
    got = dict(zip(short.window_starts_s.tolist(), short.window_counts.tolist(), strict=True))
    assert [got.get(s, 0.0) for s in edges[:-1]] == counts.tolist()
    # the long pool's engine missed 10 min of scrapes (> the 5 min lookback): still exact, the
    # requests across the gap credited to the window where the scrapes resumed, and it says so
    long = pools["long"]
    assert long.requests == _truth(server, "long", start, end, "finish_s").size
    assert any("missed scrapes" in note for note in long.notes)
    assert long.prompt_tokens.count == long.requests  # the histograms are exact through the gap too


def test_histograms_are_the_exact_bucket_counts(server, observed) -> None:
    short = next(p for p in observed.pools if p.pool == "short")
    start, end = observed.start_s, observed.end_s
    for histogram, attribute, edges in (
        (short.prompt_tokens, "prompt", one_two_five(4096)),
        (short.generation_tokens, "output", one_two_five(4096)),
    ):
        values = _truth(server, "short", start, end, attribute)
        expected = [int((values <= e).sum()) for e in (*edges, np.inf)]
        assert histogram.cumulative.tolist() == expected
        assert histogram.mean == pytest.approx(values.mean(), rel=1e-12)


def test_p99_lies_in_its_bucket_and_attainment_is_exact_on_an_edge(server, observed) -> None:
    start, end = observed.start_s, observed.end_s
    for pool in observed.pools:
        if pool.pool != "short":
            continue
        ttft = _truth(server, "short", start, end, "ttft_s")
        tpot = _truth(server, "short", start, end, "tpot_s")
        true_p99 = np.quantile(ttft, 0.99, method="inverted_cdf")
        result = observed.attainment["short"]
        assert result.p99_ttft_s.lower < true_p99 <= result.p99_ttft_s.upper
        # 500 ms and 50 ms are bucket edges of vLLM's TTFT and TPOT histograms: exact shares
        assert result.ttft_share.exact and result.ttft_share.estimate == pytest.approx((ttft <= 0.5).mean())
        assert result.tpot_share.exact and result.tpot_share.estimate == pytest.approx((tpot <= 0.05).mean())
        both = ((ttft <= 0.5) & (tpot <= 0.05)).mean()
        assert result.both.lower <= both <= result.both.upper  # Fréchet's bounds hold
        rate = ttft.size / (end - start)
        assert result.goodput_per_s.lower <= both * rate <= result.goodput_per_s.upper


def test_the_workload_summary_keeps_every_bucket_count_and_the_mean(server, observed, tmp_path) -> None:
    from fleetopt.core.summary import merge_summaries
    from fleetopt.io.summaries import write_summary
    from fleetopt.io.workloads import read_summary_source

    start, end = observed.start_s, observed.end_s
    summary = observed.workloads["short"].summary
    prompts = _truth(server, "short", start, end, "prompt")
    assert summary.request_count == prompts.size
    for edge in one_two_five(4096):
        inputs = np.repeat(summary.input_tokens, summary.counts)
        assert (inputs <= edge).sum() == (prompts <= edge).sum()  # F at every edge, exact
    assert abs(np.repeat(summary.input_tokens, summary.counts).mean() - prompts.mean()) <= 0.5
    path = tmp_path / "live.json"
    write_summary(observed.summary, path)
    again = read_summary_source(str(path))
    assert again.request_count == observed.summary.request_count
    merged = merge_summaries([observed.workloads["short"].summary, observed.workloads["long"].summary])
    assert np.array_equal(merged.counts, again.counts) and merged.window_us == again.window_us == 60_000_000


def test_an_older_vllm_is_read_by_its_names_and_says_what_it_lacks(server) -> None:
    run = observe_prometheus(
        server.url, since_s=HOURS * 3600, end_s=server.end_s, selector='{namespace="legacy"}',
        ttft_slo_s=0.5, tpot_slo_s=0.05,
    )  # fmt: skip
    assert run.metrics["kv_usage"] == "vllm:gpu_cache_usage_perc"
    assert run.metrics["tpot"] == "vllm:time_per_output_token_seconds"
    pool = run.pools[0]
    assert not pool.tpot_per_request and run.attainment["all"].goodput_ignores_tpot
    document = run.document()
    assert document["pools"]["all"]["tpot_s"]["per"] == "output token"
    assert document["pools"]["all"]["attainment"]["goodput_ignores_tpot"] is True
    _valid("observe", document)


@dataclass
class _Done:
    returncode: int
    stdout: str
    stderr: str


def _cli(*args: str, env: dict | None = None) -> _Done:
    """The command run in-process (typer's runner: no interpreter start-up), its env applied."""
    from typer.testing import CliRunner

    from fleetopt.cli import app

    result = CliRunner().invoke(app, list(args), env=env)
    return _Done(result.exit_code, result.stdout, result.stderr)


@pytest.fixture(scope="module")
def observe_json(server, plan_file, tmp_path_factory) -> dict:
    """``fleetopt observe --format json`` with a plan, a TPOT cap and ``--output``, as printed."""
    out = tmp_path_factory.mktemp("observe") / "live.parquet"
    done = _cli("observe", "--prometheus", server.url, "--since", f"{HOURS}h", "--end", f"{server.end_s:.0f}",
                "--plan", str(plan_file), "--tpot-slo", "50ms",
                "--selector", '{namespace="llm"}', "--output", str(out), "--format", "json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert out.is_file()
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def live_drift_json(server, plan_file) -> dict:
    """``fleetopt drift --prometheus --format json``, as printed (exit 1: drift)."""
    done = _cli("drift", "--plan", str(plan_file), "--prometheus", server.url, "--since", f"{HOURS}h",
                "--end", f"{server.end_s:.0f}", "--selector", '{namespace="llm"}',
                "--format", "json")  # fmt: skip
    assert done.returncode == 1, done.stderr
    return json.loads(done.stdout)


def test_cli_observe_prints_pools_and_writes_the_summary(observe_json) -> None:
    data = observe_json
    assert set(data["pools"]) == {"short", "long"} and data["slo"] == {"ttft_s": 0.5, "tpot_s": 0.05}
    assert data["workload_summary"]["file"].endswith("live.parquet")


def test_live_drift_finds_the_missed_slo_and_the_idle_pool(live_drift_json) -> None:
    data = live_drift_json
    checks = {(r["check"], r["pool"]) for r in data["reasons"]}
    assert ("slo_missed", "long") in checks and ("underused", "short") in checks
    assert data["verdict"] == "drift" and data["live"]["pools"]["short"]["requests"] > 0


def test_unusable_sources_are_one_error_line_and_exit_2(server, tmp_path) -> None:
    closed = f"http://127.0.0.1:{_free_port()}"
    for args, words in (
        (("--prometheus", closed), "cannot reach Prometheus"),
        (("--prometheus", server.url + "/nothing"), "HTTP 404"),
        (("--prometheus", server.url, "--selector", '{namespace="none"}'), "no vLLM metric"),
        (("--prometheus", "ftp://example"), "not an http(s) URL"),
    ):
        done = _cli("observe", *args, "--since", "1h")
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ") and words in lines[0], done.stderr


def _free_port() -> int:
    from prometheus_fixture import free_port

    return free_port()


class _Guarded(http.server.BaseHTTPRequestHandler):
    """401 without the right bearer token; with it, an answer slower than the client's timeout."""

    def do_POST(self):  # noqa: N802
        if self.headers.get("Authorization") != "Bearer s3cret-t0ken":
            self.send_response(401)
            self.end_headers()
            return
        time.sleep(3)
        self.send_response(200)
        self.end_headers()

    do_GET = do_POST

    def log_message(self, *args):
        pass


def test_credentials_and_timeouts_never_show_the_token(tmp_path) -> None:
    guard = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Guarded)
    threading.Thread(target=guard.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{guard.server_address[1]}"
    try:
        done = _cli("observe", "--prometheus", url, "--since", "1h", env={"PROMETHEUS_TOKEN": "wr0ng-t0ken"})
        assert done.returncode == 2 and "HTTP 401" in done.stderr and "token was refused" in done.stderr
        assert "wr0ng" not in done.stderr + done.stdout
        secret = tmp_path / "token"
        secret.write_text("s3cret-t0ken\n")
        done = _cli("observe", "--prometheus", url, "--since", "1h", "--token-file", str(secret),
                    "--timeout", "1s")  # fmt: skip
        assert done.returncode == 2 and "did not answer within 1 s" in done.stderr
        assert "s3cret" not in done.stderr + done.stdout
    finally:
        guard.shutdown()


def test_scrape_reads_engines_metrics_pages(server) -> None:
    pytest.importorskip("prometheus_client")
    fleet = server.fleet
    at = fleet.end_s
    pods = [p for p in fleet.pods if p.pool == "short"]

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            pod = pods[int(self.path.strip("/").split("/")[0])]
            body = exposition(fleet, pod, at).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    page = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=page.serve_forever, daemon=True).start()
    try:
        from fleetopt.api.observe import observe_scrape

        base = f"http://127.0.0.1:{page.server_address[1]}"
        run = observe_scrape([f"short={base}/0/metrics", f"short={base}/1/metrics"], ttft_slo_s=0.5)
        pool = run.pools[0]
        # one engine restarted: its page counts from the restart on
        expected = sum(
            int(((p.finish_s <= at) & (p.finish_s > (p.restart_at_s or -np.inf))).sum()) for p in pods
        )
        assert pool.pool == "short" and pool.requests == expected and pool.instances == 2
        document = run.document()
        assert document["span"]["window_s"] is None and document["pools"]["short"]["rate_profile"] is None
        _valid("observe", document)
    finally:
        page.shutdown()


def test_the_cron_example_of_docs_ci_runs_against_prometheus(server, plan_file) -> None:
    import re
    import shlex

    text = (Path(__file__).resolve().parents[1] / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```bash\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    lines = [line for block in blocks for line in block.splitlines() if line.startswith("fleetopt drift")]
    assert lines and "--prometheus" in lines[0]
    words = shlex.split(lines[0].split(" > ")[0])
    args = [{'"$PROMETHEUS_URL"': server.url, "$PROMETHEUS_URL": server.url}.get(w, w) for w in words[1:]]
    args = [str(plan_file) if a == "fleet/plan.yaml" else a for a in args]
    done = _cli(*args)
    assert done.returncode == 1, done.stderr
    reasons = {(r["check"], r["pool"]) for r in json.loads(done.stdout)["reasons"]}
    assert ("slo_missed", "long") in reasons


def test_calibrate_checks_a_profile_against_production_windows(server) -> None:
    done = _cli("calibrate", "--prometheus", server.url, "--profile", "llama-3.1-70b-fp8-h100-80gb-tp8-vllm",
                "--since", f"{HOURS}h", "--end", f"{server.end_s:.0f}", "--selector", '{namespace="llm"}',
                "--window", "10min", "--format", "json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    pool = data["pools"]["all"]
    assert pool["windows"] == HOURS * 6
    # the fixture's running gauge is random, so its windows span several concurrency levels: refit
    assert pool["concurrency_levels"] >= 2 and pool["refit"] is not None


# --- the documents against their published schemas --------------------------------------------------


@functools.cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    """``fleetopt schema NAME`` as the command prints it, checked against the metaschema."""
    done = _cli("schema", name)
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _valid(name: str, document: dict) -> None:
    """``document`` as ``--format json`` and ``yaml`` print it validates against ``fleetopt schema
    NAME`` and reads back (its reader: the same dataclasses) to the same document."""
    import yaml

    for fmt in ("json", "yaml"):
        text = dumps(document, fmt)
        printed = json.loads(text) if fmt == "json" else yaml.safe_load(text)
        assert errors(_validator(name), printed) == [], fmt
        assert to_document(from_document(document_class(name), printed, name)) == printed


def test_observe_reports_validate_against_fleetopt_schema_observe(observe_json, observed) -> None:
    """With a plan and a TPOT cap (the command's output), and the API's (pools' workloads, no
    TPOT cap); the older vLLM's and the scrape's reports are checked by their tests above."""
    assert observe_json["pools"]["short"]["attainment"]["tpot_within_slo"] is not None
    assert observed.document()["pools"]["short"]["attainment"]["tpot_within_slo"] is not None
    for document in (observe_json, observed.document()):
        _valid("observe", document)


def test_a_live_drift_report_validates_against_fleetopt_schema_drift(live_drift_json) -> None:
    """The drift report on live metrics is the drift report: its live reasons are among the
    schema's checks, its ``live`` section is typed, and the KS distance says it is no check."""
    _valid("drift", live_drift_json)
    assert live_drift_json["shift"]["ks_total_tokens"]["note"].startswith("not checked on live data")
    assert live_drift_json["tolerances"]["max_ks"] == 1.0  # what the checks used: KS never drifts
    assert set(live_drift_json["live"]["pools"]) == {"short", "long"}


def test_the_live_drift_report_is_drawn_with_the_observed_pools(live_drift_json) -> None:
    """The table and the pull-request comment end with the observed pools and their notes."""
    import io

    from fleetopt.render.drift import draw_drift, drift_markdown
    from fleetopt.render.output import make_console

    markdown = drift_markdown(live_drift_json)
    head = markdown.index("**Observed now (Prometheus)**")
    table = markdown[head:].splitlines()
    assert table[2] == "| pool | req/s | P99 TTFT | within TTFT SLO | goodput req/s | KV usage |"
    rows = {line.split(" | ")[0].strip("| "): line for line in table[4:] if line.startswith("| ")}
    assert set(rows) == {"short", "long"}
    share = live_drift_json["live"]["pools"]["long"]["attainment"]["ttft_within_slo"]
    assert share["exact"] and f" {share['estimate']:.1%} " in rows["long"]  # 500 ms is a bucket edge
    assert "- short: 1 counter reset(s)" in markdown
    buffer = io.StringIO()
    draw_drift(make_console(buffer), live_drift_json)
    drawn = buffer.getvalue()
    assert "Observed now (Prometheus)" in drawn and "observed in the metrics" in drawn


@pytest.fixture(scope="module")
def live_run(server, plan_file):
    from fleetopt.api.observe import check_plan_drift_live

    return check_plan_drift_live(
        plan_file, server.url, since_s=HOURS * 3600, end_s=server.end_s, selector='{namespace="llm"}'
    )


def test_the_verdict_counts_the_live_findings_with_the_plans_checks(live_run) -> None:
    """One verdict from all reasons: the plan's checks and the live findings alike decide it."""
    import dataclasses

    from fleetopt.core.drift import DriftCheck

    assert live_run.drift.result.reasons and live_run.findings and live_run.drifted
    calm = dataclasses.replace(live_run.drift, result=dataclasses.replace(live_run.drift.result, reasons=()))
    underused = tuple(f for f in live_run.findings if f.kind is DriftCheck.UNDERUSED)
    for findings, verdict in (((), "fits"), (underused, "drift")):
        run = dataclasses.replace(live_run, drift=calm, findings=findings)
        document = run.document("plan.yaml")
        assert (document["verdict"], document["exit_code"]) == (verdict, 1 if findings else 0)
        assert run.drifted == (verdict == "drift")
        assert [r["check"] for r in document["reasons"]] == ["underused"] * len(findings)
        _valid("drift", document)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_the_observe_and_drift_readers_accept_exactly_what_their_schemas_accept(
    observe_json, live_drift_json, data
) -> None:
    name = data.draw(st.sampled_from(["observe", "drift"]))
    document = data.draw(edited(observe_json if name == "observe" else live_drift_json))
    validator = _validator(name)
    assert reads(document_class(name), document) == validator.is_valid(document), errors(validator, document)
