"""``fleetopt export``: vLLM commands carry the plan's numbers, manifests pass the Kubernetes and
KEDA schemas (vendored in tests/data/schemas, validated with jsonschema), the router file routes
every request as the planner's Routing does, files are written atomically with the umask's modes."""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import shlex
import shutil
import stat
import subprocess
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fleetopt.cli import app
from fleetopt.core.routing import Routing
from fleetopt.errors import ValidationError
from fleetopt.io.data import bundled_dir
from fleetopt.io.deploy import EngineSettings, read_router, router_from_document
from fleetopt.io.plans import plan_file_from_document, read_plan
from fleetopt.io.profiles import load_model, load_serving
from fleetopt.render import deploy
from fleetopt.render.export import export_plan
from fleetopt.render.output import dumps

runner = CliRunner()
SCHEMAS = Path(__file__).parent / "data" / "schemas"
KUBERNETES_VERSIONS = ("1.29.0", "1.30.0", "1.31.0", "1.32.0", "1.37.0")
VLLM_FLAGS_DIR = Path(__file__).parent / "data" / "vllm-flags"


def _vendored_flags(version: str) -> dict:
    return json.loads((VLLM_FLAGS_DIR / f"vllm-{version}.json").read_text())


def vllm_flags(version: str) -> set[str]:
    """Every flag vLLM ``version``'s engine argument parser defines (vendored from its wheel), the
    ``--no-`` forms of its BooleanOptionalAction flags included."""
    vendored = _vendored_flags(version)
    return set(vendored["flags"]) | set(vendored["negated_flags"])


def vllm_parser(version: str) -> argparse.ArgumentParser:
    """An argument parser with vLLM ``version``'s flags as its parser declares them: the model, then
    each flag with a value, or as a BooleanOptionalAction (``--x``/``--no-x``) where the release
    has the ``--no-`` form. It refuses a flag the release lacks, a switch given a value and a
    valued flag without one."""
    vendored = _vendored_flags(version)
    negated = set(vendored["negated_flags"])
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    parser.add_argument("model")
    for flag in vendored["flags"]:
        if flag in negated:
            continue  # added with its positive form
        if "--no-" + flag[2:] in negated:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction)
        else:
            parser.add_argument(flag)
    return parser


@pytest.fixture(scope="module")
def readme_plan(tmp_path_factory) -> Path:
    """The README's plan (azure-2023, 500 ms P99 TTFT, 1,000 req/s, default profile) at B = 4,096 with
    Compress-and-Route (p_c = 1, the cut capped), so that the exports carry a C&R band."""
    path = tmp_path_factory.mktemp("plan") / "plan.yaml"
    result = runner.invoke(
        app,
        ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000", "--b-short", "4096",
         "--compressibility", "1", "-o", str(path)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return path


def _commands(text: str) -> list[list[str]]:
    """The shell commands of exported scripts, as argument lists (comments and shebangs dropped)."""
    lines = [line for line in text.splitlines() if not line.startswith(("#", "export "))]
    return [shlex.split(c) for c in "\n".join(lines).replace("\\\n", " ").split("\n") if c.strip()]


def _flags(arguments: list[str]) -> dict[str, str | None]:
    """Each flag with its value (None for a switch: a flag followed by another flag or nothing)."""
    flags: dict[str, str | None] = {}
    for k, word in enumerate(arguments):
        if word.startswith("--"):
            following = arguments[k + 1] if k + 1 < len(arguments) else "--"
            flags[word] = None if following.startswith("--") else following
    return flags


def test_vllm_commands_carry_the_plans_numbers(readme_plan: Path) -> None:
    result = runner.invoke(app, ["export", "--plan", str(readme_plan), "--to", "vllm"])
    assert result.exit_code == 0, result.output
    plan = read_plan(readme_plan)
    commands = _commands(result.stdout)
    assert len(commands) == len(plan.fleet.pools) == 2
    dirs = (bundled_dir("profiles"),)
    for command, pool in zip(commands, plan.fleet.pools, strict=True):
        assert command[:2] == ["vllm", "serve"]
        serving = load_serving(pool.hardware.serving_name, dirs)
        assert (
            command[2]
            == load_model(serving.model_name, dirs).huggingface_id
            == "meta-llama/Llama-3.1-70B-Instruct"
        )
        flags = _flags(command[3:])
        assert set(flags) <= vllm_flags(deploy.DEFAULT_VLLM_VERSION)
        assert int(flags["--tensor-parallel-size"]) == pool.hardware.gpus_per_instance == 8
        assert int(flags["--max-model-len"]) == pool.context_tokens
        assert int(flags["--max-num-seqs"]) == pool.slots_per_instance
        assert int(flags["--max-num-batched-tokens"]) == serving.prefill_chunk_tokens == 8192
        assert float(flags["--gpu-memory-utilization"]) == serving.gpu_memory_utilization == 0.9
        assert int(flags["--block-size"]) == serving.kv_block_tokens
        assert flags["--quantization"] == "fp8"  # a BF16 checkpoint served with FP8 weights
        # planned without prefix caching: vLLM's default (on since 0.8) turned off
        assert "--no-enable-prefix-caching" in flags and "--enable-prefix-caching" not in flags
    # the README's fleet: a short pool at B_short's context and a long one at the 64K default
    assert [p.context_tokens for p in plan.fleet.pools] == [plan.fleet.routing.boundaries_tokens[0], 65536]


def _kubernetes_validator(version: str, kind: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / f"kubernetes-v{version}-strict" / f"{kind}.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def _strict(schema):
    """A CRD schema as strict field validation applies it: no field the schema does not name."""
    if isinstance(schema, dict):
        schema = {key: _strict(value) for key, value in schema.items()}
        if schema.get("type") == "object" and "properties" in schema and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
    elif isinstance(schema, list):
        schema = [_strict(value) for value in schema]
    return schema


def _keda_validator() -> jsonschema.Draft4Validator:
    schema = json.loads((SCHEMAS / "keda-v2.20.2" / "scaledobject-keda-v1alpha1.json").read_text())
    return jsonschema.Draft4Validator(_strict(schema))


def _crd_validator(kind: str) -> jsonschema.Draft4Validator:
    path = SCHEMAS / "prometheus-operator-v0.93.0" / f"{kind}-monitoring-v1.json"
    return jsonschema.Draft4Validator(_strict(json.loads(path.read_text())))


def _validate(manifest: dict, versions=KUBERNETES_VERSIONS) -> None:
    if manifest["kind"] == "ScaledObject":
        _keda_validator().validate(manifest)
        return
    if manifest["kind"] in ("PodMonitor", "ServiceMonitor", "PrometheusRule"):
        _crd_validator(manifest["kind"].lower() + "s").validate(manifest)
        return
    kind = {
        "Deployment": "deployment-apps-v1", "Service": "service-v1",
        "PodDisruptionBudget": "poddisruptionbudget-policy-v1",
        "PersistentVolumeClaim": "persistentvolumeclaim-v1",
    }[manifest["kind"]]  # fmt: skip
    for version in versions:
        _kubernetes_validator(version, kind).validate(manifest)


def test_kubernetes_manifests_pass_the_schema_with_replicas_equal_to_instances(readme_plan: Path) -> None:
    result = runner.invoke(
        app, ["export", "--plan", str(readme_plan), "--to", "kubernetes", "--namespace", "llm"]
    )
    assert result.exit_code == 0, result.output
    manifests = [m for m in yaml.safe_load_all(result.stdout) if m]
    plan = read_plan(readme_plan)
    vllm = runner.invoke(app, ["export", "--plan", str(readme_plan), "--to", "vllm"]).stdout
    kinds = ["Deployment", "Service", "PodDisruptionBudget"]
    assert [m["kind"] for m in manifests] == ["PersistentVolumeClaim"] + kinds * len(plan.fleet.pools)
    for manifest in manifests:
        _validate(manifest)
    claim = manifests[0]
    # the cache holds the checkpoint: 70.6 B parameters × 2 bytes (BF16) × 1.25, in GiB
    assert claim["spec"]["resources"]["requests"]["storage"] == f"{math.ceil(1.25 * 70.6e9 * 2 / 2**30)}Gi"
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    for k, pool in enumerate(plan.fleet.pools):
        deployment, service, budget = manifests[1 + 3 * k : 4 + 3 * k]
        pod_spec = deployment["spec"]["template"]["spec"]
        # a rollout starts at most one instance's GPUs above the plan and never goes below it
        rolling = deployment["spec"]["strategy"]["rollingUpdate"]
        assert rolling == {"maxSurge": 1, "maxUnavailable": 0}
        assert rolling["maxSurge"] * pool.hardware.gpus_per_instance <= pool.hardware.gpus_per_instance
        assert budget["spec"] == {"maxUnavailable": 1, "selector": deployment["spec"]["selector"]}
        assert pod_spec["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod_spec[
            "tolerations"
        ]
        assert {"claimName": "fleetopt-model-cache"} in [
            v.get("persistentVolumeClaim") for v in pod_spec["volumes"]
        ]
        # stopping: preStop outlasts the endpoint update, vLLM drains, and the grace period covers both
        (vllm_container,) = pod_spec["containers"]
        args = _flags(vllm_container["args"][1:])
        pre_stop = int(vllm_container["lifecycle"]["preStop"]["exec"]["command"][1])
        assert pod_spec["terminationGracePeriodSeconds"] > pre_stop + int(args["--shutdown-timeout"])
        assert deployment["metadata"]["name"] == service["metadata"]["name"] == f"fleetopt-{pool.name}"
        assert deployment["metadata"]["namespace"] == "llm"
        assert deployment["spec"]["replicas"] == pool.instances
        pod = deployment["spec"]["template"]
        (container,) = pod["spec"]["containers"]
        assert container["resources"]["limits"] == {"nvidia.com/gpu": pool.hardware.gpus_per_instance}
        assert container["command"] + container["args"] == _commands(vllm)[k]
        selector = deployment["spec"]["selector"]["matchLabels"]
        assert selector.items() <= pod["metadata"]["labels"].items()
        assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "replicas"), "seventy-three"),
        (("spec", "strategy"), {"type": "Recreate", "rollingUpdates": {}}),  # a misspelt field
        (("spec", "template", "spec", "containers"), [{"image": "vllm/vllm-openai"}]),  # no name
    ],
)
def test_the_kubernetes_schema_rejects_a_broken_deployment(readme_plan: Path, path, value) -> None:
    text = runner.invoke(app, ["export", "--plan", str(readme_plan), "--to", "kubernetes"]).stdout
    deployment = copy.deepcopy(next(m for m in yaml.safe_load_all(text) if m and m["kind"] == "Deployment"))
    _validate(deployment)
    node = deployment
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        _validate(deployment)


