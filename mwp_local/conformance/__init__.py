"""Runners for the official test bundles of a protocol checkout.

``structural`` (58 schema vectors), ``crypto_bundle`` (62 signed-document evaluations) and
``admission_bundle`` (30 first-admission and historical-trust evaluations) each read the bundle
from a protocol root given on the command line and run it through the project's own validators and
verifier. These modules read files; the protocol core they exercise does not.
"""

from __future__ import annotations

from pathlib import Path

from .result import BundleResult, EvaluationResult

__all__ = ["BundleResult", "EvaluationResult", "run_all"]


def run_all(root: Path) -> list[BundleResult]:
    """Run the three bundles in order: structural, cryptography, admission."""
    from . import admission_bundle, crypto_bundle, structural

    return [structural.run(root), crypto_bundle.run(root), admission_bundle.run(root)]
