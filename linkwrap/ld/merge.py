"""SHF_MERGE|SHF_STRINGS sections of 1-byte strings, byte-aligned (.debug_str, .rodata.str1.1): merged
with C-level loops.

Input: the input sections of one MergedSection. Output: what MergedSection's general loop makes
(synthetic/strings.py): the merged bytes, and per input section its piece offsets and their offsets in
the merged bytes, each distinct string stored once in order of first appearance. Or None when a
section does not end in a NUL (its last piece is kept whole, as the general loop does).

Why: a Rust debug link has ~350k strings in .debug_str; the general loop (a dict lookup, an
alignment and two appends per string, in Python) took ~0.35 s of it. Here the per-string work stays
in C: one dict pass (setdefault, the one step that must hash each string), and the offsets either
with map/accumulate/compress per section or, for large inputs, with numpy over the whole link.
"""
import io
import os
from array import array
from itertools import accumulate, compress, count, islice
from operator import add, eq

# from this many input bytes on, numpy computes the offsets (the Rust debug link's 19 MB .debug_str:
# 0.56x [0.43, 0.72] of the per-section loop, benchmarks/bench_ld_output.py). Such a link imports
# numpy anyway: its .debug_* refer to those ~75k strings and more with relocations, which
# relocate_bulk applies with numpy from 100k on; alone, the import (~75 ms) pays from ~250k strings.
NUMPY_FROM = 4 << 20


def strings(sections, use_numpy=None):
    """-> (bytes, {section: (piece offsets, their offsets in bytes)}) or None. The offsets are
    array('q')s: 8 bytes each where a list of ints costs ~40 (350k pieces in a Rust debug link).
    use_numpy: None decides by size (NUMPY_FROM); both ways give the same result."""
    total = 0
    for sec in sections:
        if sec.size and sec.bytes()[-1] != 0:
            return None
        total += sec.size
    if use_numpy is None:
        # LINKWRAP_LD_MERGE=python|numpy (for tests) takes one way whatever the size
        forced = os.environ.get("LINKWRAP_LD_MERGE")
        use_numpy = forced == "numpy" if forced in ("python", "numpy") else total >= NUMPY_FROM
    return _strings_numpy(sections) if use_numpy and _numpy() is not None else _strings(sections)


def _drop(sec):
    """sec's input pages leave the RSS once its strings are copied out (objects.drop_pages)."""
    f = getattr(sec, "file", None)
    if f is not None:
        from linkwrap.ld.objects import drop_pages
        drop_pages(f.view)


def _numpy():
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def _strings_numpy(sections):
    """The whole link's strings on one axis: ids (the first appearance of each piece's string) from
    one dict pass, then each string's offset in the merged bytes by cumsum and a gather."""
    import numpy as np
    seen = {}               # string (without its NUL) -> id: its position among all strings seen
    setdefault = seen.setdefault
    ids = array("q")
    lens = array("q")       # each piece's length without its NUL
    counts = []
    g = 0
    for sec in sections:
        parts = bytes(sec.bytes()).split(b"\0")
        _drop(sec)          # its pages (~20 MB of .debug_str in all) out of the RSS at the merge's peak
        parts.pop()         # what follows the last NUL: nothing
        ids.extend(map(setdefault, parts, count(g)))
        lens.extend(map(len, parts))
        counts.append(len(parts))
        g += len(parts)
    ids = np.frombuffer(ids, dtype=np.int64)
    lens = np.frombuffer(lens, dtype=np.int64) + 1
    # the sections end in NULs: each one's pieces fill it, so one cumsum gives every piece's start
    # on the sections laid end to end
    starts = np.cumsum(lens) - lens
    first = ids == np.arange(g)
    ulen = lens[first]
    at = np.zeros(g, dtype=np.int64)
    at[first] = np.cumsum(ulen) - ulen
    outs = at[ids]
    del at, ulen, first, ids, lens
    pieces = {}
    k = base = 0
    for sec, m in zip(sections, counts):
        pieces[sec] = (array("q", (starts[k:k + m] - base).tobytes()), array("q", outs[k:k + m].tobytes()))
        k += m
        base += sec.size
    # the dict keeps first appearances in order: they are the merged bytes, NUL after each
    return _joined(seen) if g else b"", pieces


# strings per join in _joined: its transient table is 80 bytes a string (~320 KiB)
_JOIN = 4096


def _joined(strings):
    """b"\0".join(strings) + b"\0", without one join's transient table of a Py_buffer (80 bytes) per
    string: ~12 MiB at the Rust debug link's peak for its ~150k distinct strings. Joined 4k at a
    time into a BytesIO, whose getvalue() hands its buffer over without a copy (and half the time)."""
    f = io.BytesIO()
    it = iter(strings)
    while True:
        chunk = list(islice(it, _JOIN))
        if not chunk:
            return f.getvalue()
        chunk.append(b"")       # each chunk ends in a NUL too
        f.write(b"\0".join(chunk))


def _strings(sections):
    seen = {}               # string (without its NUL) -> id: its position among all strings seen
    out_of = {}             # id of a first appearance -> its offset in the merged bytes
    chunks = []
    cursor = 0
    g = 0
    pieces = {}
    setdefault = seen.setdefault
    for sec in sections:
        parts = bytes(sec.bytes()).split(b"\0")
        _drop(sec)
        parts.pop()         # what follows the last NUL: nothing
        n = len(parts)
        ids = list(map(setdefault, parts, count(g)))
        first = list(map(eq, ids, range(g, g + n)))
        lens = list(map(len, parts))
        ins = array("q", map(add, accumulate(lens, initial=0), range(n)))
        new = list(compress(parts, first))
        if new:
            new_lens = list(map(len, new))
            offs = list(map(add, accumulate(new_lens, initial=cursor), range(len(new))))
            cursor += sum(new_lens) + len(new)
            out_of.update(zip(compress(range(g, g + n), first), offs))
            chunks.append(b"\0".join(new) + b"\0")
        pieces[sec] = (ins, array("q", map(out_of.__getitem__, ids)))
        g += n
    return b"".join(chunks), pieces
