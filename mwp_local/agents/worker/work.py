"""What real work sees and returns: ``WorkRequest`` (the WorkItem, its Work Contract, the
attempt and the verified content of its inputs) and the values a work function may return
(``Deliverable``s, ``Evidence`` for acceptance criteria, a ``Result`` holding both, ``Block``
with the resolution the work needs, ``Fail``), normalized into ``Produced`` for the Worker.

A work function is bound to a capability (``Sandbox(work_functions={...})``) or is a Worker's
``work`` hook; it returns ``bytes``/``str`` (one deliverable of the contract's media type),
``Deliverable`` or a list of them, ``Result``, ``Block`` or ``Fail``. An exception it raises
fails the attempt (``execution.raised``: ``work.fail`` naming it, the retry policy applies); a
malformed result is an API mistake and raises ``ValueError`` at the caller.

Inputs are read when first asked for, through the Worker's verified content source (each read
re-hashes the content) and only after the Group Authority's isolation rule says this Worker may
read them (``authority.isolation.artifact_access`` on the Worker's own replica). Values only: the
Worker signs and sends (``execution``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Union

from ...artifacts.checks import ContentSource
from ...authority.isolation import artifact_access
from ...authority.model import WorkItemRecord
from ...authority.state import AuthorityState
from ..naming import short

#: The Evidence types a work function may claim (the official ``evidence.schema.json`` types a
#: Worker produces; reviewer assessments and human reviews come from others).
EVIDENCE_TYPES = (
    "artifact_integrity",
    "schema_validation",
    "deterministic_test",
    "business_rule",
    "policy_check",
)


@dataclass(frozen=True, slots=True)
class InputArtifact:
    """The verified content of one input Artifact of a WorkItem."""

    #: The WorkItem that produced it (a dependency), or "" for a contract ``inputArtifacts`` entry.
    work_item_id: str
    content_hash: str
    artifact_id: str
    media_type: str
    content: bytes

    @property
    def name(self) -> str:
        """The short ID of the WorkItem that produced it (``"fetch"``)."""
        return short(self.work_item_id) if self.work_item_id else ""

    def text(self) -> str:
        """The content as UTF-8 text."""
        return self.content.decode("utf-8")

    def json(self) -> Any:
        """The content parsed as JSON."""
        return json.loads(self.content)


@dataclass(frozen=True)
class WorkRequest:
    """What a work function is given: the WorkItem, its Work Contract, the attempt, and its
    inputs (the deliverables of the WorkItems it depends on, and the contract's
    ``inputArtifacts``), each verified on read."""

    work_item_id: str
    mission_id: str
    goal: str
    contract: Mapping[str, Any]
    attempt: int
    #: The WorkItem execution idempotency key: use it for any external effect (MWP-WRK-031).
    idempotency_key: str
    worker: str
    _load: Callable[[], tuple[InputArtifact, ...]] = field(
        default=lambda: (), repr=False, compare=False
    )

    @cached_property
    def inputs(self) -> tuple[InputArtifact, ...]:
        """Every input Artifact, dependencies first (in contract order), content verified."""
        return self._load()

    def input(self, name: str) -> InputArtifact:
        """The one input produced by WorkItem ``name`` (its short ID, like ``"fetch"``, or its
        full ID); ``KeyError`` naming the inputs there are when there is none or several."""
        found = [i for i in self.inputs if name in (i.name, i.work_item_id)]
        if len(found) != 1:
            there = ", ".join(sorted({i.name or i.content_hash for i in self.inputs})) or "none"
            raise KeyError(
                f"{len(found)} inputs from {name!r} (there are inputs from: {there}); "
                "use request.inputs for all of them"
            )
        return found[0]

    @property
    def criteria(self) -> tuple[str, ...]:
        """The IDs of the contract's acceptance criteria (what ``Evidence`` may cite)."""
        return tuple(c["criterionId"] for c in self.contract["acceptanceCriteria"])

    @property
    def media_type(self) -> str:
        """The media type of the contract's (first) required deliverable."""
        return str(self.contract["requiredDeliverables"][0]["mediaType"])


@dataclass(frozen=True, slots=True)
class Deliverable:
    """One Artifact to publish: its content and media type (None: the contract's required
    deliverable at the same position, else the first's) and schema URI (None: likewise)."""

    content: bytes | str
    media_type: str | None = None
    schema: str | None = None


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a check of the work found, for the acceptance criteria it names (the Worker signs
    it as Evidence). Criteria it leaves uncovered get the Worker's own Evidence."""

    criteria: Sequence[str]
    result: str = "passed"
    method: str = "a check run by the work function"
    type: str = "deterministic_test"
    details: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Result:
    """Several deliverables and the Evidence of checks about them."""

    deliverables: Sequence[Deliverable | bytes | str]
    evidence: Sequence[Evidence] = ()


@dataclass(frozen=True, slots=True)
class Block:
    """The work cannot go on without a decision: block the WorkItem, naming what it needs."""

    resolution: str


@dataclass(frozen=True, slots=True)
class Fail:
    """The attempt failed: ``reason`` is the failure code (``TRANSIENT`` is retried within the
    contract's retry policy); ``permanent`` says no retry can help."""

    reason: str = "TRANSIENT"
    permanent: bool = False


