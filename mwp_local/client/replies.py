"""What the Group Authority answered a hand-sent Command: a receipt or a refusal, drawn.

A ``Reply`` wraps the committed outcome (``authority.Accepted`` or ``authority.Rejected``) with
the Command's kind and sender, so a notebook shows it at once: the Events a receipt appended, or
a refusal's section-19 code, its explanation in plain words and the rule it enforces.
``accepted()`` and ``refused(code)`` turn an unexpected answer into an error that says what came
back instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from ..authority.pipeline import Accepted, Outcome
from ..protocol.errors import ProtocolError
from ..render.html import STYLE, rejection_html


class UnexpectedReply(AssertionError):
    """A Command came back otherwise than the caller said it must (accepted or refused)."""


@dataclass(frozen=True)
class Reply:
    """The Authority's answer to ``kind`` sent by ``sender`` (a Principal's short name)."""

    kind: str
    sender: str
    outcome: Outcome

    @property
    def ok(self) -> bool:
        """Whether the Command was accepted."""
        return self.outcome.ok

    @property
    def events(self) -> tuple[dict[str, Any], ...]:
        """The signed Events the Command appended (none for a refusal or an idempotent retry)."""
        return self.outcome.event_documents if isinstance(self.outcome, Accepted) else ()

    @property
    def error(self) -> ProtocolError | None:
        """The refusal's error (None when accepted)."""
        return None if isinstance(self.outcome, Accepted) else self.outcome.error

    @property
    def code(self) -> str | None:
        """The refusal's section-19 code (None when accepted)."""
        return None if self.error is None else self.error.code.value

    def __getattr__(self, name: str) -> Any:
        # what the outcome itself offers (``event_documents``, ``receipt``, ``record``), so a
        # reply reads like the outcome it wraps
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.outcome, name)

    def accepted(self) -> Accepted:
        """The receipt; an ``UnexpectedReply`` naming the refusal if the Command was refused."""
        if isinstance(self.outcome, Accepted):
            return self.outcome
        error = self.outcome.error
        raise UnexpectedReply(
            f"{self.kind} from {self.sender} was refused: {error.code.value}: "
            f"{error.explanation}" + (f" (rule: {error.rule})" if error.rule else "")
        )

    def refused(self, code: str) -> ProtocolError:
        """The error of a refusal with section-19 ``code``; an ``UnexpectedReply`` if the
        Command was accepted or refused with another code."""
        error = self.error
        if error is None:
            kinds = ", ".join(e["kind"] for e in self.events) or "an idempotent retry"
            raise UnexpectedReply(
                f"{self.kind} from {self.sender} was accepted ({kinds}), expected {code}"
            )
        if error.code.value != code:
            raise UnexpectedReply(
                f"{self.kind} from {self.sender} was refused with {error.code.value} "
                f"({error.explanation}), expected {code}"
            )
        return error

    def body_html(self) -> str:
        """The answer as HTML without the page style (for embedding in a larger drawing)."""
        head = f"<div><code>{escape(self.kind)}</code> from <b>{escape(self.sender)}</b>:"
        if isinstance(self.outcome, Accepted):
            items = "".join(
                f"<li><code>#{e.get('sequence', '')} {escape(e['kind'])}</code></li>"
                for e in self.events
            )
            return f'{head} <span class="ok">ACCEPTED</span></div><ul>{items}</ul>'
        error = self.outcome.error
        return f"{head}</div>" + rejection_html(error.code.value, error.explanation, error.rule)

    def _repr_html_(self) -> str:
        return f'{STYLE}<div class="mwp">{self.body_html()}</div>'

    def __repr__(self) -> str:
        if self.code is None:
            kinds = ", ".join(e["kind"] for e in self.events) or "idempotent retry"
            return f"<Reply {self.kind} from {self.sender}: ACCEPTED ({kinds})>"
        return f"<Reply {self.kind} from {self.sender}: REJECTED {self.code}>"
