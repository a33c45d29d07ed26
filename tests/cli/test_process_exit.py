"""``mwp-local`` as a real process ending with the interpreter's normal exit: everything it
printed arrives, its exit code is the subcommand's, the files it wrote are complete, and a thread
still running is waited for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mwp_local.cli import main

NOW = "2026-07-15T00:00:00Z"


def _mwp_local(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mwp_local.cli", *args], capture_output=True, text=True, check=False
    )


def test_a_process_prints_everything_returns_its_code_and_leaves_whole_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "sbx"
    init = _mwp_local("init", str(directory), "--seed", "5", "--now", NOW)
    assert init.returncode == 0, init.stderr
    registry = _mwp_local("registry", str(directory))
    assert registry.returncode == 0, registry.stderr
    # everything printed arrived through the pipe, flushed before the process ended
    assert main(["registry", str(directory)]) == 0
    assert registry.stdout == capsys.readouterr().out != ""
    # the log the first process wrote is whole: a third one verifies it
    verify = _mwp_local("verify-log", str(directory))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    refused = _mwp_local("sql", str(directory), "DELETE FROM log_events")
    assert refused.returncode == 1  # a failing subcommand keeps its code and its message
    assert "only SELECT queries are allowed" in refused.stdout + refused.stderr


_WITH_A_THREAD = """
import sys, threading
from pathlib import Path
import mwp_local.cli as cli

out = Path(sys.argv[1])
release = threading.Event()

def late_writer():
    release.wait()
    out.write_text("written after main returned")

threading.Thread(target=late_writer).start()  # not a daemon: the process must wait for it
sys.argv = ["mwp-local", "--version-of-nothing"]
cli.build_parser = lambda only=None: _Parser()

class _Parser:
    def parse_args(self, argv):
        class Args:
            @staticmethod
            def _run(args):
                release.set()
                return 3
        return Args()

sys.exit(cli.main())
"""


def test_the_process_waits_for_a_thread_still_running(tmp_path: Path) -> None:
    out = tmp_path / "late.txt"
    done = subprocess.run(
        [sys.executable, "-c", _WITH_A_THREAD, str(out)], capture_output=True, text=True
    )
    assert done.returncode == 3, done.stderr
    assert out.read_text() == "written after main returned"
