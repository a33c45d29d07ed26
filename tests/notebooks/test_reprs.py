"""A Sandbox and a StepReport draw themselves in a notebook through ``_repr_html_``, without
``%load_ext mwp_local.notebook``, with the same renderers the extension registers (no kernel)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from mwp_local.drivers.sandbox import Sandbox
from mwp_local.render import reprs

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    sb = Sandbox(tmp_path / "s", SAMPLES / "learn.toml", seed=1)
    yield sb
    sb.close()


def test_a_sandbox_draws_itself_as_the_extension_would(sandbox: Sandbox) -> None:
    for _ in range(3):
        assert sandbox.step() is not None
    html = sandbox._repr_html_()
    assert html == reprs.sandbox_html(sandbox)
    assert "Sandbox" in html and "<th>steps</th><td>3</td>" in html
    assert "export-button" in html  # its Mission, by short name


def test_a_step_report_draws_itself_accepted_and_refused(sandbox: Sandbox) -> None:
    report = sandbox.step()
    assert report is not None and report.accepted
    html = report._repr_html_()
    assert html == reprs.RENDERERS[("mwp_local.drivers.sandbox", "StepReport")](report)
    assert "ACCEPTED" in html and report.kind in html
    refused = dataclasses.replace(
        report,
        accepted=False,
        events=(),
        code="REVISION_CONFLICT",
        explanation="stale <revision>",
        rule="§10.2",
    )
    html = refused._repr_html_()
    assert "REVISION_CONFLICT" in html and "&lt;revision&gt;" in html
    assert "ACCEPTED" not in html
