"""Artifacts, Evidence and Context Packages (§13): the content-addressed blob store beside the
log, signed manifests, the provenance graph, the Coordinator's ordered review, versioned Context
Packages and Mission isolation.

One concept per module: ``blobs`` (storage, verified on every read), ``manifests`` (signed
Artifact manifests), ``provenance`` (the lineage graph and its SQL), ``evidence`` (signed
Evidence without private reasoning), ``checks`` (deterministic review checks), ``review`` (the
review pipeline of §13.2), ``context_packages`` (§13.3 summaries and gated retrieval of cited
Events), ``isolation`` (who may read what; the Scheduler's content-free view), ``signers`` (the
signing interface they share). The Authority side (publishing Artifacts, reusable knowledge,
cross-Group forwarding) lives in ``mwp_local.authority.handlers``.
"""

from ..store.blobs import ArtifactIntegrityError, BlobReader, BlobRef, BlobStore
from .manifests import Producer, build_manifest, fetch_artifact, verify_manifest
from .provenance import descendants, edges, lineage

__all__ = [
    "ArtifactIntegrityError",
    "BlobReader",
    "BlobRef",
    "BlobStore",
    "Producer",
    "build_manifest",
    "descendants",
    "edges",
    "fetch_artifact",
    "lineage",
    "verify_manifest",
]
