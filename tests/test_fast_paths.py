"""The fast paths taken for speed give exactly the results of the plain paths they shortcut.

* ``jcs.canonicalize`` (exact-type dispatch, cached member names) against the general encoder
  ``jcs._generic`` and the reference, bytes and errors alike;
* stage 3's deferred subgroup check of R: a bad R is still reported at stage 3 when a later stage
  would also fail;
* the DuckDB store's projection statements (``VALUES`` parameters, ``unnest`` deletes of many
  composite keys) against the in-memory store;
* the Authority's stored texts equal ``canonicalize`` of the documents; replay with signature
  verification gives the same state and refuses a forged Event;
* the trusted rebuild (stored texts decoded by orjson) folds the plain replay's state over
  several sample runs, and a tampered log is refused by what still checks it;
* ``derived_uuid``'s own formatting against ``uuid.UUID(bytes=..., version=4)``;
* ``is_protocol_id``'s one-character-class shortcut against the full RFC 3986 grammar;
* step mode not asking again an agent that wanted nothing at the same instant with nothing
  changed (``AgentRuntime.intents``) against asking every agent at every step;
* the Parquet export sorted by DuckDB by (group, position) against the plain path, byte for byte;
* the verified rebuild's signing bytes cut from the stored text against re-encoding, and its state
  and refusals against the plain verified replay; its own-text decoding without the schema stage
  over several sample runs, and a tampered signed field, payload or signature;
* ``BlobStore`` writing new files unnamed (``O_TMPFILE``, linked into place) against named
  temporary files renamed into place: the same references, files and directories left to sync,
  on the test directory's file system and on a tmpfs.
* the Coordinator's and MissionOwner's indexes kept from the replica's journal of changed
  WorkItems (a Mission's WorkItems, its agenda and what is due on it, owned WorkItems, queued
  WorkItems awaiting execution Approval) against a scan of every WorkItem after every decision.

No speed is measured here.
"""

from __future__ import annotations

import enum
import hashlib
import io
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from types import MappingProxyType
from typing import Any

import blake3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mwp_local.agents.base import BasePolicy, Intent
from mwp_local.protocol import ed25519, ids, jcs
from mwp_local.protocol.errors import ProtocolError
from mwp_local.protocol.ids import derived_uuid
from mwp_local.protocol.jsontext import NonFiniteNumber, parse_strict
from mwp_local.protocol.registry import KeyBinding, Principal, Registry
from mwp_local.protocol.signing import profile_for, sign_document, verify_parsed
from mwp_local.protocol.timestamps import parse_timestamp
from mwp_local.store.blobs import BlobStore
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.duckdb_schema import log_table_schema
from mwp_local.store.memory import MemoryLogStore
from mwp_local.store.projection_rows import projection_rows
from mwp_local.store.records import Batch, ProjectionDelta

# --------------------------------------------------------------------------- JCS


class _Color(enum.Enum):
    RED = "red"


class _Level(enum.IntEnum):
    HIGH = 3


class _Name(str):
    pass


def _outcome(encode: Any, value: Any) -> tuple[str, Any]:
    try:
        return ("bytes", encode(value))
    except jcs.JcsError as exc:
        return ("error", str(exc))


def _generic(value: Any) -> bytes:
    out: list[bytes] = []
    jcs._generic(value, out)
    return b"".join(out)


_keys = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["a", "b", "\ue000", "\U0001f600", "é", "", "signature", "\ud800"]),
)
_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.sampled_from([2**53, -(2**53), 2**53 + 1, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["\ud800", _Name("sub"), _Color.RED, _Level.HIGH, NonFiniteNumber("1e400")]),
)
_values = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(_keys, inner, max_size=4),
        st.dictionaries(st.sampled_from(["k", "j"]), inner, max_size=2).map(MappingProxyType),
        st.dictionaries(st.integers(0, 3), inner, min_size=1, max_size=2),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_values)
def test_fast_canonicalize_equals_the_general_encoder_bytes_and_errors(value: Any) -> None:
    assert _outcome(jcs.canonicalize, value) == _outcome(_generic, value)


@settings(max_examples=300, deadline=None)
@given(_values)
def test_fast_canonicalize_accepts_and_refuses_what_the_reference_does(value: Any) -> None:
    fast, reference = _outcome(jcs.canonicalize, value), _outcome(jcs.canonicalize_reference, value)
    assert fast[0] == reference[0]
    if fast[0] == "bytes":
        assert fast == reference


# --------------------------------------------------------------------------- signing


def _registry(key: ed25519.SigningKeyPair) -> Registry:
    return Registry(
        organization_id="urn:missionweaveprotocol:organization:o",
        bindings=(
            KeyBinding(
                key_id="urn:missionweaveprotocol:key:owner",
                principal=Principal(type="human", id="urn:missionweaveprotocol:human:owner"),
                algorithm="Ed25519",
                public_key=jcs_b64(key.public_key),
                valid_from=parse_timestamp("2020-01-01T00:00:00Z"),
            ),
        ),
    )


def jcs_b64(data: bytes) -> str:
    from mwp_local.protocol.b64 import b64url_encode

    return b64url_encode(data)


def _command(key: ed25519.SigningKeyPair, key_id: str) -> dict[str, Any]:
    return sign_document(
        "command",
        {
            "protocolVersion": "0.1",
            "actionId": "urn:uuid:00000000-0000-4000-8000-000000000001",
            "actor": {"type": "human", "id": "urn:missionweaveprotocol:human:owner"},
            "kind": "mission.approve",
            "correlationId": "urn:uuid:00000000-0000-4000-8000-000000000002",
            "issuedAt": "2026-07-15T00:00:00Z",
            "groupId": "urn:missionweaveprotocol:group:g",
            "membershipEpoch": 1,
            "payload": {},
        },
        key,
        key_id,
    )


