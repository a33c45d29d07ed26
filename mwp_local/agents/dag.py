"""The evolving WorkItem graph of a Mission as pure functions (§10.4, MWP-WRK-007).

A Mission's WorkItems form a directed acyclic graph that grows while the Mission runs: the
Coordinator may start before the graph is complete and adds WorkItems as discoveries occur
(``discovered_after`` in a mission file, Worker proposals it authorizes). Owns: finding a cycle,
telling whether adding edges would close one, and whether a WorkItem's dependencies satisfy its
contract's dependency policy. Imports nothing stateful and performs no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from ..protocol.tables import WorkItemState

#: Dependency policies and the dependency states each accepts as "satisfied".
DEPENDENCY_POLICIES: Mapping[str, frozenset[WorkItemState]] = {
    # The Group Authority refuses ``work.start`` until every dependency is verified, so this is
    # the one policy the sandbox's contracts use.
    "all_verified": frozenset({WorkItemState.VERIFIED}),
}


class DependencyPolicyError(ValueError):
    """A contract names a dependency policy this Coordinator does not know."""


def find_cycle(edges: Mapping[str, Iterable[str]]) -> list[str] | None:
    """A cycle of ``edges`` (node → the nodes it depends on) as a closed path, or None."""
    colour: dict[str, int] = {}
    path: list[str] = []
    graph = {node: tuple(deps) for node, deps in edges.items()}

    def visit(node: str) -> list[str] | None:
        colour[node] = 1
        path.append(node)
        for dep in graph.get(node, ()):
            if colour.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in colour:
                found = visit(dep)
                if found:
                    return found
        path.pop()
        colour[node] = 2
        return None

    for node in sorted(graph):
        if node not in colour:
            found = visit(node)
            if found:
                return found
    return None


def closes_cycle(
    depends_on: Callable[[str], Iterable[str]], node: str, adding: Iterable[str]
) -> bool:
    """Whether making ``node`` depend on ``adding`` closes a cycle, given each existing node's
    dependencies (``depends_on``)."""
    stack = list(adding)
    seen: set[str] = set()
    while stack:
        current = stack.pop()
        if current == node:
            return True
        if current in seen:
            continue
        seen.add(current)
        stack.extend(depends_on(current))
    return False


def dependencies_satisfied(
    dependencies: Iterable[str], state_of: Callable[[str], WorkItemState | None], policy: str
) -> bool:
    """Whether every dependency is in a state ``policy`` accepts (an unknown dependency never
    is); raises ``DependencyPolicyError`` for a policy it does not know."""
    accepted = accepted_states(policy)
    return all(state_of(dep) in accepted for dep in dependencies)


def accepted_states(policy: str) -> frozenset[WorkItemState]:
    """The dependency states ``policy`` accepts; raises ``DependencyPolicyError`` for a policy
    it does not know."""
    accepted = DEPENDENCY_POLICIES.get(policy)
    if accepted is None:
        raise DependencyPolicyError(
            f"unknown dependency policy {policy!r}; known: {', '.join(DEPENDENCY_POLICIES)}"
        )
    return accepted
