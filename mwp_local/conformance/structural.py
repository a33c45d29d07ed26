"""The structural bundle: the 58 schema vectors of ``conformance/manifest.json``.

Owns reading the manifest and vectors of a protocol checkout (each instance through the strict
JSON parser, so duplicate member names fail before any schema check) and judging every instance
with the project's own validators (``mwp_local.protocol.documents.errors``), never with a JSON
Schema library or the schema files: the manifest's ``schema`` path only names which of our
transcribed schemas applies. Each vector is one evaluation; it passes when our verdict equals
the manifest's expectation. This module reads files; the validators it drives do not.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any

from ..protocol.documents import SCHEMA_NAMES, errors
from ..protocol.errors import ProtocolError
from ..protocol.jsontext import parse_strict
from .result import BundleResult, EvaluationResult

__all__ = ["BUNDLE_NAME", "run", "schema_name_of"]

BUNDLE_NAME = "structural"
_SUFFIX = ".schema.json"


def schema_name_of(schema_path: str) -> str:
    """``schemas/work-item.schema.json`` -> ``work-item``; refuses anything else."""
    name = PurePosixPath(schema_path).name
    if not name.endswith(_SUFFIX) or name.removesuffix(_SUFFIX) not in SCHEMA_NAMES:
        raise ValueError(f"the manifest names an unknown document schema: {schema_path!r}")
    return name.removesuffix(_SUFFIX)


def _evaluate(root: Path, case: Any) -> EvaluationResult:
    instance = str(case.get("instance", "?")) if isinstance(case, dict) else "?"
    try:
        schema = schema_name_of(case["schema"])
        expected = case["valid"]
        if not isinstance(expected, bool):
            raise ValueError(f"'valid' must be true or false, not {expected!r}")
        doc = parse_strict((root / instance).read_bytes())
    except (OSError, ValueError, KeyError, TypeError, ProtocolError) as exc:
        return EvaluationResult(id=instance, ok=False, detail=f"malformed case: {exc!r}")
    found = errors(schema, doc)
    verdict = not found
    if verdict == expected:
        if verdict:
            detail = f"valid {schema}, as expected"
        else:
            detail = f"invalid {schema}, as expected: {found[0]}"
        return EvaluationResult(id=instance, ok=True, detail=detail)
    if verdict:
        detail = f"expected invalid {schema}, but our validator accepted it"
    else:
        detail = f"expected valid {schema}, but: " + "; ".join(str(p) for p in found)
    return EvaluationResult(id=instance, ok=False, detail=detail)


def run(root: Path) -> BundleResult:
    """Judge every manifest case of the protocol checkout at ``root``.

    A manifest that cannot be read, or does not hold a list of cases, is one bundle-level
    failure with no evaluations.
    """
    manifest_path = root / "conformance" / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return BundleResult.from_evaluations(BUNDLE_NAME, [], [f"manifest unreadable: {exc}"])
    if not isinstance(manifest, list):
        return BundleResult.from_evaluations(BUNDLE_NAME, [], ["manifest is not a list of cases"])
    evaluations = [_evaluate(root, case) for case in manifest]
    return BundleResult.from_evaluations(BUNDLE_NAME, evaluations)
