"""Fuzzing every command with generated and mutated inputs (issue 17).

Properties, for every input: the exit code is 0, 1 or 2 (70 would be an internal error, a bug);
no traceback and no terminal escape reach the output; the input file is never changed; a failed
command leaves no output file behind; what export writes parses (bash -n, YAML) and runs nothing.
The default run is a few seconds; ``FLEETOPT_FUZZ=deep pytest tests/test_fuzz.py`` runs 75× more
examples.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fleetopt.cli import app

runner = CliRunner()
DEEP = os.environ.get("FLEETOPT_FUZZ") == "deep"
FUZZ = settings(
    max_examples=600 if DEEP else 8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

SEEDS = {
    "log.csv": b"input_tokens,output_tokens,timestamp\n100,20,0.0\n2000,300,0.5\n700,50,1.25\n9000,10,2.0\n",
    "log.jsonl": b'{"input_length": 100, "output_length": 20, "timestamp": 0}\n'
    b'{"input_length": 3000, "output_length": 200, "timestamp": 500}\n',
    "cdf.json": b'{"cdf": [[256, 0.2], [1024, 0.6], [8192, 0.95], [32768, 1.0]]}',
    "cdf.csv": b"tokens,cdf\n256,0.2\n1024,0.6\n8192,1.0\n",
    # workload summaries (fleetopt workload summarize), their JSON document and their table form
    "summary.json": b'{"fleetopt_summary":1,"window_us":1000000,"sources":[{"source":"log.csv","requests":3,'
    b'"first_us":0,"last_us":2500000,"clock":"relative"}],"tokens":{"input_tokens":[100,2000],'
    b'"output_tokens":[20,300],"n":[2,1]},"windows":{"start_us":[0,2000000],"n":[2,1]}}',
    "summary.csv": b"record,input_tokens,output_tokens,start_us,end_us,n,source,clock\n"
    b"tokens,100,20,,,2,,\ntokens,2000,300,,,1,,\nwindow,,,0,1000000,2,,\nwindow,,,2000000,3000000,1,,\n"
    b"log,,,0,2500000,3,log.csv,relative\n",
}
PROFILE = (
    b"model: llama-3-70b\ngpu: a100-80gb\ntensor_parallel: 8\ncalibration: paper\nsource: test\n"
    b"iteration_base_ms: 8\niteration_per_slot_ms: 0.65\nprefill_chunk_tokens: 512\n"
    b"calibration_context_tokens: 8192\nkv_block_tokens: 16\nkv_capacity: blocks\nkv_blocks: 65536\n"
)
JUNK = st.sampled_from(
    [b"", b"\x00", b"\xff\xfe", b"nan", b"-1", b"1e308", b"99999999999999999999", b'"', b",,,", b"\n\n",
     b"[[[[", b"}", b"inf", b"0", b"\t", b";", "é".encode(), b"\r\n", b"null", b"true",
     # hostile text (issue 34): YAML anchors, aliases, merge keys and document markers, line separators
     # a reader may fold, a shell substitution, a terminal escape
     b"&a ", b"*a", b"<<: *a", b"\n---\n", "\u2028".encode(), "\x85".encode(), b"$(touch PWNED)", b"\x1b[2J"]
)  # fmt: skip


@st.composite
def mutated(draw, seed: bytes) -> bytes:
    """``seed`` with a few random edits: cut, splice junk or random bytes in, or repeat a part."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["cut", "junk", "bytes", "repeat", "flip"]))
        at = draw(st.integers(0, len(data)))
        if kind == "cut":
            del data[at : at + draw(st.integers(1, 20))]
        elif kind == "junk":
            data[at:at] = draw(JUNK)
        elif kind == "bytes":
            data[at:at] = draw(st.binary(max_size=8))
        elif kind == "repeat":
            data[at:at] = data[max(0, at - 40) : at] * draw(st.integers(1, 3))
        elif data and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
    return bytes(data)