def _with_r(doc: dict[str, Any], r_encoding: bytes) -> dict[str, Any]:
    from mwp_local.protocol.b64 import b64url_decode

    signature = b64url_decode(doc["signature"]["value"])
    forged = dict(doc)
    forged["signature"] = {**doc["signature"], "value": jcs_b64(r_encoding + signature[32:])}
    return forged


def _mixed_order(r_encoding: bytes) -> bytes:
    # R plus the point of order 2, (0, -1): on the curve, outside the prime-order subgroup.
    from nacl.bindings import crypto_core_ed25519_add

    order_two = (ed25519.P - 1).to_bytes(32, "little")
    return bytes(crypto_core_ed25519_add(r_encoding, order_two))


def _stage(doc: dict[str, Any], registry: Registry) -> tuple[str | None, str | None]:
    try:
        verify_parsed(profile_for("command"), parse_strict(jcs.canonicalize(doc)), registry)
    except ProtocolError as exc:
        return exc.stage, exc.reason
    return None, None


def test_a_mixed_order_r_is_reported_at_stage_3_whatever_fails_later() -> None:
    key = ed25519.SigningKeyPair.from_seed(b"\x01" * 32)
    registry = _registry(key)
    good = _command(key, "urn:missionweaveprotocol:key:owner")
    assert _stage(good, registry) == (None, None)
    from mwp_local.protocol.b64 import b64url_decode

    r = b64url_decode(good["signature"]["value"])[:32]
    bad_r = _with_r(good, _mixed_order(r))
    assert _stage(bad_r, registry) == ("signature-envelope", "signature-r-mixed-order")
    unknown_key = {**bad_r, "signature": {**bad_r["signature"], "keyId": "urn:x:key:nobody"}}
    assert _stage(unknown_key, registry) == ("signature-envelope", "signature-r-mixed-order")
    tampered = {**bad_r, "payload": {"changed": True}}
    assert _stage(tampered, registry) == ("signature-envelope", "signature-r-mixed-order")
    # With a good R, the later stages report as before.
    good_unknown = {**good, "signature": {**good["signature"], "keyId": "urn:x:key:nobody"}}
    assert _stage(good_unknown, registry) == ("key-resolution", "unknown-key")
    assert _stage({**good, "payload": {"changed": True}}, registry) == (
        "signature",
        "signature-mismatch",
    )


# --------------------------------------------------------------------------- store


def _budget(scope: str, dimension: str, used: float) -> dict[str, Any]:
    return {
        "scope_type": "work_item",
        "scope_id": scope,
        "dimension": dimension,
        "limit_value": 10.0,
        "used_value": used,
        "remaining_value": 10.0 - used,
    }


def test_large_and_small_projection_changes_agree_between_duckdb_and_memory(
    tmp_path: Path,
) -> None:
    stores = [DuckDBLogStore(tmp_path / "log.duckdb"), MemoryLogStore()]
    dims = ["financial", "toolCalls", "modelTokens"]
    for store in stores:
        first = tuple(_budget(f"w{i}", d, 1.0) for i in range(10) for d in dims)  # 30 rows
        store.commit(Batch(projections=ProjectionDelta(upserts={"proj_budgets": first})))
        again = tuple(_budget(f"w{i}", d, 2.0 + i) for i in range(4) for d in dims)  # 12 rows
        gone = tuple(("work_item", f"w{i}", d) for i in (8, 9) for d in dims)  # 6 keys
        store.commit(
            Batch(
                projections=ProjectionDelta(
                    upserts={"proj_budgets": again}, deletes={"proj_budgets": gone}
                )
            )
        )
        few = tuple(("work_item", "w5", d) for d in dims[:2])
        store.commit(Batch(projections=ProjectionDelta(deletes={"proj_budgets": few})))
    duck, memory = (s.projection_rows("proj_budgets") for s in stores)
    assert duck == memory
    assert len(duck) == 30 - 6 - 2
    stores[0].close()


# --------------------------------------------------------------------------- Authority


def test_stored_texts_are_the_canonical_forms_of_the_documents(tmp_path: Path) -> None:
    from tests.authority.world import LoggedWorld

    world = LoggedWorld(DuckDBLogStore(tmp_path / "log.duckdb"))
    world.bootstrap()
    world.create_mission()
    world.run_to_submitted("urn:mwp-local:work:fast")
    store = world.log.store
    events = list(store.events())
    assert len(events) == len(world.events)
    for record, doc in zip(events, world.events, strict=True):
        assert record.document == jcs.canonicalize(doc).decode("utf-8")
        assert record.payload_json == jcs.canonicalize(doc["payload"]).decode("utf-8")
        assert record.occurred_at_us == parse_timestamp(doc["occurredAt"]).epoch_micros
    for receipt in store.receipts():
        command = parse_strict(receipt.command_document)
        assert receipt.command_document == jcs.canonicalize(command).decode("utf-8")
    store.close()


def test_replay_with_signature_checks_gives_the_same_state_and_refuses_a_forgery(
    tmp_path: Path,
) -> None:
    import duckdb

    from mwp_local.store.group_log import replay
    from tests.authority.world import LoggedWorld

    path = tmp_path / "log.duckdb"
    world = LoggedWorld(DuckDBLogStore(path))
    world.bootstrap()
    world.create_mission()
    world.run_to_submitted("urn:mwp-local:work:replayed")
    store = world.log.store
    plain = projection_rows(replay(world.org, store))
    checked = projection_rows(replay(world.org, store, verify_signatures=True))
    assert plain == checked
    world.log.rebuild_projections(verify_signatures=True)
    store.close()
    with duckdb.connect(str(path)) as con:
        con.execute(
            "UPDATE log_events SET document = replace(document, 'Implement', 'Imp1ement') "
            "WHERE kind = 'work.authorized'"
        )
    forged = DuckDBLogStore(path, read_only=True)
    replay(world.org, forged)  # replay alone trusts the log
    with pytest.raises(ProtocolError) as refused:
        replay(world.org, forged, verify_signatures=True)
    assert refused.value.reason == "signature-mismatch"
    forged.close()


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["a", "signature", "value", "zz", "é"]), inner, max_size=3
        )
    ),
    max_leaves=12,
)
_ENVELOPE = st.fixed_dictionaries(
    {"algorithm": st.just("Ed25519"), "keyId": st.text(max_size=5), "value": st.text(max_size=8)}
)