# --- KEDA ----------------------------------------------------------------------------------------


def _with_schedule(document: dict, period_s: int, windows: list[tuple[int, int, int, int]]) -> dict:
    """The plan document with a schedule of ``(start_s, end_s, short, long)`` windows."""
    document = copy.deepcopy(document)
    document["schedule"] = {
        "window_s": windows[0][1] - windows[0][0],
        "period_s": period_s,
        "periodic": True,
        "origin_utc": "2023-11-16T00:00:00Z",  # a Thursday
        "pools": ["short", "long"],
        "windows": [
            {
                "start_s": a,
                "end_s": b,
                "arrival_rate_per_s": 500.0,
                "mean_arrival_rate_per_s": 400.0,
                "instances": {"short": s, "long": lg},
                "gpus": 8 * (s + lg),
                "rate_windows": 1,
            }
            for a, b, s, lg in windows
        ],  # fmt: skip
        "rate_basis": "peak",
        "gpu_hours_per_period": 0.0,
        "static_gpu_hours_per_period": 0.0,
        "static_instances": dict(zip(("short", "long"), _planned(document), strict=True)),
    }
    return document


def _planned(document: dict) -> tuple[int, int]:
    """(short, long) instances of a two-pool plan document (schedules may not exceed them)."""
    pools = document["best"]["pools"]
    return pools["short"]["instances"], pools["long"]["instances"]


def _keda(document: dict, *options: str) -> tuple[list[dict], str]:
    plan = plan_file_from_document(document, "plan test")
    run = export_plan(plan, ["kubernetes"], keda=True, options=deploy.ExportOptions(*options))
    notes = [n for n in run.notes if "relies on prompt compression" not in n]  # the C&R plan's own note
    return [m for m in yaml.safe_load_all(run.files["keda.yaml"]) if m], "\n".join(notes)


