"""Nothing can be injected into an exported file (issue 34 item 1).

Hostile names — line breaks of every kind (``\\n``, ``\\r``, U+2028, U+2029, NEL), quotes, ``$(…)``,
backticks, ``---``, ``#``, terminal escapes — go in through the plan file's name, a ``--cdf`` path
(``plan --export``) and hand-edited plan fields, and out through every target. The shell scripts
must parse (``bash -n``) and, run by ``sh`` and ``bash`` with a stub ``vllm``, pass exactly the
intended argument vector and do nothing else; the YAML files must load as exactly the expected
documents, with the name intact as a value; the markdown must keep the structure it has for a
plain name. Names that must be valid for their target (GPU and model names against the serving
profile, model ids, images, Secrets, URLs) are refused."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fleetopt.cli import app

runner = CliRunner()

HOSTILE = [
    "p\ntouch PWNED\n#",
    "q\r\ntouch PWNED\u2028touch PWNED\u2029x\x85# y",
    "$(touch PWNED) `touch PWNED` a'b\"c\\d ; touch PWNED",
    "x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: kube-system}",
    "esc\x1b[2J\x07",
    "* [link](javascript:x) <script>|",
]
FRAGMENTS = [
    "\n",
    "\r",
    "\u2028",
    "\u2029",
    "\x85",
    "'",
    '"',
    "$(id)",
    "`id`",
    "---",
    "#",
    "; ",
    "\x1b[",
    "|",
    "<",
    "a",
]
TARGETS = ["--to", "vllm", "--to", "router", "--to", "kubernetes", "--keda", "--to", "markdown"]


@pytest.fixture(scope="module")
def plan_text(azure_plan_40: Path) -> str:
    return azure_plan_40.read_text()


@pytest.fixture(scope="module")
def stub_bin(tmp_path_factory) -> Path:
    """A folder with a ``vllm`` that writes its arguments, NUL-separated, to $VLLM_ARGS."""
    folder = tmp_path_factory.mktemp("bin")
    stub = folder / "vllm"
    stub.write_text('#!/bin/sh\nfor a in "$@"; do printf \'%s\\0\' "$a"; done > "$VLLM_ARGS"\n')
    stub.chmod(0o755)
    return folder


def _intended_arguments(plan: Path) -> dict[str, list[str]]:
    """The argument vector fleetopt means each pool's script to pass (from the plan, not the file)."""
    from fleetopt.io.plans import read_plan
    from fleetopt.render.deploy import ExportOptions, vllm_arguments
    from fleetopt.render.export import export_context

    context = export_context(read_plan(plan))
    return {pool.name: ["serve", *vllm_arguments(context, pool, ExportOptions())] for pool in context.pools}


def _check_scripts(out: Path, intended: dict[str, list[str]], stub_bin: Path) -> None:
    for name, arguments in intended.items():
        script = out / f"vllm-{name}.sh"
        assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
        # every line is a comment, or part of the one command (continued lines)
        lines = script.read_text().splitlines()
        assert lines[0] == "#!/bin/sh"
        body = [line for line in lines[1:] if not line.startswith("# ")]
        assert all(line.endswith(" \\") for line in body[:-1]) and not body[0].startswith("#")
        assert shlex.split(" ".join(line.removesuffix(" \\") for line in body)) == ["vllm", *arguments]
        for shell in ("sh", "bash"):
            work = out / f"run-{shell}-{name}"
            work.mkdir()
            record = work / "args"
            env = {
                **os.environ,
                "PATH": f"{stub_bin}{os.pathsep}{os.environ['PATH']}",
                "VLLM_ARGS": str(record),
            }
            done = subprocess.run([shell, str(script)], cwd=work, env=env, capture_output=True, timeout=20)
            assert done.returncode == 0 and done.stderr == b"", done.stderr
            assert record.read_bytes().split(b"\0")[:-1] == [a.encode() for a in arguments]
            assert sorted(p.name for p in work.iterdir()) == ["args"]  # nothing else ran
            shutil.rmtree(work)


