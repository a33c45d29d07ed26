"""``mwp-local poc``: the §22 proof of concept passes every check in step mode and in threads
mode (where the live agent threads receive every Event through the delivery bus, go offline at
the Group-service outage and reconcile afterwards); the report is canonical JSON; docs/poc.md
lists the checks the code has."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mwp_local.cli import main
from mwp_local.poc.checks import Result, all_checks, run_check
from mwp_local.poc.evidence import Evidence
from mwp_local.poc.report import canonical_report, render_markdown
from mwp_local.poc.scenario import ScenarioRun
from mwp_local.protocol.jcs import canonicalize

from ..official_schemas import embedded_problems
from .conftest import failing

POC_DOC = (Path(__file__).resolve().parents[2] / "docs" / "poc.md").read_text(encoding="utf-8")

#: The behaviours the official reference proof of concept checks, by our check names.
REFERENCE = [
    "action_id_collision",
    "artifact_provenance",
    "signed_archival_snapshots",
    "blocked_checkpointed_resumed",
    "both_roots_approved",
    "child_mission_approved",
    "classified_reusable_knowledge",
    "concurrent_roots",
    "context_package_in_its_group",
    "coordinator_authorized_sub_work",
    "coordinator_replaced",
    "verification_before_approval",
    "duplicate_command_idempotent",
    "duplicate_event_ignored",
    "dynamic_dependency_once",
    "exact_signed_human_approvals",
    "lease_expiry_rejected",
    "both_groups_served",
    "signed_root_creation",
    "signed_change_request",
    "signed_coordinator_replacement",
    "multiple_slots_active",
    "offline_rebase",
    "offline_irreversible_refused",
    "offline_progress_bounded",
    "offline_reconciled_before_side_effects",
    "offline_usage_charged",
    "one_change_request_cycle",
    "ownership_epoch_advanced",
    "per_group_context_isolation",
    "preempted_work_resumed",
    "previous_coordinator_rejected",
    "disconnect_reconnect_reconciled",
    "safe_checkpoint_preemption",
    "signed_context_package_late_reviewer",
    "snapshots_cover_full_histories",
    "cursors_reach_heads",
    "stale_coordinator_rejected",
    "stale_membership_rejected",
    "stale_ownership_rejected",
    "unsafe_work_not_preempted",
    "urgent_group_isolated",
    "worker_proposal_non_authoritative",
    "restart_fences_old_session",
    "queues_rebuilt_from_replay",
    "worker_to_worker_conversation",
]
#: ... and what issue 9 adds.
ADDED = [
    "scheduling_disclosure_without_leakage",
    "cursor_too_old_snapshot_restore",
    "gap_buffering",
    "contract_revision_renewed_acceptance",
    "coordinator_review_pipeline",
    "retries_with_backoff",
    "idempotent_external_effects",
    "work_already_owned",
    "work_offer_expired",
    "late_result_kept_not_completing",
]


def test_there_are_at_least_sixty_checks_covering_the_reference_list_and_the_additions() -> None:
    names = set(all_checks())
    assert len(names) >= 60
    assert set(REFERENCE) <= names
    assert set(ADDED) <= names


def test_step_mode_passes_every_check(step_run: tuple[ScenarioRun, list[Result]]) -> None:
    run, results = step_run
    assert run.finished
    assert failing(results) == {}
    assert len(results) == len(all_checks())


@pytest.mark.req("MWP-WRK-027")
def test_every_document_embedded_in_the_poc_log_conforms_to_its_official_schema(
    step_run: tuple[ScenarioRun, list[Result]],
) -> None:
    """Issue 21 point 5, over the proof of concept's own log (provisional Memberships included)."""
    from mwp_local.store.duckdb_log import DuckDBLogStore
    from mwp_local.store.sandbox_dir import LOG_FILE

    store = DuckDBLogStore(step_run[0].directory / LOG_FILE, read_only=True)
    try:
        log = [json.loads(e.document) for e in store.events()]
    finally:
        store.close()
    assert any(e["payload"].get("membership", {}).get("state") == "provisional" for e in log)
    assert [p for e in log for p in embedded_problems(e)] == []


@pytest.mark.threads
def test_threads_mode_passes_every_check_offline_execution_included(
    threads_run: tuple[ScenarioRun, list[Result]],
) -> None:
    run, results = threads_run
    assert run.finished and run.mode == "threads"
    assert failing(results) == {}
    assert len(results) == len(all_checks())


def test_the_report_is_canonical_json_with_named_boolean_checks(
    step_run: tuple[ScenarioRun, list[Result]],
) -> None:
    run, results = step_run
    text = canonical_report(results, run)
    doc = json.loads(text)
    assert canonicalize(doc) == text
    assert doc["ok"] is True and doc["summary"]["failed"] == []
    assert all(isinstance(c["ok"], bool) and c["evidence"] for c in doc["checks"].values())
    assert set(doc["checks"]) == set(all_checks())


def test_the_cli_exits_zero_on_a_passing_directory_and_prints_the_report(
    step_run: tuple[ScenarioRun, list[Result]], capsys: object
) -> None:
    run, _ = step_run
    assert main(["poc", "--dir", str(run.directory), "--check-only", "--json"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert json.loads(out)["ok"] is True


def test_docs_poc_lists_every_check_exactly_as_the_code_does() -> None:
    assert render_markdown() in POC_DOC


def test_every_check_is_named_in_snake_case_with_a_title() -> None:
    for name, c in all_checks().items():
        assert re.fullmatch(r"[a-z][a-z0-9_]+", name) and c.title and c.section


def test_each_check_declares_whether_it_reads_the_verify_log_pass(
    step_run: tuple[ScenarioRun, list[Result]],
) -> None:
    """``run_checks`` runs the checks that read the pass first (a later replay reuses it)."""
    ev = Evidence.open(step_run[0].directory)
    fresh = dict(vars(ev))  # before any cached property (``registry``, ...) is computed
    try:
        wrong = []
        for name, c in all_checks().items():
            # Each check starts from an Evidence that has derived nothing, so a cached value
            # computed by an earlier check cannot hide what this one reads.
            vars(ev).clear()
            vars(ev).update(fresh)
            derived = ev.view.derived
            derived.verification = derived.replayed = None
            derived.projections.clear()
            run_check(c, ev)
            reads = derived.verification is not None
            if reads != c.replays:
                wrong.append(f"{name}: declares replays={c.replays}, reads it: {reads}")
    finally:
        ev.close()
    assert not wrong
    assert sum(c.replays for c in all_checks().values()) >= 1
