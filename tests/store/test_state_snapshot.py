"""Opening a log from its state snapshot plus the tail gives exactly the plain full replay.

* over the logs of several sample missions and seeded random cut points, the state from a
  snapshot at the cut plus the Events after it equals ``replay``'s, projection rows included;
* the snapshot ``GroupLog.close`` writes from the live state, reopened, equals the replay too;
* a snapshot with a changed byte, of another log, beyond the log's head, of another code
  version, or truncated falls back to the full replay with its reason, and nothing on disk but
  the snapshot changes; ``verify-log`` and import do not read it.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

import pytest

from mwp_local.authority.state import AuthorityState
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.store import state_snapshot
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.group_log import GroupLog, fold, replay
from mwp_local.store.projection_rows import projection_rows
from mwp_local.store.sandbox_dir import LOG_FILE, load_organization, open_directory

ROOT = Path(__file__).resolve().parents[2]
MISSIONS = ("learn", "flagship", "child", "retries", "delivery")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One step-mode run of each sample mission (as ``mwp-local run ... --mode step``)."""
    out = {}
    for mission in MISSIONS:
        directory = tmp_path_factory.mktemp(mission) / "run"
        sandbox = Sandbox(directory, ROOT / "sample_missions" / f"{mission}.toml", seed=1)
        sandbox.run()
        sandbox.close()
        out[mission] = directory
    return out


def _store(directory: Path) -> DuckDBLogStore:
    return DuckDBLogStore(directory / LOG_FILE, read_only=True)


def _snapshot_at(directory: Path, cut: int) -> tuple[AuthorityState, int]:
    """Write the snapshot of the state after the log's first ``cut`` Events (and the receipts
    of the Commands whose Events all lie in them); the state and how many receipts."""
    org = load_organization(directory)
    with _store(directory) as store:
        entries = list(store.entries())
        receipts = list(store.receipts())
        position_of = {e.event.event_id: e.position for e in entries}
        held = 0
        for receipt in receipts:
            if any(position_of[i] > cut for i in receipt.event_ids):
                break
            held += 1
        from mwp_local.protocol.jsontext import parse_strict

        state = fold(org, (parse_strict(e.event.document) for e in entries[:cut]), receipts[:held])
        path = state_snapshot.snapshot_path(store)
        assert path is not None
        state_snapshot.write_file(
            path, state, position=cut, chain=bytes(entries[cut - 1].chain), receipts=held
        )
    return state, held


def _opened(directory: Path) -> tuple[GroupLog, AuthorityState]:
    """The log opened (snapshot allowed) and the plain full replay of it."""
    org = load_organization(directory)
    store = _store(directory)
    log = GroupLog(org, store)
    return log, replay(org, store)


def _same(a: AuthorityState, b: AuthorityState) -> None:
    assert a == b
    assert projection_rows(a) == projection_rows(b)


def _files(directory: Path) -> dict[str, str]:
    return {
        p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and not p.name.endswith(state_snapshot.SUFFIX)
    }


@pytest.mark.parametrize("mission", MISSIONS)
def test_snapshot_plus_tail_equals_the_full_replay_at_random_cuts(
    runs: dict[str, Path], mission: str
) -> None:
    directory = runs[mission]
    with _store(directory) as store:
        head = store.event_count()
    assert head > 20
    cuts = sorted({1, head, *random.Random(f"{mission}-25").sample(range(1, head), 3)})
    for cut in cuts:
        _snapshot_at(directory, cut)
        log, plain = _opened(directory)
        assert log.snapshot_reason is None, (cut, log.snapshot_reason)
        _same(log.state, plain)
        log.store.close()