def test_keda_floors_follow_the_daily_schedule(readme_plan: Path) -> None:
    document = yaml.safe_load(readme_plan.read_text())
    hour = 3600
    peak, peak_long = _planned(document)
    night, morning = peak // 2, (3 * peak) // 4
    # short: night at 00–06, morning at 06–12, the planned peak 12–18, night again from 18 (to 06)
    counts = [night] * 6 + [morning] * 6 + [peak] * 6 + [night] * 6
    windows = [(h * hour, (h + 1) * hour, counts[h], peak_long if 12 <= h < 18 else 1) for h in range(24)]
    manifests, notes = _keda(_with_schedule(document, 86_400, windows))
    short, long = manifests
    for manifest in manifests:
        _validate(manifest)
    assert short["spec"]["minReplicaCount"] == night and long["spec"]["minReplicaCount"] == 1
    assert short["spec"]["maxReplicaCount"] == math.ceil(peak * 1.25)
    crons = [t for t in short["spec"]["triggers"] if t["type"] == "cron"]
    assert [
        (t["metadata"]["start"], t["metadata"]["end"], t["metadata"]["desiredReplicas"]) for t in crons
    ] == [
        ("0 6 * * *", "0 12 * * *", str(morning)),
        ("0 12 * * *", "0 18 * * *", str(peak)),
    ]
    assert all(t["metadata"]["timezone"] == "Etc/UTC" for t in crons)
    (queue,) = [t for t in short["spec"]["triggers"] if t["type"] == "prometheus"]
    assert (
        queue["metadata"]["query"]
        == 'sum(vllm:num_requests_waiting{pod=~"fleetopt-short-[a-z0-9]+-[a-z0-9]+"})'
    )
    assert queue["metricType"] == "AverageValue"  # the threshold is per instance: HPA wants ⌈Σ/threshold⌉
    assert int(queue["metadata"]["threshold"]) >= 1
    assert notes == ""


def test_keda_weekly_schedule_names_the_weekday(readme_plan: Path) -> None:
    document = yaml.safe_load(readme_plan.read_text())
    day = 86_400
    peak, peak_long = _planned(document)
    weekend = peak // 2
    windows = [
        (d * day, (d + 1) * day, peak if d < 5 else weekend, peak_long if d < 5 else 1) for d in range(7)
    ]
    manifests, _ = _keda(_with_schedule(document, 7 * day, windows))
    short = manifests[0]
    _validate(short)
    crons = [t["metadata"] for t in short["spec"]["triggers"] if t["type"] == "cron"]
    # origin Thursday 00:00 UTC: days 0–4 are Thursday to Monday (cron weekdays 4, 5, 6, 0, 1)
    assert [(c["start"], c["end"], c["desiredReplicas"]) for c in crons] == [
        ("0 0 * * 4", "0 0 * * 2", str(peak))
    ]
    assert short["spec"]["minReplicaCount"] == weekend


