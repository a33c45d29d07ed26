"""A JupyterLab server and a headless Chromium for the browser tests.

JupyterLab runs as a subprocess in its own process session, on a free port with a random token,
with every config/data/runtime/settings/workspace directory in a temporary folder, serving a
temporary copy of ``notebooks/``, ``sample_missions/`` and ``tutorials/`` from their parent (as
a user starts it from the repository); it is stopped by its process group in teardown. Readiness is polled on ``/api/status`` against a deadline. Chromium is Debian's
(``/usr/bin/chromium``, installed by ``.ci/run``); Playwright only drives it (no
``playwright install``). In CI a missing Chromium fails the tests with a clear message; elsewhere
they are skipped.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: How long JupyterLab may take to answer /api/status.
STARTUP_S = 90.0
OUTPUT = ROOT / "test-output"


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab: where it serves and how to authenticate."""

    url: str
    token: str
    root: Path

    def notebook_url(self, name: str) -> str:
        """The URL that opens ``notebooks/<name>`` (the server's root is the repository copy)."""
        return f"{self.url}/lab/tree/notebooks/{name}?token={self.token}&reset"


def _require_chromium() -> None:
    if CHROMIUM.exists():
        return
    message = (
        f"{CHROMIUM} is missing: the browser tests need Debian's chromium "
        "(`apt-get install -y chromium`; .ci/run installs it)"
    )
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited early:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)  # poll interval, bounded by the deadline
    raise RuntimeError(f"JupyterLab not ready in {STARTUP_S} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A JupyterLab serving a copy of the notebooks; stopped by PID (process group) after."""
    _require_chromium()
    base = tmp_path_factory.mktemp("lab")
    root = base / "root"
    for folder in ("notebooks", "sample_missions", "tutorials"):
        shutil.copytree(ROOT / folder, root / folder)
    config = base / "config"
    (config / "labconfig").mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_DATA_DIR": str(base / "data"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    port, token = _free_port(), secrets.token_hex(16)
    log = base / "jupyterlab.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
                "--ip=127.0.0.1", f"--port={port}", f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={root}",
                f"--LabApp.user_settings_dir={base / 'settings'}",
                f"--LabApp.workspaces_dir={base / 'workspaces'}",
                "--LabApp.news_url=", "--LabApp.expose_app_in_browser=True",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ],
            stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=root, start_new_session=True,
        )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_ready(f"{url}/api/status?token={token}", process, log)
        yield Lab(url=url, token=token, root=root)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="session")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Debian Chromium with a fresh profile, driven by Playwright."""
    _require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            yield context
        finally:
            context.close()


def wait_idle(page: Any, timeout_ms: int) -> None:
    """Wait until the current notebook's kernel exists and is idle."""
    page.wait_for_function(
        "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
        " const k = w && w.sessionContext && w.sessionContext.session"
        " && w.sessionContext.session.kernel; return k && k.status === 'idle'; }",
        timeout=timeout_ms,
    )


def run_all(page: Any, done_selector: str, timeout_ms: int) -> None:
    """Run every cell of the open notebook; return once ``done_selector`` is visible and the
    kernel is idle again, with no traceback in any output."""
    from playwright.sync_api import expect

    wait_idle(page, 120_000)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    expect(page.locator(done_selector)).to_be_visible(timeout=timeout_ms)
    wait_idle(page, timeout_ms)
    tracebacks = page.locator(".jp-OutputArea-output", has_text="Traceback")
    assert tracebacks.count() == 0, tracebacks.first.text_content()


@pytest.fixture
def output_dir(request: pytest.FixtureRequest) -> Path:
    """``test-output/<test name>/``: where a test saves its screenshots (git-ignored)."""
    path = OUTPUT / request.node.name
    path.mkdir(parents=True, exist_ok=True)
    return path