def test_the_snapshot_close_writes_from_the_live_state_reopens_as_the_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state_snapshot, "EVERY", 10)
    directory = tmp_path / "run"
    sandbox = Sandbox(directory, ROOT / "sample_missions" / "learn.toml", seed=3)
    sandbox.run()
    live = sandbox.log.state
    sandbox.close()
    path = directory / (LOG_FILE + state_snapshot.SUFFIX)
    assert path.exists()
    log, plain = _opened(directory)
    assert log.snapshot_reason is None
    _same(log.state, plain)
    assert projection_rows(live) == projection_rows(plain)
    log.store.close()
    log = open_directory(directory, snapshot=False)
    assert log.snapshot_reason == "not asked for"
    log.store.close()


def _refused(directory: Path, reason: str) -> None:
    """Opening falls back to the full replay for ``reason`` and changes no other file."""
    before = _files(directory)
    log, plain = _opened(directory)
    assert log.snapshot_reason is not None and reason in log.snapshot_reason, log.snapshot_reason
    _same(log.state, plain)
    log.store.close()
    assert _files(directory) == before


def _path(directory: Path) -> Path:
    return directory / (LOG_FILE + state_snapshot.SUFFIX)


def test_a_changed_byte_falls_back_to_the_full_replay(runs: dict[str, Path]) -> None:
    directory = runs["learn"]
    _snapshot_at(directory, 30)
    data = bytearray(_path(directory).read_bytes())
    for offset in (len(data) - 5, data.index(b"\n") + 40):
        changed = bytearray(data)
        changed[offset] ^= 0x01
        _path(directory).write_bytes(bytes(changed))
        _refused(directory, "damaged")
    _path(directory).write_bytes(bytes(data[: len(data) // 2]))
    _refused(directory, "damaged")
    _path(directory).write_bytes(b"not a snapshot")
    _refused(directory, "header")


def test_a_snapshot_of_another_log_falls_back_to_the_full_replay(runs: dict[str, Path]) -> None:
    with _store(runs["learn"]) as a, _store(runs["retries"]) as b:
        cut = min(a.event_count(), b.event_count()) - 1
    _snapshot_at(runs["learn"], cut)
    _path(runs["retries"]).write_bytes(_path(runs["learn"]).read_bytes())
    _refused(runs["retries"], "another log")


def test_a_snapshot_beyond_the_head_falls_back_to_the_full_replay(runs: dict[str, Path]) -> None:
    directory = runs["child"]
    org = load_organization(directory)
    with _store(directory) as store:
        head, chain = store.chain_head()
        state = replay(org, store)
        state_snapshot.write_file(
            _path(directory), state, position=head + 5, chain=chain, receipts=len(state.receipts)
        )
    _refused(directory, "beyond the log's head")


def test_a_snapshot_of_another_code_version_falls_back_to_the_full_replay(
    runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = runs["delivery"]
    with monkeypatch.context() as patch:
        patch.setattr(state_snapshot, "code_version", lambda: "0/0.0.9/older")
        _snapshot_at(directory, 25)
    _refused(directory, "another version")


def test_a_snapshot_is_data_and_its_records_have_their_types(runs: dict[str, Path]) -> None:
    """The body is JSON plus texts, and a round trip rebuilds tuples and enums exactly."""
    state, _ = _snapshot_at(runs["flagship"], 40)
    body = state_snapshot.encode_state(state)
    again: Any = state_snapshot.decode_state(body)
    assert again == state
    for item in again.work_items.values():
        assert type(item.state) is type(next(iter(state.work_items.values())).state)
        assert isinstance(item.artifact_hashes, tuple)
    with pytest.raises(ValueError):
        state_snapshot.decode_state(body.replace(b'"receipts"', b'"receiptz"', 1))


def test_verify_log_and_import_never_read_the_snapshot(
    runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """They judge the log itself: with a valid snapshot beside it, neither loads it."""
    from mwp_local.cli import main

    directory = runs["learn"]
    _snapshot_at(directory, 20)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the snapshot was read")

    monkeypatch.setattr(state_snapshot, "load", refuse)
    assert main(["verify-log", str(directory)]) == 0
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    main(["import", str(directory), str(empty)])  # refused or not: only the plain replay ran
