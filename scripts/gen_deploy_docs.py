"""Regenerate the figures and outputs quoted in docs/deploy.md from the code, so they cannot drift.

    python scripts/gen_deploy_docs.py                 # rewrite docs/deploy.md (all parts)
    python scripts/gen_deploy_docs.py --check         # exit 1 if a part is out of date
    python scripts/gen_deploy_docs.py --check --fast  # only the README plan's parts (the tests run this)
    python scripts/gen_deploy_docs.py --gateway       # also re-run the LiteLLM walkthrough (needs the
                                                      # gateway extra; kept as it is otherwise)

Each generated part of the page sits between ``<!-- generated: NAME -->`` and ``<!-- /generated -->``
(invisible in rendered markdown). The README plan's parts come from ``fleetopt plan --cdf azure-2023
--slo 500ms --rate 1000`` and its export, run here in a scratch folder so the files are named as the
page names them; the scheduled example (``days.py``, two days built from the bundled hour, 718,908
requests) is the slow part.
"""

from __future__ import annotations

import csv
import datetime
import gzip
import math
import os
import random
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import yaml
from typer.testing import CliRunner

from fleetopt.cli import app
from fleetopt.io.units import fmt_seconds

DOC = Path(__file__).resolve().parents[1] / "docs" / "deploy.md"
MARK = re.compile(r"<!-- generated: (?P<name>[\w-]+) -->(?P<body>.*?)<!-- /generated -->", re.S)
README_PLAN = ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000"]
EXPORT = [
    "--to",
    "vllm",
    "--to",
    "router",
    "--to",
    "kubernetes",
    "--keda",
    "--to",
    "monitoring",
    "--to",
    "markdown",
]
runner = CliRunner()


def _run(arguments: list[str]) -> tuple[str, str]:
    result = runner.invoke(app, arguments)
    if result.exit_code != 0:
        raise SystemExit(f"fleetopt {' '.join(arguments)} failed: {result.output}")
    return result.stdout, result.stderr


def _fence(language: str, text: str) -> str:
    return f"\n```{language}\n{text.rstrip()}\n```\n"


def _n(value: float) -> str:
    return f"{value:,.0f}"


def readme_plan_parts() -> dict[str, str]:
    """The parts of the page that quote the README plan and its export."""
    _run([*README_PLAN, "--output", "plan.yaml"])
    _, notes = _run(["export", "--plan", "plan.yaml", *EXPORT, "--output-dir", "deploy"])
    wrote, _ = _run(["export", "--plan", "plan.yaml", *EXPORT, "--output-dir", "deploy"])
    document = yaml.safe_load(Path("plan.yaml").read_text())
    best, inputs = document["best"], document["inputs"]
    short, long = best["pools"]["short"], best["pools"]["long"]
    basis = inputs["rate_basis"]
    parts: dict[str, str] = {}
    parts["export-output"] = _fence("text", notes + wrote)
    parts["plan-summary"] = (
        f"short pool {short['instances']} instances × {short['gpus_per_instance']} H100 at "
        f"{short['slots_per_instance']} slots and {_n(short['context_tokens'])} tokens, long pool "
        f"{long['instances']} × {long['gpus_per_instance']} at {long['slots_per_instance']} slots and "
        f"{_n(long['context_tokens'])} tokens, B_short = {_n(best['routing']['boundaries_tokens'][0])}, "
        f"γ = {best['gamma']:g}, sized for the log's busiest minute without its counting noise: "
        f"{_n(basis['sizing_rate_per_s'])} req/s"
    )
    parts["settings-table"] = _settings_table(short, long)
    parts["vllm-script"] = _fence("bash", Path("deploy/vllm-short.sh").read_text())
    parts["startup-check"] = (
        f"`Maximum concurrency for {_n(short['context_tokens'])} tokens per request: Nx` must show N ≥ "
        f"`--max-num-seqs` ({short['slots_per_instance']} here)"
    )
    parts["router-yaml"] = _fence("yaml", Path("deploy/router.yaml").read_text())
    _run(["export", "--plan", "plan.yaml", "--to", "kubernetes", "--namespace", "llm", "--output-dir", "ns"])
    deployment = Path("ns/kubernetes.yaml").read_text().split("---\n")[2]
    parts["deployment-yaml"] = _fence("yaml", deployment)
    parts["claim-yaml"] = _fence("yaml", Path("ns/kubernetes.yaml").read_text().split("---\n")[1])
    parts["pdb-yaml"] = _fence("yaml", Path("ns/kubernetes.yaml").read_text().split("---\n")[4])
    monitoring = Path("deploy/monitoring.yaml").read_text().split("---\n")
    parts["podmonitor-yaml"] = _fence("yaml", monitoring[1])
    rules = yaml.safe_load(monitoring[2])
    rules["spec"]["groups"] = rules["spec"]["groups"][:1]
    from fleetopt.io.yamlio import dump_yaml

    parts["rules-yaml"] = _fence(
        "yaml",
        dump_yaml(rules).replace("groups:\n", "groups:  # the short pool's; the long pool's alike\n", 1),
    )
    parts["keda-burst"] = _keda_burst(document)
    parts["keda-ceiling"] = (
        f"{math.ceil(1.25 * short['instances'] - 1e-9)} for the short pool, "
        f"{max(1, math.ceil(1.25 * long['instances'] - 1e-9))} for the long one"
    )
    _run([*README_PLAN, "--schedule", "1h", "--output", "plan-1h.yaml"])
    _, scheduled_notes = _run(["export", "--plan", "plan-1h.yaml", "--to", "kubernetes", "--keda"])
    window = yaml.safe_load(Path("plan-1h.yaml").read_text())["schedule"]["windows"][0]
    short_note = next(line for line in scheduled_notes.splitlines() if line.startswith("note: short:"))
    parts["schedule-1h"] = (
        f"(00:00–{_clock(window['end_s'])}, {window['instances']['short']} and {window['instances']['long']} "
        f"instances, the static fleet), and export keeps the static floor and says so (`{short_note}`)"
    )
    parts["markdown"] = _fence("markdown", Path("deploy/plan.md").read_text())
    return parts


