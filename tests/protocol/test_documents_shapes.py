"""The shape language keeps JSON Schema Draft 2020-12 semantics for the keywords we use.

Integers, numbers and booleans, JSON equality in ``const``/``enum``/``uniqueItems``, code-point
lengths, ECMA-262 patterns (``$`` and ``\\S``), applicators that ignore non-objects, and the
messages and paths problems are reported with.
"""

from __future__ import annotations

import math
import re

import pytest

from mwp_local.protocol.documents.ecma import Regex
from mwp_local.protocol.documents.problems import Problem, render_path
from mwp_local.protocol.documents.shapes import Bool, Const, Enum, Int, Minimum, Num, Str
from mwp_local.protocol.documents.structures import (
    Arr,
    Forbids,
    Has,
    If,
    MinItems,
    Obj,
    Tagged,
    Where,
)
from mwp_local.protocol.jsontext import NonFiniteNumber


@pytest.mark.parametrize(("value", "ok"), [(1, True), (1.0, True), (1.5, False), (True, False)])
def test_integer_accepts_integral_numbers_but_never_booleans(value: object, ok: bool) -> None:
    assert Int().accepts(value) is ok


@pytest.mark.parametrize(
    "value", [True, "1", None, math.inf, -math.inf, math.nan, NonFiniteNumber("1e400")]
)
def test_number_refuses_booleans_strings_and_non_finite_values(value: object) -> None:
    assert not Num().accepts(value)
    assert not Int().accepts(value)


def test_number_bounds_are_inclusive() -> None:
    shape = Num(minimum=0, maximum=1)
    assert [shape.accepts(v) for v in (-1e-9, 0, 0.5, 1, 1.0000001)] == [
        False,
        True,
        True,
        True,
        False,
    ]


def test_bare_minimum_ignores_values_that_are_not_numbers() -> None:
    assert Minimum(1).accepts("zero") and Minimum(1).accepts(None)
    assert not Minimum(1).accepts(0)


def test_const_false_is_not_zero_and_const_zero_is_zero_point_zero() -> None:
    assert not Const(False).accepts(0)
    assert Const(0).accepts(0.0)
    assert not Const(0).accepts(False)


def test_enum_uses_json_equality() -> None:
    shape = Enum(1, "a", [1, {"b": True}])
    assert shape.accepts(1.0)
    assert shape.accepts([1.0, {"b": True}])
    assert not shape.accepts(True)
    assert not shape.accepts([1, {"b": 1}])


@pytest.mark.parametrize(
    ("items", "unique"),
    [
        ([1, 1.0], False),
        ([1, True], True),
        ([0, False], True),
        ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], False),
        ([[1, 2], [2, 1]], True),
        (["a", "A"], True),
    ],
)
def test_unique_items_compares_json_values(items: list[object], unique: bool) -> None:
    assert Arr(unique=True).accepts(items) is unique


def test_string_lengths_count_code_points() -> None:
    shape = Str(min_len=2, max_len=2)
    assert shape.accepts("é😀")
    assert not shape.accepts("😀")


@pytest.mark.parametrize("text", ["abc", "a-b_c"])
def test_anchored_pattern_accepts_whole_matches(text: str) -> None:
    assert Str(pattern="^[a-c_-]+$").accepts(text)


def test_pattern_end_anchor_does_not_match_before_a_final_line_feed() -> None:
    # Python's own ``$`` would: this is the ECMA-262 reading JSON Schema requires.
    assert re.search("^[a-c]+$", "abc\n")
    assert not Str(pattern="^[a-c]+$").accepts("abc\n")


def test_pattern_search_is_unanchored() -> None:
    assert Str(pattern="[0-9]").accepts("abc1def")
    assert Str(pattern="^wss://").accepts("wss://host/\n")


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("x", True),
        (" ", False),
        ("\t\n", False),
        ("\u00a0", False),
        ("\ufeff", False),
        ("\x1c", True),
        ("\x85", True),
        (" a ", True),
    ],
)
def test_non_space_class_is_the_ecma_262_one(text: str, ok: bool) -> None:
    assert Str(pattern="\\S").accepts(text) is ok


def test_duration_lookaheads_translate_faithfully() -> None:
    shape = Str(
        pattern="^P(?!$)(?:[0-9]+D)?(?:T(?=[0-9])(?:[0-9]+H)?(?:[0-9]+M)?(?:[0-9]+(?:\\.[0-9]+)?S)?)?$"
    )
    accepted = [t for t in ["P", "PT", "P1D", "PT5M", "P1DT2H", "PT1.5S", "P1DT", "PT1M\n"]]
    assert [shape.accepts(t) for t in accepted] == [
        False,
        False,
        True,
        True,
        True,
        True,
        False,
        False,
    ]


@pytest.mark.parametrize("source", ["\\bword", "(?<name>x)", "[]", "[^]", "a{,3}", "\\u0041", "["])
def test_regex_refuses_constructs_it_cannot_translate_exactly(source: str) -> None:
    with pytest.raises(ValueError):
        Regex(source)