@settings(max_examples=1500, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["aa", "payload", "sequence", "sig", "subject", "zz"]), _JSON),
    _ENVELOPE,
    st.booleans(),
)
def test_signing_bytes_cut_from_stored_text_are_the_canonical_ones(
    members: dict[str, Any], envelope: dict[str, str], nest_a_copy: bool
) -> None:
    """Cutting the top-level ``signature`` member out of a document's canonical text gives
    ``signing_bytes``; where a copy of the member nested after it is cut instead, the bytes still
    hold the signature, so no signature can verify over them (the fast path then falls back)."""
    from mwp_local.protocol.signing import signing_bytes, stored_signing_bytes

    document = {**members, "signature": envelope}
    if nest_a_copy:
        document["zz"] = {"signature": envelope}
    text = jcs.canonicalize(document).decode("utf-8")
    cut = stored_signing_bytes(document, text)
    assert cut is not None
    if cut != signing_bytes(document):
        member = b'"signature":' + jcs.canonicalize(envelope)
        assert member in cut
    else:
        assert cut == signing_bytes(document)


def test_the_verified_rebuild_fast_path_gives_the_plain_state_and_the_plain_refusals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``replay_verified`` (signing bytes cut from the stored text, equations on two threads)
    folds the plain path's state; on a forged log it gives up, and ``rebuild_projections``
    raises exactly what the plain verified replay raises."""
    import duckdb

    from mwp_local.store import verified_replay
    from mwp_local.store.group_log import GroupLog, _documents, replay
    from mwp_local.store.verified_replay import replay_verified
    from tests.authority.world import LoggedWorld

    path = tmp_path / "log.duckdb"
    world = LoggedWorld(DuckDBLogStore(path))
    world.bootstrap()
    world.create_mission()
    world.run_to_submitted("urn:mwp-local:work:fast")
    monkeypatch.setattr(verified_replay, "BATCH", 4)  # many batches, and a full window
    monkeypatch.setattr(verified_replay, "IN_FLIGHT", 2)
    store = world.log.store
    assert store.event_count() > 4 * 3
    fast = replay_verified(world.org, store, _documents(store))
    assert fast is not None
    assert projection_rows(fast) == projection_rows(
        replay(world.org, store, verify_signatures=True)
    )
    store.close()
    forgeries = {
        "signature-mismatch": "replace(document, 'Implement', 'Imp1ement')",
        "key-unknown": 'replace(document, \'"keyId":"\', \'"keyId":"x\')',
    }
    for expected, forge in forgeries.items():
        copy = tmp_path / f"{expected}.duckdb"
        copy.write_bytes(path.read_bytes())
        with duckdb.connect(str(copy)) as con:
            con.execute(
                f"UPDATE log_events SET document = {forge} WHERE position = "
                "(SELECT max(position) FROM log_events WHERE kind = 'work.authorized')"
            )
        forged = DuckDBLogStore(copy)
        assert replay_verified(world.org, forged, _documents(forged)) is None
        with pytest.raises(ProtocolError) as plain:
            replay(world.org, forged, verify_signatures=True)
        with pytest.raises(ProtocolError) as rebuilt:
            GroupLog(world.org, forged).rebuild_projections(verify_signatures=True)
        assert (rebuilt.value.code, rebuilt.value.stage, rebuilt.value.reason) == (
            plain.value.code,
            plain.value.stage,
            plain.value.reason,
        )
        forged.close()


#: Sample runs for the trusted rebuild: (mission, seed), different missions and seeds.
_TRUSTED_RUNS = (("learn", 1), ("learn", 7), ("retries", 3), ("delivery", 11))

#: Sample runs for the verified rebuild: every sample mission with a Group log of its own.
_VERIFIED_RUNS = (("learn", 3), ("flagship", 1), ("child", 2), ("retries", 5), ("delivery", 4))


@pytest.mark.parametrize(("mission", "seed"), _VERIFIED_RUNS)
def test_the_verified_rebuild_decodes_without_the_schema_stage_and_writes_the_plain_projections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mission: str, seed: int
) -> None:
    """``replay_verified`` decodes the store's own texts with orjson and skips the schema stage
    (the signatures prove the texts are the signed ones): over sample runs of several missions
    it folds exactly the plain verified replay's state, and ``rebuild_projections`` writes its
    projection rows."""
    from mwp_local.drivers.sandbox import Sandbox
    from mwp_local.protocol import jsontext, signing
    from mwp_local.store import group_log, trusted_replay
    from mwp_local.store.group_log import _documents, replay
    from mwp_local.store.verified_replay import replay_verified

    root = Path(__file__).resolve().parents[1]
    sandbox = Sandbox(tmp_path / "s", root / "sample_missions" / f"{mission}.toml", seed=seed)
    sandbox.run()
    log, store = sandbox.log, sandbox.log.store
    assert store.event_count() > 20
    plain = replay(log.org, store, verify_signatures=True)
    before = _projections(store, plain)
    store.replace_projections({table: [] for table in before})  # the rebuild must write them all

    def refuse(*_: Any) -> None:
        raise AssertionError("the fast path ran the schema stage")

    with monkeypatch.context() as patch:  # neither the strict parser nor the schema stage runs
        patch.setattr(signing, "_stage_schema", refuse)
        patch.setattr(trusted_replay, "parse_strict", jsontext._refuse_constant)
        patch.setattr(group_log, "parse_strict", jsontext._refuse_constant)
        fast = replay_verified(log.org, store, _documents(store))
        assert fast is not None
        log.rebuild_projections(verify_signatures=True)
    assert projection_rows(fast) == projection_rows(plain)
    assert fast.receipts == plain.receipts and fast.meta == plain.meta
    assert _projections(store, plain) == before
    assert sum(map(len, before.values())) > 0
    sandbox.close()


def _refused_alike(plain_path: Any, fast_path: Any) -> None:
    """Both raise a ``ProtocolError`` with the same code, stage and reason."""
    with pytest.raises(ProtocolError) as plain:
        plain_path()
    with pytest.raises(ProtocolError) as fast:
        fast_path()
    assert (fast.value.code, fast.value.stage, fast.value.reason) == (
        plain.value.code,
        plain.value.stage,
        plain.value.reason,
    )


def _flip_signature(doc: dict[str, Any]) -> None:
    value = doc["signature"]["value"]
    doc["signature"]["value"] = value[:20] + ("B" if value[20] == "A" else "A") + value[21:]


def _bump_revision(doc: dict[str, Any]) -> None:
    doc["aggregateRevision"] += 1


def _change_goal(doc: dict[str, Any]) -> None:
    doc["payload"]["workItem"]["contract"]["goal"] += "!"


@pytest.mark.parametrize("forge", [_flip_signature, _bump_revision, _change_goal])
def test_a_tampered_event_fails_the_verified_rebuild_with_the_plain_error_and_changes_nothing(
    tmp_path: Path, forge: Any
) -> None:
    """A changed byte in a signed top-level field, in a payload, or in the signature itself
    (each stored as canonical text again, so only the signature can tell): the verified
    rebuild raises the plain verified replay's code, stage and reason, and leaves every
    projection row as it was."""
    from mwp_local.store.group_log import GroupLog, replay
    from tests.authority.world import LoggedWorld

    path = tmp_path / "log.duckdb"
    world = LoggedWorld(DuckDBLogStore(path))
    world.bootstrap()
    world.create_mission()
    world.run_to_submitted("urn:mwp-local:work:forged")
    world.log.store.close()
    log = GroupLog(world.org, DuckDBLogStore(path))  # opened (plain replay) before the edit
    store = log.store
    kept = {table: store.projection_rows(table) for table in projection_rows(log.state)}
    with store.cursor() as cur:
        position, text = cur.execute(
            "SELECT position, document FROM log_events WHERE kind = 'work.authorized' "
            "ORDER BY position DESC LIMIT 1"
        ).fetchone()
        doc = parse_strict(text)
        forge(doc)
        cur.execute(
            "UPDATE log_events SET document = ? WHERE position = ?",
            [jcs.canonicalize(doc).decode(), position],
        )
    _refused_alike(
        lambda: replay(world.org, store, verify_signatures=True),
        lambda: log.rebuild_projections(verify_signatures=True),
    )
    assert {table: store.projection_rows(table) for table in kept} == kept
    store.close()


def _projections(store: Any, state: Any) -> dict[str, list[str]]:
    """Every projection table as the store holds it, rows as sorted canonical texts."""
    return {
        table: sorted(jcs.canonicalize(row).decode() for row in store.projection_rows(table))
        for table in projection_rows(state)
    }


@pytest.mark.parametrize(("mission", "seed"), _TRUSTED_RUNS)
def test_the_trusted_rebuild_folds_the_plain_state_and_writes_the_plain_projections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mission: str, seed: int
) -> None:
    """``rebuild_projections()`` decodes the texts the store wrote with orjson
    (``trusted_documents``) instead of the strict parser: over sample runs of several missions
    and seeds it folds exactly the plain ``replay``'s state and writes its projection rows."""
    from mwp_local.drivers.sandbox import Sandbox
    from mwp_local.protocol import jsontext
    from mwp_local.store import group_log, trusted_replay
    from mwp_local.store.group_log import _documents, fold, replay
    from mwp_local.store.trusted_replay import trusted_documents

    root = Path(__file__).resolve().parents[1]
    sandbox = Sandbox(tmp_path / "s", root / "sample_missions" / f"{mission}.toml", seed=seed)
    sandbox.run()
    log, store = sandbox.log, sandbox.log.store
    assert store.event_count() > 20
    plain = replay(log.org, store)
    trusted = fold(log.org, trusted_documents(_documents(store)), store.receipts())
    assert projection_rows(trusted) == projection_rows(plain)
    assert trusted.receipts == plain.receipts and trusted.meta == plain.meta
    before = _projections(store, plain)
    store.replace_projections({table: [] for table in before})  # the rebuild must write them all
    with monkeypatch.context() as patch:  # the trusted path, not the strict parser, decodes
        patch.setattr(trusted_replay, "parse_strict", jsontext._refuse_constant)
        patch.setattr(group_log, "parse_strict", jsontext._refuse_constant)
        log.rebuild_projections()
    assert _projections(store, plain) == before
    assert sum(map(len, before.values())) > 0
    sandbox.close()