#: The plan of docs/validation.md's session trace that "Prefix caching" exports (issue 32's command).
PREFIX_PLAN = ["plan", "--cdf", "tests/data/logs/mooncake-sessions.jsonl", "--log-format", "mooncake",
               "--slo", "10s", "--long-context", "131072", "--rate", "100", "--prefix-caching", "auto",
               "--prefix-dispatch", "affinity", "--output", "plan-cache.yaml"]  # fmt: skip
PREFIX_EXPORT = ["export", "--plan", "plan-cache.yaml", "--to", "vllm", "--to", "router",
                 "--output-dir", "cache"]  # fmt: skip


def prefix_parts() -> dict[str, str]:
    """A plan whose hit rates assumed prefix-affinity dispatch, exported: the lines of a pool's
    script about its prefix cache, the export's note and router.yaml's dispatch."""
    from fleetopt.io.yamlio import dump_yaml

    log = DOC.parents[1] / PREFIX_PLAN[2]
    _run([*PREFIX_PLAN[:2], str(log), *PREFIX_PLAN[3:]])
    wrote, notes = _run(PREFIX_EXPORT)
    script = Path("cache/vllm-short.sh").read_text().splitlines()
    text = f"$ fleetopt {' '.join(PREFIX_PLAN[:11])} \\\n    {' '.join(PREFIX_PLAN[11:])}\n"
    text += f"$ fleetopt {' '.join(PREFIX_EXPORT)}\n{notes}{wrote}"
    text += "$ grep -i prefix cache/vllm-short.sh\n" + "\n".join(
        line for line in script if "prefix" in line.lower()
    )
    router = yaml.safe_load(Path("cache/router.yaml").read_text())
    return {
        "prefix-export": _fence("text", text),
        "prefix-dispatch": _fence("yaml", dump_yaml({"dispatch": router["dispatch"]})),
    }


#: The walkthrough's loopback addresses (fixed, so the page's commands are the ones that ran).
GATEWAY_PORTS = {"short": 18001, "long": 18002}
PROXY_PORT = 14000
CR_PLAN = [*README_PLAN, "--compressibility", "1"]
GATEWAY_EXPORT = ["export", "--plan", "plan-cr.yaml", "--to", "litellm",
                  *(a for name, port in GATEWAY_PORTS.items() for a in ("--endpoint", f"{name}=http://127.0.0.1:{port}")),
                  "--output-dir", "deploy"]  # fmt: skip


