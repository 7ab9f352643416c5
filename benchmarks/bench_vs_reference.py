"""fleetopt against the papers' reference implementation, end to end, command against command.

    python benchmarks/bench_vs_reference.py [--rounds 3] [--ref-venv /work/venvs/ref] [--install]

The reference is the PyPI package ``vllm-sr-sim`` (FACTS §1), installed in its own virtual
environment (never in fleetopt's): ``python -m venv V && V/bin/pip install --pre vllm-sr-sim``
(``--install`` does this when V has no ``vllm-sr-sim``). When it is not there and cannot be
installed the benchmark prints why and exits 0.

Both tools answer the same question on the papers' three CDFs (``../shared/reference/
fleet-sim-cdfs``: Azure at B_short = 4,096, LMSYS at 1,536, Agent-heavy at 8,192; FACTS §1),
P99 TTFT SLO 500 ms, at λ = 10, 1,000, 10⁴ and 10⁵ req/s:

    vllm-sr-sim optimize --cdf X --lam λ --slo 500 --b-short B --verify-top 0
    fleetopt plan --cdf X --slo 500ms --rate λ --b-short B --service-model fleet-sim \\
        --compressibility 0.75 --format json

(``optimize``'s flags read from its ``--help``, vllm-sr-sim 0.1.0.dev20260713123629:
``--cdf``, ``--lam`` in req/s, ``--slo`` in ms, ``--b-short``, ``--verify-top 0`` skips its
discrete-event check of the top candidates.) Each is a fresh process, as a user runs it. The
machine is shared, so the measure is the CPU time of the child (user + system, from
``resource.getrusage(RUSAGE_CHILDREN)``), not wall time; the two commands alternate within each
round, cell by cell, and each cell reports its median over the rounds and the ratio
reference / fleetopt (> 1: fleetopt is faster). fleetopt's modules are byte-compiled first, as
``pip install`` leaves them (the reference's are, being pip-installed).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CDF_DIR = REPO.parent / "shared" / "reference" / "fleet-sim-cdfs"
CASES = (
    ("azure", "azure_cdf.json", 4096),
    ("lmsys", "lmsys_cdf.json", 1536),
    ("agent-heavy", "agent_heavy_cdf.json", 8192),
)
RATES = (10, 1000, 10_000, 100_000)
SLO_MS = 500
REFERENCE_PACKAGE = "vllm-sr-sim"


def child_cpu_s(command: list[str]) -> tuple[float, int]:
    """CPU seconds (user + system) of one child process running ``command``, and its exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    completed = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if completed.returncode not in (0, 1):  # fleetopt exits 1 when no fleet meets the SLO
        sys.exit(f"{' '.join(command)} failed ({completed.returncode}): {completed.stderr.decode()[-400:]}")
    return cpu, completed.returncode


def reference_command(venv: Path, install: bool) -> list[str] | None:
    """The reference's executable in ``venv``, installing it first with ``install``; None if absent."""
    executable = venv / "bin" / REFERENCE_PACKAGE
    if executable.exists():
        return [str(executable)]
    if not install:
        return None
    try:
        if not (venv / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--pre", REFERENCE_PACKAGE],
            check=True,
            capture_output=True,
            timeout=900,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as error:
        print(f"skip: cannot install {REFERENCE_PACKAGE} into {venv}: {error}")
        return None
    return [str(executable)] if executable.exists() else None


def fleetopt_command() -> list[str]:
    """The installed console script beside this interpreter (what a user runs), else ``-m fleetopt``."""
    script = Path(sys.executable).parent / "fleetopt"
    if script.exists():
        return [str(script)]
    found = shutil.which("fleetopt")
    return [found] if found else [sys.executable, "-m", "fleetopt"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ref-venv", type=Path, default=Path("/work/venvs/ref"))
    parser.add_argument("--install", action="store_true", help="pip-install the reference if it is missing")
    parser.add_argument("--rates", default=",".join(str(r) for r in RATES))
    parser.add_argument("--cdf-dir", type=Path, default=CDF_DIR)
    args = parser.parse_args()
    if not args.cdf_dir.is_dir():
        print(f"skip: the papers' CDFs are not at {args.cdf_dir}")
        return
    reference = reference_command(args.ref_venv, args.install)
    if reference is None:
        print(f"skip: {REFERENCE_PACKAGE} is not installed in {args.ref_venv} (rerun with --install)")
        return
    fleetopt = fleetopt_command()
    # As installed by pip (which byte-compiles every module): without .pyc files (an editable
    # install under PYTHONDONTWRITEBYTECODE) each run would recompile fleetopt's sources.
    import fleetopt as package

    package_dir = str(Path(package.__file__).parent)
    subprocess.run([sys.executable, "-m", "compileall", "-q", package_dir], check=False)
    rates = [int(float(r)) for r in args.rates.split(",")]
    cells = [(name, args.cdf_dir / file, b, rate) for name, file, b in CASES for rate in rates]
    times: dict[tuple[str, int], dict[str, list[float]]] = {
        (c[0], c[3]): {"fleetopt": [], "reference": []} for c in cells
    }
    exits: dict[tuple[str, int], int] = {}
    for round_index in range(args.rounds):
        for name, path, b_short, rate in cells:
            ours = fleetopt + [
                "plan", "--cdf", str(path), "--slo", f"{SLO_MS}ms", "--rate", str(rate),
                "--b-short", str(b_short), "--service-model", "fleet-sim", "--compressibility", "0.75",
                "--format", "json",
            ]  # fmt: skip
            theirs = reference + [
                "optimize", "--cdf", str(path), "--lam", str(rate), "--slo", str(SLO_MS),
                "--b-short", str(b_short), "--verify-top", "0",
            ]  # fmt: skip
            order = [("fleetopt", ours), ("reference", theirs)]
            if round_index % 2:  # alternate who goes first
                order.reverse()
            for tool, command in order:
                cpu, code = child_cpu_s(command)
                times[(name, rate)][tool].append(cpu)
                if tool == "fleetopt":
                    exits[(name, rate)] = code
        print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr)
    print(f"fleetopt: {' '.join(fleetopt)}   reference: {' '.join(reference)}   rounds: {args.rounds}")
    print("CPU seconds of the child process (user + system), median over rounds")
    print("| CDF | B_short | λ (req/s) | fleetopt (s) | reference (s) | reference / fleetopt |")
    print("|---|---:|---:|---:|---:|---:|")
    slower = 0
    for name, _, b_short, rate in cells:
        ours = statistics.median(times[(name, rate)]["fleetopt"])
        theirs = statistics.median(times[(name, rate)]["reference"])
        note = "" if exits[(name, rate)] == 0 else " (fleetopt: no fleet meets the SLO)"
        slower += ours >= theirs
        print(f"| {name} | {b_short:,} | {rate:,} | {ours:.3f} | {theirs:.3f} | {theirs / ours:.2f}×{note} |")
    print(f"fleetopt faster in {len(cells) - slower} of {len(cells)} cells")


if __name__ == "__main__":
    main()
