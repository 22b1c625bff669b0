"""What the model is shown around each hunk (review/context/): the enclosing function from the
new-side content, parsed with tree-sitter, degrading to surrounding lines and then the hunk, within
the budget; and the signatures of callees defined in other files of the change."""

from __future__ import annotations

import difflib

import pytest

from p4review.review.context import ChangeContext, FileSource
from p4review.review.context.definitions import parse_file
from p4review.review.context.widening import (
    LEVEL_FUNCTION,
    LEVEL_LINES,
    LEVEL_OUTER,
    compact_diff,
)

BIG = 10**9


def diff_of(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}", n=3)
    return "".join(lines)


def widened_section(source: FileSource, budget: int):
    return ChangeContext([source]).widened(source, budget)


def widened(path: str, old: str, new: str, budget: int = BIG):
    return widened_section(FileSource(path, diff_of(path, old, new), new), budget)


def numbered(body: str) -> dict[int, str]:
    out = {}
    for line in body.split("\n"):
        number, _, rest = line.partition(" ")
        if number.isdigit():
            out[int(number)] = rest
    return out


PYTHON_OLD = """import os


def outer(items):
    total = 0
    for item in items:
        total += item

    def inner(value):
        scaled = value * 2
        return scaled

    checked = inner(total)
    if checked > 100:
        return 100
    return checked


def other():
    return 1
"""
PYTHON_NEW = PYTHON_OLD.replace("scaled = value * 2", "scaled = value * 3")


def test_a_hunk_in_a_nested_function_shows_the_whole_outer_function():
    section = widened("m.py", PYTHON_OLD, PYTHON_NEW)
    assert section is not None and section.levels == {LEVEL_OUTER: 1}
    # outer() is lines 4..16; other() is not part of it
    assert set(range(4, 17)) <= section.shown and 19 not in section.shown
    assert "def outer(items):" in section.body and "def other" not in section.body
    # only the changed line carries a number: the widened lines are context, not citable
    assert numbered(section.body) == {10: "+        scaled = value * 3"}


def test_the_budget_degrades_outer_function_to_inner_to_surrounding_lines_to_the_hunk():
    levels = []
    for budget in (BIG, 120, 0):
        section = widened("m.py", PYTHON_OLD, PYTHON_NEW, budget)
        assert section is not None
        levels.append(next(iter(section.levels)))
        assert section.added_chars <= budget
    # inner() lies within the hunk's own context lines: at no budget the hunk alone is shown
    assert levels == [LEVEL_OUTER, LEVEL_FUNCTION, LEVEL_FUNCTION]


def test_a_very_long_function_is_shown_as_surrounding_lines():
    body = "".join(f"    value_{i} = compute({i})\n" for i in range(2000))
    old = f"def long_one():\n{body}    return value_0\n"
    new = old.replace("value_1000 = compute(1000)", "value_1000 = compute(-1000)")
    section = widened("long.py", old, new, budget=2_000)
    assert section is not None and section.levels == {LEVEL_LINES: 1}
    assert section.added_chars <= 2_000
    assert 1001 in section.shown and 1 not in section.shown  # the def line is 2,000 lines away


def test_a_hunk_spanning_two_functions_shows_both():
    old = "int a(void) {\n  return 1;\n}\n\nint b(void) {\n  return 2;\n}\n\nint c(void) {\n  return 3;\n}\n"
    new = (
        "int a(void) {\n  return 1;\n}\nint b(void) {\n  int x = 2;\n  return x;\n}\n\nint c(void) {\n  return 3;\n}\n"
    )
    old = "int z(void) {\n" + "  z0();\n" * 12 + "}\n" + old
    new = "int z(void) {\n" + "  z0();\n" * 12 + "}\n" + new.replace("  return 1;", "  return -1;")
    section = widened("two.c", old, new)
    assert section is not None
    # a() is lines 15..17 and b() 18..21 of the new side: both whole; z() (1..14) is not
    assert set(range(15, 22)) <= section.shown and 2 not in section.shown


def test_a_file_that_does_not_parse_still_gets_what_the_parser_recovered():
    old = "def fine(a):\n    x = a\n    return x\n\n\ndef broken(:\n    pass\n"
    new = old.replace("x = a", "x = a + 1")
    section = widened("half.py", old, new)
    assert section is not None and "def fine(a):" in section.body


def test_text_in_no_language_or_no_definition_is_left_to_the_diff():
    assert widened("notes.txt", "a\nb\nc\n", "a\nB\nc\n") is None
    assert widened("flat.py", "x = 1\ny = 2\n", "x = 1\ny = 3\n") is None  # no function encloses it


def test_a_minified_file_falls_back_to_the_hunk_within_the_budget():
    functions = ";".join(f"function f{i}(a){{return a+{i}}}" for i in range(3000))
    old = f"(function(){{{functions}}})();\n"
    new = old.replace("return a+1500}", "return a-1500}")
    section = widened("app.min.js", old, new, budget=4_000)
    # one line holds everything: no candidate is smaller than the file, so the hunk alone is sent
    assert section is None or section.added_chars == 0


