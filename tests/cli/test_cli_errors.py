"""A wrong path or argument on the command line: an ``error:`` message on standard error, exit code
2 (1 for a refused SQL query, as for a rejected Command), no traceback, nothing on standard output,
and nothing created or changed."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from mwp_local.cli import main
from mwp_local.drivers.mission_file import MissionFileError
from mwp_local.drivers.mission_file import load as load_mission_file
from mwp_local.store.base import StoreLockedError
from mwp_local.store.duckdb_log import DuckDBLogStore

NOW = "2026-07-15T00:00:00Z"
SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"

#: Every subcommand that reads an existing sandbox directory, with what else it needs.
ON_A_DIRECTORY = {
    "sql": ["SELECT 1"],
    "verify-log": [],
    "export": ["--jsonl", "{tmp}/out.jsonl"],
    "import": ["{tmp}/events.jsonl"],
    "registry": [],
    "submit": ["{tmp}/command.json"],
    "sign": ["--as", "mission-owner", "{tmp}/command.json"],
}


@pytest.fixture
def sandbox(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    directory = tmp_path / "sbx"
    assert main(["init", str(directory), "--seed", "5", "--now", NOW]) == 0
    capsys.readouterr()
    return directory


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``argv``, expect argparse's usage error (exit 2), return standard error."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "Traceback" not in err
    return err


def _failure(argv: list[str], capsys: pytest.CaptureFixture[str], code: int = 2) -> str:
    """Run ``argv``, expect exit ``code`` with an ``error:`` message, return it."""
    assert main(argv) == code
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: ") and "Traceback" not in err, err
    return err


def _state(directory: Path) -> tuple[int, int, int]:
    """The log's size: Events, receipts, rejections (read-only)."""
    con = duckdb.connect(str(directory / "group.duckdb"), read_only=True)
    try:
        return tuple(  # type: ignore[return-value]
            con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
            for t in ("log_events", "log_receipts", "log_rejections")
        )
    finally:
        con.close()


def _argv(command: str, directory: Path, tmp_path: Path) -> list[str]:
    """``command`` on ``directory``, with the input files it needs written under ``tmp_path``."""
    (tmp_path / "events.jsonl").write_text("")
    (tmp_path / "command.json").write_text("{}")
    return [command, str(directory), *(a.format(tmp=tmp_path) for a in ON_A_DIRECTORY[command])]


