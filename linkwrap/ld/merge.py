"""SHF_MERGE|SHF_STRINGS sections of 1-byte strings, byte-aligned (.debug_str, .rodata.str1.1): merged
with C-level loops.

Input: the input sections of one MergedSection. Output: what MergedSection's general loop makes
(synthetic/strings.py): the merged bytes, and per input section its piece offsets and their offsets in
the merged bytes, each distinct string stored once in order of first appearance. Or None when a
section does not end in a NUL (its last piece is kept whole, as the general loop does).

Why: a Rust debug link has ~350k strings in .debug_str; the general loop (a dict lookup, an
alignment and two appends per string, in Python) took ~0.35 s of it. Here one section's strings
go through map/accumulate/compress: the per-string work stays in C.
"""
from array import array
from itertools import accumulate, compress, count
from operator import add, eq


def strings(sections):
    """-> (bytes, {section: (piece offsets, their offsets in bytes)}) or None. The offsets are
    array('q')s: 8 bytes each where a list of ints costs ~40 (350k pieces in a Rust debug link)."""
    for sec in sections:
        if sec.size and sec.bytes()[-1] != 0:
            return None
    seen = {}               # string (without its NUL) -> id: its position among all strings seen
    out_of = {}             # id of a first appearance -> its offset in the merged bytes
    chunks = []
    cursor = 0
    g = 0
    pieces = {}
    setdefault = seen.setdefault
    for sec in sections:
        parts = bytes(sec.bytes()).split(b"\0")
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