def test_content_that_disagrees_with_the_diff_is_not_used():
    diff = diff_of("m.py", PYTHON_OLD, PYTHON_NEW)
    assert widened_section(FileSource("m.py", diff, PYTHON_OLD), BIG) is None


def test_removed_lines_stay_where_they_were_and_their_neighbours_are_citable():
    old = "def f(p):\n    if p is None:\n        return 0\n    return p.size\n"
    new = "def f(p):\n    return p.size\n"
    section = widened("r.py", old, new)
    assert section is not None
    assert section.body.split("\n") == [
        "@@",
        " def f(p):",
        "-    if p is None:",
        "-        return 0",
        "2      return p.size",
    ]


def test_compact_diff_numbers_added_lines_and_the_neighbours_of_removals():
    diff = diff_of("m.py", PYTHON_OLD, PYTHON_NEW)
    body = compact_diff(diff)
    assert numbered(body) == {10: "+        scaled = value * 3"}
    assert "-        scaled = value * 2" in body


LANGUAGE_CASES = {
    "m.go": ("package m\n\nfunc Add(a int, b int) int {\n\tx := a\n\treturn x + b\n}\n", "x := a", "Add"),
    "M.java": ("class M {\n  int add(int a, int b) {\n    int x = a;\n    return x + b;\n  }\n}\n", "int x = a", "add"),
    "M.cs": ("class M {\n  int Add(int a, int b) {\n    var x = a;\n    return x + b;\n  }\n}\n", "var x = a", "Add"),
    "m.ts": (
        "export function add(a: number, b: number): number {\n  const x = a;\n  return x + b;\n}\n",
        "const x = a",
        "add",
    ),
    "m.js": ("const add = (a, b) => {\n  const x = a;\n  return x + b;\n};\n", "const x = a", "add"),
    "m.cpp": ("namespace n {\nint M::add(int a, int b) {\n  int x = a;\n  return x + b;\n}\n}\n", "int x = a", "add"),
    "m.sh": ('add() {\n  local x="$1"\n  echo $((x + $2))\n}\n', 'local x="$1"', "add"),
}


@pytest.mark.parametrize("path", sorted(LANGUAGE_CASES))
def test_every_supported_language_finds_the_enclosing_function(path):
    source, line, name = LANGUAGE_CASES[path]
    new = source.replace(line, line + "  ", 1)
    assert widened(path, source, new) is not None
    assert any(d.name == name and d.kind == "function" for d in parse_file(path, new).definitions)


def test_callees_defined_in_other_changed_files_are_listed_with_their_signatures():
    util_old = "def helper(a, b=2):\n    return a * b\n\n\ndef unused():\n    return 0\n"
    util_new = util_old.replace("a * b", "a * b + 1")
    main_old = "from util import helper\n\n\ndef run(x):\n    return x\n"
    main_new = "from util import helper\n\n\ndef run(x):\n    return helper(x, 3) + len([x])\n"
    util = FileSource("//depot/p/util.py", diff_of("util.py", util_old, util_new), util_new)
    main = FileSource("//depot/p/main.py", diff_of("main.py", main_old, main_new), main_new)
    change = ChangeContext([main, util])
    callees = change.callees(main)
    assert [(c.depot_path, c.line, c.signature) for c in callees] == [("//depot/p/util.py", 1, "def helper(a, b=2)")]
    assert change.callees(util) == []  # util's added line calls nothing of main's


def test_a_change_parses_each_file_once_whatever_its_size(monkeypatch):
    import p4review.review.context as context

    calls = []
    original = context.parse_file
    monkeypatch.setattr(context, "parse_file", lambda *a, **k: calls.append(a[0]) or original(*a, **k))
    sources = []
    for i in range(60):
        old = f"def f{i}(a):\n    return a\n"
        new = f"def f{i}(a):\n    return f{(i + 1) % 60}(a)\n"
        sources.append(FileSource(f"//depot/p/m{i}.py", diff_of(f"m{i}.py", old, new), new))
    change = ChangeContext(sources)
    assert [c.depot_path for c in change.callees(sources[0])] == ["//depot/p/m1.py"]
    for source in sources:
        change.callees(source)
        change.widened(source, BIG)
    assert sorted(calls) == sorted(s.depot_path for s in sources)


def test_a_script_without_an_extension_is_parsed_in_its_shebangs_language():
    from p4review.change.code_languages import code_language

    assert code_language("//depot/bin/deploy", "#!/usr/bin/env bash") == "bash"
    assert code_language("//depot/bin/tool", "#!/usr/bin/python3") == "python"
    assert code_language("//depot/bin/tool", "#!/usr/bin/perl") is None
    assert code_language("//depot/notes.txt", "#!/bin/sh") is None  # an extension decides
    script = "#!/bin/sh\nset -e\n\nrun() {\n  echo one\n  echo two\n}\n"
    new = script.replace("echo two", "echo three")
    section = widened_section(FileSource("//depot/bin/deploy", diff_of("deploy", script, new), new), BIG)
    assert section is not None and " run() {" in section.body
