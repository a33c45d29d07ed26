"""Protocol identifiers: absolute RFC 3986 URIs (section 2).

An identifier must be an absolute URI (a scheme, then ``:``), spelled in ASCII only (IRI-only
characters are refused; non-ASCII must be percent-encoded), and validation consumes the whole
string: whitespace, control characters and a trailing line feed are invalid. Identifiers are
compared byte for byte; nothing here normalizes them. The grammar is RFC 3986 section 3, written
out below so that each rule can be read against the RFC.

``derived_uuid`` makes the ``urn:uuid:`` identifiers the sandbox derives deterministically (Event
IDs, offer IDs, Action and Correlation IDs, frame, snapshot, Evidence, Artifact, review and
Context Package IDs): the same parts always give the same identifier. Its first part, the scope,
is the issuing Organization's ID, which is what makes the identifier globally unique within its
kind (§2): two sandboxes have different Organizations, so they never derive the same Event ID
for different Events, which a recipient deduplicating by Event ID (§16) would drop.

``sandbox_organization_id`` is that Organization ID: derived from the seed and the mission (its
name and a hash of its content), so the same seed and mission give the same bytes and any other
pair gives another Organization.
"""

from __future__ import annotations

import hashlib
import re
import uuid

_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
_PCHAR = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:@]|{_PCT})"
_SEGMENT = rf"{_PCHAR}*"
_SEGMENT_NZ = rf"{_PCHAR}+"
_DEC_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])"
_IPV4 = rf"{_DEC_OCTET}\.{_DEC_OCTET}\.{_DEC_OCTET}\.{_DEC_OCTET}"
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_IPV4})"
_IPV6 = (
    r"(?:"
    rf"(?:{_H16}:){{6}}{_LS32}"
    rf"|::(?:{_H16}:){{5}}{_LS32}"
    rf"|(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}"
    rf"|(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}"
    rf"|(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}"
    rf"|(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}"
    rf"|(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}"
    rf"|(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}"
    rf"|(?:(?:{_H16}:){{0,6}}{_H16})?::"
    r")"
)
_IPVFUTURE = rf"v[0-9A-Fa-f]+\.[{_UNRESERVED}{_SUB_DELIMS}:]+"
_IP_LITERAL = rf"\[(?:{_IPV6}|{_IPVFUTURE})\]"
_REG_NAME = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}]|{_PCT})*"
_HOST = rf"(?:{_IP_LITERAL}|{_IPV4}|{_REG_NAME})"
_USERINFO = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:]|{_PCT})*"
_AUTHORITY = rf"(?:{_USERINFO}@)?{_HOST}(?::[0-9]*)?"
_PATH_ABEMPTY = rf"(?:/{_SEGMENT})*"
_PATH_ABSOLUTE = rf"/(?:{_SEGMENT_NZ}(?:/{_SEGMENT})*)?"
_PATH_ROOTLESS = rf"{_SEGMENT_NZ}(?:/{_SEGMENT})*"
_HIER_PART = rf"(?://{_AUTHORITY}{_PATH_ABEMPTY}|{_PATH_ABSOLUTE}|{_PATH_ROOTLESS}|)"
_QUERY = rf"(?:{_PCHAR}|[/?])*"
_SCHEME = r"[A-Za-z][A-Za-z0-9+\-.]*"

#: RFC 3986 ``URI = scheme ":" hier-part [ "?" query ] [ "#" fragment ]``.
URI = re.compile(rf"{_SCHEME}:{_HIER_PART}(?:\?{_QUERY})?(?:#{_QUERY})?")


#: ``scheme ":"`` then only unreserved and sub-delims characters, ``:`` and ``@``: a URI whose
#: hier-part is path-rootless (or empty), so ``URI`` always accepts it. Most identifiers
#: (``urn:uuid:...``, ``urn:mwp-local:...``) have this form, and a single character class is a
#: far cheaper match than the full grammar; anything else is left to ``URI``.
_SIMPLE = re.compile(rf"{_SCHEME}:[{_UNRESERVED}{_SUB_DELIMS}:@]*")


def is_protocol_id(text: object) -> bool:
    """Whether ``text`` is a valid protocol identifier (an absolute RFC 3986 URI).

    ``fullmatch`` consumes the whole string, so a trailing line feed (which a ``$`` anchor would
    let through) is refused.
    """
    if not isinstance(text, str) or not text.isascii():
        return False
    return _SIMPLE.fullmatch(text) is not None or URI.fullmatch(text) is not None


def derived_uuid(scope: str, *parts: str) -> str:
    """A ``urn:uuid:`` identifier derived from ``scope`` and ``parts``: the first 16 bytes of
    SHA-256 over them joined by U+001F, as a version-4, RFC 4122-variant UUID (deterministic, so
    the same seed and mission give the same log). ``scope`` is the issuing Organization's ID (an
    identifier), which keeps the result unique across Organizations; a bare label is refused,
    so no caller can forget it."""
    if not is_protocol_id(scope):
        raise ValueError(f"derived_uuid needs an Organization ID as its scope, not {scope!r}")
    digest = hashlib.sha256("\x1f".join((scope, *parts)).encode("utf-8")).digest()[:16]
    return uuid.UUID(bytes=digest, version=4).urn


#: The prefix of every Organization ID the sandbox derives.
SANDBOX_ORGANIZATION_PREFIX = "urn:mwp-local:organization:"


def sandbox_organization_id(seed: int, mission: str | None = None, content_hash: str = "") -> str:
    """The Organization ID of a sandbox of ``seed`` running ``mission`` (its name) whose mission
    file content hashes to ``content_hash``: ``urn:mwp-local:organization:<name>-<16 hex>``, the
    hex from SHA-256 over seed, name and hash. Without a mission (``mwp-local init``) the ID is
    ``urn:mwp-local:organization:seed-<seed>``: that sandbox's history is whatever is later
    submitted to it, so its identity is its keys, which the seed alone decides."""
    if mission is None:
        return f"{SANDBOX_ORGANIZATION_PREFIX}seed-{seed}"
    digest = hashlib.sha256(
        "\x1f".join(("mwp-local organization", str(seed), mission, content_hash)).encode()
    ).hexdigest()[:16]
    name = "".join(c if c.isascii() and (c.isalnum() or c in "-._") else "-" for c in mission)
    return f"{SANDBOX_ORGANIZATION_PREFIX}{name or 'mission'}-{digest}"
