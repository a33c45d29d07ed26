"""Runner for the admission bundle (``admission/manifest.json``): 30 evaluations.

Owns the admission bundle's integrity checks (its own ``artifactDigest`` and artifacts, plus the
pinned cryptography ``artifactDigest`` and that bundle's artifacts, which supply the documents and
Registries), the scripted Admission Log that replays each evaluation's typed ``lookup`` and
``append`` outcomes, and the comparison with the expected stage, wire code, reason or record.

Every evaluation first reruns the unchanged six-stage verification, then first admission or
historical replay through ``mwp_local.protocol.admission``. The manifest's ``lookup`` and
``append`` members are harness metadata that this module turns into typed adapter results; they
never reach the protocol code as trust flags. It reads files; it must not repair a vector.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from mwp_local.protocol.admission import (
    Admission,
    AppendResult,
    AppendStatus,
    FirstAdmissionRecord,
    LookupResult,
    LookupStatus,
    TrustedAcceptance,
    admit_first,
    replay_historical,
)
from mwp_local.protocol.errors import ProtocolError
from mwp_local.protocol.jsontext import parse_strict
from mwp_local.protocol.registry import Principal
from mwp_local.protocol.signing import verify_signed_document

from . import crypto_bundle
from .crypto_bundle import (
    BundleFiles,
    BundleIntegrityError,
    check_constants,
    check_digest,
    failed_everywhere,
    read_artifacts,
    read_manifest,
    registry_fixture_problems,
)
from .result import BundleResult, EvaluationResult

NAME: Final[str] = "admission"
MANIFEST_PATH: Final[str] = "admission/manifest.json"
#: The cryptography bundle this admission bundle is layered on (its README pins this digest).
PINNED_CRYPTOGRAPHY_DIGEST: Final[str] = (
    "sha256:5eade516e4bc5dcf04477727ebcccd11f33348b2d9135fb6fe0365c6e6cc2ea3"
)

_CONSTANTS: Final[Mapping[str, Any]] = MappingProxyType(
    {
        "$schema": "https://missionweaveprotocol.dev/admission/0.1/manifest.schema.json",
        "manifestVersion": 1,
        "protocolVersion": "0.1",
        "profileId": "missionweaveprotocol.first-admission-historical-trust.v0.1",
        "semanticStage": "admission",
        "wireCode": "AUTH_INVALID_SIGNATURE",
        "cryptography": {
            "manifest": crypto_bundle.MANIFEST_PATH,
            "artifactDigest": PINNED_CRYPTOGRAPHY_DIGEST,
        },
        "fixtureSchemas": {
            "record": "schemas/first-admission-record.schema.json",
            "registry": "cryptography/registry-fixture.schema.json",
        },
    }
)


class ScriptedAdmissionLog:
    """An Admission Log adapter that returns one evaluation's declared typed outcomes.

    It records every call so the runner can check that append happened exactly when the bundle
    says it does, and which candidate was offered.
    """

    def __init__(self, spec: Mapping[str, Any], files: BundleFiles) -> None:
        self._lookup = spec["lookup"]
        self._append = spec["append"]
        self._files = files
        self.lookups = 0
        self.candidates: list[FirstAdmissionRecord] = []

    def _service(self, outcome: Mapping[str, Any]) -> Principal | None:
        service = outcome.get("authenticatedService")
        return None if service is None else Principal.from_json(service)

    def _record(self, outcome: Mapping[str, Any]) -> bytes | None:
        path = outcome.get("record")
        return None if path is None else self._files.read(path)

    def lookup(self, organization_id: str, signing_hash: str) -> LookupResult:
        """The declared lookup outcome."""
        self.lookups += 1
        return LookupResult(
            status=LookupStatus(self._lookup["status"]),
            record=self._record(self._lookup),
            authenticated_service=self._service(self._lookup),
        )

    def append_or_return_existing(self, candidate: FirstAdmissionRecord) -> AppendResult:
        """The declared append outcome (indeterminate when the bundle declares none)."""
        self.candidates.append(candidate)
        if self._append is None:
            return AppendResult(status=AppendStatus.INDETERMINATE)
        return AppendResult(
            status=AppendStatus(self._append["status"]),
            record=self._record(self._append),
            authenticated_service=self._service(self._append),
        )


def _trusted_context(spec: Mapping[str, Any]) -> TrustedAcceptance:
    context = spec["trustedContext"]
    if context is None:
        raise LookupError("the flow asked for trusted acceptance context the bundle does not give")
    return TrustedAcceptance(
        admission_record_id=context["admissionRecordId"],
        trusted_accepted_at=context["trustedAcceptedAt"],
        accepted_by=Principal.from_json(context["acceptedBy"]),
    )


def _call_problems(
    log: ScriptedAdmissionLog, spec: Mapping[str, Any], files: BundleFiles
) -> list[str]:
    problems = []
    if log.lookups != 1:
        problems.append(f"lookup called {log.lookups} times, expected once")
    appended = bool(log.candidates)
    if appended != (spec["append"] is not None):
        problems.append(
            "append was called though the bundle declares none"
            if appended
            else "append was not called though the bundle declares its outcome"
        )
    append = spec["append"]
    if appended and append is not None and append["status"] == "committed":
        # A committed record is the candidate this implementation prepared.
        committed = parse_strict(files.read(append["record"]))
        if log.candidates[0].to_json() != committed:
            problems.append("the prepared candidate differs from the committed record")
    return problems


def run_evaluation(spec: Mapping[str, Any], files: BundleFiles) -> list[str]:
    """Run one admission evaluation; return its problems (empty when it matches)."""
    registry_fixture = files.json(spec["registry"])
    problems = [f"{spec['registry']}: {p}" for p in registry_fixture_problems(registry_fixture)]
    if problems:
        return problems
    try:
        verified = verify_signed_document(
            spec["profileId"], files.read(spec["document"]), registry_fixture
        )
    except ProtocolError as exc:
        return [f"six-stage verification failed at {exc.stage} ({exc.reason})"]
    log = ScriptedAdmissionLog(spec, files)
    outcome: Admission | ProtocolError
    try:
        if spec["mode"] == "first-admission":
            outcome = admit_first(verified, log, lambda: _trusted_context(spec))
        else:
            outcome = replay_historical(verified, log)
    except ProtocolError as exc:
        outcome = exc
    problems = _call_problems(log, spec, files)
    expect = spec["expect"]
    if isinstance(outcome, ProtocolError):
        got = (outcome.stage, outcome.code.value, outcome.reason)
        want = (expect["stage"], expect["wireCode"], expect.get("reason"))
        if got != want:
            problems.append(f"got {got}, expected {want}")
        return problems
    if expect["stage"] != "complete":
        problems.append(f"admission completed, expected {expect['stage']} {expect.get('reason')}")
    elif outcome.record_bytes != files.read(expect["record"]):
        problems.append(f"the admitted record is not {expect['record']}")
    return problems


def _evaluations(manifest: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [ev for case in manifest["cases"] for ev in case["evaluations"]]


def _load_files(root: Path, manifest: Mapping[str, Any]) -> BundleFiles:
    """Integrity of both manifests and both artifact sets; the pin binds the two bundles."""
    check_digest(manifest, MANIFEST_PATH)
    crypto = read_manifest(root, crypto_bundle.MANIFEST_PATH)
    check_digest(crypto, crypto_bundle.MANIFEST_PATH)
    pinned = manifest.get("cryptography", {}).get("artifactDigest")
    if crypto["artifactDigest"] != pinned or pinned != PINNED_CRYPTOGRAPHY_DIGEST:
        raise BundleIntegrityError(
            f"the cryptography bundle is {crypto['artifactDigest']}, the pin says {pinned}"
        )
    contents = read_artifacts(root, crypto)
    for path, data in read_artifacts(root, manifest).items():
        if contents.setdefault(path, data) != data:
            raise BundleIntegrityError(f"{path} differs between the two bundles")
    return BundleFiles(root=root, contents=contents)


def run(root: Path) -> BundleResult:
    """Verify both bundles' integrity, then run and score every admission evaluation."""
    root = Path(root)
    try:
        manifest = read_manifest(root, MANIFEST_PATH)
        evaluations = _evaluations(manifest)
        ids = [str(ev["id"]) for ev in evaluations]
    except (BundleIntegrityError, KeyError, TypeError) as exc:
        return BundleResult.from_evaluations(NAME, [], [f"unreadable manifest: {exc}"])
    try:
        files = _load_files(root, manifest)
    except BundleIntegrityError as exc:
        return failed_everywhere(NAME, ids, f"integrity: {exc}")
    extra = check_constants(manifest, _CONSTANTS)
    if len(set(ids)) != len(ids):
        extra.append("evaluation IDs are not unique")
    results = []
    for evaluation in evaluations:
        try:
            problems = run_evaluation(evaluation, files)
        except (BundleIntegrityError, LookupError, ProtocolError, TypeError, ValueError) as exc:
            problems = [f"cannot run: {type(exc).__name__}: {exc}"]
        results.append(
            EvaluationResult(id=str(evaluation["id"]), ok=not problems, detail="; ".join(problems))
        )
    return BundleResult.from_evaluations(NAME, results, extra)
