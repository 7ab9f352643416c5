"""Write docs/cli.md from the commands' own --help, so the reference can't drift from the code.

python scripts/gen_cli_docs.py          # rewrite docs/cli.md
python scripts/gen_cli_docs.py --check  # exit 1 if docs/cli.md is out of date (tests run this)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from typer.testing import CliRunner

from fleetopt.cli import app

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
COMMANDS = (
    ("plan",),
    ("export",),
    ("audit",),
    ("drift",),
    ("simulate",),
    ("workload", "show"),
    ("calibrate",),
    ("kv",),
    ("profiles", "list"),
    ("profiles", "show"),
    ("queue",),
    ("schema",),
)
INTRO = """# Command-line reference

Generated from each command's `--help` by `scripts/gen_cli_docs.py` (a test checks it is current).
Conventions shared by every command:

- `--format table|json|yaml` (`-f`): a table for people, the same data as JSON or YAML for machines
  (`fleetopt drift` also has `markdown`).
- Durations take a unit: `500ms`, `0.5s`. Fractions take `0.1` or `10%`.
- Exit status, every command:
  - **0** success (`simulate` and `plan --validate` also on a FAIL verdict, unless `--strict`);
  - **1** an error in the input or environment — one `Error: …` line on stderr naming the input,
    never a traceback, no output file changed — or an infeasible plan; for `drift`, drift (the
    plan no longer fits); for `simulate --strict`, an SLO breach;
  - **2** a usage error (unknown option, text where a number belongs); for `drift`, unusable input
    (plan, workload or option);
  - **70** an internal error, i.e. a bug in fleetopt: one line asking for a report
    (`fleetopt --debug …` shows the traceback).
- Hostile input: malformed, mangled, binary, mis-encoded or absurd files and option values get
  one `Error:` line naming the input (token counts above 10⁸ per request, rates outside
  (0, 10⁸] req/s, more than 10⁷ simulated requests per seed are refused before any work); output
  files are written atomically (never half-written, never over an input). `tests/test_fuzz.py`
  feeds generated and mutated inputs through every command (`FLEETOPT_FUZZ=deep` for a long run).
- Profiles: `--profiles-dir DIR` adds your own folder (models/, gpus/, serving/) before the
  bundled profiles; any profile option also takes a path to a YAML file.
- Workloads: `--cdf` takes a bundled name (`fleetopt workload show --help` lists the formats) or a
  path to a request log (Azure CSV, any CSV with `--input-column/--output-column/--time-column`,
  Mooncake JSONL) or a CDF (JSON or CSV).
"""


def render() -> str:
    runner = CliRunner()
    parts = [INTRO]
    top = runner.invoke(app, ["--help"], env={"COLUMNS": "100"})
    parts.append("## fleetopt\n\n```text\n" + top.output.rstrip() + "\n```\n")
    for command in COMMANDS:
        result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "100"})
        if result.exit_code != 0:
            raise SystemExit(f"fleetopt {' '.join(command)} --help failed:\n{result.output}")
        parts.append(f"## fleetopt {' '.join(command)}\n\n```text\n{result.output.rstrip()}\n```\n")
    return "\n".join(parts)


def main() -> None:
    os.environ["COLUMNS"] = "100"
    text = render()
    if "--check" in sys.argv:
        if not DOC.is_file() or DOC.read_text(encoding="utf-8") != text:
            print(f"{DOC} is out of date: run python scripts/gen_cli_docs.py")
            raise SystemExit(1)
        return
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
