"""Runner for the cryptography bundle (``cryptography/manifest.json``): 62 evaluations.

Owns reading a protocol checkout: the manifest's ``artifactDigest`` and every artifact's length
and SHA-256 are checked before anything else; only declared, verified artifacts are read; the
Registry and signing-key fixtures are checked against the shapes of their fixture schemas (by
hand, in this module); then every evaluation runs through the project's own verifier and is
compared field by field with the manifest's expectation. It also holds the bundle-file helpers
that the admission runner reuses.

It reads files and nothing else; it must not repair a vector, skip an evaluation, or judge a
document by anything other than ``mwp_local.protocol``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from mwp_local.protocol import ed25519
from mwp_local.protocol.b64 import b64url_decode, b64url_encode
from mwp_local.protocol.errors import ProtocolError
from mwp_local.protocol.hashing import sha256_id
from mwp_local.protocol.ids import is_protocol_id
from mwp_local.protocol.jcs import JcsError, canonicalize, canonicalize_reference
from mwp_local.protocol.jsontext import parse_strict
from mwp_local.protocol.signing import (
    PROFILES,
    SignerRule,
    VerifiedDocument,
    verify_signed_document,
)

from .result import BundleResult, EvaluationResult

NAME: Final[str] = "cryptography"
MANIFEST_PATH: Final[str] = "cryptography/manifest.json"
_REPOSITORY_PATH: Final[re.Pattern[str]] = re.compile(
    r"(?:[a-z0-9][a-z0-9._-]*/)*[a-z0-9][a-z0-9._-]*"
)
_SHA256: Final[re.Pattern[str]] = re.compile(r"sha256:[0-9a-f]{64}")
_B64URL_32: Final[re.Pattern[str]] = re.compile(r"[A-Za-z0-9_-]{43}")
_MAX_SAFE_INTEGER: Final[int] = 2**53 - 1
_STAGES: Final[list[str]] = [
    "parse",
    "schema",
    "signature-envelope",
    "key-resolution",
    "canonicalization",
    "signature",
    "complete",
]


class BundleIntegrityError(Exception):
    """The bundle's manifest or artifacts do not match their declared digests."""


# --------------------------------------------------------------------------- bundle files


def manifest_digest(manifest: Mapping[str, Any]) -> str:
    """``sha256:`` of the JCS form of the manifest without its top-level ``artifactDigest``."""
    return sha256_id(canonicalize({k: v for k, v in manifest.items() if k != "artifactDigest"}))


@dataclass(frozen=True, slots=True, kw_only=True)
class BundleFiles:
    """The verified artifacts of one or more manifests, read once from the checkout."""

    root: Path
    contents: Mapping[str, bytes]

    def read(self, path: str) -> bytes:
        """The bytes of a declared, verified artifact (``BundleIntegrityError`` otherwise)."""
        try:
            return self.contents[path]
        except KeyError:
            raise BundleIntegrityError(f"{path} is not a declared artifact") from None

    def json(self, path: str) -> Any:
        """A declared artifact parsed strictly."""
        return parse_strict(self.read(path))