def litellm_export_parts() -> dict[str, str]:
    """The plan that relies on compression, its header and its litellm.yaml (deterministic: the
    tests check them)."""
    report, _ = _run([*CR_PLAN, "--output", "plan-cr.yaml"])
    header = report[: report.index("Pools")].rstrip().splitlines()
    wrote, _ = _run(GATEWAY_EXPORT)
    text = f"$ fleetopt {' '.join(CR_PLAN[:-2])} \\\n    --compressibility 1 --output plan-cr.yaml\n"
    text += "\n".join(header) + "\n…\n"
    export = " ".join(GATEWAY_EXPORT[:5]) + " \\\n    " + " ".join(GATEWAY_EXPORT[5:9]) + " \\\n    "
    text += f"$ fleetopt {export}{' '.join(GATEWAY_EXPORT[9:])}\n{wrote}"
    return {
        "litellm-plan": _fence("text", text),
        "litellm-yaml": _fence("yaml", Path("deploy/litellm.yaml").read_text()),
    }


def _prose(tokens: int, count, skip: int = 0) -> str:
    """English prose of about ``tokens`` tokens: CPython's pydoc topics (stable for a Python release),
    whole sentences from the ``skip``-th one."""
    import pydoc_data.topics

    text = " ".join(" ".join(pydoc_data.topics.topics[k].split()) for k in sorted(pydoc_data.topics.topics))
    sentences = re.split(r"(?<=[.!?]) ", text)[skip:]
    kept: list[str] = []
    total = 0
    for sentence in sentences:
        total += count(sentence + " ")
        if total > tokens:
            break
        kept.append(sentence)
    return " ".join(kept)


def semantic_router_part() -> str:
    """The semantic-router export: refused for the plan that compresses and without
    --max-output-tokens, written for the README plan and checked by vLLM Semantic Router's own
    ``vllm-sr config validate`` (``--gateway``: it needs the package, as the tests do)."""
    import subprocess

    commands = [
        ["export", "--plan", "plan-cr.yaml", "--to", "semantic-router", "--max-output-tokens", "1024"],
        ["export", "--plan", "plan.yaml", "--to", "semantic-router"],
        ["export", "--plan", "plan.yaml", "--to", "semantic-router", "--max-output-tokens", "1024",
         "--output-dir", "deploy"],
    ]  # fmt: skip
    text = ""
    for arguments in commands:
        result = runner.invoke(app, arguments)
        text += f"$ fleetopt {' '.join(arguments)}\n{result.stdout}{result.stderr}"
    validator = Path(sys.executable).parent / "vllm-sr"
    done = subprocess.run(
        [str(validator), "config", "validate", "--config", "deploy/semantic-router.yaml"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"vllm-sr config validate failed: {done.stdout}{done.stderr}")
    text += f"$ vllm-sr config validate --config deploy/semantic-router.yaml\n{done.stdout.strip()}\n"
    return _fence("text", text)


def _rule(routing, prompt: int, max_tokens: int | None, label: str) -> str:
    """Where the planner's Routing sends a request (exact counts; coin 0, so a band request within
    the cap is compressed), in words; code is what the content gate keeps from compression."""
    import numpy as np

    if max_tokens is None:
        return "no `max_tokens`: long"
    index, inputs, _ = routing.route(*(np.array([v]) for v in (prompt + max_tokens, prompt, max_tokens, 0.0)))
    name = routing.pool_names[int(index[0])]
    if inputs[0] == prompt:
        return name
    if "source" in label:
        return f"band: compress to {int(inputs[0]):,}, {name} — but code is never cut: long"
    return f"band, cut {(prompt - inputs[0]) / prompt:.1%} ≤ 20%: compress to ≤ {int(inputs[0]):,}, {name}"


def gateway_parts() -> dict[str, str]:
    """The walkthrough on a real LiteLLM proxy (``--gateway``: needs ``pip install '.[gateway]'``):
    two mock vLLM pools on loopback, the exported litellm.yaml unchanged, real requests."""
    import inspect
    import json
    import json.decoder
    import secrets
    import urllib.request

    sys.path.insert(0, str(DOC.parents[1] / "tests"))
    from gateway_mocks import MockPool, litellm_tiktoken_cache, start_litellm, stop_process

    os.environ["TIKTOKEN_CACHE_DIR"] = litellm_tiktoken_cache()
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base")

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    parts = litellm_export_parts()
    parts["semantic-router-run"] = semantic_router_part()
    from fleetopt.io.plans import read_plan

    routing = read_plan(Path("plan-cr.yaml")).fleet.routing
    document = yaml.safe_load(Path("plan-cr.yaml").read_text())
    contexts = {name: pool["context_tokens"] for name, pool in document["best"]["pools"].items()}
    pools = [MockPool(name, contexts[name], count, 4).start(port) for name, port in GATEWAY_PORTS.items()]
    key = "sk-" + secrets.token_hex(16)
    served = yaml.safe_load(Path("deploy/litellm.yaml").read_text())["callback_settings"]["fleetopt"]["model"]

    def ask(content: str, max_tokens: int | None, stream: bool = False) -> str:
        body: dict = {"model": served, "messages": [{"role": "user", "content": content}]}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if stream:
            body["stream"] = True
        request = urllib.request.Request(
            f"{url}/v1/chat/completions", data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=60) as response:
            payload = response.read().decode()
        if not stream:
            return json.loads(payload)["choices"][0]["message"]["content"]
        chunks = [json.loads(line[6:]) for line in payload.splitlines() if line.startswith("data: {")]
        return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])

    code = inspect.getsource(json.decoder)
    code_text = code * 3
    cases = [
        ("prose", _prose(3_922, count, 400), 500, False),
        ("prose", _prose(5_990, count, 900), 500, False),
        ("prose, streamed", _prose(5_990, count, 900), 500, True),
        ("Python source", encoding.decode(encoding.encode(code_text)[:5_990]), 500, False),
        ("prose", _prose(3_922, count, 400), None, False),
        ("prose", _prose(6_700, count, 1_500), 500, False),
    ]
    rows = []
    try:
        proxy, url, _ = start_litellm(
            Path("deploy/litellm.yaml"), Path.cwd(), DOC.parents[1], key, port=PROXY_PORT
        )
        try:
            warm = [_prose(1_000 + 40 * k, count, 30 * k) for k in range(60)]
            warm_answers = [ask(text, 200) for text in warm]
            for label, text, max_tokens, stream in cases:
                prompt = count(text) + 4
                rule = _rule(routing, prompt, max_tokens, label)
                budget = (
                    "no `max_tokens`"
                    if max_tokens is None
                    else f"{prompt:,} + {max_tokens:,} = {prompt + max_tokens:,}"
                )
                rows.append(
                    f"| {label}, {prompt:,} tokens | {budget} | {rule} | `{ask(text, max_tokens, stream)}` |"
                )
        finally:
            stop_process(proxy)
    finally:
        for pool in pools:
            pool.stop()
    short = sum(a.startswith("pool=short") for a in warm_answers)
    table = [
        f"{len(warm)} prose requests of 1,000–3,400 tokens with `max_tokens` 200 first (the estimator "
        f"learns each answer's `usage.prompt_tokens`): {short} answered by the short pool. Then:",
        "",
        "| request (prompt tokens as the model counts them) | prompt + `max_tokens` | the plan's `Routing` "
        "| answered by |",
        "|---|---|---|---|",
        *rows,
    ]
    parts["litellm-run"] = "\n" + "\n".join(table) + "\n"
    return parts


