"""What reaches a terminal (issue 10, item 12): one escaping function for every line linkwrap prints."""
import json
import os
import subprocess

import pytest

from conftest import script
from linkwrap.errors import error_line, printable, printable_data, warning_line

EVIL = "evil\x1b]0;pwned\x07\x1b[2J\x9b1m\u202egnp.exe\r"


@pytest.mark.parametrize("text, shown", [
    ("plain/path with spaces é", "plain/path with spaces é"),
    (EVIL, "evil\\x1b]0;pwned\\x07\\x1b[2J\\x9b1m\\u202egnp.exe\\x0d"),
    ("a\tb\nc", "a\\x09b\\x0ac"),
    ("non-utf8-\udcff\udc9b", "non-utf8-\udcff\\x9b"),  # raw bytes stay, C1 0x9b (CSI) does not
])
def test_printable_escapes_what_a_terminal_would_act_on(text, shown):
    assert printable(text) == shown


def test_error_and_warning_lines_are_formatted_in_one_place():
    assert error_line("cannot run x\x1b[31m") == "linkwrap: error: cannot run x\\x1b[31m\n"
    assert warning_line("two\nlines") == "linkwrap: warning: two\nlines\n"  # a hint on its own line
    assert printable_data({"a": [EVIL, 1, None], "b": (EVIL,)}) == {"a": [printable(EVIL), 1, None],
                                                                  "b": (printable(EVIL),)}


def test_summary_and_explain_print_no_escape_sequence_from_an_output_name(tmp_path, lw_home, hello_obj):
    name = "prog\x1b]0;pwned\x07\x1b[31m"
    done = subprocess.run([script("linkwrap-cc"), str(hello_obj), "-o", name], cwd=tmp_path,
                          capture_output=True)
    assert done.returncode == 0
    for argv in (["summary"], ["summary", "--all"], ["explain", name]):
        out = subprocess.run([script("linkwrap"), *argv], cwd=tmp_path, capture_output=True, text=True,
                             env={**os.environ, "COLUMNS": "300"})
        assert out.returncode == 0, out.stderr
        assert "\x1b" not in out.stdout and "\x07" not in out.stdout
        assert "prog\\x1b]0;pwned\\x07" in out.stdout, out.stdout
    # --json is data, not terminal text: the name as it is.
    data = json.loads(subprocess.run([script("linkwrap"), "summary", "--json"], cwd=tmp_path,
                                     capture_output=True, text=True).stdout)
    assert json.dumps(name)[1:-1] in json.dumps(data)  # "\u001b" in JSON