def test_a_tampered_log_is_refused_by_what_the_trusted_rebuild_still_checks(
    tmp_path: Path,
) -> None:
    """What the trusted rebuild no longer checks is strict JSON: a member name repeated by hand
    folds with its last value, where the plain replay and ``verify-log`` refuse the file. Text
    that is not JSON still raises the plain path's error (the strict parser decodes what orjson
    refuses), and an Event the state tables do not allow still raises ``ReplayError``."""
    import duckdb

    from mwp_local.authority.evolve import ReplayError
    from mwp_local.store.group_log import GroupLog, _documents, fold, replay
    from mwp_local.store.trusted_replay import trusted_documents
    from mwp_local.store.verify import verify_log
    from tests.authority.world import LoggedWorld

    path = tmp_path / "log.duckdb"
    world = LoggedWorld(DuckDBLogStore(path))
    world.bootstrap()
    world.create_mission()
    world.run_to_submitted("urn:mwp-local:work:trusted")
    untampered = projection_rows(replay(world.org, world.log.store))
    world.log.store.close()

    def tampered(name: str, document_sql: str, where: str) -> DuckDBLogStore:
        copy = tmp_path / f"{name}.duckdb"
        copy.write_bytes(path.read_bytes())
        with duckdb.connect(str(copy)) as con:
            con.execute(f"UPDATE log_events SET document = {document_sql} WHERE {where}")
        return DuckDBLogStore(copy)

    last_authorized = (
        "position = (SELECT max(position) FROM log_events WHERE kind = 'work.authorized')"
    )
    # a repeated member name: trusted (last value wins), refused by the plain path and verify-log
    store = tampered("duplicate", '\'{"kind":"forged",\' || document[2:]', last_authorized)
    trusted = fold(world.org, trusted_documents(_documents(store)), store.receipts())
    assert projection_rows(trusted) == untampered
    with pytest.raises(ProtocolError) as plain:
        replay(world.org, store)
    assert (plain.value.code.value, plain.value.stage, plain.value.reason) == (
        "PROTOCOL_VIOLATION",
        "parse",
        "duplicate-member",
    )
    assert not verify_log(world.org, store).ok
    store.close()
    # not JSON: the rebuild raises exactly the plain replay's error and writes nothing
    copy = tmp_path / "truncated.duckdb"
    copy.write_bytes(path.read_bytes())
    log = GroupLog(world.org, DuckDBLogStore(copy))  # opened (plain replay) before the edit
    store = log.store
    with store.cursor() as cur:
        cut = "left(document, length(document) - 1)"  # the closing brace
        cur.execute(f"UPDATE log_events SET document = {cut} WHERE {last_authorized}")
    kept = {table: store.projection_rows(table) for table in untampered}
    _refused_alike(lambda: replay(world.org, store), log.rebuild_projections)
    assert {table: store.projection_rows(table) for table in untampered} == kept
    store.close()
    # the WorkItem started twice (its submission replaced): evolve's audit still refuses it
    started = "(SELECT document FROM log_events WHERE kind = 'work.started')"
    store = tampered("replayed", started, "kind = 'work.submitted'")
    with pytest.raises(ReplayError) as plain_error:
        replay(world.org, store)
    with pytest.raises(ReplayError) as trusted_error:
        fold(world.org, trusted_documents(_documents(store)), store.receipts())
    assert str(trusted_error.value) == str(plain_error.value)
    store.close()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=4))