def _check_yaml(out: Path, label: str, pools: list[str]) -> None:
    claim, *documents = yaml.safe_load_all((out / "kubernetes.yaml").read_text())
    assert claim["kind"] == "PersistentVolumeClaim" and "namespace" not in claim["metadata"]
    assert [d["kind"] for d in documents] == ["Deployment", "Service", "PodDisruptionBudget"] * len(pools)
    assert [d["metadata"]["name"] for d in documents] == [f"fleetopt-{p}" for p in pools for _ in (0, 1, 2)]
    assert all("namespace" not in d["metadata"] for d in documents)
    assert [d["metadata"]["annotations"]["fleetopt/plan"] for d in documents[::3]] == [label] * len(pools)
    keda = list(yaml.safe_load_all((out / "keda.yaml").read_text()))
    assert [d["kind"] for d in keda] == ["ScaledObject"] * len(keda) and 1 <= len(keda) <= len(pools)
    assert all(d["metadata"]["annotations"] == {"fleetopt/plan": label} for d in keda)
    (router,) = yaml.safe_load_all((out / "router.yaml").read_text())
    assert router["plan"]["file"] == label and [p["name"] for p in router["pools"]] == pools


def _shape(markdown: str) -> list[str]:
    """Each line's kind: blank, heading, table row, bullet, bold, other."""
    kinds = {"": "blank", "#": "heading", "|": "row", "-": "bullet", "*": "bold", "<": "footer"}
    return [kinds.get(line[:1], "text") for line in markdown.splitlines()]


def _export(plan: Path, out: Path) -> None:
    result = runner.invoke(app, ["export", "--plan", str(plan), *TARGETS, "-o", str(out)])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def plain_markdown(plan_text: str, tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("plain")
    (folder / "plan.yaml").write_text(plan_text)
    _export(folder / "plan.yaml", folder / "out")
    return (folder / "out" / "plan.md").read_text()


def _check_plan_name(name: str, folder: Path, plan_text: str, stub_bin: Path, plain_markdown: str) -> None:
    plan = folder / f"{name}.yaml"
    plan.write_text(plan_text)
    out = folder / "out"
    _export(plan, out)
    intended = _intended_arguments(plan)
    _check_scripts(out, intended, stub_bin)
    _check_yaml(out, str(plan), list(intended))
    markdown = (out / "plan.md").read_text()
    assert _shape(markdown) == _shape(plain_markdown)
    outside_code = re.sub(r"(`+).*?\1", "", markdown)
    assert "\x1b" not in markdown and "<script>" not in outside_code
    assert not list(folder.rglob("PWNED"))


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
def test_a_hostile_plan_file_name_reaches_no_target_raw(
    tmp_path: Path, name: str, plan_text: str, stub_bin: Path, plain_markdown: str
) -> None:
    """Issue 34: `p⏎touch PWNED⏎#.yaml` made the exported vllm-short.sh run `touch PWNED`, and a name
    with `apiVersion: v1⏎kind: ConfigMap…` added a ConfigMap to kubernetes.yaml and keda.yaml."""
    _check_plan_name(name, tmp_path, plan_text, stub_bin, plain_markdown)


@settings(max_examples=3, deadline=None)
@given(parts=st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6))
def test_generated_hostile_plan_names(parts, tmp_path_factory, plan_text, stub_bin, plain_markdown) -> None:
    _check_plan_name("".join(parts), tmp_path_factory.mktemp("fuzz"), plan_text, stub_bin, plain_markdown)


def test_a_hostile_cdf_path_through_plan_export(tmp_path: Path, stub_bin: Path) -> None:
    """`plan --cdf <path with a newline> --export` wrote the path raw into the same comments."""
    from fleetopt.io.data import bundled_dir

    cdf = tmp_path / f"{HOSTILE[1]}{HOSTILE[3]}.json"
    shutil.copy(bundled_dir("workloads") / "azure.cdf.json", cdf)
    plan, out = tmp_path / "plan.yaml", tmp_path / "out"
    result = runner.invoke(
        app,
        ["plan", "--cdf", str(cdf), "--slo", "1s", "--rate", "40", "-o", str(plan), "--output-dir",
         str(out), "--export", "vllm", "--export", "router", "--export", "kubernetes", "--keda", "--export",
         "markdown"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    intended = _intended_arguments(plan)
    _check_scripts(out, intended, stub_bin)
    _check_yaml(out, str(plan), list(intended))
    heading = (out / "plan.md").read_text().splitlines()[0]
    assert heading.startswith("### fleetopt plan — ") and "\n" not in heading
    assert not list(tmp_path.rglob("PWNED"))


def test_a_plan_file_reads_back_the_names_it_was_given(tmp_path: Path) -> None:
    """A --cdf path with NEL (U+0085) and U+2028 went into the plan's YAML raw inside single quotes:
    read back, NEL came out as a space, so the plan named a file that does not exist. Every YAML
    fleetopt writes now double-quotes such a string with escapes (io/yamlio.dump_yaml)."""
    from fleetopt.io.data import bundled_dir
    from fleetopt.io.yamlio import safe_load

    cdf = tmp_path / "we\u0085ird\u2028x\u2029y.cdf.json"
    shutil.copy(bundled_dir("workloads") / "azure.cdf.json", cdf)
    plan = tmp_path / "plan.yaml"
    result = runner.invoke(app, ["plan", "--cdf", str(cdf), "--slo", "1s", "--rate", "40", "-o", str(plan)])
    assert result.exit_code == 0, result.output
    assert safe_load(plan.read_text(encoding="utf-8"))["inputs"]["workload"] == str(cdf)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "gpu_name",
            "h100-80gb\napiVersion: v1",
            "the plan says its GPU is 'h100-80gb\\napiVersion: v1', but",
        ),
        ("gpu_name", "a100-80gb", "the plan says its GPU is 'a100-80gb', but serving profile"),
        ("model_name", "llama-3-70b", "the plan says its model is 'llama-3-70b', but serving profile"),
    ],
)
def test_a_hand_edited_profile_name_is_checked_against_the_serving_profile(
    tmp_path: Path, plan_text: str, field: str, value: str, message: str
) -> None:
    document = yaml.safe_load(plan_text)
    for role in ("short", "long"):
        document["inputs"]["profiles"][role][field] = value
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump(document, sort_keys=False))
    result = runner.invoke(app, ["export", "--plan", str(plan), "--to", "vllm"])
    assert result.exit_code == 1
    assert message in result.stderr and "\napiVersion" not in result.stderr