def test_keda_without_a_schedule_holds_the_planned_instances(readme_plan: Path) -> None:
    result = runner.invoke(
        app,
        ["export", "--plan", str(readme_plan), "--to", "kubernetes", "--keda", "--burst-headroom", "0",
         "--namespace", "llm"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    scaled = [m for m in yaml.safe_load_all(result.stdout) if m and m["kind"] == "ScaledObject"]
    plan = read_plan(readme_plan)
    assert [(s["spec"]["minReplicaCount"], s["spec"]["maxReplicaCount"]) for s in scaled] == [
        (p.instances, p.instances) for p in plan.fleet.pools
    ]
    for manifest in scaled:
        _validate(manifest)
        assert [t["type"] for t in manifest["spec"]["triggers"]] == ["prometheus"]
        assert 'namespace="llm"' in manifest["spec"]["triggers"][0]["metadata"]["query"]
    assert "note: short: the plan has no time-of-day schedule" in result.stderr


def test_keda_schema_rejects_a_broken_scaled_object(readme_plan: Path) -> None:
    document = yaml.safe_load(readme_plan.read_text())
    manifests, _ = _keda(document)
    short = copy.deepcopy(manifests[0])
    _validate(short)
    short["spec"]["triggers"][0]["metadata"]["threshold"] = 1  # metadata values are strings
    with pytest.raises(jsonschema.ValidationError):
        _validate(short)
    misspelt = copy.deepcopy(manifests[0])
    misspelt["spec"]["minReplicas"] = 2  # the field is minReplicaCount
    with pytest.raises(jsonschema.ValidationError):
        _validate(misspelt)


def test_a_schedule_with_a_gap_is_refused(readme_plan: Path) -> None:
    document = yaml.safe_load(readme_plan.read_text())
    peak, peak_long = _planned(document)
    document = _with_schedule(
        document, 86_400, [(0, 3600, peak - 1, peak_long), (7200, 86_400, peak, peak_long)]
    )
    with pytest.raises(Exception, match="uncovered"):
        _keda(document)


def test_the_waiting_threshold_comes_from_the_slo_headroom() -> None:
    pool = _pool("short", 4096, slots=100)
    pool = deploy.DeployPool(
        **{**pool.__dict__, "mean_service_s": 10.0, "p99_ttft_s": 0.3, "p99_wait_s": 0.0}
    )
    context = _context(Routing((4096,), 1.0, 0.0), [pool, _pool("long", 65536)], slo_s=0.5)
    # headroom 0.5 − 0.3 = 0.2 s; a request behind q waits (q + 1)·10/100 s ≤ 0.2 s → q ≤ 1
    assert deploy.waiting_threshold(context, pool) == 1
    slow = deploy.DeployPool(**{**pool.__dict__, "mean_service_s": 1.0})
    assert deploy.waiting_threshold(context, slow) == 19  # (q + 1)·1/100 ≤ 0.2 → q ≤ 19


# --- the router file ------------------------------------------------------------------------------


def _engine() -> EngineSettings:
    return EngineSettings("org/model", None, None, 0.9, None, 16, 8192, 1_000_000)


def _pool(name: str, context: int, slots: int = 8) -> deploy.DeployPool:
    return deploy.DeployPool(name, f"fleetopt-{name}", 2, 8, context, slots, _engine(), "p", "h100-80gb")


def _context(routing: Routing, pools, slo_s: float = 0.5) -> deploy.ExportContext:
    return deploy.ExportContext("plan.yaml", slo_s, routing, tuple(pools))


@st.composite
def routings(draw):
    count = draw(st.integers(0, 4))
    bounds = sorted(draw(st.sets(st.integers(2, 60_000), min_size=count, max_size=count)))
    gamma = draw(st.floats(1.0, 3.0, allow_nan=False))
    if len(bounds) > 1:
        gamma = min(gamma, bounds[1] / bounds[0])
    return Routing(tuple(bounds), gamma, draw(st.floats(0.0, 1.0)), draw(st.floats(0.01, 1.0)))


@settings(max_examples=60, deadline=None)
@given(
    routing=routings(),
    requests=st.lists(st.tuples(st.integers(1, 65_536), st.integers(0, 65_536), st.floats(0, 0.999999)),
                      min_size=1, max_size=60),
)  # fmt: skip
def test_the_router_file_routes_every_request_as_the_planners_routing(routing: Routing, requests) -> None:
    long_context = 65_536
    names = routing.pool_names
    pools = [_pool(n, c) for n, c in zip(names, routing.context_tokens(long_context), strict=True)]
    text = deploy.router_yaml(_context(routing, pools), deploy.ExportOptions())
    config = router_from_document(yaml.safe_load(text), "router test")
    assert [p.max_budget_tokens for p in config.pools] == list(routing.context_tokens(long_context))
    prompts = np.array([p for p, _, _ in requests])
    outputs = np.array([o for _, o, _ in requests])
    coins = np.array([c for _, _, c in requests])
    totals = prompts + outputs
    index, new_inputs, _ = routing.route(totals, prompts, outputs, coins)
    again, _, _ = config.routing.route(totals, prompts, outputs, coins)
    assert list(again) == list(index)  # the file encodes the same Routing
    for k, (prompt, output, coin) in enumerate(requests):
        pool, prompt_after = config.route(prompt, output, coin)  # the rule, from the file's own numbers
        compressed = new_inputs[k] != prompt
        if totals[k] > long_context and not compressed:
            assert pool is None  # longer than every pool's context: rejected (no instance can hold it)
        else:
            assert pool == names[index[k]] and prompt_after == new_inputs[k]


def test_the_router_file_of_the_readme_plan_reads_back(readme_plan: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["export", "--plan", str(readme_plan), "--to", "router", "--output-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == f"wrote {(tmp_path / 'router.yaml').resolve()}\n"
    config = read_router(tmp_path / "router.yaml")
    plan = read_plan(readme_plan)
    assert config.routing == plan.fleet.routing
    short, long = plan.fleet.pools
    assert [(p.name, p.max_budget_tokens, p.instances, p.endpoint) for p in config.pools] == [
        ("short", 4096, short.instances, "http://fleetopt-short:8000"),
        ("long", 65536, long.instances, "http://fleetopt-long:8000"),
    ]
    # a 4,600-token prompt with 200 output tokens is in the C&R band (4,096, ⌊γ·4,096⌋] and needs a
    # 15% cut (within the 20% cap): compressed; a 4,800-token one without max_tokens goes long
    assert plan.fleet.routing.band_top_tokens >= 4800
    assert config.route(4600, 200, coin=0.5) == ("short", 3896)
    assert config.route(4800, None, coin=0.5) == ("long", 4800)
    assert config.route(70_000, 10, coin=0.5) == (None, 70_000)


def test_a_router_file_that_disagrees_with_itself_is_refused() -> None:
    routing = Routing((4096,), 1.5, 1.0)
    context = _context(routing, [_pool("short", 4096), _pool("long", 65536)])
    document = yaml.safe_load(deploy.router_yaml(context, deploy.ExportOptions()))
    document["compress_and_route"]["up_to_budget_tokens"] = 7000
    with pytest.raises(
        Exception, match=r"up_to_budget_tokens = 7000 is invalid; expected ⌊gamma × above_budget"
    ):
        router_from_document(document, "router r.yaml")


# --- files, errors, plan --export --------------------------------------------------------------------


def test_output_dir_gets_every_file_with_the_umasks_modes(readme_plan: Path, tmp_path: Path) -> None:
    out = tmp_path / "deploy"
    old = os.umask(0o022)
    try:
        result = runner.invoke(
            app,
            ["export", "--plan", str(readme_plan), "--to", "vllm", "--to", "router", "--to", "kubernetes",
             "--keda", "--to", "markdown", "-o", str(out)],
        )  # fmt: skip
        os.umask(0o077)
        private = runner.invoke(
            app, ["export", "--plan", str(readme_plan), "--to", "router", "-o", str(tmp_path / "p")]
        )
    finally:
        os.umask(old)
    assert result.exit_code == 0 and private.exit_code == 0, result.output + private.output
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "keda.yaml",
        "kubernetes.yaml",
        "plan.md",
        "router.yaml",
        "vllm-long.sh",
        "vllm-short.sh",
    ]
    assert {stat.S_IMODE(p.stat().st_mode) for p in out.iterdir()} == {0o644}
    assert stat.S_IMODE((tmp_path / "p" / "router.yaml").stat().st_mode) == 0o600


def test_plan_output_respects_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        result = runner.invoke(app, ["plan", "--cdf", "azure-2023-conv", "--slo", "1s", "--rate", "50",
                                     "-o", str(tmp_path / "plan.json")])  # fmt: skip
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE((tmp_path / "plan.json").stat().st_mode) == 0o644


def test_export_never_writes_over_its_input(readme_plan: Path, tmp_path: Path) -> None:
    plan = tmp_path / "router.yaml"
    plan.write_text(readme_plan.read_text())
    result = runner.invoke(app, ["export", "--plan", str(plan), "--to", "router", "-o", str(tmp_path)])
    assert result.exit_code == 1
    assert (
        result.stderr == f"Error: --output-dir {tmp_path}: router.yaml would replace the input file {plan}\n"
    )
    assert plan.read_text() == readme_plan.read_text()


def test_a_failed_write_changes_nothing(readme_plan: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = runner.invoke(app, ["export", "--plan", str(readme_plan), "--to", "vllm", "-o", str(blocker)])
    assert result.exit_code == 2  # click refuses a file where a folder is expected
    assert blocker.read_text() == "x"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--to", "router", "--keda"],
         "Error: --keda: ScaledObjects scale the Kubernetes Deployments; add --to kubernetes\n"),
        (["--to", "kubernetes", "--name-prefix", "Fleet_Opt"],
         "Error: --name-prefix: 'Fleet_Opt' is not a Kubernetes name: lowercase letters, digits and '-', "
         "starting with a letter, at most 56 characters\n"),
        (["--to", "kubernetes", "--keda", "--burst-headroom", "lots"],
         "Error: --burst-headroom: 'lots' is not a number or percentage (e.g. 10% or 0.1)\n"),
    ],
)  # fmt: skip
def test_bad_export_options_are_one_line(readme_plan: Path, arguments, message) -> None:
    result = runner.invoke(app, ["export", "--plan", str(readme_plan), *arguments])
    assert result.exit_code == 1
    assert result.stderr == message
    assert result.stdout == ""


def test_a_plan_whose_profile_is_gone_or_changed_is_refused(readme_plan: Path, tmp_path: Path) -> None:
    document = yaml.safe_load(readme_plan.read_text())
    for role in ("short", "long"):
        document["inputs"]["profiles"][role]["serving_name"] = "my-own-profile"
    for pool in document["best"]["pools"].values():
        pool["serving_profile"] = "my-own-profile"
    moved = tmp_path / "plan.yaml"
    moved.write_text(dumps(document, "yaml"))
    result = runner.invoke(app, ["export", "--plan", str(moved), "--to", "vllm"])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"Error: plan {moved}: the plan's serving profile 'my-own-profile' is not on the profile path ("
    )
    assert result.stderr.endswith("pass the folder it is in with --profiles-dir\n")
    # the same profile, now at tensor parallelism 4: the plan's instances no longer describe it
    serving = (bundled_dir("profiles") / "serving" / "llama-3.1-70b-fp8-h100-80gb-tp8-vllm.yaml").read_text()
    (tmp_path / "serving").mkdir()
    (tmp_path / "serving" / "my-own-profile.yaml").write_text(
        serving.replace("tensor_parallel: 8", "tensor_parallel: 4")
    )
    result = runner.invoke(
        app, ["export", "--plan", str(moved), "--to", "vllm", "--profiles-dir", str(tmp_path)]
    )
    assert result.exit_code == 1
    assert "now gives tensor parallel size 4, the plan was made with 8: re-run fleetopt plan" in result.stderr


