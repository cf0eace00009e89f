"""driver.link's invariant: a later pass never changes an earlier pass's records.

Each case is linked in-process with the ld command line gcc's collect2 passes
(recorded through a -B directory whose `ld` saves its argv). The records parse
made (objects, archives, libraries) are snapshotted when parse returns; the
objects resolve pulled from archives, every section and every Symbol when
resolve returns; gc's records when gc returns. After the whole link (scan,
synthetic sections, layout, relocation, write) each snapshot must be unchanged.
The cases cover commons in .bss, copy relocations with aliases (environ), COMDAT
and .eh_frame rewriting (C++), IFUNC, TLS, and --gc-sections.
"""
import subprocess

import pytest

from linkwrap.ld import driver, gc, parse, resolve
from linkwrap.ld.options import parse_args

from . import corpus

RECORDER = """#!/bin/sh
# records the collect2 command line for the test (NUL-separated), links nothing
printf '%s\\0' "$@" > "$LW_TEST_LD_ARGV"
"""

CASES = [
    ("common", "static", False),
    ("environ", "no-pie", False),
    ("environ", "pie", False),
    ("cxx_exceptions", "static", False),
    ("cxx_exceptions", "pie", True),
    ("ifunc", "static-pie", False),
    ("tls", "pie", False),
    ("gc_sections", "static", True),
]


def _ld_argv(tmp, case, mode, gc_sections, monkeypatch):
    rec = tmp / "rec"
    rec.mkdir()
    (rec / "ld").write_text(RECORDER)
    (rec / "ld").chmod(0o755)
    drv, objs, ar = corpus.compile_case(case, str(tmp / "work"))
    argv_file = tmp / "argv"
    monkeypatch.setenv("LW_TEST_LD_ARGV", str(argv_file))
    extra = ["-Wl,--gc-sections"] if gc_sections else []
    r = corpus.link(drv, objs, ar, mode, str(tmp / "unused"), str(rec), extra=extra)
    assert r.returncode == 0, r.stderr
    argv = argv_file.read_bytes().split(b"\0")[:-1]
    return [a.decode() for a in argv]


