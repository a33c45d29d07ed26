"""The public API at the package root (issue 22.1): every name resolves, ``import mwp_local``
loads nothing else, and the example of docs/prototyping.md (a Mission in Python, a work
function over its input, a Worker of one's own) runs to Approval as printed."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mwp_local
from mwp_local.store.blobs import BlobStore

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "prototyping.md"
SAMPLE = ROOT / "sample_missions" / "learn.toml"


def test_every_public_name_resolves_and_is_documented() -> None:
    page = DOC.read_text()
    assert mwp_local.__all__ == sorted(mwp_local._PUBLIC)
    for name in mwp_local.__all__:
        assert getattr(mwp_local, name) is not None
        assert f"`{name}`" in page, f"{name} is not on docs/prototyping.md"


def test_import_is_lazy() -> None:
    code = (
        "import sys, mwp_local; print(sorted(m for m in sys.modules if m.startswith('mwp_local')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['mwp_local']"


#: Third-party modules loaded on first use, not by importing the API (figure 7 of issue 25):
#: DuckDB and pyarrow (with numpy) when the first log is opened, the notebook's when one is used.
HEAVY = ("duckdb", "pyarrow", "numpy", "pandas", "jsonschema", "ipywidgets", "IPython")


@pytest.mark.parametrize("statement", ["import mwp_local", "from mwp_local import Sandbox"])
def test_importing_the_api_loads_no_heavy_module(statement: str) -> None:
    code = f"import sys; {statement}; print(sorted({{m.split('.')[0] for m in sys.modules}}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(ast.literal_eval(out.stdout.strip()))
    assert "mwp_local" in loaded
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_a_sandbox_loads_duckdb_when_it_opens_its_log(tmp_path: Path) -> None:
    """The lazy imports are complete: a Sandbox opened in a fresh interpreter runs, writes its
    log through DuckDB and pyarrow, and answers SQL (a missing import would raise here)."""
    code = (
        "import sys; from mwp_local import Sandbox\n"
        f"sandbox = Sandbox({str(tmp_path / 'sb')!r}, {str(SAMPLE)!r})\n"
        "sandbox.step(); print(sandbox.sql('SELECT count(*) AS n FROM events')['n'][0])\n"
        "sandbox.close(); print('duckdb' in sys.modules, 'pyarrow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    count, loaded = out.stdout.strip().splitlines()
    assert int(count) > 0
    assert loaded == "True True"


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        mwp_local.Sandboxx  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "Sandboxx" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def test_the_documented_example_runs_to_approval() -> None:
    block = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert block is not None
    namespace: dict[str, object] = {}
    exec(compile(block.group(1), str(DOC), "exec"), namespace)
    summary = namespace["summary"]
    assert set(summary.missions.values()) == {"approved"}  # type: ignore[attr-defined]
    sandbox = namespace["sandbox"]
    state = sandbox.log.state  # type: ignore[attr-defined]
    total = next(w for w in state.work_items.values() if w.work_item_id.endswith(":sum"))
    store = BlobStore(sandbox.directory / "blobs")  # type: ignore[attr-defined]
    (digest,) = total.submitted_artifacts
    assert store.get(digest) == b"# Total\n\n50\n"  # 12 + 30 + 8, read from fetch's Artifact
