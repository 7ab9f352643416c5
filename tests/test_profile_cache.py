"""The parsed-profile cache (fleetopt/io/profile_cache.py): in step with the bundled YAML, equal
to what PyYAML reads, never used for text it was not made from, and it keeps yaml out of a
command that reads only bundled profiles."""

from __future__ import annotations

import datetime
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fleetopt.io import profile_cache
from fleetopt.io.data import bundled_dir
from fleetopt.io.profiles import load_gpu, load_serving

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = bundled_dir("profiles")
BUNDLED_FILES = sorted(p for kind in ("gpus", "models", "serving") for p in (BUNDLED / kind).glob("*.yaml"))


def _types(value):
    if isinstance(value, dict):
        return {key: _types(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_types(item) for item in value]
    return type(value)


def test_committed_cache_is_in_step_with_the_bundled_profiles():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import build_profile_cache
    finally:
        sys.path.pop(0)
    committed = (BUNDLED / profile_cache.CACHE_FILE_NAME).read_text(encoding="utf-8")
    assert committed == build_profile_cache.cache_document(BUNDLED), (
        "profiles/parsed-cache.json is stale: run python scripts/build_profile_cache.py"
    )


@pytest.mark.parametrize("path", BUNDLED_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_bundled_profile_is_cached_as_yaml_reads_it(path):
    text = path.read_text(encoding="utf-8")
    cached = profile_cache.cached_parse(text)
    expected = yaml.safe_load(text)
    assert cached == expected
    assert _types(cached) == _types(expected)  # a date stays a date, an int an int


def test_a_date_round_trips_through_the_cache_encoding():
    value = {"source": {"date": datetime.date(2025, 3, 1), "rows": [1, 2.5, None, True]}}
    encoded = profile_cache.encode_parsed(value)
    assert encoded["source"]["date"] == {"$date": "2025-03-01"}
    assert profile_cache._decode_object(encoded["source"]["date"]) == datetime.date(2025, 3, 1)


def test_cache_hits_return_fresh_objects():
    text = BUNDLED_FILES[0].read_text(encoding="utf-8")
    first = profile_cache.cached_parse(text)
    first["name"] = "changed by a caller"
    assert profile_cache.cached_parse(text) == yaml.safe_load(text)


def test_an_edited_copy_of_a_bundled_profile_is_read_from_its_yaml(tmp_path):
    source = BUNDLED / "gpus" / "h100-80gb.yaml"
    text = source.read_text(encoding="utf-8")
    original = load_gpu(source, [BUNDLED])
    edited = text.replace("gpu_hour_usd: 3.99", "gpu_hour_usd: 4.99", 1)
    assert original.gpu_hour_usd == 3.99
    assert edited != text and profile_cache.cached_parse(edited) is None
    (tmp_path / "gpus").mkdir()
    (tmp_path / "gpus" / "h100-80gb.yaml").write_text(edited, encoding="utf-8")
    assert load_gpu("h100-80gb", [tmp_path, BUNDLED]).gpu_hour_usd == 4.99


def test_reading_bundled_profiles_does_not_import_yaml():
    code = (
        "import sys\n"
        "from fleetopt.io.data import bundled_dir\n"
        "from fleetopt.io.profiles import load_gpu, load_model, load_serving\n"
        "d = [bundled_dir('profiles')]\n"
        "load_gpu('h100-80gb', d); load_model('llama-3.1-70b', d)\n"
        "load_serving('llama-3-70b-a100-80gb-tp8', d)\n"
        "print('yaml' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_a_cached_serving_profile_loads_like_its_yaml(monkeypatch):
    name = "llama-3-70b-a100-80gb-tp8"
    from_cache = load_serving(name, [BUNDLED])
    from fleetopt.io import profiles

    monkeypatch.setattr(profiles, "cached_parse", lambda text: None)  # the name profiles reads
    assert load_serving(name, [BUNDLED]) == from_cache