def test_derived_uuid_formats_what_uuid_makes_of_the_digest(parts: list[str]) -> None:
    scope = "urn:mwp-local:organization:o"
    try:
        digest = hashlib.sha256("\x1f".join((scope, *parts)).encode("utf-8")).digest()
    except UnicodeEncodeError:  # lone surrogates: both paths refuse them
        with pytest.raises(UnicodeEncodeError):
            derived_uuid(scope, *parts)
        return
    expected = "urn:uuid:" + str(uuid.UUID(bytes=digest[:16], version=4))
    assert derived_uuid(scope, *parts) == expected


#: Characters that matter to the URI grammar, a few that are never allowed, and a non-ASCII one.
_URI_CHARS = "aZ09+-.:/?#[]@!$&'()*,;=%_~ \n\"<>{}|\\^`é"


@settings(max_examples=2000, deadline=None)
@given(
    st.one_of(
        st.text(alphabet=_URI_CHARS, max_size=24),
        st.builds(
            lambda scheme, rest: f"{scheme}:{rest}",
            st.sampled_from(["urn", "https", "a+b-c.d", "9x", ""]),
            st.text(alphabet=_URI_CHARS, max_size=24),
        ),
    )
)
def test_the_simple_identifier_shortcut_accepts_only_what_the_uri_grammar_does(text: str) -> None:
    full = text.isascii() and ids.URI.fullmatch(text) is not None
    if ids._SIMPLE.fullmatch(text) is not None:
        assert full
    assert ids.is_protocol_id(text) == full


# --------------------------------------------------------------------------- Parquet export

#: Groups as the export sorts them: differing only by case, non-ASCII, and the Organization.
_EXPORT_GROUPS = (
    "urn:mwp:group:acme/Research",
    "urn:mwp:group:acme/research",
    "https://example.org/groups/b?x=1#frag",
    "urn:x:é",
    None,
)


