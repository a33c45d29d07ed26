"""Shared test fixtures: where the official protocol bundle lives, and the requirement marker."""

from __future__ import annotations

from pathlib import Path

import pytest

#: The pinned official bundle, read in place (never copied into the project).
PROTOCOL_ROOT = Path(__file__).resolve().parents[1].parent / "shared" / "protocol"


@pytest.fixture(scope="session")
def protocol_root() -> Path:
    """Path of the official protocol checkout beside the project."""
    assert PROTOCOL_ROOT.is_dir(), f"official protocol bundle not found at {PROTOCOL_ROOT}"
    return PROTOCOL_ROOT
