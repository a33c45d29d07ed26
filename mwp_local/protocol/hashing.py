"""Content hashes in the protocol's ``sha256:<64 lower-case hex>`` form (section 2)."""

from __future__ import annotations

import hashlib
import re

SHA256_ID = re.compile(r"sha256:[0-9a-f]{64}")


def sha256_id(data: bytes) -> str:
    """Return ``sha256:<hex>`` of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def is_sha256_id(text: object) -> bool:
    """Whether ``text`` is a well-formed protocol content hash."""
    return isinstance(text, str) and SHA256_ID.fullmatch(text) is not None