@pytest.fixture(scope="module")
def export_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DuckDB log whose Groups interleave irregularly, with receipts and rejections."""
    import random

    from .store.factory import LogFactory

    path = tmp_path_factory.mktemp("export") / "log.duckdb"
    factory, pick = LogFactory(), random.Random(25)
    store = DuckDBLogStore(path)
    for _ in range(120):
        group = pick.choice(_EXPORT_GROUPS)
        n = pick.randint(1, 6)
        store.commit(factory.batch(n, group, receipt=group is not None, rejections=n % 2))
    store.close()
    return path


class _PlainArrowSource:
    """The DuckDB store seen only through what the plain export path uses."""

    def __init__(self, store: DuckDBLogStore) -> None:
        self._store = store

    def chain_head(self) -> tuple[int, bytes]:
        return self._store.chain_head()

    def arrow_batches(
        self, table: str, *, upto_position: int | None = None, batch_rows: int = 65_536
    ) -> Any:
        return self._store.arrow_batches(table, upto_position=upto_position, batch_rows=batch_rows)


def _file_bytes(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@settings(max_examples=25, deadline=None)
@given(
    read_rows=st.integers(1, 64),
    rows_per_write=st.integers(1, 80),
    buffered=st.integers(1, 200),
    group_queries=st.sampled_from([0, 2, 64]),
)
def test_the_group_sorted_export_writes_the_plain_paths_bytes(
    export_log: Path, read_rows: int, rows_per_write: int, buffered: int, group_queries: int
) -> None:
    """DuckDB sorting by (group, position) with planned row groups writes every file, byte for
    byte, as splitting position-ordered batches does, whatever the batch and row-group sizes,
    with one query per Group or one sorted query (``_GROUP_QUERIES_MAX``)."""
    import tempfile

    from mwp_local.store import duckdb_log, parquet

    store = DuckDBLogStore(export_log, read_only=True)
    try:
        with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory() as tmp:
            patch.setattr(parquet, "_READ_ROWS", read_rows)
            patch.setattr(parquet, "_ROWS_PER_WRITE", rows_per_write)
            patch.setattr(parquet, "_MAX_BUFFERED_ROWS", buffered)
            patch.setattr(duckdb_log, "_GROUP_QUERIES_MAX", group_queries)
            fast = parquet.export_parquet(store, Path(tmp) / "fast")
            plain = parquet.export_parquet(_PlainArrowSource(store), Path(tmp) / "plain")  # type: ignore[arg-type]
            assert isinstance(store, parquet.GroupSortedSource)
            assert not isinstance(_PlainArrowSource(store), parquet.GroupSortedSource)
            assert _file_bytes(Path(tmp) / "fast") == _file_bytes(Path(tmp) / "plain")
            for name in ("events", "receipts", "rejections"):
                got, want = getattr(fast, name), getattr(plain, name)
                assert list(got.rows_by_group.items()) == list(want.rows_by_group.items())
                assert [p.name for p in got.files] == [p.name for p in want.files]
                assert [p.parent.name for p in got.files] == [p.parent.name for p in want.files]
            assert fast.events.rows > 0 and fast.rejections.rows > 0
            # and the fast path was taken, not its fallback to the plain one
            schema = log_table_schema("log_events")
            last = store.chain_head()[0]
            direct = Path(tmp) / "direct"
            assert parquet._write_group_sorted(direct, schema, store, "log_events", last)
    finally:
        store.close()


# --------------------------------------------------------------------------- step mode


_SAMPLES = Path(__file__).resolve().parents[1] / "sample_missions"


def _step_run(directory: Path, mission: Path, seed: int, *, every: bool) -> dict[str, Any]:
    from mwp_local.drivers.sandbox import Sandbox

    sandbox = Sandbox(directory, mission, seed=seed, worker_files=False)
    sandbox.driver.ask_every_agent = every
    asked = 0
    for runtime in sandbox.runtimes:  # count the policies' decisions, to see the shortcut work
        decide = runtime.policy.decide

        def counted(view: Any, now_us: int, decide: Any = decide) -> Any:
            nonlocal asked
            asked += 1
            return decide(view, now_us)

        runtime.policy.decide = counted  # type: ignore[method-assign]
    summary = sandbox.run(max_steps=5_000)
    store = sandbox.log.store
    seen = {
        "events": list(store.event_documents()),
        "receipts": list(store.receipts()),
        "rejections": store.rejections(),
        "history": sandbox.history,
        "queues": {r.name: r.work_queues() for r in sandbox.runtimes},
        "finished": summary.finished,
    }
    sandbox.close()
    return {"seen": seen, "asked": asked}


@pytest.mark.parametrize(
    ("mission", "seed"),
    [("learn", 1), ("learn", 7), ("retries", 3), ("delivery", 5), ("child", 2)],
)
def test_step_mode_skipping_idle_agents_gives_the_bytes_and_steps_of_asking_everyone(
    tmp_path: Path, mission: str, seed: int
) -> None:
    path = _SAMPLES / f"{mission}.toml"
    plain = _step_run(tmp_path / "plain", path, seed, every=True)
    fast = _step_run(tmp_path / "fast", path, seed, every=False)
    assert plain["seen"]["events"], "the run wrote nothing"
    assert fast["seen"] == plain["seen"]
    assert fast["asked"] < plain["asked"], "the shortcut skipped no decision"


class _Wants(BasePolicy):
    """A policy that wants what it is told to, counting how often it is asked."""

    def __init__(self) -> None:
        self.asked = 0
        self.wanted: list[Intent] = []
        self.calls: list[Any] = []
        self.answered = 0

    def decide(self, view: Any, now_us: int) -> list[Intent]:
        self.asked += 1
        return list(self.wanted)

    def external_calls(self, now_us: int) -> list[Any]:
        calls, self.calls = self.calls, []
        return calls

    def on_external(self, call: Any, *, ok: bool, refused: bool = False) -> None:
        self.answered += 1


def test_an_idle_policy_is_asked_again_once_its_view_or_the_instant_changed(
    tmp_path: Path,
) -> None:
    from types import SimpleNamespace

    from mwp_local.agents.runtime import AgentRuntime
    from mwp_local.agents.worker.slots import ExternalCall
    from mwp_local.drivers.sandbox import Sandbox

    sandbox = Sandbox(tmp_path / "s", _SAMPLES / "learn.toml", worker_files=False)
    org = sandbox.log.org
    fake = _Wants()
    runtime = AgentRuntime(org, org.get("mission-owner"), fake)
    t = sandbox.clock.now_us()

    def asked(now_us: int, *, skip_idle: bool = True) -> int:
        runtime.intents(now_us, skip_idle=skip_idle)
        return fake.asked

    assert asked(t) == 1
    assert asked(t) == 1  # nothing changed: not asked again
    assert asked(t, skip_idle=False) == 2  # the plain path asks anyway
    assert asked(t + 1) == 3 and asked(t + 1) == 3  # a new instant
    assert runtime.deliver([]) == 0 and asked(t + 1) == 3  # nothing released
    assert runtime.deliver(list(sandbox.log.store.event_documents())) > 0
    assert asked(t + 1) == 4  # released Events
    runtime.outcome(Intent(kind="x", payload={}, group=None), SimpleNamespace(ok=False), t)
    assert asked(t + 1) == 5  # an outcome
    runtime.changed()
    assert asked(t + 1) == 6  # a driver says so
    call = ExternalCall(
        slot_id="slot-0",
        work_item_id="urn:x",
        resource="r",
        operation="write",
        operation_id="op",
        idempotency_key="k",
        attempt=1,
        token=SimpleNamespace(agent_id="someone else"),  # type: ignore[arg-type]
    )
    fake.calls = [call]
    sandbox.serve(runtime, t + 1)  # answers the slot's external call (refused: not its token)
    assert fake.answered == 1 and asked(t + 1) == 7
    sandbox.serve(runtime, t + 1)  # nothing to serve
    assert asked(t + 1) == 7
    other = _Wants()
    runtime.policy = other  # a new policy is always asked
    assert runtime.intents(t + 1, skip_idle=True) == [] and other.asked == 1
    runtime.policy = fake
    fake.wanted = [Intent(kind="x", payload={}, group=None)]
    runtime.changed()
    assert asked(t + 1) == 8 and asked(t + 1) == 9  # a policy that wants something: every time
    sandbox.close()


# --------------------------------------------------------------------------- late joiners' fetch


def _fetch_outcome(fetch: Any, member_id: str, package: dict[str, Any]) -> Any:
    try:
        return ("ok", fetch(member_id, package))
    except ProtocolError as refused:
        return ("refused", refused.code, str(refused), refused.details)


@pytest.mark.parametrize(("mission", "seed"), [("learn", 1), ("delivery", 5), ("child", 2)])
def test_fetching_cited_events_from_the_index_gives_the_whole_log_reads_events_and_refusals(
    tmp_path: Path, mission: str, seed: int
) -> None:
    """Every Context Package fetch of a run (and, for each, a forged citation and a stranger's
    fetch) answers through ``drivers.cited`` exactly as the gate over the whole Group log."""
    from mwp_local.drivers.sandbox import Sandbox

    compared: list[str] = []
    indexed = Sandbox._fetch_indexed

    def both(self: Sandbox, member_id: str, package: dict[str, Any]) -> list[dict[str, Any]]:
        fast = _fetch_outcome(lambda m, p: indexed(self, m, p), member_id, package)
        assert fast == _fetch_outcome(self._fetch_plain, member_id, package)
        forged = {**package, "sourceEventRange": {**package["sourceEventRange"]}}
        forged["sourceEventRange"]["eventIds"] = [
            *package["sourceEventRange"]["eventIds"],
            "urn:uuid:00000000-0000-4000-8000-000000000000",
        ]
        for other, doc in ((member_id, forged), ("urn:mwp:principal:nobody", package)):
            assert _fetch_outcome(lambda m, p: indexed(self, m, p), other, doc) == (
                _fetch_outcome(self._fetch_plain, other, doc)
            )
        compared.append(package["contextPackageId"])
        if fast[0] == "refused":
            raise ProtocolError(fast[1], fast[2], details=fast[3])
        return fast[1]  # type: ignore[no-any-return]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Sandbox, "_fetch_indexed", both)
        sandbox = Sandbox(tmp_path / "s", _SAMPLES / f"{mission}.toml", seed=seed)
        sandbox.run(max_steps=5_000)
        sandbox.close()
    if mission == "learn":
        assert compared, "no late joiner fetched anything"


# --------------------------------------------------------------------------- Coordinator wake-ups


@pytest.mark.parametrize(
    ("mission", "seed"), [("learn", 1), ("retries", 3), ("child", 2), ("delivery", 5)]
)
def test_the_coordinators_indexed_wakeup_is_the_one_a_scan_of_every_work_item_finds(
    tmp_path: Path, mission: str, seed: int
) -> None:
    """At every wake-up a step-mode run asks for, ``CoordinatorPolicy.next_wakeup`` (active
    leases, sorted deadlines) returns what ``next_wakeup_scan`` finds over every WorkItem."""
    from mwp_local.agents.coordinator.core import CoordinatorPolicy
    from mwp_local.drivers.sandbox import Sandbox

    indexed = CoordinatorPolicy.next_wakeup
    asked: list[int | None] = []

    def both(self: CoordinatorPolicy, view: Any, now_us: int) -> int | None:
        fast = indexed(self, view, now_us)
        for at in (now_us, fast - 1 if fast is not None else now_us + 1):
            assert indexed(self, view, at) == self.next_wakeup_scan(view, at)
        asked.append(fast)
        return fast

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CoordinatorPolicy, "next_wakeup", both)
        sandbox = Sandbox(tmp_path / "s", _SAMPLES / f"{mission}.toml", seed=seed)
        sandbox.run(max_steps=5_000)
        sandbox.close()
    assert any(t is not None for t in asked), "no Coordinator was asked for a wake-up"


@pytest.mark.parametrize(
    ("mission", "seed"), [("learn", 1), ("retries", 3), ("child", 2), ("delivery", 5)]
)
def test_the_coordinators_journal_fed_indexes_equal_a_scan_of_every_work_item(
    tmp_path: Path, mission: str, seed: int
) -> None:
    """After every decision of a run, the owned WorkItems, each Mission's WorkItems and its
    agenda (and what is due on it) kept from the replica's journal of changed WorkItems equal
    those a scan of every WorkItem builds."""
    from mwp_local.agents.coordinator.core import CoordinatorPolicy
    from mwp_local.agents.coordinator.index import Agenda
    from mwp_local.agents.coordinator.offers import owned_by_agent
    from mwp_local.agents.naming import mission_id
    from mwp_local.drivers.sandbox import Sandbox

    decide = CoordinatorPolicy.decide
    checked = 0

    def both(self: CoordinatorPolicy, view: Any, now_us: int) -> Any:
        nonlocal checked
        out = decide(self, view, now_us)
        assert self.owned_items.owned(view.state) == owned_by_agent(view)
        for spec_id, (_, agenda) in self._agendas.items():
            spec = next(s for s in self.missions if s.id == spec_id)
            items = self._items(view, spec)
            plain = self.index.items_scan(view.state, mission_id(spec.id))
            assert list(items.items()) == list(plain.items())  # the same records, in ID order
            scan = Agenda(agenda.classify)
            scan.update(plain, self.index)
            agenda.update(items, self.index, view.state)
            assert (scan.acting, scan.waiting, scan.submitted) == (
                agenda.acting,
                agenda.waiting,
                agenda.submitted,
            )
            for at in (now_us, *agenda.waiting.values()):
                due = sorted(agenda.acting | {w for w, d in agenda.waiting.items() if at >= d})
                assert agenda.due(at) == due
            checked += 1
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CoordinatorPolicy, "decide", both)
        sandbox = Sandbox(tmp_path / "s", _SAMPLES / f"{mission}.toml", seed=seed)
        sandbox.run(max_steps=5_000)
        sandbox.close()
    assert checked, "no agenda was compared"


# --------------------------------------------------------------------------- blob writes

_BLOB_SEED = bytes(range(256)) * 40
#: A put: which content (few, so repeats happen), how it is given, and whether it defers; or a
#: sync (``None``).
_blob_ops = st.lists(
    st.one_of(
        st.none(),
        st.tuples(
            st.integers(0, 3),
            st.sampled_from(["bytes", "stream", "path"]),
            st.booleans(),
            st.booleans(),  # damage the stored blob first (a crash lost it, say)
        ),
    ),
    min_size=1,
    max_size=6,
)


def _blob_run(root: Path, unnamed: bool, ops: list[Any]) -> tuple[list[Any], dict[str, bytes]]:
    """Run ``ops`` on a durable store writing unnamed files or named temporary ones; what each
    step returned or left waiting, and every file left under ``root`` (relative paths)."""
    store = BlobStore(root / "blobs")
    store._unnamed = unnamed
    seen: list[Any] = []
    for op in ops:
        if op is None:
            store.sync()
        else:
            which, given_as, defer, damage = op
            content = which.to_bytes(1, "big") * (1 + which * 3000) + _BLOB_SEED[: which * 7]
            if damage and store.blob_path(_blake3_hex(content)).exists():
                store.blob_path(_blake3_hex(content)).write_bytes(b"")
            source: Any = content
            if given_as == "stream":
                source = io.BytesIO(content)
            elif given_as == "path":
                source = root / "source.bin"
                source.write_bytes(content)
            seen.append(store.put(source, defer_sync=defer))
            seen.append(store.get(seen[-1].sha256) == content)
        seen.append(sorted(str(path.relative_to(root)) for path in store.unsynced))
    files = {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name != "source.bin"
    }
    return seen, files


def _blake3_hex(content: bytes) -> str:
    return blake3.blake3(content).hexdigest()


def _o_tmpfile_roots(tmp_path: Path) -> list[Path]:
    """The test directory and, when there is one, a tmpfs (``/dev/shm``): both take O_TMPFILE."""
    roots = [tmp_path]
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        roots.append(Path(tempfile.mkdtemp(dir=shm, prefix="mwp-blobs-test-")))
    return roots


@pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="no O_TMPFILE on this platform")
@settings(max_examples=40, deadline=None)
@given(_blob_ops)
def test_unnamed_blob_writes_equal_named_temporary_files(ops: list[Any]) -> None:
    """``BlobStore`` writing through O_TMPFILE + link stores the same files, returns the same
    references and leaves the same directories for ``sync`` as the named temporary file."""
    with tempfile.TemporaryDirectory(prefix="mwp-blobs-") as tmp:
        for base in _o_tmpfile_roots(Path(tmp)):
            try:
                fast, plain = base / "fast", base / "plain"
                fast.mkdir()
                plain.mkdir()
                fast_seen, fast_files = _blob_run(fast, True, ops)
                plain_seen, plain_files = _blob_run(plain, False, ops)
                assert fast_seen == plain_seen
                assert fast_files == plain_files
                assert not any(name.startswith("blobs/tmp/") for name in fast_files)
            finally:
                if base != Path(tmp):
                    shutil.rmtree(base)


@pytest.mark.parametrize("seed", [1, 4])
def test_the_owners_journal_fed_unapproved_work_items_equal_a_scan_of_every_work_item(
    tmp_path: Path, seed: int
) -> None:
    """After every decision of the MissionOwner, the queued WorkItems not approved for
    execution kept from the replica's journal equal those a scan of every WorkItem finds, with
    risky work that waits for its execution Approval."""
    import tomllib

    from mwp_local.agents.owner import MissionOwnerPolicy, _queued_unapproved
    from mwp_local.drivers.mission_file import parse
    from mwp_local.drivers.sandbox import Sandbox

    raw = tomllib.loads((_SAMPLES / "learn.toml").read_text(encoding="utf-8"))
    for mission in raw["missions"]:
        for work in mission["work"]:
            work.update(risk="high_risk", approval="human_required")
    decide = MissionOwnerPolicy.decide
    seen: list[int] = []

    def both(self: MissionOwnerPolicy, view: Any, now_us: int) -> Any:
        out = decide(self, view, now_us)
        table = view.state.work_items
        scan = {wid for wid, item in table.items() if _queued_unapproved(item)}
        assert self.unapproved.ids(view.state) == scan
        seen.append(len(scan))
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MissionOwnerPolicy, "decide", both)
        sandbox = Sandbox(tmp_path / "s", parse(raw, name="risky"), seed=seed)
        sandbox.run(max_steps=5_000)
        granted = [e for e in sandbox.log.store.event_documents() if "approval.execution" in e]
        sandbox.close()
    assert any(seen), "no WorkItem ever waited for its execution Approval"
    assert granted, "no execution Approval was granted"
