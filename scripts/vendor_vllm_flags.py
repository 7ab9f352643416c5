"""Vendor the command-line flags each supported vLLM release defines (tests/data/vllm-flags/).

``fleetopt export --vllm-version`` decides which flags it writes; the tests check every flag it
writes against the flags the chosen release's own argument parser defines. vLLM declares its engine
flags in ``vllm/engine/arg_utils.py`` (``EngineArgs.add_cli_args``: one ``add_argument("--name", …)``
per flag); this script reads that file out of each release's wheel from PyPI (a zip: nothing is
installed or imported) and writes the sorted flag names with the release's version and commit
(``vllm/_version.py``), one JSON file per release. Run by hand when a release is added:

    pip download --no-deps -d wheels vllm==0.33.0
    python scripts/vendor_vllm_flags.py wheels/vllm-0.33.0-*.whl
"""

from __future__ import annotations

import argparse
import json
import re
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "vllm-flags"
_FLAG = re.compile(r"""["'](--[a-z0-9][a-z0-9-]*)["']""")
_VERSION = re.compile(r"""__version__ = version = ['"]([^'"]+)['"]""")
_COMMIT = re.compile(r"""commit_id = ['"]g?([0-9a-f]+)['"]""")


def flags_of_wheel(wheel: Path) -> dict:
    with zipfile.ZipFile(wheel) as archive:
        source = archive.read("vllm/engine/arg_utils.py").decode()
        version_file = archive.read("vllm/_version.py").decode()
    version, commit = _VERSION.search(version_file), _COMMIT.search(version_file)
    return {
        "vllm_version": version.group(1) if version else None,
        "commit": commit.group(1) if commit else None,
        "source": f"vllm/engine/arg_utils.py of the PyPI wheel {wheel.name}",
        "flags": sorted(set(_FLAG.findall(source))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("wheels", nargs="+", type=Path)
    OUT.mkdir(parents=True, exist_ok=True)
    for wheel in parser.parse_args().wheels:
        document = flags_of_wheel(wheel)
        target = OUT / f"vllm-{document['vllm_version']}.json"
        target.write_text(json.dumps(document, indent=1) + "\n")
        print(f"wrote {target}: {len(document['flags'])} flags")


if __name__ == "__main__":
    main()
