"""The link path's import budget (docs/hot-path.md, "The import budget"), guarded rather than only written:
a warm link under `python -I -S` (as the installed entry point runs it) may import these modules and
no others. No timing is asserted; a module added here is a decision to make in review."""
import os
import subprocess
import sys

import linkwrap

# A warm link (caches filled) that ends in a record, as `python -I -S -X importtime` lists it.
BUDGET = frozenset("""
    _abc _codecs _collections_abc _frozen_importlib_external _io _operator _signal _stat abc codecs encodings
    encodings.aliases encodings.utf_8 errno fcntl genericpath io marshal os posix posixpath resource stat
    time zipimport zlib
    linkwrap linkwrap.cache linkwrap.cc linkwrap.errors linkwrap.faults linkwrap.paths linkwrap.records
    linkwrap.request linkwrap.facts linkwrap.evidence linkwrap.choice linkwrap.run linkwrap.record
    linkwrap.request.args linkwrap.facts.build linkwrap.choice.choose linkwrap.request.config
    linkwrap.choice.rules linkwrap.choice.write_mode linkwrap.choice.flags linkwrap.choice.incremental
    linkwrap.facts.linkers linkwrap.run.output linkwrap.pipeline linkwrap.choice.policy
    linkwrap.facts.probe linkwrap.facts.procfs linkwrap.facts.filesystems linkwrap.facts.cgroups
    linkwrap.facts.output_file linkwrap.libc linkwrap.record.record linkwrap.run.run linkwrap.request.target
    linkwrap.choice.admission linkwrap.evidence.predict linkwrap.request.invocation linkwrap.run.direct
    linkwrap.evidence.measured linkwrap.evidence.learn
    linkwrap.evidence.prior linkwrap.evidence.saved linkwrap.record.save linkwrap.request.inputs
    linkwrap.ld linkwrap.ld.incremental linkwrap.ld.incremental.where linkwrap.record.base_queue
    linkwrap.run.capture linkwrap.request.config_file
""".split())  # _operator: built in (no file), records' field getters (linkwrap/records.py); evidence.prior,
# evidence.saved, record.save: the priors and saving by default (#33), standard library only;
# request.inputs: each input stat()ed once per link (#36), os only; ld.incremental.where (its package's
# __init__ files hold docstrings only) and record.base_queue: whether a base to patch is ready, and
# asking the server for one (#36 item 4), os and stat only; request.config_file: request.config's reading
# of one file and its vocabulary, split from it (#36 item 6), the same code
# Built in (no file to load), used only on some links: freeing a big old output, a warning's crc.
SOMETIMES = frozenset({"_thread", "binascii"})
# What the budget exists to keep out (measured costs in docs/hot-path.md).
NEVER = frozenset({"subprocess", "json", "sqlite3", "dataclasses", "enum", "collections", "re", "tomllib",
                   "threading", "platformdirs", "signal", "shutil", "tempfile"})


def imported_by_a_link(cwd, argv, env):
    parent = os.path.dirname(os.path.dirname(os.path.abspath(linkwrap.__file__)))
    code = (f"import sys; sys.path.insert(0, {parent!r}); sys.argv = ['linkwrap-cc', *{argv!r}]; "
            "from linkwrap.cc import main; main()")
    done = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", "-c", code], cwd=cwd, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")][1:]
    return {line.rsplit("|", 1)[1].strip() for line in lines}


def test_a_warm_link_imports_only_its_budget(tmp_path, lw_home, hello_obj):
    env = {**os.environ, "LINKWRAP_HOME": str(lw_home)}
    argv = [str(hello_obj), "-o", "hello"]
    cold = imported_by_a_link(tmp_path, argv, env)   # fills the caches (runs --version: subprocess)
    warm = imported_by_a_link(tmp_path, argv, env)   # over the existing output, as a rebuild does
    assert "linkwrap.record.record" in warm and "linkwrap.run.run" in warm  # it did link and record
    assert warm - BUDGET - SOMETIMES == set(), "new imports on the link path: see docs/hot-path.md"
    assert not warm & NEVER
    assert "subprocess" in cold  # the budget is about warm links: the check can tell them apart


def test_a_link_with_admission_off_does_not_import_admission(tmp_path, lw_home, hello_obj):
    # The memory history (predict's input) is kept by predict.py: admission.py is for admitted links.
    env = {**os.environ, "LINKWRAP_HOME": str(lw_home)}
    argv = [str(hello_obj), "-o", "hello"]
    imported = {}
    for setting in ("false", "true"):
        (tmp_path / "linkwrap.toml").write_text(f"[memory]\nadmission = {setting}\n")
        imported_by_a_link(tmp_path, argv, env)  # fills the caches
        imported[setting] = imported_by_a_link(tmp_path, argv, env)
    assert "linkwrap.evidence.predict" in imported["false"] and "linkwrap.record.record" in imported["false"]
    assert "linkwrap.choice.admission" not in imported["false"]
    assert "linkwrap.choice.admission" in imported["true"]  # the check can tell
