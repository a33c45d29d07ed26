"""The concept notebooks' bench (``mwp_local.notebook.bench``): its checked sends tag the
requirement they show, draw the Authority's answer, and refuse to tag what did not happen."""

from __future__ import annotations

import pytest

from mwp_local.client import UnexpectedReply
from mwp_local.notebook import coverage
from mwp_local.notebook.bench import Bench, show

POST = {"content": [{"type": "text", "text": "hello"}]}


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Bench:
    monkeypatch.setattr(coverage, "SHOWN", {})  # this test's tags only
    b = Bench()
    b.create_mission()
    return b


def test_accept_and_refuse_tag_the_requirement_and_draw_the_answer(bench: Bench) -> None:
    count = bench.log.store.event_count()
    refused = bench.refuse("MWP-WRK-001", "MEMBERSHIP_STALE", "mission-owner", "message.post", POST,
                           membership_epoch=7)  # fmt: skip
    assert bench.log.store.event_count() == count
    html = refused._repr_html_()
    assert "MWP-WRK-001</b> shown <b>rejected" in html and "REJECTED MEMBERSHIP_STALE" in html
    assert "the log is unchanged" in html
    accepted = bench.accept("MWP-WRK-001", "mission-owner", "message.post", POST)
    sequence = bench.state.groups[bench.group].last_sequence  # the Group's, from the log
    assert f"#{sequence} message.posted" in accepted._repr_html_()
    show("MWP-WRK-002", "accepted", "a demonstration that is not one Command")
    assert {"MWP-WRK-001": {"accepted", "rejected"}, "MWP-WRK-002": {"accepted"}} == coverage.SHOWN
    table = coverage.coverage()._repr_html_()
    assert "<td>MWP-WRK-001</td><td>accepted, rejected</td>" in table


def test_what_did_not_happen_is_not_tagged(bench: Bench) -> None:
    with pytest.raises(UnexpectedReply, match="expected AUTH_FORBIDDEN"):
        bench.refuse("MWP-WRK-001", "AUTH_FORBIDDEN", "mission-owner", "message.post", POST)
    with pytest.raises(UnexpectedReply, match="was refused: MEMBERSHIP_STALE"):
        bench.accept("MWP-WRK-001", "mission-owner", "message.post", POST, membership_epoch=7)
    with pytest.raises(ValueError, match="a verdict is 'accepted' or 'rejected'"):
        show("MWP-WRK-001", "maybe", "?")
    assert coverage.SHOWN == {}
