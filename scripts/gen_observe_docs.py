"""Regenerate the examples of docs/observe.md: run the commands against a real Prometheus.

Starts Debian's ``prometheus`` on loopback with the vLLM-format series of tests/prometheus_fixture.py
(a fixed 6-hour span ending 2026-06-01T12:00:00Z: a short pool of two engines at 40 req/s each
and a long pool of one slow engine), plans the fleet they are compared with, runs each command of
the page and writes its output between the page's ``<!-- observe:NAME -->`` markers.

    python scripts/gen_observe_docs.py
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from prometheus_fixture import PrometheusServer, make_fleet  # noqa: E402

END = "2026-06-01T12:00:00Z"
END_S = 1_780_315_200.0
HOURS = 6
POOLS = {"short": (2, 40.0, 4096, 0.1, 600), "long": (1, 0.5, 65536, 0.6, 6000)}
COMMANDS = {
    "plan": "fleetopt plan --cdf azure-2023 --slo 500ms --rate 200 --output plan.yaml",
    "observe": f"fleetopt observe --prometheus $PROMETHEUS_URL --since {HOURS}h --end {END} --plan plan.yaml "
    "--tpot-slo 50ms --selector '{namespace=\"llm\"}' --output live.parquet",
    "drift": f"fleetopt drift --plan plan.yaml --prometheus $PROMETHEUS_URL --since {HOURS}h --end {END} "
    "--selector '{namespace=\"llm\"}'",
    "plan-live": "fleetopt plan --cdf live.parquet --slo 500ms",
}


def main() -> None:
    doc = ROOT / "docs" / "observe.md"
    text = doc.read_text(encoding="utf-8")
    fleet = make_fleet(pools=POOLS, start_s=END_S - HOURS * 3600, hours=HOURS, seed=3)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "110"}
    with PrometheusServer(fleet) as server, tempfile.TemporaryDirectory() as folder:
        env["PROMETHEUS_URL"] = "http://127.0.0.1:9090"
        for name, command in COMMANDS.items():
            args = [a.replace("$PROMETHEUS_URL", server.url) for a in shlex.split(command)]
            done = subprocess.run(
                [sys.executable, "-m", "fleetopt", *args[1:]], cwd=folder, env=env, capture_output=True,
                text=True, timeout=300,
            )  # fmt: skip
            output = (done.stdout + done.stderr).replace(server.url, "http://127.0.0.1:9090").rstrip()
            if name == "plan-live":  # the header and the best fleet; the tables are docs/planner.md's
                output = "\n".join(output.splitlines()[:9] + ["…"])
            block = f"```console\n$ {command}\n{output}\n# exit {done.returncode}\n```"
            pattern = re.compile(rf"(<!-- observe:{name} -->\n).*?(\n<!-- /observe:{name} -->)", re.DOTALL)
            if name == "plan":
                continue  # the plan's table is docs/planner.md's; only its file is used here
            if not pattern.search(text):
                raise SystemExit(f"docs/observe.md has no <!-- observe:{name} --> block")
            text = pattern.sub(lambda m, b=block: m.group(1) + b + m.group(2), text)
    doc.write_text(text, encoding="utf-8")
    print(f"wrote {doc}")


if __name__ == "__main__":
    main()
