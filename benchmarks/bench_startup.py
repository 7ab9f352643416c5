"""Start-up cost of fleetopt's commands: this checkout against another source tree, in one run.

    git archive 589950d | tar -x -C /tmp/before     # any older commit, unpacked
    python benchmarks/bench_startup.py --before /tmp/before [--rounds 7]

Each command runs as a fresh ``python -m fleetopt …`` process; the measure is its CPU time
(user + system, ``resource.getrusage(RUSAGE_CHILDREN)``: the machine is shared, wall time would
also measure the neighbours), the two trees alternating command by command, median over the
rounds. Both trees are byte-compiled first (as ``pip install`` leaves a package) and the
caller's ``OPENBLAS_NUM_THREADS`` is removed, so each tree starts numpy its own way. Without
``--before`` only this checkout is measured.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CDF = REPO.parent / "shared" / "reference" / "fleet-sim-cdfs" / "azure_cdf.json"
COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "fleetopt --help": ["-m", "fleetopt", "--help"],
    "fleetopt plan --cdf azure … --rate 10 --b-short 4096 --service-model fleet-sim -f json": [
        "-m", "fleetopt", "plan", "--cdf", str(CDF) if CDF.exists() else "azure", "--slo", "500ms",
        "--rate", "10", "--b-short", "4096", "--service-model", "fleet-sim", "--compressibility", "0.75",
        "--format", "json",
    ],
    "fleetopt plan --cdf azure-2023 --slo 500ms (engine, table)": [
        "-m", "fleetopt", "plan", "--cdf", "azure-2023", "--slo", "500ms",
    ],
    "fleetopt profiles list -f json": ["-m", "fleetopt", "profiles", "list", "-f", "json"],
}  # fmt: skip


def cpu_s(arguments: list[str], tree: Path | None) -> float:
    """CPU seconds of one ``python ARGUMENTS`` child, with ``tree`` first on the import path."""
    environment = dict(os.environ)
    environment.pop("OPENBLAS_NUM_THREADS", None)
    if tree is not None:
        environment["PYTHONPATH"] = str(tree)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, *arguments], env=environment, cwd="/", check=False,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, help="an older source tree (with its fleetopt/ folder)")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    trees: dict[str, Path | None] = {"this checkout": REPO}
    if args.before is not None:
        trees = {"before": args.before, **trees}
    for tree in trees.values():
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "fleetopt")], check=False)
    samples: dict[tuple[str, str], list[float]] = {(t, c): [] for t in trees for c in COMMANDS}
    for _ in range(args.rounds):
        for command, arguments in COMMANDS.items():
            for label, tree in trees.items():
                samples[(label, command)].append(cpu_s(arguments, tree))
    labels = list(trees)
    print(f"CPU ms per command (median of {args.rounds} interleaved rounds)")
    print("| command | " + " | ".join(labels) + (" | after / before |" if len(labels) == 2 else " |"))
    print("|---|" + "---:|" * (len(labels) + (len(labels) == 2)))
    for command in COMMANDS:
        medians = [statistics.median(samples[(label, command)]) * 1e3 for label in labels]
        ratio = f" {medians[1] / medians[0]:.2f} |" if len(labels) == 2 else ""
        print(f"| `{command}` | " + " | ".join(f"{m:.0f}" for m in medians) + " |" + ratio)


if __name__ == "__main__":
    main()
