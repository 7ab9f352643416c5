"""Write ``profiles/parsed-cache.json``: ``yaml.safe_load`` of every bundled profile, keyed by the
SHA-256 of its text (see :mod:`fleetopt.io.profile_cache`). Run it after changing a profile;
``tests/test_profile_cache.py`` fails while the committed cache is out of step.

Usage: ``python scripts/build_profile_cache.py [--check]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from fleetopt.io.profile_cache import CACHE_FILE_NAME, CACHE_FORMAT, encode_parsed, text_key

PROFILES = Path(__file__).resolve().parent.parent / "profiles"
KINDS = ("gpus", "models", "serving")


def cache_document(profiles: Path = PROFILES) -> str:
    """The cache file's text for the profiles under ``profiles`` (sorted, so it is reproducible)."""
    entries: dict[str, object] = {}
    for kind in KINDS:
        for path in sorted((profiles / kind).glob("*.y*ml")):
            text = path.read_text(encoding="utf-8")
            entries[text_key(text)] = encode_parsed(yaml.safe_load(text))
    document = {
        "format": CACHE_FORMAT,
        "about": "yaml.safe_load of each bundled profile, keyed by the SHA-256 of its text; "
        "written by scripts/build_profile_cache.py (do not edit)",
        "entries": dict(sorted(entries.items())),
    }
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed cache is stale")
    args = parser.parse_args()
    target = PROFILES / CACHE_FILE_NAME
    text = cache_document()
    if args.check:
        current = target.read_text(encoding="utf-8") if target.is_file() else ""
        if current != text:
            print(f"{target} is out of step with the profiles; run scripts/build_profile_cache.py")
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target} ({len(text):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