#: What a work function may return.
WorkOutput = Union[bytes, str, Deliverable, Sequence[Deliverable], Result, Block, Fail]  # noqa: UP007
#: A function that really does the work of a WorkItem (see the module docstring).
WorkFunction = Callable[[WorkRequest], WorkOutput]


@dataclass(frozen=True, slots=True)
class Produced:
    """A work function's answer, normalized: what to publish, the Evidence claimed, or a block
    or failure."""

    deliverables: tuple[tuple[bytes, str, str], ...] = ()
    evidence: tuple[Evidence, ...] = ()
    block: Block | None = None
    fail: Fail | None = None


def normalize(result: Any, contract: Mapping[str, Any], who: str) -> Produced:
    """Check and normalize what a work function returned (``who`` names it in errors)."""
    if isinstance(result, Block | Fail):
        if isinstance(result, Block) and not result.resolution.strip():
            raise ValueError(f"{who} returned Block without saying what it needs")
        return Produced(block=result) if isinstance(result, Block) else Produced(fail=result)
    evidence: Sequence[Evidence] = ()
    if isinstance(result, Result):
        items: Sequence[Any] = list(result.deliverables)
        evidence = list(result.evidence)
    elif isinstance(result, bytes | bytearray | str | Deliverable):
        items = [result]
    elif isinstance(result, Sequence):
        items = list(result)
    else:
        raise TypeError(
            f"{who} returned {type(result).__name__}; it must return the deliverable as bytes "
            "or str, a Deliverable or a list of them, a Result, a Block or a Fail"
        )
    if not items:
        raise ValueError(f"{who} returned no deliverable; a submission needs at least one")
    required = contract["requiredDeliverables"]
    out = []
    for n, item in enumerate(items):
        if isinstance(item, bytes | bytearray | str):
            item = Deliverable(bytes(item) if not isinstance(item, str) else item)
        if not isinstance(item, Deliverable):
            raise TypeError(
                f"{who} returned {type(item).__name__} among its deliverables; each is bytes, "
                "str or a Deliverable"
            )
        slot = required[n] if n < len(required) else required[0]
        content = item.content.encode() if isinstance(item.content, str) else bytes(item.content)
        out.append((content, item.media_type or slot["mediaType"], item.schema or slot["schema"]))
    known = {c["criterionId"] for c in contract["acceptanceCriteria"]}
    for claim in evidence:
        if not isinstance(claim, Evidence):
            raise TypeError(f"{who} returned {type(claim).__name__} as Evidence")
        unknown = sorted(set(claim.criteria) - known)
        if unknown or not claim.criteria:
            raise ValueError(
                f"{who} returned Evidence for criteria {unknown or '(none)'}; the contract's "
                f"acceptance criteria are {', '.join(sorted(known))}"
            )
        if claim.type not in EVIDENCE_TYPES:
            raise ValueError(f"{who}: Evidence type {claim.type!r} is not one of {EVIDENCE_TYPES}")
        if claim.result not in ("passed", "failed", "inconclusive"):
            raise ValueError(f"{who}: Evidence result is passed, failed or inconclusive")
    return Produced(deliverables=tuple(out), evidence=tuple(evidence))


def read_inputs(
    state: AuthorityState,
    me: str,
    item: WorkItemRecord,
    content: ContentSource | None,
) -> tuple[InputArtifact, ...]:
    """The verified content of ``item``'s inputs: its dependencies' submitted Artifacts, then
    the contract's ``inputArtifacts``; each read passes the isolation gate first."""
    wanted: list[tuple[str, str]] = []
    for dep in item.dependencies:
        other = state.work_items.get(dep)
        if other is not None:
            wanted += [(dep, h) for h in other.submitted_artifacts]
    wanted += [("", h) for h in item.contract.get("inputArtifacts", ())]
    if wanted and content is None:
        raise RuntimeError(
            f"{short(me)} has no content source to read the inputs of {short(item.work_item_id)}"
            " (the Sandbox gives its Workers one)"
        )
    if content is None:
        return ()  # nothing wanted (raised above otherwise)
    return tuple(read_artifact_as(state, me, p, h, content) for p, h in dict.fromkeys(wanted))


def read_artifact_as(
    state: AuthorityState, me: str, producer: str, content_hash: str, content: ContentSource
) -> InputArtifact:
    """The verified content of one Artifact as Principal ``me`` may read it: the isolation gate
    first (``AUTH_FORBIDDEN`` before any read), then the blob checked against its hash;
    ``producer`` names the WorkItem whose manifest it is ("" for any manifest of the hash)."""
    artifact_access(state, me, content_hash)
    manifest = state.manifest_of(content_hash, work_item_id=producer or None) or state.manifest_of(
        content_hash
    )
    assert manifest is not None
    name = str(manifest["artifactId"])
    return InputArtifact(
        work_item_id=producer,
        content_hash=content_hash,
        artifact_id=name,
        media_type=str(manifest["mediaType"]),
        content=content.get(content_hash, name=name),
    )


__all__ = [
    "EVIDENCE_TYPES",
    "Block",
    "Deliverable",
    "Evidence",
    "Fail",
    "InputArtifact",
    "Produced",
    "Result",
    "WorkFunction",
    "WorkOutput",
    "WorkRequest",
    "normalize",
    "read_artifact_as",
    "read_inputs",
]
