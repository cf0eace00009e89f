"""The link's input files, each stat()ed once per link; and what is known of a file by its identity.

Several stages look at the same inputs: the probe sums their sizes and tells a small link, the
direct line looks into each object for LTO code, the saved copy names each by its identity. Each
used to stat() every input itself: on a 280-input Rust link that was ~1000 stat() calls and a
realpath() per file, most of linkwrap's time in that link. Here each path is stat()ed once per link
(stat()), and what a stage learns by reading a file is kept by the file's identity (known(),
learn()): (device, inode, size, mtime, ctime). A file written again has another identity (its
mtime, or a new inode: compilers and rustc write a new file), so it is read again; one that has
not changed is not read at all.

Per link: begin() at the link's start and end() at its end (pipeline.link), so an input changed
between two links is stat()ed again; outside a link (a rehearsal, the commands, a test) stat() is
os.stat(). The identities' facts stay for the next link of this process (a server's child serves up
to 100 links; a spare learns them in its rehearsal), bounded by MAX_KNOWN: an identity names one
content, so they need no forgetting.
"""
import os

# path -> os.stat_result, or None where it could not be stat()ed: this link's look at its files;
# None outside a link.
_stats = None
# (what, identity) -> a fact learnt by reading the file: kept across links, bounded.
_known = {}
MAX_KNOWN = 8192


def begin() -> None:
    """A link starts: each file is stat()ed once from now on, anew."""
    global _stats
    _stats = {}


def end() -> None:
    """The link is over: stat() is os.stat() again."""
    global _stats
    _stats = None


def stat(path):
    """os.stat(path) as this link first saw it, or None when it could not be stat()ed."""
    stats = _stats
    if stats is not None:
        try:
            return stats[path]
        except KeyError:
            pass
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        st = None
    if stats is not None:
        stats[path] = st
    return st


def stat_now(path):
    """os.stat(path) now, or None: after this link changed the file (a hard link made to it)."""
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def identity(st) -> tuple:
    """What names a file's content without reading it: a rewrite changes its mtime and ctime (or
    its inode), a replacement its inode."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def known(what, st):
    """What was learnt of this file (by learn(what, ...)) at this identity, or None."""
    return _known.get((what, identity(st)))


def learn(what, st, value) -> None:
    if len(_known) >= MAX_KNOWN:
        _known.clear()  # a build's inputs are far fewer: a full table is mostly stale
    _known[(what, identity(st))] = value
