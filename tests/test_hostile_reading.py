"""Hostile inputs to the readers (issue 34): data counted twice by a glob, YAML anchor bombs and
repeated keys, unbounded arrays from one far timestamp, gzip bombs, csv's field limit, summary
rows without a count, error messages that echo user text. Each case: one ``Error:`` line (or the
right result), exit 1, bounded time and memory, no traceback."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetopt.cli import app

runner = CliRunner()


def _log(path: Path, requests: int, seed: int, rate_per_s: float = 4.0) -> None:
    rng = random.Random(seed)
    rows, moment = ["input_tokens,output_tokens,timestamp"], 0.0
    for _ in range(requests):
        moment += rng.expovariate(rate_per_s)
        rows.append(f"{rng.randint(10, 3000)},{rng.randint(5, 500)},{moment:.3f}")
    path.write_text("\n".join(rows) + "\n")


def _show(target: str) -> dict:
    result = runner.invoke(app, ["workload", "show", target, "-f", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# -- globs ------------------------------------------------------------------------------------


@pytest.fixture()
def two_logs(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    for name, seed in (("d1", 1), ("d2", 2)):
        (logs / name).mkdir(parents=True)
        _log(logs / name / "a.csv", 2000, seed)
    return logs


def test_a_glob_reads_a_file_reached_through_a_symlink_once(two_logs: Path) -> None:
    """Issue 34 item 2: `logs/*/*.csv` with `logs/latest -> d2` read 6,000 requests, not 4,000."""
    (two_logs / "latest").symlink_to("d2")
    assert _show(f"{two_logs}/*/*.csv")["request_count"] == 4000
    assert _show(f"{two_logs}/**/*.csv")["request_count"] == 4000


def test_a_glob_through_a_symlink_loop_is_refused(two_logs: Path) -> None:
    """A loop with ** read the data 41 times (976 GPUs instead of 32); now one error naming it."""
    (two_logs / "d1" / "loop").symlink_to("..")
    result = runner.invoke(app, ["workload", "show", f"{two_logs}/**/*.csv"])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {two_logs}/**/*.csv: {two_logs}/d1/loop is a symlink loop (a folder inside itself); "
        "fleetopt does not follow it: remove the link or narrow the pattern\n"
    )
    assert _show(f"{two_logs}/*/*.csv")["request_count"] == 4000  # a pattern that does not enter it


def test_a_glob_that_reaches_too_many_files_says_so(tmp_path: Path, monkeypatch) -> None:
    import fleetopt.io.logs as logs

    monkeypatch.setattr(logs, "MAX_GLOB_FILES", 3)
    for k in range(5):
        (tmp_path / f"{k}.csv").write_text("input_tokens,output_tokens\n10,5\n")
    result = runner.invoke(app, ["workload", "show", f"{tmp_path}/*.csv"])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {tmp_path}/*.csv: the pattern reaches more than 3 files")


def test_a_glob_over_a_huge_tree_stops_at_its_folder_bound(tmp_path: Path, monkeypatch) -> None:
    """`/usr/**/*.py` did not finish in 90 s: the walk stops after MAX_GLOB_FOLDERS folders."""
    import fleetopt.io.logs as logs

    monkeypatch.setattr(logs, "MAX_GLOB_FOLDERS", 5)
    for k in range(10):
        (tmp_path / f"d{k}").mkdir()
    result = runner.invoke(app, ["workload", "show", f"{tmp_path}/**/*.csv"])
    assert result.exit_code == 1
    assert "the pattern reaches more than 5 folders" in result.stderr


def test_the_glob_walker_matches_what_glob_matches(tmp_path: Path) -> None:
    """The bounded walker against the standard library on a tree without links (files only)."""
    import glob
    import os

    from fleetopt.io.logs import expand_local

    for path in ("a/b/c.csv", "a/b/d.json", "a/e.csv", "f.csv", "a/.hidden/g.csv", ".h.csv", "a/b/x/y/z.csv"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x")
    for pattern in ("**/*.csv", "*/*.csv", "a/**", "a/*/[cd].*", "**/y/*.csv", "?.csv", "a/**/*"):
        expected = sorted(p for p in glob.glob(str(tmp_path / pattern), recursive=True) if os.path.isfile(p))
        assert [str(p) for p in expand_local(str(tmp_path / pattern))] == expected, pattern


# -- YAML and JSON documents -----------------------------------------------------------------


_BOMB = "\n".join(
    ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    + [f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 9) + "]" for k in range(1, 9)]
)


def test_an_anchor_bomb_in_a_profile_is_refused_before_any_value_is_formatted(tmp_path: Path) -> None:
    """9⁹ = 387 million strings from 600 bytes: it hung for minutes formatting the unknown field."""
    serving = tmp_path / "serving"
    serving.mkdir()
    profile = serving / "bomb.yaml"
    profile.write_text(f"{_BOMB}\nmodel: llama-3-70b\n")
    result = runner.invoke(app, ["profiles", "show", str(profile)])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"Error: {profile}: not valid YAML: line 1, column 5: the value starting here has an anchor (&name) "
        "that an alias (*name) repeats; fleetopt reads no YAML anchors and aliases"
    )
    assert len(result.stderr) < 400


def test_an_anchor_bomb_in_a_plan_is_refused(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    assert (
        runner.invoke(
            app, ["plan", "--cdf", "azure", "--slo", "1s", "--rate", "10", "-o", str(plan)]
        ).exit_code
        == 0
    )
    text = plan.read_text()
    assert "&" not in text and "*" not in text  # fleetopt writes no aliases itself
    plan.write_text(text.replace("\nbest:", f"\n{_BOMB}\nbomb: *a8\nbest:", 1))
    result = runner.invoke(app, ["export", "--plan", str(plan), "--to", "markdown"])
    assert result.exit_code == 1
    assert "has an anchor (&name) that an alias (*name) repeats" in result.stderr
    assert len(result.stderr) < 400


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("plan.json", '{"kind": "fleetopt-plan", "kind": "x"}', "the key 'kind' appears twice in one object"),
        ("plan.yaml", "kind: fleetopt-plan\nkind: x\n", "line 2, column 1: the key 'kind' appears twice"),
    ],
)
def test_a_key_given_twice_is_refused_not_silently_the_last(tmp_path: Path, name, text, message) -> None:
    plan = tmp_path / name
    plan.write_text(text)
    result = runner.invoke(app, ["export", "--plan", str(plan), "--to", "markdown"])
    assert result.exit_code == 1
    assert message in result.stderr


def test_a_cdf_json_with_a_key_twice_is_refused(tmp_path: Path) -> None:
    cdf = tmp_path / "cdf.json"
    cdf.write_text('{"cdf": [[100, 1.0]], "cdf": [[5000, 1.0]]}')
    result = runner.invoke(app, ["workload", "show", str(cdf)])
    assert result.exit_code == 1
    assert (
        result.stderr
        == f"Error: {cdf}: not valid JSON (the key 'cdf' appears twice in one object; keep one)\n"
    )


# -- resource bounds --------------------------------------------------------------------------


def test_one_far_timestamp_is_one_error_in_workload_show(tmp_path: Path) -> None:
    """A 30 KB log with one timestamp 317 years out took 4.0 GB in `workload show` (plan capped its
    windows, show did not); the cap is now where every profile's windows are counted."""
    log = tmp_path / "far.csv"
    _log(log, 2000, 3)
    with log.open("a") as stream:
        stream.write("10,10,10000000000\n")
    result = runner.invoke(app, ["workload", "show", str(log)])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: rate window: the arrivals span 9,999,99")
    assert result.stderr.endswith(
        " windows of 60 s, more than the 10,000,000 a rate profile holds: check the log's timestamps (one "
        "far from the others, or a unit off by 1000×), or use a longer --rate-window\n"
    )
    plan = runner.invoke(app, ["plan", "--cdf", str(log), "--slo", "1s", "-f", "json"])
    assert plan.exit_code == 0  # plan sizes on the mean and says the rate looks wrong
    assert any("looks wrong" in note for note in json.loads(plan.stdout)["notes"])