def test_plan_export_prints_or_writes_the_export(tmp_path: Path) -> None:
    base = ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000", "--b-short", "4096"]
    printed = runner.invoke(app, [*base, "--export", "vllm"], env={"COLUMNS": "100"})
    assert printed.exit_code == 0, printed.output
    assert "Best fleet:" in printed.stdout and printed.stdout.count("vllm serve ") == 2
    written = runner.invoke(
        app, [*base, "--export", "router", "--export", "markdown", "--output-dir", str(tmp_path)]
    )
    assert written.exit_code == 0, written.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.md", "router.yaml"]
    assert read_router(tmp_path / "router.yaml").routing.boundaries_tokens == (4096,)
    as_json = runner.invoke(app, [*base, "--export", "router", "--format", "json"])
    assert as_json.exit_code == 2
    assert "--export with --format json needs --output-dir" in as_json.stderr


def test_markdown_summary_states_the_plan(readme_plan: Path) -> None:
    result = runner.invoke(app, ["export", "--plan", str(readme_plan), "--to", "markdown"])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith("### fleetopt plan — azure-2023 at 1,000 req/s, P99 TTFT ≤ 500.0 ms\n")
    short, long = read_plan(readme_plan).fleet.pools
    gpus = (short.instances + long.instances) * 8
    assert f"**{gpus:,} GPUs** in {short.instances + long.instances} instances" in text
    assert f"| short | {short.instances} × 8 | 4,096 | {short.slots_per_instance} |" in text
    assert f"| long | {long.instances} × 8 | 65,536 | {long.slots_per_instance} |" in text
    assert "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|" in text
    assert "long pool: outside where the model was shown to hold" in text  # the warnings travel with it


def test_a_three_pool_plan_exports_every_pool(tmp_path: Path) -> None:
    plan_path = tmp_path / "plan.yaml"
    result = runner.invoke(
        app,
        [
            "plan",
            "--cdf",
            "azure-2023",
            "--slo",
            "1s",
            "--rate",
            "2000",
            "--pools",
            "3",
            "-o",
            str(plan_path),
        ],
    )
    assert result.exit_code == 0, result.output
    plan = read_plan(plan_path)
    assert [p.name for p in plan.fleet.pools] == ["pool-1", "pool-2", "pool-3"]
    result = runner.invoke(
        app,
        [
            "export",
            "--plan",
            str(plan_path),
            "--to",
            "router",
            "--to",
            "kubernetes",
            "-o",
            str(tmp_path / "d"),
        ],
    )
    assert result.exit_code == 0, result.output
    manifests = [m for m in yaml.safe_load_all((tmp_path / "d" / "kubernetes.yaml").read_text()) if m]
    for manifest in manifests:
        _validate(manifest)
    deployments = {m["metadata"]["name"]: m for m in manifests if m["kind"] == "Deployment"}
    assert {name: d["spec"]["replicas"] for name, d in deployments.items()} == {
        f"fleetopt-{p.name}": p.instances for p in plan.fleet.pools
    }
    config = read_router(tmp_path / "d" / "router.yaml")
    assert config.routing == plan.fleet.routing
    assert [p.max_budget_tokens for p in config.pools] == [p.context_tokens for p in plan.fleet.pools]


def test_histogram_buckets_add_the_plans_edges_to_vllms(readme_plan: Path) -> None:
    result = runner.invoke(app, ["export", "--plan", str(readme_plan), "--to", "vllm", "--histogram-buckets"])
    assert result.exit_code == 0, result.output
    short, long = (_flags(c[3:]) for c in _commands(result.stdout))
    for flags, context in ((short, 4096), (long, 65536)):
        buckets = json.loads(flags["--custom-histogram-buckets"])
        assert set(buckets) == {"request_tokens", "time_to_first_token"}  # vLLM's bucket-family keys
        for edges in buckets.values():  # what vLLM's validator demands: positive, strictly increasing
            assert all(0 < a < b for a, b in zip(edges, edges[1:], strict=False))
        assert 0.5 in buckets["time_to_first_token"] and buckets["request_tokens"][-1] == context
        assert {1, 2, 5, 1000, 2000} <= set(buckets["request_tokens"])  # vLLM's 1-2-5 series is kept
    routing = read_plan(readme_plan).fleet.routing
    edges = set(json.loads(long["--custom-histogram-buckets"])["request_tokens"])
    assert {routing.boundaries_tokens[0], routing.band_top_tokens} <= edges  # B and ⌊γB⌋


def test_an_amd_pool_asks_for_amd_gpus_and_a_rocm_image(tmp_path: Path) -> None:
    plan_path = tmp_path / "plan.yaml"
    serving = "qwen3-235b-a22b-mi300x-tp8"
    result = runner.invoke(
        app,
        [
            "plan",
            "--cdf",
            "azure-2023",
            "--slo",
            "2s",
            "--rate",
            "100",
            "--serving",
            serving,
            "-o",
            str(plan_path),
        ],
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["export", "--plan", str(plan_path), "--to", "kubernetes"])
    assert result.exit_code == 1  # the long pool's 65,536 tokens are beyond Qwen3's 40,960
    assert "--max-model-len 65,536 is beyond its model's 40,960-token context" in result.output
    result = runner.invoke(
        app, ["export", "--plan", str(plan_path), "--to", "kubernetes", "--allow-long-context"]
    )
    assert result.exit_code == 0, result.output
    for manifest in (m for m in yaml.safe_load_all(result.stdout) if m):
        _validate(manifest)
        if manifest["kind"] == "Deployment":
            pod = manifest["spec"]["template"]["spec"]
            (container,) = pod["containers"]
            assert pod["nodeSelector"] == {"amd.com/gpu.product-name": "AMD_Instinct_MI300X"}
            long = "VLLM_ALLOW_LONG_MAX_MODEL_LEN" in {e["name"] for e in container["env"]}
            assert long == (manifest["metadata"]["name"] == "fleetopt-long")
            assert container["resources"]["limits"] == {"amd.com/gpu": 8}
            assert container["args"][0] == "Qwen/Qwen3-235B-A22B-FP8"  # an FP8 checkpoint: no --quantization
            assert "--quantization" not in container["args"]
    assert (
        "mi300x: vllm/vllm-openai:v0.33.0 is vLLM's CUDA image; give a ROCm build of vLLM with --image"
        in (result.stderr)
    )


