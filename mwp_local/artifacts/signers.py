"""Who signs the documents of this package: the ``Signer`` shape and one signing helper.

Owns the small interface every producer of a Signed Document here needs (an actor, a key pair and
its key ID; ``authority.organization.Member`` has exactly that) and ``sign_valid``, which signs a
document under its Verification Profile and then checks the result against the document's schema
with the project's own validators, so that no invalid manifest, Evidence or Context Package ever
leaves this package. It must not perform I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..protocol import documents
from ..protocol.ed25519 import SigningKeyPair
from ..protocol.signing import sign_document

__all__ = ["Signer", "sign_valid"]


class Signer(Protocol):
    """A Principal that can sign: ``Member`` of a sandbox Organization satisfies this."""

    @property
    def actor(self) -> dict[str, str]:
        """The actor object (``{"type": ..., "id": ...}``)."""
        ...

    @property
    def key_pair(self) -> SigningKeyPair:
        """The Ed25519 key pair."""
        ...

    @property
    def key_id(self) -> str:
        """The Registry key ID of ``key_pair``."""
        ...

    @property
    def organization_id(self) -> str:
        """The Organization holding the Principal: the scope of the identifiers it derives."""
        ...


def sign_valid(profile: str, unsigned: Mapping[str, Any], signer: Signer) -> dict[str, Any]:
    """Sign ``unsigned`` as ``signer`` and validate the signed document against its schema.

    Raises ``ProtocolError(SCHEMA_VALIDATION_FAILED)`` naming every problem when the document
    would not conform (so the caller learns what is missing instead of shipping it).
    """
    signed = sign_document(profile, dict(unsigned), signer.key_pair, signer.key_id)
    documents.validate(profile, signed)
    return signed