def _clock(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


#: The rows of "What comes from where": setting, where it comes from, the README plan's value (a
#: template: {short_*} and {long_*} are the pools' figures).
SETTINGS = (
    ("model", "the model profile's `huggingface_id` (or `--model-id`)",
     "`meta-llama/Llama-3.1-70B-Instruct`"),
    ("`--tensor-parallel-size`", "the serving profile's `tensor_parallel` (GPUs per instance)",
     "{short_gpus_per_instance}"),
    ("`--max-model-len`", "the pool's context: its boundary B, the long context for the last pool",
     "{short_context_tokens:,} / {long_context_tokens:,}"),
    ("`--max-num-seqs`", "the planned slots per instance",
     "{short_slots_per_instance} / {long_slots_per_instance}"),
    ("`--max-num-batched-tokens`",
     "the serving profile's `prefill_chunk_tokens` (raised to `--max-num-seqs` if below it, the least vLLM "
     "accepts)", "8,192"),
    ("`--gpu-memory-utilization`", "the serving profile (memory-sized KV caches)", "0.9"),
    ("`--num-gpu-blocks-override`",
     "the serving profile's `kv_blocks` (block-sized KV caches: the papers' profiles)", "–"),
    ("`--block-size`", "the serving profile's `kv_block_tokens`", "16"),
    ("`--quantization fp8`",
     "serving FP8 weights from a 16-bit checkpoint (vLLM quantizes as it loads)", "yes"),
    ("`--kv-cache-dtype`", "a serving profile's FP8 KV cache (`fp8`, `fp8_e4m3`, `fp8_e5m2`)",
     "– (BF16: vLLM's `auto`)"),
    ("`--enable-prefix-caching`, `--no-enable-prefix-caching`",
     "on where the plan charged the pool prefix-cache hits (`plan --prefix-caching auto` or `hit-rate:F`), "
     "explicitly off otherwise: vLLM's default is on (see Prefix caching below)", "off / off"),
    ("replicas", "the planned instances", "{short_instances} / {long_instances}"),
    ("GPUs per pod", "tensor parallelism (`nvidia.com/gpu`; `amd.com/gpu` for MI-series GPUs)",
     "{short_gpus_per_instance}"),
)  # fmt: skip


def _settings_table(short: dict, long: dict) -> str:
    figures = {f"short_{k}": v for k, v in short.items()} | {f"long_{k}": v for k, v in long.items()}
    lines = ["| setting | from | in the README plan |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c.format(**figures)} |" for a, b, c in SETTINGS]
    return "\n" + "\n".join(lines) + "\n"


def _keda_burst(document: dict) -> str:
    """The KEDA threshold of the README plan's pools in words, from the plan's own figures."""
    from fleetopt.render.deploy import DeployPool, ExportContext, waiting_threshold

    slo = document["inputs"]["ttft_slo_s"]
    headrooms, turnovers, thresholds = [], [], []
    for pool in document["best"]["pools"].values():
        headroom = slo - (pool["p99_ttft_s"] - pool["p99_wait_s"])
        headrooms.append(headroom)
        turnovers.append(pool["mean_service_s"] / pool["slots_per_instance"])
        stub = DeployPool(
            name="", resource="", instances=pool["instances"], gpus_per_instance=1, context_tokens=1,
            slots_per_instance=pool["slots_per_instance"], engine=None, serving_profile="", gpu="",
            mean_service_s=pool["mean_service_s"], p99_ttft_s=pool["p99_ttft_s"],
            p99_wait_s=pool["p99_wait_s"],
        )  # fmt: skip
        context = ExportContext(plan_label="", ttft_slo_s=slo, routing=None, pools=())
        thresholds.append(waiting_threshold(context, stub))
    sizes = [pool["instances"] for pool in document["best"]["pools"].values()]
    text = (
        f"The README plan's pools have {fmt_seconds(headrooms[0])} and {fmt_seconds(headrooms[1])} of P99 "
        f"TTFT headroom (SLO − P99 TTFT + P99 wait), against one slot's turnover E[S]/slots of "
        f"{fmt_seconds(turnovers[0])} and {fmt_seconds(turnovers[1])}"
    )
    text += (
        f": thresholds {thresholds[0]} and {thresholds[1]} requests waiting per instance, so the short pool "
    )
    return text + (
        f"grows past its {sizes[0]} instances once more than {sizes[0] * thresholds[0]} requests wait "
        "across it "
        f"(⌈1.1 × {sizes[0] * thresholds[0]}⌉ = {math.ceil(1.1 * sizes[0] * thresholds[0])} with the HPA's "
        f"tolerance), the long pool past its {sizes[1]} once more than {sizes[1] * thresholds[1]} wait"
    )


DAYS_SCRIPT = """import csv, datetime, gzip, random
from fleetopt.io.data import bundled_dir

hour = []  # the bundled Azure 2023 hour (conversation and code): offsets in µs, token counts
for name in ("azure-2023-conv.csv.gz", "azure-2023-code.csv.gz"):
    with gzip.open(bundled_dir("workloads") / name, "rt") as f:
        hour += list(csv.DictReader(f))
random.seed(0)
monday = datetime.datetime(2024, 3, 4, tzinfo=datetime.timezone.utc)
with open("days.csv", "w", newline="") as f:
    out = csv.writer(f)
    out.writerow(["timestamp", "input_tokens", "output_tokens"])
    for h in range(48):  # two days, hour by hour
        busy = 9 <= h % 24 < 18
        for r in hour:
            if busy or random.random() < 0.25:
                t = monday + datetime.timedelta(hours=h, microseconds=int(r["arrival_offset_us"]))
                out.writerow([t.isoformat(sep=" "), r["input_tokens"], r["output_tokens"]])
"""


def days_parts() -> dict[str, str]:
    """The scheduled example: the two-day log, its plan, schedule and ScaledObject."""
    exec(
        compile(DAYS_SCRIPT, "days.py", "exec"),
        {"csv": csv, "datetime": datetime, "gzip": gzip, "random": random},
    )
    _run(["plan", "--cdf", "days.csv", "--slo", "500ms", "--rate", "532", "--schedule", "3h",
          "--output", "plan-scheduled.yaml"])  # fmt: skip
    _run(["export", "--plan", "plan-scheduled.yaml", "--to", "kubernetes", "--keda", "--output-dir",
          "deploy-scheduled"])  # fmt: skip
    document = yaml.safe_load(Path("plan-scheduled.yaml").read_text())
    best, basis, schedule = document["best"], document["inputs"]["rate_basis"], document["schedule"]
    short, long = best["pools"]["short"], best["pools"]["long"]
    windows = schedule["windows"]
    runs: list[tuple[float, float, int]] = []
    for window in windows:
        count = window["instances"]["short"]
        if runs and runs[-1][2] == count:
            runs[-1] = (runs[-1][0], window["end_s"], count)
        else:
            runs.append((window["start_s"], window["end_s"], count))

    def span(start: float, end: float) -> str:
        return f"{_clock(start)}–{'24:00' if end >= 86400 else _clock(end)}"

    shape = ", ".join(f"{count} {span(start, end)}" for start, end, count in runs)
    shape = shape.replace(" ", " short instances ", 1)
    longs = sorted({w["instances"]["long"] for w in windows})
    dynamic, static = schedule["gpu_hours_per_period"], schedule["static_gpu_hours_per_period"]
    floor = min(w["instances"]["short"] for w in windows)
    parts = {"days-script": _fence("python", DAYS_SCRIPT)}
    parts["days-summary"] = (
        f"The static plan is sized for the busiest minute without its counting noise "
        f"({_n(basis['sizing_rate_per_s'])} req/s): {short['instances']} short instances and "
        f"{long['instances']} long ones (B_short = {_n(best['routing']['boundaries_tokens'][0])}, "
        f"γ = {best['gamma']:g}, {_n(best['total_gpus'])} GPUs). Its 3-hour schedule needs {shape} (long: "
        f"{' or '.join(map(str, longs))} in every window): {_n(dynamic)} GPU-hours a day against "
        f"{_n(static)} for the static fleet ({(static - dynamic) / static:.1%} fewer). The floor is the "
        f"quietest windows' {floor}, the "
        f"ceiling ⌈1.25 × {short['instances']}⌉ = {math.ceil(1.25 * short['instances'] - 1e-9)}"
    )  # fmt: skip
    scaled = yaml.safe_load_all(Path("deploy-scheduled/keda.yaml").read_text())
    short_object = next(d for d in scaled if d["metadata"]["name"] == "fleetopt-short")
    short_object["metadata"]["labels"] = "{…}"
    text = yaml.safe_dump(short_object, sort_keys=False, allow_unicode=True).replace(
        "labels: '{…}'", "labels: {…}"
    )
    parts["days-keda"] = _fence("yaml", text)
    return parts


def render(fast: bool = False, gateway: bool = False) -> str:
    """docs/deploy.md with every generated part (only the README plan's with ``fast``) brought up to date."""
    page = DOC.read_text(encoding="utf-8")
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        try:
            makers: list[Callable[[], dict[str, str]]] = [readme_plan_parts]
            makers += [] if fast else [days_parts, prefix_parts]
            makers.append(gateway_parts if gateway else litellm_export_parts)
            parts: dict[str, str] = {}
            for make in makers:
                parts |= make()
        finally:
            os.chdir(here)
    missing = set(parts) - {m.group("name") for m in MARK.finditer(page)}
    if missing:
        raise SystemExit(f"docs/deploy.md has no marker for {sorted(missing)}")

    def replace(match: re.Match) -> str:
        name = match.group("name")
        body = parts.get(name, match.group("body"))
        return f"<!-- generated: {name} -->{body}<!-- /generated -->"

    return MARK.sub(replace, page)


def main() -> None:
    check, fast, gateway = "--check" in sys.argv, "--fast" in sys.argv, "--gateway" in sys.argv
    text = render(fast=fast, gateway=gateway)
    if check:
        if text != DOC.read_text(encoding="utf-8"):
            print("docs/deploy.md is out of date: run python scripts/gen_deploy_docs.py")
            raise SystemExit(1)
        return
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