@pytest.mark.parametrize("command", sorted(ON_A_DIRECTORY))
def test_a_missing_directory_is_a_usage_error_and_nothing_is_created(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere"
    err = _usage_error(_argv(command, missing, tmp_path), capsys)
    assert f"argument DIR: {missing} does not exist" in err
    assert not missing.exists()
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("command", sorted(ON_A_DIRECTORY))
def test_a_directory_that_is_no_sandbox_is_named_as_such(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    err = _usage_error(_argv(command, plain, tmp_path), capsys)
    assert f"{plain} is not a sandbox directory (no organization.json)" in err
    assert "mwp-local init DIR" in err  # and how to make one
    assert list(plain.iterdir()) == []


def test_the_campaign_checker_and_poc_check_only_refuse_a_non_sandbox_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage_error(["campaign", "--check", str(tmp_path)], capsys)
    assert "is not a sandbox directory" in err
    line = _failure(["poc", "--dir", str(tmp_path / "nowhere"), "--check-only"], capsys)
    assert line == f"error: {tmp_path / 'nowhere'} does not exist\n"
    assert not (tmp_path / "nowhere").exists()


def test_a_refused_sql_query_goes_to_standard_error_and_changes_nothing(
    sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _state(sandbox)
    line = _failure(["sql", str(sandbox), "DELETE FROM log_events"], capsys, code=1)
    assert "only SELECT queries are allowed" in line
    line = _failure(["sql", str(sandbox), "SELECT * FROM no_such_view"], capsys, code=1)
    assert "no_such_view" in line
    assert _state(sandbox) == before


def test_a_sql_parameter_needs_a_name_and_a_value(
    sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage_error(["sql", str(sandbox), "SELECT $k", "--param", "k"], capsys)
    assert "argument --param: expected NAME=VALUE, got 'k'" in err
    _usage_error(["sql", str(sandbox), "SELECT 1", "--param", "=v"], capsys)
    # a value may itself hold "="
    assert main(["sql", str(sandbox), "SELECT $k AS k", "--param", "k=a=b", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"k": "a=b"}


def test_a_missing_command_file_changes_nothing(
    sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _state(sandbox)
    missing = tmp_path / "command.json"
    err = _usage_error(["submit", str(sandbox), str(missing)], capsys)
    assert f"argument FILE: {missing} does not exist" in err
    err = _usage_error(["import", str(sandbox), str(tmp_path)], capsys)
    assert f"{tmp_path} is a directory, not a file" in err
    assert _state(sandbox) == before


def test_a_missing_mission_file_is_named_before_anything_is_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nomission.toml"
    target = tmp_path / "run"
    expected = f"error: {missing}: cannot read the mission file (No such file or directory)\n"
    assert _failure(["run", str(missing), "--dir", str(target)], capsys) == expected
    assert _failure(["campaign", "--seeds", "1", "--mission", str(missing)], capsys) == expected
    assert _failure(["poc", "--dir", str(target), "--mission", str(missing)], capsys) == expected
    assert not target.exists()


def test_a_mission_file_that_is_not_text_is_a_mission_file_error(tmp_path: Path) -> None:
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(MissionFileError, match="not UTF-8 text"):
        load_mission_file(binary)


def test_an_output_path_that_cannot_be_written_names_the_path(
    sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "no" / "such" / "dir" / "events.jsonl"
    line = _failure(["export", str(sandbox), "--jsonl", str(out)], capsys)
    assert line == f"error: {out}: No such file or directory\n"
    flagship = str(SAMPLES / "flagship.toml")
    inside_a_file = sandbox / "organization.json" / "run"
    line = _failure(["run", flagship, "--dir", str(inside_a_file)], capsys)
    assert line == f"error: {inside_a_file}: Not a directory\n"


def test_init_on_an_existing_sandbox_says_so_on_standard_error(
    sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _state(sandbox)
    line = _failure(["init", str(sandbox), "--now", NOW], capsys)
    assert "already holds a sandbox" in line
    assert _state(sandbox) == before


#: A second process that holds a log open for writing until its standard input closes.
HOLD = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
print("held", flush=True)
sys.stdin.read()
con.close()
"""


def _hold(log: Path) -> subprocess.Popen[str]:
    """Start a process that holds ``log`` open for writing; return once it does."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(log)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def _let_go(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.close()
    assert holder.wait(timeout=60) == 0


@pytest.fixture
def held(sandbox: Path) -> Iterator[int]:
    """The PID of a live process holding ``sandbox``'s log open for writing (as a notebook's
    Sandbox would); it lets go when the test ends."""
    holder = _hold(sandbox / "group.duckdb")
    try:
        yield holder.pid
    finally:
        _let_go(holder)


def test_a_log_another_process_writes_is_named_with_that_process(sandbox: Path, held: int) -> None:
    path = sandbox / "group.duckdb"
    with pytest.raises(StoreLockedError) as raised:
        DuckDBLogStore(path, read_only=True)
    error = raised.value
    assert isinstance(error, OSError) and error.errno == errno.EBUSY
    assert error.filename == str(path)
    assert f"open for writing in process {held} (" in error.strerror
    assert "sandbox.close()" in error.strerror


@pytest.mark.parametrize(
    "argv",
    [
        ["sql", "{dir}", "SELECT count(*) AS n FROM events"],
        ["verify-log", "{dir}"],
        ["export", "{dir}", "--jsonl", "{tmp}/events.jsonl"],
        ["registry", "{dir}"],
        ["campaign", "--check", "{dir}"],
        ["poc", "--dir", "{dir}", "--check-only"],
    ],
    ids=lambda argv: argv[0],
)
def test_every_command_on_a_log_another_process_writes_says_who_holds_it(
    argv: list[str],
    sandbox: Path,
    tmp_path: Path,
    held: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    words = [a.format(dir=sandbox, tmp=tmp_path) for a in argv]
    line = _failure(words, capsys)
    assert line.startswith(f"error: {sandbox / 'group.duckdb'}: the log is open for writing in ")
    assert f"process {held} (" in line
    assert not (tmp_path / "events.jsonl").exists()


def test_once_the_other_process_lets_go_the_log_opens_unchanged(
    sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _state(sandbox)
    holder = _hold(sandbox / "group.duckdb")
    _failure(["verify-log", str(sandbox)], capsys)
    _let_go(holder)
    assert main(["verify-log", str(sandbox)]) == 0
    assert "OK" in capsys.readouterr().out
    assert _state(sandbox) == before
