"""ECMA-262 regular expressions, as JSON Schema ``pattern`` requires, run by Python ``re``.

Owns :class:`Regex`: it keeps a schema pattern exactly as written and translates it into an
equivalent Python pattern. The differences that matter for the normative schemas: ECMA-262 ``$``
(without the multiline flag) matches only at the end of the input, while Python's ``$`` also
matches before a final line feed, so ``$`` becomes ``\\Z``; ``\\s``, ``\\d`` and ``\\w`` become
the ECMA-262 classes (``\\s`` is WhiteSpace plus LineTerminator, which differs from Python's
Unicode whitespace); ``.`` excludes the four ECMA-262 line terminators. Constructs the schemas do
not use are refused with ``ValueError`` rather than guessed. It must not perform I/O.
"""

from __future__ import annotations

import re

__all__ = ["Regex"]

# ECMA-262 WhiteSpace and LineTerminator code points: the set ``\s`` matches in JavaScript.
_ECMA_SPACE = (
    "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
)
_ECMA_CLASS = {"d": "0-9", "w": "A-Za-z0-9_", "s": _ECMA_SPACE}


def _translate(source: str) -> str:
    """Translate an ECMA-262 pattern (no flags) into an equivalent Python ``re`` pattern.

    Only the constructs the normative schemas use are accepted; anything else raises
    ``ValueError`` so that a schema change cannot silently change meaning.
    """
    out: list[str] = []
    i, n = 0, len(source)
    in_class = False
    class_start = 0
    while i < n:
        c = source[i]
        if c == "\\":
            if i + 1 >= n:
                raise ValueError(f"dangling escape in {source!r}")
            e = source[i + 1]
            i += 2
            if e.lower() in _ECMA_CLASS:
                cls = _ECMA_CLASS[e.lower()]
                if in_class:
                    if e.isupper():
                        raise ValueError(f"negated class escape inside a class in {source!r}")
                    out.append(cls)
                else:
                    out.append(f"[^{cls}]" if e.isupper() else f"[{cls}]")
            elif not e.isalnum():
                out.append("\\" + e)
            else:
                raise ValueError(f"unsupported escape \\{e} in {source!r}")
            continue
        i += 1
        if in_class:
            if c == "]" and i - 1 > class_start:
                in_class = False
                out.append("]")
            elif c in "[&~|":
                # Python warns on (and may one day reinterpret) these inside a class.
                out.append("\\" + c)
            else:
                out.append(c)
            continue
        if c == "[":
            in_class = True
            out.append("[")
            if i < n and source[i] == "^":
                out.append("^")
                i += 1
            if i < n and source[i] == "]":
                raise ValueError(f"empty class in {source!r}")
            class_start = i
        elif c == "$":
            out.append(r"\Z")
        elif c == "^":
            out.append(r"\A")
        elif c == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
        elif c == "{" and i < n and source[i] == ",":
            raise ValueError(f"ambiguous quantifier in {source!r}")
        elif c == "(" and source.startswith("?<", i) and not source.startswith(("?<=", "?<!"), i):
            raise ValueError(f"named groups are not supported in {source!r}")
        else:
            out.append(c)
    if in_class:
        raise ValueError(f"unterminated class in {source!r}")
    return "".join(out)


class Regex:
    """An ECMA-262 ``pattern`` (kept as written in the schema) and its Python translation."""

    __slots__ = ("compiled", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.compiled = re.compile(_translate(source))

    def search(self, text: str) -> re.Match[str] | None:
        """Unanchored search, as JSON Schema ``pattern`` requires."""
        return self.compiled.search(text)

    def __repr__(self) -> str:
        return f"Regex({self.source!r})"