def test_the_papers_profile_gets_its_block_budget_and_a_token_budget_vllm_accepts(tmp_path: Path) -> None:
    plan_path = tmp_path / "plan.yaml"
    args = ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000", "--service-model", "fleet-sim",
            "--serving", "llama-3-70b-a100-80gb-tp8", "-o", str(plan_path)]  # fmt: skip
    assert runner.invoke(app, args).exit_code == 0
    result = runner.invoke(app, ["export", "--plan", str(plan_path), "--to", "vllm", "--allow-long-context"])
    assert result.exit_code == 0, result.output
    plan = read_plan(plan_path)
    for command, pool in zip(_commands(result.stdout), plan.fleet.pools, strict=True):
        flags = _flags(command[3:])
        assert int(flags["--num-gpu-blocks-override"]) == 65_536  # the papers' KV budget (FACTS §1)
        assert "--gpu-memory-utilization" not in flags
        # vLLM requires max_num_batched_tokens ≥ max_num_seqs (vllm/config/scheduler.py)
        assert int(flags["--max-num-batched-tokens"]) == max(512, pool.slots_per_instance)
    short = plan.fleet.pools[0]
    if short.slots_per_instance > 512:
        assert (
            f"raised from the profile's 512 to max_num_seqs = {short.slots_per_instance:,}" in result.stdout
        )
    assert "--max-model-len 65,536 is beyond the model's 8,192 tokens (--allow-long-context)" in result.stdout
    assert "\nexport VLLM_ALLOW_LONG_MAX_MODEL_LEN=1\nvllm serve" in result.stdout


# --- vLLM versions -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["0.11.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_every_flag_written_is_one_the_chosen_vllm_release_defines(readme_plan: Path, version: str) -> None:
    result = runner.invoke(
        app,
        [
            "export",
            "--plan",
            str(readme_plan),
            "--to",
            "vllm",
            "--to",
            "kubernetes",
            "--vllm-version",
            version,
        ],
    )
    assert result.exit_code == 0, result.output
    defined = vllm_flags(version)
    for command in _commands(result.stdout.split("---", 1)[0]):
        flags = [word for word in command if word.startswith("--")]
        assert set(flags) <= defined, set(flags) - defined
        # a plan without prefix caching turns vLLM's default off, in a form the release parses
        assert vllm_parser(version).parse_args(command[2:]).enable_prefix_caching is False
        # --custom-histogram-buckets came with 0.32, --shutdown-timeout (a drain on SIGTERM) with 0.30
        assert ("--custom-histogram-buckets" in flags) == ("--custom-histogram-buckets" in defined)
        assert ("--shutdown-timeout" in flags) == ("--shutdown-timeout" in defined)
    deployment = next(
        m for m in yaml.safe_load_all(result.stdout.split("---", 1)[1]) if m and m["kind"] == "Deployment"
    )
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == f"vllm/vllm-openai:v{version}"


def test_a_flag_the_release_cannot_parse_is_an_error_and_the_version_list_is_given(readme_plan: Path) -> None:
    base = ["export", "--plan", str(readme_plan), "--to", "vllm"]
    result = runner.invoke(app, [*base, "--vllm-version", "0.11", "--histogram-buckets"])
    assert result.exit_code == 1
    assert "vLLM 0.11 has no --custom-histogram-buckets (it is in 0.32 and later)" in result.output
    result = runner.invoke(app, [*base, "--vllm-version", "0.20"])
    assert result.exit_code == 1
    assert "use one of 0.11, 0.30, 0.31, 0.32, 0.33" in result.output
    result = runner.invoke(app, [*base, "--image", "vllm/vllm-openai:v0.11.0", "--vllm-version", "0.33"])
    assert result.exit_code == 1 and "is vLLM 0.11, but the flags are for vLLM 0.33" in result.output
    # an image tagged with a known release gives the version: no --custom-histogram-buckets for 0.11
    result = runner.invoke(app, [*base, "--image", "vllm/vllm-openai:v0.11.0"])
    assert result.exit_code == 0 and "--custom-histogram-buckets" not in result.stdout


# --- monitoring ----------------------------------------------------------------------------------


def _monitoring(plan: Path, *options: str) -> tuple[list[dict], dict, str]:
    result = runner.invoke(
        app, ["export", "--plan", str(plan), "--to", "monitoring", "-o", str(plan.parent / "m"), *options]
    )
    assert result.exit_code == 0, result.output
    out = plan.parent / "m"
    manifests = [m for m in yaml.safe_load_all((out / "monitoring.yaml").read_text()) if m]
    return manifests, json.loads((out / "grafana-dashboard.json").read_text()), result.stderr


def _promtool(*arguments: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["promtool", *arguments], cwd=cwd, capture_output=True, text=True, timeout=60)


PROMTOOL = shutil.which("promtool")


def _series(name: str, pod: str, values: str, **labels: str) -> dict:
    text = ",".join([f'pod="{pod}"', *(f'{k}="{v}"' for k, v in labels.items())])
    return {"series": f"{name}{{{text}}}", "values": values}


def _pool_series(
    pod: str, *, late: float, kv: float, preempted: float, rate: float, itl_s: float
) -> list[dict]:
    """One pod's vLLM series for 30 minutes at one-minute steps: ``rate`` requests/s, of which a
    ``late`` share past the 500 ms SLO, KV usage ``kv``, ``preempted`` preemptions per request."""
    per_minute = rate * 60
    within = per_minute * (1 - late)
    return [
        _series("vllm:time_to_first_token_seconds_bucket", pod, f"0+{within:g}x30", le="0.5"),
        _series("vllm:time_to_first_token_seconds_bucket", pod, f"0+{per_minute:g}x30", le="+Inf"),
        _series("vllm:time_to_first_token_seconds_count", pod, f"0+{per_minute:g}x30"),
        _series("vllm:request_success_total", pod, f"0+{per_minute:g}x30", finished_reason="stop"),
        _series("vllm:num_preemptions_total", pod, f"0+{per_minute * preempted:g}x30"),
        _series("vllm:kv_cache_usage_perc", pod, f"{kv:g}x30"),
        _series("vllm:inter_token_latency_seconds_sum", pod, f"0+{per_minute * 100 * itl_s:g}x30"),
        _series("vllm:inter_token_latency_seconds_count", pod, f"0+{per_minute * 100:g}x30"),
    ]


@pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian's prometheus package) is not installed")
def test_the_plans_alerts_pass_promtool_and_fire_on_a_breach_only(readme_plan: Path, tmp_path: Path) -> None:
    manifests, _, _ = _monitoring(readme_plan)
    for manifest in manifests:
        _validate(manifest)
    monitor, rule = manifests
    assert monitor["kind"] == "PodMonitor" and rule["kind"] == "PrometheusRule"
    plan = read_plan(readme_plan)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    checked = _promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    short, long = plan.fleet.pools
    document = plan.document["best"]["pools"]
    short_rate = document["short"]["arrival_rate_per_s"]
    # the short pool breaks every promise (5% late, KV 95% > the 85% cap, 3% preempted, 1.2× the
    # sized rate, 150 ms per token > 100 ms); the long pool keeps them all (0.5% late, 50% KV, …)
    breaking = _pool_series("fleetopt-short-6d4cf56db7-x2x4k", late=0.05, kv=0.95, preempted=0.03,
                            rate=1.2 * short_rate, itl_s=0.15)  # fmt: skip
    healthy = _pool_series("fleetopt-long-7b9c6f5d48-abcde", late=0.005, kv=0.5, preempted=0.001,
                           rate=0.5 * document["long"]["arrival_rate_per_s"], itl_s=0.03)  # fmt: skip
    names = ["FleetoptTTFTAboveSLO", "FleetoptTPOTAboveLimit", "FleetoptKVCacheAboveCap",
             "FleetoptPreemptions", "FleetoptRateAbovePlan"]  # fmt: skip
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": breaking + healthy,
                "alert_rule_test": [
                    {
                        "eval_time": "20m",
                        "alertname": name,
                        "exp_alerts": [
                            {
                                "exp_labels": {
                                    "severity": "critical" if "TTFT" in name else "warning",
                                    "fleetopt_pool": "short",
                                },
                                "exp_annotations": {"summary": _summary(rule, "fleetopt-short", name)},
                            }
                        ],
                    }  # fmt: skip
                    for name in names
                ],
            }
        ],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests))
    tested = _promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    # the same test fails if the breaking pool's alerts are expected not to fire: promtool's verdict counts
    tests["tests"][0]["alert_rule_test"][0]["exp_alerts"] = []
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests))
    assert _promtool("test", "rules", "tests.yaml", cwd=tmp_path).returncode != 0
    assert short.name == "short" and long.name == "long"


def _summary(rule: dict, group: str, alert: str) -> str:
    (found,) = [
        r for g in rule["spec"]["groups"] if g["name"] == group for r in g["rules"] if r["alert"] == alert
    ]
    return found["annotations"]["summary"]


def test_the_dashboard_draws_planned_against_observed_for_each_pool(readme_plan: Path) -> None:
    _, board, _ = _monitoring(readme_plan)
    plan = read_plan(readme_plan)
    rows = [p["title"] for p in board["panels"] if p["type"] == "row"]
    assert rows == [f"{p.name} pool" for p in plan.fleet.pools]
    titles = {p["title"] for p in board["panels"] if p["type"] != "row"}
    assert {
        "requests/s",
        "P99 TTFT",
        "KV cache usage",
        "requests waiting",
        "preemptions per request",
    } <= titles
    ttft = next(p for p in board["panels"] if p["title"] == "P99 TTFT")
    assert [t["expr"] for t in ttft["targets"]][1] == "vector(0.5)"  # the SLO beside the observed P99


def test_an_slo_between_vllms_edges_is_counted_at_the_next_edge_with_a_note() -> None:
    from fleetopt.render import monitoring
    from fleetopt.render.export import _ttft_edge_note

    context = _context(Routing((4096,), 1.0, 0.0), [_pool("short", 4096), _pool("long", 65536)], slo_s=0.6)
    old = deploy.ExportOptions(vllm_version="0.31.0")  # no --custom-histogram-buckets: vLLM's own edges
    expr = monitoring.rule_groups(context, old, 0.85)[0]["rules"][0]["expr"]
    assert 'le="0.75"' in expr and "next edge, 0.75 s" in _ttft_edge_note(context, old)
    new = deploy.ExportOptions()  # 0.33: the SLO is added as an edge
    assert 'le="0.6"' in monitoring.rule_groups(context, new, 0.85)[0]["rules"][0]["expr"]
    assert _ttft_edge_note(context, new) is None


# --- prefix caching --------------------------------------------------------------------------------

SESSIONS = Path(__file__).parent / "data" / "logs" / "mooncake-sessions.jsonl"
#: Small plans of the synthetic session trace (docs/validation.md, "Prefix caching"): one boundary and
#: γ = 1 given, so that each plans in a fraction of a second.
CACHE_PLAN = ["plan", "--cdf", str(SESSIONS), "--log-format", "mooncake", "--slo", "10s", "--rate", "100",
              "--long-context", "131072", "--b-short", "32768", "--gamma", "1"]  # fmt: skip
CACHE_SETTINGS = {
    "off": ["--prefix-caching", "off"],
    "hit-rate:0": ["--prefix-caching", "hit-rate:0"],
    "hit-rate:0.3": ["--prefix-caching", "hit-rate:0.3"],
    "auto-random": ["--prefix-caching", "auto", "--prefix-dispatch", "random"],
    "auto-affinity": ["--prefix-caching", "auto", "--prefix-dispatch", "affinity"],
}


