"""Signed Artifact manifests (§13.1): building them from stored content, and reading content
through them by content hash only.

Owns ``build_manifest`` (every member of ``artifact.schema.json``: content hash, size, retrieval
URI, media type and schema, producer Agent with its Agent Card version and capabilities,
Mission/Group/WorkItem IDs, source Artifact hashes, tool and model versions, classification,
creation time, signed by the producing Agent), ``verify_manifest`` (the six-stage check of a
received manifest) and ``fetch_artifact`` (content by ``contentHash``, verified, with the Artifact
named in any refusal), and ``read_artifact`` (the same read for a Principal, behind the
isolation gate ``authority.isolation.artifact_access``). The manifest's ``uri`` is a hint for
people and tools: nothing here reads it, and two manifests with different URIs and the same
hash name the same content (MWP-WRK-024). Publishing a manifest is the Authority's
``artifact.publish`` Command, which cites the current Execution Lease (MWP-WRK-013). This module
must not decide who may read an Artifact (``authority.isolation`` does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..authority.isolation import artifact_access
from ..authority.state import AuthorityState
from ..protocol.documents import Classification
from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.ids import derived_uuid
from ..protocol.registry import Registry
from ..protocol.signing import VerifiedDocument, profile_for, verify_parsed
from ..store.blobs import ArtifactIntegrityError, BlobRef, BlobStore
from .signers import Signer, sign_valid

__all__ = [
    "GatedContent",
    "ModelVersionRef",
    "Producer",
    "ToolVersionRef",
    "build_manifest",
    "fetch_artifact",
    "read_artifact",
    "verify_manifest",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Producer:
    """The producing Agent as a manifest records it: signer, card version, capabilities used."""

    signer: Signer
    agent_card_version: int
    #: ``(capability id, version)`` pairs the work used (at least one).
    capabilities: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        if self.signer.actor.get("type") != "agent":
            raise ValueError("an Artifact manifest is signed by its producing Agent")
        if not self.capabilities:
            raise ValueError("a producer names at least one capability")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolVersionRef:
    """A tool and its version used to produce the content."""

    name: str
    version: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelVersionRef:
    """A model (provider, name, version) used to produce the content."""

    provider: str
    model: str
    version: str


def build_manifest(
    ref: BlobRef,
    *,
    producer: Producer,
    mission_id: str,
    group_id: str,
    work_item_id: str,
    media_type: str,
    schema_uri: str,
    created_at: str,
    uri: str,
    classification: Classification | str = Classification.INTERNAL,
    sources: Iterable[str] = (),
    tools: Sequence[ToolVersionRef] = (),
    models: Sequence[ModelVersionRef] = (),
    artifact_id: str | None = None,
    extensions: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A signed manifest for stored content ``ref`` with every field of §13.1.

    ``uri`` is where people may fetch it (e.g. ``BlobStore.uri(ref)``); ``sources`` are the
    content hashes of the Artifacts it was derived from (the provenance graph). The Artifact ID
    defaults to one derived from the WorkItem, content hash and time. Raises
    ``ProtocolError(SCHEMA_VALIDATION_FAILED)`` if the result would not conform, and
    ``ProtocolError(INVALID_COMMAND)`` for a manifest that cites its own content as a source.
    """
    source_list = list(dict.fromkeys(sources))
    if ref.sha256 in source_list:
        raise ProtocolError(
            ErrorCode.INVALID_COMMAND,
            f"An Artifact cannot be derived from itself ({ref.sha256}); provenance is acyclic.",
            rule="§13.1 derived Artifacts form a provenance graph",
        )
    manifest: dict[str, Any] = {
        "artifactId": artifact_id
        or derived_uuid(
            producer.signer.organization_id, "artifact", work_item_id, ref.sha256, created_at
        ),
        "contentHash": ref.sha256,
        "uri": uri,
        "sizeBytes": ref.size,
        "mediaType": media_type,
        "schemaUri": schema_uri,
        "producer": {
            "agentId": producer.signer.actor["id"],
            "agentCardVersion": producer.agent_card_version,
            "capabilities": [{"id": c, "version": v} for c, v in producer.capabilities],
        },
        "missionId": mission_id,
        "groupId": group_id,
        "workItemId": work_item_id,
        "sourceArtifactHashes": source_list,
        "toolVersions": [{"name": t.name, "version": t.version} for t in tools],
        "modelVersions": [
            {"provider": m.provider, "model": m.model, "version": m.version} for m in models
        ],
        "classification": str(Classification(classification)),
        "createdAt": created_at,
    }
    if extensions:
        manifest["extensions"] = dict(extensions)
    return sign_valid("artifact", manifest, producer.signer)


def verify_manifest(manifest: Any, registry: Registry) -> VerifiedDocument:
    """Run the six stages of §6.4 on a received manifest (signed by its producing Agent)."""
    return verify_parsed(profile_for("artifact"), manifest, registry)


def fetch_artifact(blobs: BlobStore, manifest: Mapping[str, Any]) -> bytes:
    """The content a manifest names, by ``contentHash`` only, verified before it is returned.

    The manifest's ``uri`` is never consulted. Besides the SHA-256, the stored size must equal
    ``sizeBytes``; every refusal is an ``ArtifactIntegrityError`` naming the Artifact ID.
    """
    content_hash = manifest["contentHash"]
    name = manifest.get("artifactId")
    ref = blobs.ref(content_hash, name=name)
    if ref.size != manifest["sizeBytes"]:
        raise ArtifactIntegrityError(
            content_hash,
            "size-mismatch",
            f"the manifest declares {manifest['sizeBytes']} bytes but the store holds {ref.size}",
            name=name,
        )
    return blobs.get(content_hash, name=name)


def read_artifact(
    state: AuthorityState, blobs: BlobStore, principal_id: str, artifact_hash: str
) -> bytes:
    """The content of an Artifact for ``principal_id``: the gate first, then a verified read.

    Raises ``AUTH_FORBIDDEN`` before touching the blob store when the gate refuses, and
    ``ArtifactIntegrityError`` when the stored content does not verify.
    """
    artifact_access(state, principal_id, artifact_hash)
    manifest = state.manifest_of(artifact_hash)
    assert manifest is not None  # the gate refuses unknown content
    return fetch_artifact(blobs, manifest)


@dataclass(frozen=True, slots=True)
class GatedContent:
    """One Principal's content source: every read by hash passes the isolation gate
    (``artifact_access`` over the Authority's current state) before the blob store is touched,
    so an agent handed it reads only Artifacts a Membership, forwarding or Organization
    knowledge of theirs covers (§13.3, MWP-WRK-028)."""

    state: Callable[[], AuthorityState]
    blobs: BlobStore
    principal_id: str

    def get(self, sha256: str, *, name: str | None = None) -> bytes:
        """The verified content, or ``AUTH_FORBIDDEN`` if the gate refuses."""
        artifact_access(self.state(), self.principal_id, sha256)
        return self.blobs.get(sha256, name=name)

    def verify(self, sha256: str, *, name: str | None = None) -> BlobRef:
        """Re-hash the content behind the gate."""
        artifact_access(self.state(), self.principal_id, sha256)
        return self.blobs.verify(sha256, name=name)