def _snap(v):
    """A comparable copy: containers copied (recursively), memoryviews by identity, records as-is."""
    if isinstance(v, memoryview):
        return ("memoryview", id(v))
    if isinstance(v, dict):
        return {k: _snap(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return tuple(_snap(x) for x in v)
    if isinstance(v, (set, frozenset)):
        return frozenset(v)
    return v


def _fields(obj, skip=()):
    names = getattr(type(obj), "__slots__", None) or list(vars(obj))
    return {n: _snap(getattr(obj, n)) for n in names if n not in skip and hasattr(obj, n)}


def _resolution_records(res):
    recs = []
    for obj in res.objects:
        recs.append(obj)
        # relocs: get_relocs()'s cache of the file's bytes, filled whenever first asked for
        recs += [(s, ("relocs",)) for s in obj.sections if s is not None]
    recs += list(res.dsos)
    syms = {id(s): s for s in res.symtab.values()}
    for lst in res.syms.values():
        syms.update((id(s), s) for s in lst)
    recs += list(syms.values())
    return recs


def _snapshot(recs):
    out = []
    for r in recs:
        obj, skip = r if isinstance(r, tuple) else (r, ())
        out.append((obj, _fields(obj, skip)))
    return out


@pytest.mark.parametrize("case,mode,gc_sections", CASES, ids=[f"{c}-{m}{'-gc' if g else ''}" for c, m, g in CASES])
def test_later_passes_leave_earlier_results_unchanged(tmp_path, monkeypatch, case, mode, gc_sections):
    argv = _ld_argv(tmp_path, case, mode, gc_sections, monkeypatch)
    out = tmp_path / "out"
    argv[argv.index("-o") + 1] = str(out)
    taken = {}
    real_read, real_resolve, real_mark_live = parse.read_inputs, resolve.resolve, gc.mark_live

    def read_and_snapshot(*a):
        inputs = real_read(*a)
        files = [it.file for it in inputs.items if it.file is not None]
        sections = [(sec, ("relocs",)) for f in files for sec in getattr(f, "sections", ()) if sec is not None]
        taken["inputs"] = (inputs, _snapshot(files + sections))
        return inputs

    def resolve_and_snapshot(*a):
        res = real_resolve(*a)
        taken["res"] = (res, _snapshot(_resolution_records(res)))
        return res

    def mark_live_and_snapshot(*a):
        live = real_mark_live(*a)
        taken["live"] = (live, _snapshot([live] + list(live.eh_frames)))
        return live

    monkeypatch.setattr(parse, "read_inputs", read_and_snapshot)
    monkeypatch.setattr(resolve, "resolve", resolve_and_snapshot)
    monkeypatch.setattr(gc, "mark_live", mark_live_and_snapshot)
    driver.link(parse_args(argv))

    run = subprocess.run([str(out)], capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    inputs, before = taken["inputs"]
    changed = [(obj, name) for obj, fields in before for name, v in _fields(obj).items()
               if name in fields and fields[name] != v]
    assert not changed, f"passes after parse changed its records: {changed[:10]}"
    res, before = taken["res"]
    changed = [(obj, name) for obj, fields in before for name, v in _fields(obj).items()
               if name in fields and fields[name] != v]
    assert not changed, f"passes after resolve changed parse/resolve records: {changed[:10]}"
    assert len(res.objects) == len({id(o) for o in res.objects})
    live, before = taken["live"]
    changed = [(obj, name) for obj, fields in before for name, v in _fields(obj).items() if fields[name] != v]
    assert not changed, f"passes after gc changed gc's records: {changed[:10]}"


@pytest.mark.parametrize("enabled", [True, False])
def test_link_pauses_the_collector_and_gives_it_back(tmp_path, monkeypatch, enabled):
    """No automatic collection during a link (a Rust debug link spent a third of its time in them),
    and the caller's collector state afterwards, after a failed link too."""
    import gc as collector
    argv = _ld_argv(tmp_path, "cxx_exceptions", "static", False, monkeypatch)
    out = tmp_path / "out"
    argv[argv.index("-o") + 1] = str(out)
    starts = []

    def count(phase, info):
        if phase == "start":
            starts.append(info["generation"])

    was = collector.isenabled()
    collector.callbacks.append(count)
    try:
        (collector.enable if enabled else collector.disable)()
        driver.link(parse_args(argv))
        assert collector.isenabled() is enabled
        assert starts == [], f"collections during the link: {len(starts)}"
        run = subprocess.run([str(out)], capture_output=True, text=True, timeout=30)
        assert run.returncode == 0, run.stderr
        # a failed link (an input that is no object) gives the collector back as well
        bad = tmp_path / "bad.o"
        bad.write_bytes(b"not an object")
        with pytest.raises(Exception):
            driver.link(parse_args([str(bad), "-o", str(tmp_path / "bad")]))
        assert collector.isenabled() is enabled
    finally:
        collector.callbacks.remove(count)
        (collector.enable if was else collector.disable)()


def test_keep_holds_the_links_records_past_the_link(tmp_path, monkeypatch):
    """driver.link(keep=list): the records outlive the call (the CLI exits by os._exit and need not
    free them one by one); without keep they go when the link returns."""
    import weakref
    argv = _ld_argv(tmp_path, "cxx_exceptions", "static", False, monkeypatch)
    argv[argv.index("-o") + 1] = str(tmp_path / "out")
    made = []
    real_resolve = resolve.resolve

    def resolve_and_watch(*a):
        res = real_resolve(*a)
        made.append(weakref.ref(res.objects[0]))
        return res

    monkeypatch.setattr(resolve, "resolve", resolve_and_watch)
    kept = []
    driver.link(parse_args(argv), keep=kept)
    assert kept and made[0]() is not None, "keep= did not hold the link's records"
    assert any(getattr(k, "objects", None) for k in kept)
    driver.link(parse_args(argv))
    import gc as collector
    collector.collect()         # the records have cycles (a section names its file)
    assert made[1]() is None, "without keep= the link's records outlived it"