@pytest.fixture(scope="module")
def cache_plans(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("cache-plans")
    plans = {}
    for name, setting in CACHE_SETTINGS.items():
        plans[name] = folder / f"{name}.yaml"
        result = runner.invoke(app, [*CACHE_PLAN, *setting, "-o", str(plans[name])])
        assert result.exit_code == 0, result.output
    return plans


def _assumed_hit_rates(plan: Path) -> dict[str, float]:
    """Each pool's hit rate as the plan file states it (0 for a pool it gives none, and without the
    section)."""
    document = yaml.safe_load(plan.read_text())
    section = document.get("prefix_caching") or {"pools": {}}
    return {name: section["pools"].get(name, {}).get("hit_rate", 0.0) for name in document["best"]["pools"]}


@pytest.mark.parametrize("setting", list(CACHE_SETTINGS))
def test_vllm_caches_prefixes_exactly_where_the_plan_charged_hits(cache_plans, setting) -> None:
    plan = cache_plans[setting]
    rates = _assumed_hit_rates(plan)
    assert (max(rates.values()) > 0) == (setting in ("hit-rate:0.3", "auto-random", "auto-affinity"))
    result = runner.invoke(app, ["export", "--plan", str(plan), "--to", "vllm"])
    assert result.exit_code == 0, result.output
    commands = _commands(result.stdout)
    headers = [line for line in result.stdout.splitlines() if line.startswith("# Prefix caching")]
    parser = vllm_parser(deploy.DEFAULT_VLLM_VERSION)  # each release: test_every_flag_written_is_one_…
    assert len(commands) == len(headers) == len(rates) == 2
    for command, header, (name, rate) in zip(commands, headers, rates.items(), strict=True):
        parsed = parser.parse_args(command[2:])  # the release's own flags, as its parser declares them
        # explicit both ways: vLLM caches prefixes by default since 0.8 (V1)
        assert parsed.enable_prefix_caching is (rate > 0), (name, rate)
        assert ("--enable-prefix-caching" in command) == (rate > 0)
        assert ("--no-enable-prefix-caching" in command) == (rate == 0)
        assert header.startswith("# Prefix caching on" if rate > 0 else "# Prefix caching off")
        if rate > 0:
            assert f"charged {rate:.1%} of this pool's prompt tokens as cache hits" in header


def test_the_release_parser_refuses_what_vllm_refuses() -> None:
    parser = vllm_parser("0.33.0")
    assert parser.parse_args(["m", "--no-enable-prefix-caching"]).enable_prefix_caching is False
    bad_lines = (["m", "--enable-prefix-caching", "yes"], ["m", "--max-model-len"],
                 ["m", "--no-max-model-len"], ["m", "--prefix-aware-routing"])  # fmt: skip
    for bad in bad_lines:
        with pytest.raises((argparse.ArgumentError, SystemExit)):
            parser.parse_args(bad)


@pytest.mark.parametrize("setting", list(CACHE_SETTINGS))
def test_the_router_file_names_the_dispatch_the_hit_rates_assumed(cache_plans, setting) -> None:
    from fleetopt.io.documents import json_schema

    plan = cache_plans[setting]
    result = runner.invoke(app, ["export", "--plan", str(plan), "--to", "router"])
    assert result.exit_code == 0, result.output
    document = yaml.safe_load(result.stdout)
    config = router_from_document(document, "router.yaml")  # fleetopt's reader: no unknown key
    assert config.routing == read_plan(plan).fleet.routing
    jsonschema.Draft202012Validator(json_schema("router")).validate(document)  # fleetopt schema router
    dispatch = document["dispatch"]
    plan_document = yaml.safe_load(plan.read_text())
    if setting == "auto-affinity":
        assert dispatch["policy"] == "prefix-affinity"
        assert dispatch["sized_for"] == plan_document["dispatch"] == "least-loaded"
        assert dispatch["load_bound"] == 1.25  # the bound the cache simulation applied (fleetopt.core.prefix)
        # the real routers' settings, as their sources name them
        assert "--routing-logic prefixaware" in dispatch["within_pool"]
        assert "prefix-cache-scorer" in dispatch["within_pool"]
        assert "prefix-affinity dispatch within each pool" in result.stderr
    else:  # cache-oblivious: the plan's own policy, as without caching
        assert dispatch["policy"] == plan_document["dispatch"] == "least-loaded"
        assert {"load_bound", "sized_for"}.isdisjoint(dispatch)
        assert "prefix-affinity" not in result.stderr
    if setting == "off":
        assert "prefix_cache" not in dispatch
        return
    cache = dispatch["prefix_cache"]
    assert cache["hit_rates"] == _assumed_hit_rates(plan)
    assert cache["dispatch"] == {"auto-random": "random", "auto-affinity": "affinity"}.get(setting)
    assert cache["mode"] == ("auto" if setting.startswith("auto") else "hit-rate")
    assert cache["block_size_tokens"] == (512 if setting.startswith("auto") else None)


def test_a_router_file_with_an_unknown_dispatch_field_is_refused(cache_plans) -> None:
    result = runner.invoke(app, ["export", "--plan", str(cache_plans["auto-affinity"]), "--to", "router"])
    document = yaml.safe_load(result.stdout)
    document["dispatch"]["prefix_cache"]["hit_rate"] = 0.5  # a misspelt field
    with pytest.raises(ValidationError, match="hit_rate"):
        router_from_document(document, "router.yaml")
    document = yaml.safe_load(result.stdout)
    document["dispatch"]["prefix_cache"]["hit_rates"]["short"] = 1.5
    with pytest.raises(ValidationError, match="hit_rates"):
        router_from_document(document, "router.yaml")


@pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian's prometheus package) is not installed")
def test_the_prefix_cache_alert_fires_below_the_planned_hit_rate_only(cache_plans, tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    shutil.copy(cache_plans["auto-affinity"], plan)
    rates = _assumed_hit_rates(plan)
    manifests, _, _ = _monitoring(plan)
    rule = manifests[1]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    checked = _promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    def cache_series(pod: str, hit_rate: float) -> list[dict]:
        queried = 600_000  # prompt tokens a minute
        return [
            _series("vllm:prefix_cache_queries_total", pod, f"0+{queried}x30"),
            _series("vllm:prefix_cache_hits_total", pod, f"0+{queried * hit_rate:g}x30"),
        ]

    # the short pool's caches hit 0.9 × the planned rate, the long pool's 1.02 ×
    series = cache_series("fleetopt-short-6d4cf56db7-x2x4k", 0.9 * rates["short"])
    series += cache_series("fleetopt-long-7b9c6f5d48-abcde", 1.02 * rates["long"])
    name = "FleetoptPrefixCacheHitsBelowPlan"
    expected = [
        {
            "exp_labels": {"severity": "warning", "fleetopt_pool": "short"},
            "exp_annotations": {"summary": _summary(rule, "fleetopt-short", name)},
        }
    ]
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [{"eval_time": "20m", "alertname": name, "exp_alerts": expected}],
            }
        ],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests))
    tested = _promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert f"the {rates['short']:.1%} the plan charged as cached" in expected[0]["exp_annotations"]["summary"]
    # the dashboard draws each pool's observed share against the planned one
    _, board, _ = _monitoring(plan)
    drawn = [p for p in board["panels"] if p["title"].startswith("prefix-cache hits")]
    assert [t["expr"] for p in drawn for t in p["targets"]][1::2] == [
        f"vector({rates[name]:.6g})" for name in ("short", "long")
    ]
    # without prefix caching in the plan there is no such alert
    off = tmp_path / "off.yaml"
    shutil.copy(cache_plans["off"], off)
    manifests, _, _ = _monitoring(off)
    assert name not in {r["alert"] for g in manifests[1]["spec"]["groups"] for r in g["rules"]}


def test_a_hit_rate_for_a_pool_the_fleet_lacks_changes_no_pool(cache_plans) -> None:
    """A hand-edited ``prefix_caching`` section: only the fleet's own pools are read from it."""
    document = yaml.safe_load(cache_plans["auto-affinity"].read_text())
    pools = document["prefix_caching"]["pools"]
    pools["ghost"] = pools.pop("long")
    run = export_plan(plan_file_from_document(document, "plan edited.yaml"), ["vllm", "router"])
    parser = vllm_parser("0.33.0")
    short, long = (parser.parse_args(_commands(run.files[f"vllm-{n}.sh"])[0][2:]) for n in ("short", "long"))
    assert short.enable_prefix_caching is True and long.enable_prefix_caching is False
    router = yaml.safe_load(run.files["router.yaml"])
    assert router["dispatch"]["prefix_cache"]["hit_rates"] == {"short": pools["short"]["hit_rate"]}
