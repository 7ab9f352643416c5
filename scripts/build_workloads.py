"""Build the bundled ``workloads/`` folder from the project's shared background material.

Usage: ``python scripts/build_workloads.py [SHARED_DIR]`` (default ``../shared``, relative to
the repository root). Re-running it reproduces the folder byte for byte.

* ``azure-2023-conv`` / ``azure-2023-code``: the Azure LLM inference trace 2023 files
  (CC BY 4.0), kept exactly per request as gzip-compressed CSV
  ``arrival_offset_us,input_tokens,output_tokens``. Offsets are whole microseconds (the
  source timestamps have 7 fractional digits whose last is always 0, so nothing is lost)
  since one shared origin, the first conversation request, so the two files stay aligned.
* ``azure-2023``: a manifest naming both files.
* ``azure``, ``lmsys``, ``lmsys-multiturn``, ``agent-heavy``: the reference implementation's
  CDF tables, copied unchanged (Apache-2.0).
"""

from __future__ import annotations

import gzip
import io
import shutil
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "workloads"

AZURE_ORIGIN = "2023-11-16 18:15:46.6805900"  # first request of the conversation file
AZURE_CITATION = (
    "Patel et al., Splitwise: Efficient Generative LLM Inference Using Phase Splitting, ISCA 2024; "
    "https://github.com/Azure/AzurePublicDataset (AzureLLMInferenceDataset2023)"
)
AZURE_LICENCE = "CC BY 4.0 (see LICENSE-azure-2023.txt); converted format, values unchanged"
FLEET_SIM = "vllm-sr-sim (PyPI, module fleet_sim), the FleetOpt paper's reference implementation"

CDFS = {
    "azure": (
        "azure_cdf.json",
        "CDF of total tokens fitted to the Azure 2023 trace (FleetOpt §7.1, Table 3).",
    ),
    "lmsys": ("lmsys_cdf.json", "CDF of total tokens for LMSYS-Chat-1M (FleetOpt §7.1)."),
    "lmsys-multiturn": (
        "lmsys_multiturn_cdf.json",
        "CDF of accumulated multi-turn context for LMSYS-Chat-1M (FleetOpt §7.1, Table 3).",
    ),
    "agent-heavy": (
        "agent_heavy_cdf.json",
        "Synthetic agent-heavy CDF: 35% RAG, 40% SWE-bench, 25% BFCL (FleetOpt §7.1, Table 3).",
    ),
}
LMSYS_IDENTICAL = (
    "The reference implementation's lmsys_cdf.json and lmsys_multiturn_cdf.json are byte-identical "
    "(FACTS §1), so 'lmsys' and 'lmsys-multiturn' are the same distribution."
)


def _datetime_us(strings: list[str]) -> np.ndarray:
    """Microseconds since 1970 of ``YYYY-MM-DD HH:MM:SS.fffffff`` strings (last digit must be 0)."""
    whole = np.array([s[:19].replace(" ", "T") for s in strings], dtype="datetime64[s]").astype(np.int64)
    fractions = [s[20:].ljust(7, "0") for s in strings]
    if any(f[6:] != "0" for f in fractions):
        raise SystemExit("a timestamp has a non-zero 7th fractional digit: microseconds would lose it")
    return whole * 1_000_000 + np.array([int(f[:6]) for f in fractions], dtype=np.int64)


def _yaml_text(fields: dict) -> str:
    import yaml

    return yaml.safe_dump(fields, sort_keys=False, allow_unicode=True, width=100)


def build(shared: Path) -> None:
    traces = shared / "traces" / "azure-2023"
    cdfs = shared / "reference" / "fleet-sim-cdfs"
    OUT.mkdir(exist_ok=True)
    origin_us = int(_datetime_us([AZURE_ORIGIN])[0])
    shutil.copyfile(traces / "LICENSE", OUT / "LICENSE-azure-2023.txt")
    for part in ("conv", "code"):
        source = traces / f"AzureLLMInferenceTrace_{part}.csv"
        lines = source.read_text(encoding="utf-8").splitlines()
        assert lines[0] == "TIMESTAMP,ContextTokens,GeneratedTokens", lines[0]
        rows = [line.split(",") for line in lines[1:] if line.strip()]
        offsets = _datetime_us([r[0] for r in rows]) - origin_us
        text = io.StringIO()
        text.write("arrival_offset_us,input_tokens,output_tokens\n")
        for offset, row in zip(offsets.tolist(), rows, strict=True):
            text.write(f"{offset},{int(row[1])},{int(row[2])}\n")
        data_name = f"azure-2023-{part}.csv.gz"
        # mtime=0 and no file name: the same input always gives the same bytes.
        with (
            open(OUT / data_name, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as compressed,
        ):
            compressed.write(text.getvalue().encode("ascii"))
        label = "conversation" if part == "conv" else "coding"
        (OUT / f"azure-2023-{part}.yaml").write_text(
            _yaml_text(
                {
                    "name": f"azure-2023-{part}",
                    "description": f"Azure LLM inference trace 2023, {label} requests ({len(rows):,} rows).",
                    "format": "csv",
                    "files": [data_name],
                    "input_column": "input_tokens",
                    "output_column": "output_tokens",
                    "time_column": "arrival_offset_us",
                    "source": f"AzureLLMInferenceTrace_{part}.csv",
                    "provenance": AZURE_CITATION,
                    "licence": AZURE_LICENCE,
                    "time_origin": AZURE_ORIGIN,
                }
            ),
            encoding="utf-8",
        )
    (OUT / "azure-2023.yaml").write_text(
        _yaml_text(
            {
                "name": "azure-2023",
                "description": "Azure LLM inference trace 2023, conversation and coding requests together.",
                "format": "csv",
                "files": ["azure-2023-conv.csv.gz", "azure-2023-code.csv.gz"],
                "input_column": "input_tokens",
                "output_column": "output_tokens",
                "time_column": "arrival_offset_us",
                "source": "AzureLLMInferenceTrace_conv.csv + AzureLLMInferenceTrace_code.csv",
                "provenance": AZURE_CITATION,
                "licence": AZURE_LICENCE,
                "time_origin": AZURE_ORIGIN,
            }
        ),
        encoding="utf-8",
    )
    for name, (file_name, description) in CDFS.items():
        data_name = f"{name}.cdf.json"
        shutil.copyfile(cdfs / file_name, OUT / data_name)
        provenance = f"{FLEET_SIM}: {file_name}."
        if name.startswith("lmsys"):
            provenance += " " + LMSYS_IDENTICAL
        (OUT / f"{name}.yaml").write_text(
            _yaml_text(
                {
                    "name": name,
                    "description": description,
                    "format": "cdf-json",
                    "files": [data_name],
                    "source": file_name,
                    "provenance": provenance,
                    "licence": "Apache-2.0 (vllm-sr-sim); copied unchanged",
                }
            ),
            encoding="utf-8",
        )


def main(argv: list[str]) -> None:
    shared = Path(argv[1]) if len(argv) > 1 else REPO.parent / "shared"
    if not shared.is_dir():
        raise SystemExit(f"{shared}: not a folder (give the shared background folder as the argument)")
    build(shared)
    total = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"wrote {OUT} ({total / 1024:.0f} KiB)")


if __name__ == "__main__":
    main(sys.argv)