@pytest.mark.parametrize("name", ["bomb.csv.gz", "bomb.json.gz"])
def test_a_gzip_bomb_is_refused_by_its_ratio(tmp_path: Path, name: str) -> None:
    """A 510 KB gzip bomb reached 3.9 GB and exited 70; now decompression stops at 100× its size."""
    body = b"input_tokens,output_tokens\n" + b"1,1\n" * 5_000_000
    if name.endswith(".json.gz"):
        body = b'{"cdf": [[100, 1.0]]' + b" " * 20_000_000 + b"}"
    bomb = tmp_path / name
    bomb.write_bytes(gzip.compress(body, compresslevel=9))
    second = (
        ["plan", "--cdf", str(bomb), "--slo", "1s"]
        if "json" in name
        else ["workload", "summarize", str(bomb)]
    )
    for command in (["workload", "show", str(bomb)], second):
        result = runner.invoke(app, command)
        assert result.exit_code == 1
        assert result.stderr.startswith(f"Error: {bomb}: the gzip file expands more than 100× its ")


def test_a_gzip_log_of_ordinary_ratio_reads_as_before(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    _log(log, 3000, 4)
    packed = tmp_path / "log.csv.gz"
    packed.write_bytes(gzip.compress(log.read_bytes()) + gzip.compress(b""))  # two members
    assert _show(str(packed))["request_count"] == _show(str(log))["request_count"] == 3000


# -- exit 70 on bad input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("10,5\n" + "9" * 140_000 + ",5\n", "line 3: input_tokens = '9999"),
        ("10,5\n10,x\n", "line 3: output_tokens = 'x' is not a whole number of tokens"),
    ],
    ids=["token-field-over-128KiB", "ordinary-bad-field"],
)
def test_a_field_over_pythons_csv_limit_is_a_message_not_exit_70(tmp_path: Path, body, message) -> None:
    log = tmp_path / "log.csv"
    log.write_text("input_tokens,output_tokens\n" + body)
    result = runner.invoke(app, ["workload", "show", str(log)])
    assert result.exit_code == 1, result.output
    assert message in result.stderr and len(result.stderr) < 600
    assert "(140,000 characters)" in result.stderr or "140" not in body[:10]