def test_hand_edited_plan_text_reaches_the_markdown_escaped(
    tmp_path: Path, plan_text: str, plain_markdown: str
) -> None:
    document = yaml.safe_load(plan_text)
    document["inputs"]["workload"] = HOSTILE[3]
    document["best"]["routing"]["rule"] = "x\n# Owned\n<img src=x onerror=alert(1)>"
    document["notes"] = [HOSTILE[(0, 5)[k % 2]] for k in range(len(document["notes"]))]
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump(document, sort_keys=False))
    _export(plan, tmp_path / "out")
    markdown = (tmp_path / "out" / "plan.md").read_text()
    assert _shape(markdown) == _shape(plain_markdown)
    assert not re.search(r"(?<!\\)<img", markdown) and "\\<img" in markdown
    assert not re.search(r"^# Owned", markdown, re.M)
    rows = [line for line in markdown.splitlines() if line.startswith("| short ")]
    assert rows and rows[0].count(" | ") == 9  # ten cells
    # the table's one text cell is an enum of the plan schema: a pipe or a line break there is refused
    for pool in document["best"]["pools"].values():
        pool["binding_constraint"] = "a|b\nc"
    plan.write_text(yaml.safe_dump(document, sort_keys=False))
    refused = runner.invoke(app, ["export", "--plan", str(plan), *TARGETS, "-o", str(tmp_path / "out2")])
    assert refused.exit_code == 1 and "binding_constraint" in refused.output
    assert not (tmp_path / "out2").exists()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--model-id", "meta-llama/x\ntouch PWNED"),
        ("--model-id", "$(touch PWNED)"),
        ("--image", "vllm/vllm-openai:v0.11.0\n---\nkind: ConfigMap"),
        ("--image", "vllm openai"),
        ("--hf-token-secret", "hf\ntoken"),
        ("--prometheus-url", 'http://p:9090"}\n- type: cron'),
        ("--namespace", "kube-system\n"),
        ("--name-prefix", "a\u2028b"),
        ("--vllm-version", "0.33; touch PWNED"),
        ("--node-selector", "nvidia.com/gpu.product=H100\n---"),
        ("--node-selector", "no-equals-sign"),
        ("--toleration", "nvidia.com/gpu:NoSchedule\n- key: x"),
        ("--weight-cache", "/data/$(touch PWNED)"),
        ("--storage-class", "Fast SSD"),
    ],
)
def test_option_names_are_validated_for_their_target(
    tmp_path: Path, plan_text: str, option: str, value: str
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(plan_text)
    result = runner.invoke(
        app, ["export", "--plan", str(plan), *TARGETS, option, value, "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {option}: ")
    assert not (tmp_path / "o").exists()


def test_valid_option_names_pass(tmp_path: Path, plan_text: str) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(plan_text)
    options = ["--model-id", "/models/llama-3.1-70b", "--image",
               "registry.example.com:5000/team/vllm:v0.11.0", "--hf-token-secret", "hf-token.v1",
               "--prometheus-url", "https://prom.example.com/api", "--namespace", "llm"]  # fmt: skip
    result = runner.invoke(app, ["export", "--plan", str(plan), *TARGETS, *options])
    assert result.exit_code == 0, result.output
