"""`fleetopt kv` through CliRunner: the papers' figures, exit codes and exact error text."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from fleetopt.cli import app
from fleetopt.io import profiles
from fleetopt.io.data import bundled_dir

runner = CliRunner()


def _json(args: list[str]) -> dict:
    result = runner.invoke(app, ["kv", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_qwen3_235b_mi300x_tp8_pool_routing_s4_7_facts_s3() -> None:
    data = _json(["--model", "qwen3-235b-a22b", "--gpu", "mi300x", "--tp", "8", "--context", "8192,32768"])
    assert data["kv_bytes_per_token_model"] == 192_512
    assert data["kv_bytes_per_token_per_gpu"] == 24_064
    assert abs(data["kv_memory_bytes_per_gpu"] - 133.4e9) < 0.05e9
    rows = {r["context_tokens"]: r for r in data["contexts"]}
    assert rows[8192]["slots_per_instance_token_exact"] == 676
    assert rows[32768]["slots_per_instance_token_exact"] == 169
    assert rows[8192]["slots_per_instance_block_rounded"] == 676
    assert rows[32768]["slots_per_instance_block_rounded"] == 169
    assert data["cliff_ratio"] == 4.0
    assert data["gpus_per_instance"] == 8
    # Defaults are reported, with where they came from.
    assert data["gpu_memory_utilization"] == 0.9
    assert data["activation_reserve_bytes_per_gpu"] == 10e9
    assert data["value_sources"]["gpu_memory_utilization"] == "default"
    assert any("vLLM instead replicates KV heads, 48,128 bytes/token per GPU" in n for n in data["notes"])


def test_table_states_the_defaults() -> None:
    result = runner.invoke(
        app, ["kv", "-m", "qwen3-235b-a22b", "-g", "mi300x", "--tp", "8", "-c", "8192,32768"]
    )
    assert result.exit_code == 0, result.output
    assert "memory utilization" in result.output and "0.9  [default]" in result.output
    assert "10.0 GB (9.3 GiB)  [default]" in result.output
    assert "133.4 GB" in result.output
    assert "24,064" in result.output


def test_replicated_layout_doubles_per_gpu_bytes() -> None:
    data = _json(
        [
            "-m",
            "qwen3-235b-a22b",
            "-g",
            "mi300x",
            "--tp",
            "8",
            "-c",
            "32768",
            "--kv-head-layout",
            "replicated",
        ]
    )
    assert data["kv_bytes_per_token_per_gpu"] == 48_128
    assert data["contexts"][0]["slots_per_instance_token_exact"] == 84  # ⌊133.425e9 / (48,128 · 32,768)⌋


def test_paper_serving_profile_block_budget_facts_s1() -> None:
    data = _json(["--serving", "llama-3-70b-a100-80gb-tp8", "--context", "65536,8192,4096,1536"])
    assert data["kv_capacity_method"] == "blocks"
    assert data["kv_capacity_tokens_per_instance"] == 65_536 * 16
    slots = [r["slots_per_instance_block_rounded"] for r in data["contexts"]]
    assert slots == [16, 128, 256, 682]
    assert data["kv_bytes_per_token_model"] == 327_680
    # 20 GiB per 64K-token slot (pool-routing Eq. 1, FACTS §3).
    assert data["contexts"][0]["kv_bytes_per_slot_per_instance"] == 20 * 2**30
    assert data["cliff_ratio"] == 682 / 16


def test_serving_profile_with_memory_method_takes_its_reserves() -> None:
    data = _json(["--serving", "qwen3-235b-a22b-mi300x-tp8", "-c", "8192"])
    assert data["value_sources"]["gpu_memory_utilization"] == "serving profile"
    assert data["contexts"][0]["slots_per_instance_token_exact"] == 676


def test_flags_override_defaults() -> None:
    data = _json(
        ["-m", "llama-3-70b", "-g", "h100-80gb", "--tp", "8", "-c", "8192", "--memory-utilization", "95%",
         "--activation-reserve-gb", "0", "--kv-dtype", "fp8"]
    )  # fmt: skip
    # 80e9·0.95 − 17.65e9 = 58.35e9 per GPU; 8-bit KV: 163,840 bytes/token per instance.
    assert data["kv_bytes_per_token_model"] == 163_840
    assert data["contexts"][0]["slots_per_instance_token_exact"] == (8 * 58_350_000_000) // (163_840 * 8192)


def test_yaml_format() -> None:
    result = runner.invoke(
        app,
        [
            "kv",
            "-m",
            "llama-3.1-8b",
            "-g",
            "a10g",
            "-c",
            "4096",
            "--activation-reserve-gb",
            "2",
            "-f",
            "yaml",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "kv_bytes_per_token_model: 131072" in result.output


def test_unknown_model_lists_the_known_ones() -> None:
    result = runner.invoke(app, ["kv", "--model", "llama-9", "--gpu", "mi300x", "--context", "8192"])
    assert result.exit_code == 1
    known = ", ".join(profiles.profile_names("models", (bundled_dir("profiles"),)))
    assert result.stderr == f"Error: no model profile named 'llama-9'; known: {known}\n"


def test_model_that_does_not_fit() -> None:
    result = runner.invoke(app, ["kv", "-m", "llama-3-70b", "-g", "a10g", "-c", "8192"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: fleetopt kv: llama-3-70b does not fit on 1 × a10g: ")


def test_missing_model_or_gpu() -> None:
    result = runner.invoke(app, ["kv", "--model", "llama-3-70b", "--context", "8192"])
    assert result.exit_code == 1
    assert result.stderr == "Error: give --model and --gpu, or --serving NAME\n"


def test_bad_context_and_flags() -> None:
    result = runner.invoke(app, ["kv", "-m", "llama-3-70b", "-g", "h100-80gb", "-c", "8k"])
    assert result.exit_code == 1
    assert result.stderr == "Error: --context: '8k' in '8k' is not a number\n"
    result = runner.invoke(app, ["kv", "-m", "llama-3-70b", "-g", "h100-80gb", "-c", "0"])
    assert result.stderr == "Error: --context: 0 is not allowed; each context must be ≥ 1 token\n"
    result = runner.invoke(
        app, ["kv", "-m", "llama-3-70b", "-g", "h100-80gb", "-c", "8", "--kv-dtype", "fp4"]
    )
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --kv-dtype: 'fp4' is not allowed; "
        "use one of fp32, bf16, fp16, fp8, fp8_e4m3, fp8_e5m2, int8\n"
    )


def test_usage_errors_exit_2() -> None:
    result = runner.invoke(app, ["kv", "-m", "llama-3-70b", "-g", "h100-80gb"])
    assert result.exit_code == 2
    assert "Missing option '--context'" in result.output
    result = runner.invoke(app, ["kv", "-m", "llama-3-70b", "-g", "h100-80gb", "-c", "8", "--tp", "0"])
    assert result.exit_code == 2
