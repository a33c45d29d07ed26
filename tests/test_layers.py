"""Layers point one way: no module imports from a layer above its own, and no package circles.

protocol ← authority ← store ← artifacts ← delivery ← agents ← render ← drivers ← campaign ←
poc ← notebook / cli. Every import counts, the ones inside functions too: a function-level
import that dodges a circle is a circle. Two packages on the same layer may not import each
other. Inside a package, modules may import each other freely but never in a circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mwp_local"

#: Each top-level package or module of ``mwp_local`` and its layer (lower imports nothing higher).
LAYERS: dict[str, int] = {
    "protocol": 0,
    "examples": 0,
    "authority": 1,
    "store": 2,
    "artifacts": 3,
    "delivery": 4,
    "agents": 5,
    "render": 6,
    "drivers": 7,
    "client": 7,
    "campaign": 8,
    "poc": 9,
    "conformance": 9,
    "notebook": 10,
    "cli": 10,
    "__init__": 11,
}


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _type_only(tree: ast.Module) -> set[int]:
    """Line numbers of imports inside ``if TYPE_CHECKING:`` blocks."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                for sub in ast.walk(inner):
                    if isinstance(sub, ast.Import | ast.ImportFrom):
                        lines.add(sub.lineno)
    return lines


def imports_of(
    path: Path, package_root: Path = PACKAGE, *, runtime_only: bool = False
) -> Iterator[tuple[int, str]]:
    """``(line, absolute module)`` of every ``mwp_local`` import in the file (``runtime_only``:
    not those made for type checkers only)."""
    name = module_name(path, package_root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_only(tree) if runtime_only else set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [target]
            if node.module is None:  # from . import a, b: each may be a module
                targets = [f"{target}.{alias.name}" for alias in node.names]
            for t in targets:
                if t.startswith("mwp_local"):
                    yield node.lineno, t
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("mwp_local"):
                    yield node.lineno, alias.name


def top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def violations(package: Path = PACKAGE) -> list[str]:
    """Every import that points up or sideways between packages, in words."""
    found = []
    for path in sorted(package.rglob("*.py")):
        here = top(module_name(path, package))
        for line, target in imports_of(path, package):
            there = top(target)
            if there == here:
                continue
            if there not in LAYERS or here not in LAYERS:
                found.append(
                    f"{path}:{line}: {there if there not in LAYERS else here} has no layer"
                )
            elif LAYERS[there] >= LAYERS[here]:
                way = "up" if LAYERS[there] > LAYERS[here] else "sideways"
                found.append(
                    f"{path.relative_to(package.parent)}:{line}: {here} (layer {LAYERS[here]}) "
                    f"imports {target} (layer {LAYERS[there]}): an import {way}"
                )
    return found


def module_cycles(package: Path = PACKAGE) -> list[list[str]]:
    """Circles of imports between modules of the package (imports for type checkers only do not
    count: they are never executed)."""
    graph: dict[str, set[str]] = {}
    known = {module_name(p, package) for p in package.rglob("*.py")}
    for path in package.rglob("*.py"):
        deps = set()
        for _line, target in imports_of(path, package, runtime_only=True):
            while target not in known and "." in target:
                target = target.rpartition(".")[0]  # an imported name, not a module
            if target in known:
                deps.add(target)
        graph[module_name(path, package)] = deps
    cycles: list[list[str]] = []
    colour: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        colour[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            # A package imports its own submodules as it initialises, and they import siblings
            # through it: that edge is how Python loads a package, not a circle of concepts.
            if dep == node or node.startswith(dep + ".") or dep.startswith(node + "."):
                continue
            if colour.get(dep) == 1:
                cycles.append([*stack[stack.index(dep) :], dep])
            elif dep not in colour:
                visit(dep)
        stack.pop()
        colour[node] = 2

    for node in sorted(graph):
        if node not in colour:
            visit(node)
    return cycles


def test_every_package_and_top_level_module_has_a_layer() -> None:
    tops = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()
    }
    assert sorted(tops - set(LAYERS)) == []


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    assert violations() == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert module_cycles() == []


def test_an_upward_import_is_caught(tmp_path: Path) -> None:
    fake = tmp_path / "mwp_local"
    (fake / "protocol").mkdir(parents=True)
    (fake / "agents").mkdir()
    (fake / "protocol" / "__init__.py").write_text("")
    (fake / "agents" / "__init__.py").write_text("")
    (fake / "agents" / "core.py").write_text("X = 1\n")
    (fake / "protocol" / "rules.py").write_text(
        "def late():\n    from ..agents.core import X\n    return X\n"
    )
    found = violations(fake)
    assert len(found) == 1 and "imports mwp_local.agents.core" in found[0] and "up" in found[0]


def test_a_circle_is_caught(tmp_path: Path) -> None:
    fake = tmp_path / "mwp_local"
    (fake / "store").mkdir(parents=True)
    (fake / "store" / "__init__.py").write_text("")
    (fake / "store" / "a.py").write_text("from .b import y\nx = 1\n")
    (fake / "store" / "b.py").write_text("def f():\n    from .a import x\n    return x\ny = 2\n")
    assert module_cycles(fake) == [["mwp_local.store.a", "mwp_local.store.b", "mwp_local.store.a"]]