def test_a_long_prompt_column_does_not_stop_the_careful_reader(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    log.write_text("input_tokens,output_tokens,prompt\n10,5,hi\n10,-1," + "a" * 140_000 + "\n")
    result = runner.invoke(app, ["workload", "show", str(log)])
    assert result.exit_code == 1
    assert result.stderr == f"Error: {log}, line 3: output_tokens = -1 is negative (token counts are ≥ 0)\n"


@pytest.mark.parametrize(
    ("rows", "record"),
    [
        ("tokens,-100,20,,,,,\ntokens,2000,300,,,1,,\nwindow,,,0,1000000,2,,\n", "tokens"),
        ("tokens,100,20,,,2,,\nwindow,,,,1000000,,,\n", "window"),
        ("tokens,100,20,,,2,,\nwindow,,,0,1000000,2,,\n", None),
    ],
)
def test_a_summary_row_without_a_count(tmp_path: Path, rows: str, record: str | None) -> None:
    """Found by the deep fuzz at seed 101: an empty n was `cannot convert float NaN to integer`."""
    summary = tmp_path / "summary.csv"
    log_row = "log,,,0,2500000,3,x,relative\n" if record else "log,,,0,2500000,,x,relative\n"
    summary.write_text("record,input_tokens,output_tokens,start_us,end_us,n,source,clock\n" + rows + log_row)
    result = runner.invoke(app, ["workload", "show", str(summary)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {summary}: a {record or 'log'} row's count n is missing; every row's n must be a whole "
        "number of requests ≥ 0\n"
    )


# -- messages ---------------------------------------------------------------------------------


@pytest.mark.parametrize("header_bytes", [65_535, 70_000])
def test_a_header_longer_than_the_head_is_read_whole(tmp_path: Path, header_bytes: int) -> None:
    """A 20,003-column CSV's header ran to the end of the 64 KiB head fleetopt checks first: it was
    'only a header' (the body just past the head) or had a column 'c109' twice (a name cut in
    half, 'c1093' read as 'c109'). Now the header is read whole (up to 16 MiB)."""
    columns = ["input_tokens", "output_tokens", "c1093"]
    columns.append("c109" + "x" * (header_bytes - len(",".join(columns)) - 5))
    log = tmp_path / "wide.csv"
    log.write_text(",".join(columns) + "\n10,5,1,1\n")
    assert len(",".join(columns)) == header_bytes
    assert _show(str(log))["request_count"] == 1


def test_terminal_escapes_in_a_header_are_shown_escaped(tmp_path: Path) -> None:
    log = tmp_path / "ansi.csv"
    log.write_text("\x1b[31mRED\x1b[0m,foo\n1,2\n")
    result = runner.invoke(app, ["workload", "show", str(log)])
    assert result.exit_code == 1
    assert "\x1b" not in result.stderr
    assert result.stderr.startswith(f"Error: {log}: no input column among \\x1b[31mRED\\x1b[0m, foo ")


def test_a_duckdb_message_is_joined_not_cut_mid_word() -> None:
    """DuckDB's message about a missing extension breaks a line inside a quote; the error quoted
    its first line only ('…the required extension 'httpfs:)."""
    from fleetopt.io.logs import engine_message

    error = RuntimeError(
        "An error occurred while trying to automatically install the required extension 'httpfs:\n"
        'Failed to download extension "httpfs"\n\n(ERROR Could not establish connection)\n\n'
        "LINE 1: select * from read_csv('http://127.0.0.1:1/x.csv')\n      ^^^^"
    )
    assert engine_message(error) == (
        "An error occurred while trying to automatically install the required extension 'httpfs: "
        'Failed to download extension "httpfs" (ERROR Could not establish connection)'
    )


def test_excerpt_bounds_and_escapes_any_value() -> None:
    from fleetopt.errors import excerpt, printable

    assert excerpt("ok") == "'ok'"
    assert excerpt("a\nb\x1b[2J\u2028c\x85") == "'a\\nb\\x1b[2J\\u2028c\\x85'"
    long = excerpt("x" * 10**6)
    assert len(long) < 260 and long.endswith("(1,000,000 characters)")
    nested: list = []
    for _ in range(10_000):
        nested = [nested] * 3  # 3¹⁰⁰⁰⁰ leaves if walked
    assert len(excerpt(nested)) <= 400
    assert printable("π = 3.14, 名前") == "π = 3.14, 名前"  # printable text of any script unchanged


LONG_NUMBER = "9" * 5000  # more digits than Python converts (4,300)


def test_duckdbs_csv_sniffer_does_not_read_a_long_number_as_bignum(tmp_path: Path) -> None:
    """DuckDB's sniffer typed a column holding a long digit string BIGNUM, whose parse is quadratic
    (a 280,000-digit field took 8 s, a 2 MB one minutes, before the careful reader said what was
    wrong); the reader's candidate types leave BIGNUM out."""
    import duckdb

    from fleetopt.io.logs import LogSource

    log = tmp_path / "log.csv"
    log.write_text(f"input_tokens,output_tokens\n10,5\n{LONG_NUMBER},5\n")
    relation = LogSource(label=str(log), files=(str(log),), container="csv").relation()
    types = dict(
        duckdb.connect().execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()[i][:2] for i in (0, 1)
    )
    assert types == {"input_tokens": "DOUBLE", "output_tokens": "BIGINT"}
    result = runner.invoke(app, ["workload", "show", str(log)])
    assert result.exit_code == 1
    assert (
        "line 3: input_tokens = '9999" in result.stderr
        and "(5,000 characters) is not a whole number" in result.stderr
    )


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "log.csv",
            f"input_tokens,output_tokens,timestamp\n10,5,0\n10,5,{LONG_NUMBER}\n",
            "line 3: timestamp = '9999",
        ),
        (
            "log.jsonl",
            f'{{"input_length": 10, "output_length": 5}}\n'
            f'{{"input_length": {LONG_NUMBER}, "output_length": 5}}\n',
            "line 2: input_length = 'inf' is not a whole number",
        ),
        (
            "models/m.yaml",
            f"model: llama-3-70b\nattention_heads: {LONG_NUMBER}\n",
            "line 2, column 18: a whole number of 5,000 characters",
        ),
    ],
    ids=["csv-time", "jsonl-tokens", "yaml-profile"],
)
def test_a_number_longer_than_python_converts_is_a_message_not_exit_70(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    """int() refuses more than 4,300 digits: a CSV time or a YAML whole number that long was an
    internal error (exit 70); in JSON Lines it was 'not a JSON object'."""
    path = tmp_path / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(content)
    command = ["profiles", "show", str(path)] if name.endswith(".yaml") else ["workload", "show", str(path)]
    result = runner.invoke(app, command)
    assert result.exit_code == 1, result.output
    assert message in result.stderr and len(result.stderr) < 600