def test_dot_excludes_the_ecma_262_line_terminators() -> None:
    regex = Regex("^.$")
    assert [bool(regex.search(c)) for c in ("a", "\n", "\r", "\u2028", "\u2029")] == [
        True,
        False,
        False,
        False,
        False,
    ]


def test_where_ignores_values_that_are_not_objects() -> None:
    shape = Where({"a": Int()}, required=["a"])
    assert shape.accepts("text") and shape.accepts([1])
    assert not shape.accepts({})
    assert not shape.accepts({"a": "x"})


def test_forbids_is_not_any_of_required_and_so_refuses_non_objects() -> None:
    shape = Forbids("a", "b")
    assert shape.accepts({"c": 1})
    assert not shape.accepts({"b": 1})
    assert not shape.accepts("text")


def test_if_then_else_reports_the_branch_reason() -> None:
    shape = If(
        Has(kind=Const("x")),
        then=Where(required=["a"]),
        then_why="x needs a",
        otherwise=Forbids("a"),
        else_why="only x has a",
    )
    assert shape.problems({"kind": "x"}) == [Problem(("a",), "is required (x needs a)", "required")]
    assert shape.problems({"kind": "y", "a": 1}) == [
        Problem(("a",), "must be absent (only x has a)", "not")
    ]
    assert shape.accepts({"kind": "y"})


def test_a_conditional_is_not_reported_about_a_member_that_is_already_wrong() -> None:
    shape = Obj(
        {"kind": Enum("a", "b"), "actor": Obj({"type": Str()})},
        {"x": Int()},
        rules=[
            If(Has(actor=Has(type=Const("a"))), then=Where(required=["x"])),
            If(Has(kind=Const("a")), then=Where({"actor": Where({"type": Const("a")})})),
        ],
    )
    # JSON Schema would apply both ``then`` branches here (a string actor satisfies the nested
    # condition vacuously); the verdict is the same, the report names only the real problem.
    assert [str(p) for p in shape.problems({"kind": "a", "actor": "a"})] == [
        "actor: must be an object, not a string"
    ]
    assert [str(p) for p in shape.problems({"kind": "a", "actor": {"type": "b"}})] == [
        'actor.type: must be "a" (got "b")'
    ]


def test_closed_object_names_each_unknown_member() -> None:
    shape = Obj({"a": Int()}, {"b": Bool()})
    # Missing members first, then the document's members in their order.
    assert [str(p) for p in shape.problems({"c": 1, "b": 1})] == [
        "a: is required",
        "c: is not a member of this object (v0.1 objects refuse unknown members)",
        "b: must be true or false, not an integer",
    ]


def test_property_names_and_additional_members_are_checked() -> None:
    shape = Obj(additional=Obj({"v": Int()}), names=Str(pattern="^[a-z]+:"))
    assert shape.accepts({"urn:x": {"v": 1}})
    problems = shape.problems({"1x": {"v": 1}, "urn:y": {"v": "1"}})
    assert [(p.where, p.keyword) for p in problems] == [
        ('["1x"]', "propertyNames"),
        ('["urn:y"].v', "type"),
    ]


def test_an_object_cannot_declare_a_member_both_required_and_optional() -> None:
    with pytest.raises(ValueError):
        Obj({"a": Int()}, {"a": Int()})


def test_tagged_selects_the_alternative_by_its_constant_member() -> None:
    shape = Tagged(
        "type",
        {"a": Obj({"type": Const("a"), "x": Int()}), "b": Obj({"type": Const("b")})},
        what="block type",
    )
    assert shape.accepts({"type": "b"})
    assert [str(p) for p in shape.problems({"type": "a"})] == ["x: is required"]
    assert [str(p) for p in shape.problems({"type": "c"})] == [
        'type: must be a known block type: one of "a", "b" (got "c")'
    ]
    assert [str(p) for p in shape.problems({"type": ["a"]})] == [
        'type: must be a known block type: one of "a", "b" (got ["a"])'
    ]
    assert [str(p) for p in shape.problems({})] == ["type: is required"]


def test_min_items_message_reads_as_plain_language() -> None:
    shape = Obj({"evidenceRequired": Arr(Str(), min_items=1)})
    [problem] = shape.problems({"evidenceRequired": []}, ("payload", "criteria", 0))
    assert str(problem) == "payload.criteria[0].evidenceRequired: must contain at least 1 item"
    assert MinItems(1).accepts("not an array")


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ((), "(document)"),
        (
            ("payload", "workContract", "acceptanceCriteria", 0, "evidenceRequired"),
            "payload.workContract.acceptanceCriteria[0].evidenceRequired",
        ),
        (("extensions", "urn:acme:profile", "data"), 'extensions["urn:acme:profile"].data'),
        ((0, "a"), "[0].a"),
    ],
)
def test_paths_are_spelled_for_readers(path: tuple[str | int, ...], text: str) -> None:
    assert render_path(path) == text
