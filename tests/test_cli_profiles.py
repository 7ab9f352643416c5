"""`fleetopt profiles list/show` through CliRunner: exit codes and exact error text."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from fleetopt.cli import app
from fleetopt.io import profiles
from fleetopt.io.data import bundled_dir

runner = CliRunner()
BUNDLED = (bundled_dir("profiles"),)


def test_list_json_has_every_kind() -> None:
    result = runner.invoke(app, ["profiles", "list", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert list(data) == ["models", "gpus", "serving"]
    for kind in data:
        assert [r["name"] for r in data[kind]] == profiles.profile_names(kind, BUNDLED)
    paper = next(r for r in data["serving"] if r["name"] == "llama-3-70b-a100-80gb-tp8")
    assert paper["kv_capacity_tokens_per_instance"] == 1_048_576
    assert paper["gpus_per_instance"] == 8


def test_list_one_kind_table() -> None:
    result = runner.invoke(app, ["profiles", "list", "--kind", "gpus"])
    assert result.exit_code == 0, result.output
    assert "mi300x" in result.output and "3.67" in result.output
    assert "llama-3-70b" not in result.output


def test_list_bad_kind() -> None:
    result = runner.invoke(app, ["profiles", "list", "--kind", "gpu"])
    assert result.exit_code == 1
    assert result.stderr == "Error: profile kind 'gpu' is not known; use one of models, gpus, serving\n"


def test_show_model_yaml() -> None:
    result = runner.invoke(app, ["profiles", "show", "llama-3-70b", "--format", "yaml"])
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(result.stdout)
    assert data["kind"] == "models"
    assert data["kv_bytes_per_token"] == 327_680
    assert data["layers"] == 80


def test_show_serving_json_prices_per_gpu() -> None:
    result = runner.invoke(app, ["profiles", "show", "qwen3-235b-a22b-mi300x-tp8", "-f", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["gpu_hour_usd"] == 3.67
    assert abs(data["instance_hour_usd"] - 8 * 3.67) < 1e-9  # cost = GPUs × $/GPU-hour (FACTS §2 item 4)


def test_show_table() -> None:
    result = runner.invoke(app, ["profiles", "show", "mi300x"])
    assert result.exit_code == 0, result.output
    assert "192000000000" in result.output


def test_show_unknown_name_lists_every_known_profile() -> None:
    result = runner.invoke(app, ["profiles", "show", "nope"])
    assert result.exit_code == 1
    known = "; ".join(f"{k}: {', '.join(profiles.profile_names(k, BUNDLED))}" for k in profiles.KINDS)
    assert result.stderr == f"Error: no profile named 'nope'; known {known}\n"


def test_show_unknown_name_of_a_kind() -> None:
    result = runner.invoke(app, ["profiles", "show", "nope", "--kind", "gpus"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: no GPU profile named 'nope'; known: "
        + ", ".join(profiles.profile_names("gpus", BUNDLED))
        + "\n"
    )


def test_show_ambiguous_name_needs_kind(tmp_path: Path) -> None:
    (tmp_path / "gpus").mkdir()
    (tmp_path / "gpus" / "llama-3-70b.yaml").write_text(
        "source: t\nmemory_gb: 1\nmemory_bandwidth_gb_per_s: 1\ngpu_hour_usd: 1\n"
        "price_source: t\nprice_date: 2026-01\n"
    )
    result = runner.invoke(app, ["profiles", "show", "llama-3-70b", "--profiles-dir", str(tmp_path)])
    assert result.exit_code == 1
    assert (
        result.stderr == "Error: 'llama-3-70b' names profiles of several kinds (models, gpus); add --kind\n"
    )
    result = runner.invoke(
        app, ["profiles", "show", "llama-3-70b", "--kind", "gpus", "--profiles-dir", str(tmp_path)]
    )
    assert result.exit_code == 0


def test_invalid_user_profile_is_reported_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    bad = tmp_path / "models" / "bad.yaml"
    bad.write_text("source: t\nkv_formula: gqa\nlayers: 0\n")
    result = runner.invoke(app, ["profiles", "list", "--profiles-dir", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {bad}: field 'layers' = 0 is not allowed; "
        "it must be a whole number ≥ 1 (transformer layers)\n"
    )


def test_show_by_path(tmp_path: Path) -> None:
    path = Path(profiles.load_model("llama-3.1-8b", BUNDLED).source_file)
    result = runner.invoke(app, ["profiles", "show", str(path), "-f", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["name"] == "llama-3.1-8b"
    elsewhere = tmp_path / "x.yaml"
    elsewhere.write_text(path.read_text())
    result = runner.invoke(app, ["profiles", "show", str(elsewhere)])
    assert result.exit_code == 1
    assert "cannot tell the kind of profile file" in result.stderr


def test_profiles_without_subcommand_shows_help() -> None:
    result = runner.invoke(app, ["profiles"])
    assert "list" in result.output and "show" in result.output