def read_manifest(root: Path, path: str) -> dict[str, Any]:
    """Read a manifest strictly (its digest is checked separately by ``check_digest``)."""
    try:
        manifest = parse_strict((root / path).read_bytes())
    except (OSError, ProtocolError) as exc:
        raise BundleIntegrityError(f"{path}: cannot be read: {exc}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("cases"), list):
        raise BundleIntegrityError(f"{path}: not a manifest with cases")
    return manifest


def check_digest(manifest: Mapping[str, Any], path: str) -> None:
    """Require the manifest's ``artifactDigest`` to match its content."""
    digest = manifest_digest(manifest)
    if digest != manifest.get("artifactDigest"):
        raise BundleIntegrityError(
            f"{path}: artifactDigest is {manifest.get('artifactDigest')} but the content hashes "
            f"to {digest}"
        )


def read_artifacts(root: Path, manifest: Mapping[str, Any]) -> dict[str, bytes]:
    """Read every declared artifact, checking its path form, ``byteLength`` and ``sha256``."""
    artifacts = manifest.get("artifacts")
    if not isinstance(artifacts, list) or not artifacts:
        raise BundleIntegrityError("the manifest declares no artifacts")
    contents: dict[str, bytes] = {}
    for entry in artifacts:
        if not isinstance(entry, dict) or set(entry) != {"path", "byteLength", "sha256"}:
            raise BundleIntegrityError(f"malformed artifact entry {entry!r}")
        path, length, digest = entry["path"], entry["byteLength"], entry["sha256"]
        if not isinstance(path, str) or _REPOSITORY_PATH.fullmatch(path) is None:
            raise BundleIntegrityError(f"artifact path {path!r} is not a repository path")
        try:
            data = (root / path).read_bytes()
        except OSError as exc:
            raise BundleIntegrityError(f"{path}: cannot be read: {exc}") from None
        if len(data) != length:
            raise BundleIntegrityError(f"{path}: {len(data)} bytes, manifest says {length}")
        if sha256_id(data) != digest:
            raise BundleIntegrityError(f"{path}: sha256 differs from the manifest")
        contents[path] = data
    return contents


def check_constants(manifest: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """Problems where the manifest differs from the constants its schema fixes."""
    return [
        f"manifest {name} is {manifest.get(name)!r}, expected {value!r}"
        for name, value in expected.items()
        if manifest.get(name) != value
    ]


# --------------------------------------------------------------------------- fixture shapes


def _string(value: Any, at: str, out: list[str], lo: int = 1, hi: int | None = None) -> bool:
    if not isinstance(value, str):
        out.append(f"{at}: expected a string")
        return False
    if len(value) < lo or (hi is not None and len(value) > hi):
        out.append(f"{at}: length {len(value)} outside {lo}..{hi}")
        return False
    return True


def _members(
    value: Any, at: str, out: list[str], required: Iterable[str], optional: Iterable[str] = ()
) -> bool:
    if not isinstance(value, dict):
        out.append(f"{at}: expected an object")
        return False
    required, optional = set(required), set(optional)
    missing = required - set(value)
    extra = set(value) - required - optional
    if missing:
        out.append(f"{at}: missing {sorted(missing)}")
    if extra:
        out.append(f"{at}: unexpected {sorted(extra)}")
    return not missing and not extra


def registry_fixture_problems(value: Any) -> list[str]:
    """Shape problems of a Registry fixture (``cryptography/registry-fixture.schema.json``).

    Only the container shape and length bounds, as the schema says; identifier, key and
    timestamp semantics are the verifier's stage-4 business.
    """
    out: list[str] = []
    if not _members(value, "registry", out, ("organizationId", "bindings")):
        return out
    _string(value["organizationId"], "organizationId", out, 1, 512)
    bindings = value["bindings"]
    if not isinstance(bindings, list) or not 1 <= len(bindings) <= 64:
        out.append("bindings: expected an array of 1..64 bindings")
        return out
    binding_members = ("keyId", "principal", "algorithm", "publicKey", "validFrom")
    for i, binding in enumerate(bindings):
        at = f"bindings[{i}]"
        if not _members(binding, at, out, (*binding_members, "validityHistory")):
            continue
        _string(binding["keyId"], f"{at}.keyId", out, 1, 512)
        _string(binding["algorithm"], f"{at}.algorithm", out, 1, 64)
        _string(binding["publicKey"], f"{at}.publicKey", out, 1, 4096)
        _string(binding["validFrom"], f"{at}.validFrom", out, 1, 128)
        principal = binding["principal"]
        if _members(principal, f"{at}.principal", out, ("type", "id")):
            if principal["type"] not in ("agent", "human", "service"):
                out.append(f"{at}.principal.type: not agent, human or service")
            _string(principal["id"], f"{at}.principal.id", out, 1, 512)
        history = binding["validityHistory"]
        if not isinstance(history, list) or len(history) > 64:
            out.append(f"{at}.validityHistory: expected an array of at most 64 records")
            continue
        for j, status in enumerate(history):
            sat = f"{at}.validityHistory[{j}]"
            if not _members(
                status, sat, out, ("sequence", "recordedAt"), ("validUntil", "revokedAt")
            ):
                continue
            sequence = status["sequence"]
            if (
                not isinstance(sequence, int)
                or isinstance(sequence, bool)
                or not 1 <= sequence <= _MAX_SAFE_INTEGER
            ):
                out.append(f"{sat}.sequence: expected an integer 1..2^53-1")
            for name in ("recordedAt", "validUntil", "revokedAt"):
                if name in status:
                    _string(status[name], f"{sat}.{name}", out, 1, 128)
    return out


def signing_key_fixture_problems(value: Any) -> list[str]:
    """Shape problems of a test-only signing-key fixture (``signing-key-fixture.schema.json``)."""
    out: list[str] = []
    if not _members(
        value, "signingKey", out, ("testOnly", "keyId", "algorithm", "seed", "publicKey")
    ):
        return out
    if value["testOnly"] is not True:
        out.append("testOnly: must be true")
    key_id = value["keyId"]
    if _string(key_id, "keyId", out, 1, 512) and not is_protocol_id(key_id):
        out.append("keyId: not an absolute URI")
    if value["algorithm"] != "Ed25519":
        out.append("algorithm: must be Ed25519")
    for name in ("seed", "publicKey"):
        if not isinstance(value[name], str) or _B64URL_32.fullmatch(value[name]) is None:
            out.append(f"{name}: expected 43 base64url characters")
    return out


# --------------------------------------------------------------------------- evaluations


def _outcome_problems(error: ProtocolError | None, expect: Mapping[str, Any]) -> list[str]:
    """Compare the stage and wire code reached with the expectation."""
    stage = "complete" if error is None else error.stage
    code = None if error is None else error.code.value
    problems = []
    if stage != expect.get("stage"):
        why = "" if error is None else f" ({error.reason}: {error.explanation})"
        problems.append(f"stopped at {stage}{why}, expected {expect.get('stage')}")
    if code != expect.get("wireCode"):
        problems.append(f"wire code {code}, expected {expect.get('wireCode')}")
    return problems


def _signing_key_problems(path: str, files: BundleFiles, expected: Mapping[str, Any]) -> list[str]:
    fixture = files.json(path)
    problems = signing_key_fixture_problems(fixture)
    if problems:
        return [f"{path}: {p}" for p in problems]
    key_pair = ed25519.SigningKeyPair.from_seed(b64url_decode(fixture["seed"]))
    if b64url_encode(key_pair.public_key) != fixture["publicKey"]:
        problems.append(f"{path}: the seed does not give the declared public key")
    if fixture["keyId"] != expected["keyId"]:
        problems.append(f"{path}: keyId {fixture['keyId']} differs from the expected key")
    # Ed25519 is deterministic: the seed must reproduce the expected signature exactly.
    resigned = b64url_encode(key_pair.sign(files.read(expected["signingBytes"])))
    if resigned != expected["signature"]:
        problems.append(f"{path}: re-signing the signing bytes gives a different signature")
    return problems


def _verified_problems(
    verified: VerifiedDocument, expected: Mapping[str, Any], files: BundleFiles
) -> list[str]:
    problems = []
    expected_bytes = files.read(expected["signingBytes"])
    checks: list[tuple[str, Any, Any]] = [
        ("signing bytes", verified.signing_bytes, expected_bytes),
        ("signing hash", verified.signing_hash, expected["signingHash"]),
        ("signing hash of the expected bytes", sha256_id(expected_bytes), expected["signingHash"]),
        ("keyId", verified.key_id, expected["keyId"]),
        ("principal", verified.principal.to_json(), expected["principal"]),
        ("protectedTime", verified.protected_time, expected["protectedTime"]),
        ("signature", verified.document["signature"]["value"], expected["signature"]),
        # The bundle's signedDocumentHash is over the JCS form of the whole signed document
        # (signature included), not over the file's bytes.
        (
            "signedDocumentHash",
            sha256_id(canonicalize(verified.document)),
            expected["signedDocumentHash"],
        ),
    ]
    for what, got, want in checks:
        if got != want:
            problems.append(f"{what}: got {got!r}, expected {want!r}")
    return problems


def run_signed_document(evaluation: Mapping[str, Any], files: BundleFiles) -> list[str]:
    """Run one signed-document evaluation; return its problems (empty when it matches)."""
    registry_fixture = files.json(evaluation["registry"])
    problems = [
        f"{evaluation['registry']}: {p}" for p in registry_fixture_problems(registry_fixture)
    ]
    if problems:
        return problems
    expect = evaluation["expect"]
    if evaluation.get("signingKey") is not None:
        problems += _signing_key_problems(evaluation["signingKey"], files, expect["verified"])
    document_bytes = files.read(evaluation["document"])
    try:
        verified = verify_signed_document(evaluation["profileId"], document_bytes, registry_fixture)
    except ProtocolError as exc:
        return problems + _outcome_problems(exc, expect)
    problems += _outcome_problems(None, expect)
    if not problems:
        problems += _verified_problems(verified, expect["verified"], files)
    return problems


def run_canonicalization(evaluation: Mapping[str, Any], files: BundleFiles) -> list[str]:
    """Run the RFC 8785 evaluation: both JCS implementations must give the expected bytes."""
    value = files.json(evaluation["input"])
    expected = files.read(evaluation["expectedJcs"])
    problems = []
    for name, function in (("canonicalize", canonicalize), ("reference", canonicalize_reference)):
        try:
            produced = function(value)
        except JcsError as exc:
            problems.append(f"{name}: refused the input: {exc}")
            continue
        if produced != expected:
            problems.append(f"{name}: bytes differ from {evaluation['expectedJcs']}")
    if sha256_id(expected) != evaluation["sha256"]:
        problems.append("the expected JCS bytes do not hash to the declared sha256")
    return problems


#: Which runner handles each case ``kind`` of the manifest.
_RUNNERS: Final[Mapping[str, Callable[[Mapping[str, Any], BundleFiles], list[str]]]] = (
    MappingProxyType(
        {
            "canonicalization": run_canonicalization,
            "single": run_signed_document,
            "profile-matrix": run_signed_document,
            "failure-matrix": run_signed_document,
        }
    )
)


def evaluation_id(case: Mapping[str, Any], evaluation: Mapping[str, Any]) -> str:
    """A unique, stable name: the case ID, plus the fault or profile inside a matrix."""
    if len(case["evaluations"]) == 1:
        return str(case["id"])
    fault = evaluation.get("fault")
    return f"{case['id']}/{fault['id'] if fault else evaluation['profileId']}"


def profile_table_problems(manifest: Mapping[str, Any]) -> list[str]:
    """Differences between the manifest's profile table and ``signing.PROFILES``."""
    problems = []
    declared = {p["profileId"]: p for p in manifest.get("profiles", [])}
    if set(declared) != set(PROFILES):
        problems.append(f"profiles {sorted(declared)} differ from {sorted(PROFILES)}")
    for profile_id, row in declared.items():
        ours = PROFILES.get(profile_id)
        if ours is None:
            continue
        signer = row["expectedSigner"]
        pointer = signer.get("pointer", signer.get("idPointer"))
        if (
            row["schema"] != f"schemas/{ours.schema_name}.schema.json"
            or row["protectedTimePointer"] != ours.protected_time_pointer
            or SignerRule(signer["rule"]) is not ours.signer_rule
            or pointer != ours.signer_pointer
        ):
            problems.append(f"profile {profile_id}: the manifest row differs from ours")
    return problems


_CONSTANTS: Final[Mapping[str, Any]] = MappingProxyType(
    {
        "$schema": "https://missionweaveprotocol.dev/cryptography/0.1/manifest.schema.json",
        "manifestVersion": 1,
        "protocolVersion": "0.1",
        "profileId": "missionweaveprotocol.signed-document-verification.v0.1",
        "semanticStages": _STAGES,
        "fixtureSchemas": {
            "registry": "cryptography/registry-fixture.schema.json",
            "signingKey": "cryptography/signing-key-fixture.schema.json",
        },
    }
)


def failed_everywhere(
    name: str, planned: Iterable[str], detail: str, extra: list[str] | None = None
) -> BundleResult:
    """Every planned evaluation fails with ``detail`` (the bundle could not be trusted)."""
    results = [EvaluationResult(id=eid, ok=False, detail=detail) for eid in planned]
    return BundleResult.from_evaluations(name, results, [detail, *(extra or [])])


def _planned(manifest: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    return [
        (evaluation_id(case, ev), case["kind"], ev)
        for case in manifest["cases"]
        for ev in case["evaluations"]
    ]


def run(root: Path) -> BundleResult:
    """Verify the bundle's integrity, then run and score every evaluation."""
    root = Path(root)
    try:
        manifest = read_manifest(root, MANIFEST_PATH)
        planned = _planned(manifest)
    except (BundleIntegrityError, KeyError, TypeError) as exc:
        return BundleResult.from_evaluations(NAME, [], [f"unreadable manifest: {exc}"])
    try:
        check_digest(manifest, MANIFEST_PATH)
        files = BundleFiles(root=root, contents=read_artifacts(root, manifest))
    except BundleIntegrityError as exc:
        return failed_everywhere(NAME, [eid for eid, _, _ in planned], f"integrity: {exc}")
    extra = check_constants(manifest, _CONSTANTS) + profile_table_problems(manifest)
    results = []
    for eid, kind, evaluation in planned:
        try:
            problems = _RUNNERS[kind](evaluation, files)
        except (BundleIntegrityError, ProtocolError, KeyError, TypeError) as exc:
            problems = [f"cannot run: {type(exc).__name__}: {exc}"]
        results.append(EvaluationResult(id=eid, ok=not problems, detail="; ".join(problems)))
    return BundleResult.from_evaluations(NAME, results, extra)