def _run(args: list[str], inputs: list[Path], outputs: list[Path] = ()) -> None:
    before = {p: p.read_bytes() for p in inputs}
    result = runner.invoke(app, args)
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert result.exit_code in (0, 1, 2), f"exit {result.exit_code}: {text[:400]}"
    assert "Traceback" not in text, (args, text[-500:])
    assert "\x1b" not in text, (args, text[-500:])  # no terminal escape from an input reaches the terminal
    for path, content in before.items():
        assert path.read_bytes() == content, f"{path} was changed"
    if result.exit_code != 0:
        for path in outputs:
            assert not path.exists(), f"{path} was written by a failed command"


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SEEDS))
@FUZZ
@given(data=st.data())
def test_workload_files_through_plan_and_workload_show(tmp_path: Path, name: str, data) -> None:
    path = tmp_path / name
    path.write_bytes(data.draw(mutated(SEEDS[name])))
    output = tmp_path / "out.yaml"
    output.unlink(missing_ok=True)
    _run(["plan", "--cdf", str(path), "--slo", "1s", "--rate", "20", "-o", str(output)], [path], [output])
    _run(["workload", "show", str(path)], [path])


@FUZZ
@given(content=mutated(PROFILE))
def test_serving_profiles_through_plan_and_profiles_show(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "serving.yaml"
    path.write_bytes(content)
    _run(["profiles", "show", str(path)], [path])
    _run(
        ["plan", "--cdf", "azure", "--slo", "2s", "--rate", "20", "--serving", str(path), "-f", "json"],
        [path],
    )


@pytest.fixture(scope="module")
def plan_text(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("fuzz") / "plan.yaml"
    result = runner.invoke(app, ["plan", "--cdf", "azure", "--slo", "2s", "--rate", "20", "-o", str(path)])
    assert result.exit_code == 0, result.output
    return path.read_bytes()


@FUZZ
@given(data=st.data())
def test_plan_files_through_drift_simulate_and_export(tmp_path: Path, plan_text: bytes, data) -> None:
    # edit the text of a real plan (its numbers, keys and nesting), not random bytes alone
    path = tmp_path / "plan.yaml"
    path.write_bytes(data.draw(mutated(plan_text)))
    _run(["drift", "--plan", str(path), "--cdf", "azure", "--rate", "20"], [path])
    _run(["simulate", "--plan", str(path), "--requests", "300", "--seeds", "1", "-f", "json"], [path])
    out = tmp_path / "deploy"
    shutil.rmtree(out, ignore_errors=True)
    _run(["export", "--plan", str(path), "--to", "vllm", "--to", "router", "--to", "kubernetes", "--keda",
          "--to", "markdown", "-o", str(out)], [path])  # fmt: skip
    for script in out.glob("*.sh"):
        checked = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert checked.returncode == 0, (script.read_text()[:2000], checked.stderr)
    for document in out.glob("*.yaml"):
        list(yaml.safe_load_all(document.read_text(encoding="utf-8")))
    assert not list(tmp_path.rglob("PWNED"))


@FUZZ
@given(
    rate=st.sampled_from(["0", "-3", "nan", "inf", "1e308", "1e-300", "abc", "20", "5%"]),
    slo=st.sampled_from(["0s", "-1ms", "1e400s", "nan", "500ms", "2s", "500", "ms"]),
    cap=st.sampled_from(["0", "1.5", "85%", "nan", "-0.1", "0.5", "x"]),
    compressibility=st.sampled_from(["0", "1", "2", "nan", "50%", "y"]),
    b_short=st.sampled_from(["", "0", "-5", "4096", "1e12", "4k", "512,512"]),
)
def test_option_values_through_plan(rate, slo, cap, compressibility, b_short) -> None:
    args = ["plan", "--cdf", "azure", "--slo", slo, "--rate", rate, "--max-utilization", cap]
    args += ["--compressibility", compressibility, "-f", "json"]
    if b_short:
        args += ["--b-short", b_short]
    _run(args, [])
