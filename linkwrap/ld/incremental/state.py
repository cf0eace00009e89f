"""The incremental state beside an output: where it lives, its format, identities and hashes.

<dir>/.<output name>.lwinc/ (mode 0700, made by this user, never followed through a symlink):
  state   the state file: a magic line b"LWINC <version>\\n", the header's length (8 bytes), the
          header -- one marshal'd dict of plain values (numbers, strings, bytes, tuples, lists,
          dicts; marshal builds no code objects from it) -- and the blob area the header points
          into with (offset, size) pairs: each input's record body, and the globals and the
          reverse index in 4096 buckets each (Keyed). 31 MB on the generated 150 MB-input Rust
          link (`--incremental-stats` prints it), three fifths of it the inputs' bodies. The file
          is mapped, not read; what every relink needs (the inputs' heads, the layout) is in the
          header; a body or a bucket is decoded only when the relink asks for it and written back
          as the bytes it was read as otherwise: a relink that patches one input of 146 reads
          the header and a tenth of the buckets (8-13 ms there, 110 ms when the whole file was one
          marshal'd dict) and writes the file without encoding it again.
  base    a hard link to the last output the state describes: Cargo removes deps/<bin>-<hash>
          before rustc links it again, so the relink copies from here when the output is gone.

A state is trusted only when the directory and file are this user's and nobody else can write
them; anything else reads as "no state" (a full incremental link follows). The state is written
to a temporary name and renamed, after the output itself is in place, so an interrupted link
leaves either the old pair (old output, old state) or the new pair -- and the output's identity
(inode, size, mtime) is in the state, so a state that does not match the output on disk is seen.
"""
import gc
import hashlib
import marshal
import mmap
import os
import stat
import zlib

VERSION = 4
# what every relink reads of every input; the rest of a record is its body (Record)
HEAD = ("kind", "path", "key", "id", "sha")
MAGIC = b"LWINC %d\n" % VERSION


def state_dir(output):
    """<dir>/.<name>.lwinc beside the output. Through the wrapper the linker writes into a private
    directory and the wrapper renames the result over the output (run/output.py); it names that
    output in LINKWRAP_LD_OUTPUT (same file name), and the state is kept beside it, where the next
    link finds it."""
    from linkwrap.ld.incremental.where import beside
    return beside(home(output))


def home(output):
    """The output this link is for: LINKWRAP_LD_OUTPUT when it names the same file, else output."""
    final = os.environ.get("LINKWRAP_LD_OUTPUT")
    if final and os.path.basename(final) == os.path.basename(output):
        return final
    return output


def _safe_dir(path, create):
    """-> path if it is a real directory of ours nobody else can write (made 0700 when create)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            return None
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        return None
    return path


def load(output):
    """-> (the state dict, None) or (None, why not)."""
    d = _safe_dir(state_dir(output), False)
    if d is None:
        return None, "no incremental state beside the output"
    try:
        # O_NONBLOCK: a FIFO planted under the name must not hang the link (refused below)
        fd = os.open(os.path.join(d, "state"), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None, "no incremental state beside the output"
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            return None, "the incremental state is not this user's own"
        if not stat.S_ISREG(st.st_mode):
            return None, "the incremental state is damaged"
        if st.st_size <= len(MAGIC):
            return None, "the incremental state has another format version"
        # mapped, not read into a buffer: 30 MB of fresh memory faulted in page by page cost a new
        # process 40-50 ms more than the file's cached pages mapped (the file is ours and only ever
        # replaced by a rename, never truncated under a reader)
        data = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    finally:
        os.close(fd)
    view = memoryview(data)
    try:
        if data[:len(MAGIC)] != MAGIC:
            return None, "the incremental state has another format version"
        n = int.from_bytes(data[len(MAGIC):len(MAGIC) + 8], "little")
        blobs = len(MAGIC) + 8 + n
        with view[len(MAGIC) + 8:blobs] as head:
            state = _quiet(marshal.loads, head)

        def blob(ref):
            off, size = ref
            if not 0 <= off <= off + size <= len(data) - blobs:
                raise ValueError("a blob outside the file")
            return view[blobs + off:blobs + off + size]
        if isinstance(state, dict) and "inputs" in state:
            # the bodies and buckets stay views of the mapping (the file is only ever replaced by a
            # rename, so the mapped inode outlives any later link's state): decoded when asked,
            # written back as they are by save()
            state["inputs"] = [Record(head, blob(ref)) for head, ref in state["inputs"]]
            for key in KEYED:
                state[key] = Keyed([blob(ref) for ref in state[key]])
    except (ValueError, EOFError, TypeError, KeyError):
        return None, "the incremental state is damaged"
    if not isinstance(state, dict) or state.get("version") != VERSION:
        return None, "the incremental state is damaged"
    return state, None


def _quiet(fn, arg):
    """fn(arg) with the cyclic collector off: marshal makes a million tuples and no cycles, and
    the collections those allocations trigger were two thirds of decoding the state."""
    was = gc.isenabled()
    gc.disable()
    try:
        return fn(arg)
    finally:
        if was:
            gc.enable()


class Record(dict):
    """One input's record: its HEAD keys decoded, the rest decoded from its body on first use.
    An input that did not change is never decoded and is written back as the bytes it was read
    as; reading or setting any key of the body decodes it first."""
    __slots__ = ("_body",)

    def __init__(self, head, body=None):
        super().__init__(head)
        self._body = body

    def _open(self):
        body, self._body = self._body, None
        if body is not None:
            super().update(_quiet(marshal.loads, body))

    def __missing__(self, key):
        if self._body is None:
            raise KeyError(key)
        self._open()
        return self[key]

    def __setitem__(self, key, value):
        if key not in HEAD:
            self._open()
        super().__setitem__(key, value)

    def update(self, *a, **k):
        self._open()
        super().update(*a, **k)

    def get(self, key, default=None):
        if key not in HEAD:
            self._open()
        return super().get(key, default)

    def encoded(self):
        """-> (head, body bytes) as the state file keeps them."""
        head = {k: v for k, v in self.items() if k in HEAD}
        if self._body is not None:
            return head, self._body
        return head, marshal.dumps({k: v for k, v in self.items() if k not in HEAD})


# name -> value tables of the state kept in BUCKETS marshal'd buckets by the name's CRC-32, each
# decoded when a name in it is asked: a changed object's few hundred globals touch a tenth of the
# globals (4.5 MB on the generated Rust link) and of the reverse index (6.8 MB), not all of them.
KEYED = ("globals", "sites")
BUCKETS = 4096


class Keyed:
    """A name -> value table read bucket by bucket (get, [], []=, pop, in); written back with the
    buckets nobody changed as the bytes they were read as. Not iterable: what a relink needs from
    all names at once is kept beside it (record.py: "bounded")."""
    __slots__ = ("_raw", "_open", "_dirty")

    def __init__(self, raw):
        if not isinstance(raw, list) or len(raw) != BUCKETS:
            raise ValueError("buckets")
        self._raw, self._open, self._dirty = raw, {}, set()

    @classmethod
    def of(cls, table):
        buckets = [{} for _ in range(BUCKETS)]
        for name, value in table.items():
            buckets[_bucket(name)][name] = value
        return cls([marshal.dumps(b) for b in buckets])

    def _get_bucket(self, name):
        i = _bucket(name)
        b = self._open.get(i)
        if b is None:
            b = self._open[i] = _quiet(marshal.loads, self._raw[i])
        return i, b

    def get(self, name, default=None):
        return self._get_bucket(name)[1].get(name, default)

    def __getitem__(self, name):
        return self._get_bucket(name)[1][name]

    def __contains__(self, name):
        return name in self._get_bucket(name)[1]

    def __setitem__(self, name, value):
        i, b = self._get_bucket(name)
        b[name] = value
        self._dirty.add(i)

    def pop(self, name, *default):
        i, b = self._get_bucket(name)
        self._dirty.add(i)
        return b.pop(name, *default)

    def encoded(self):
        raw = list(self._raw)
        for i in self._dirty:
            raw[i] = marshal.dumps(self._open[i])
        return raw


def _bucket(name):
    return zlib.crc32(name.encode("utf-8", "surrogateescape")) & (BUCKETS - 1)


def save(output, state, linked=None) -> int:
    """Write the state and the base hard link; -> the state file's size in bytes. linked: a file
    in the state's directory holding the linked bytes that becomes the base itself (renamed), the
    output left alone (--incremental-base-only)."""
    d = _safe_dir(state_dir(output), True)
    if d is None:
        return 0     # a planted or foreign directory: no state, every link is a full one
    blobs, at = [], [0]

    def ref(b):
        blobs.append(b)
        at[0] += len(b)
        return (at[0] - len(b), len(b))
    records = state.get("inputs")
    if records is not None:
        state = dict(state)
        state["inputs"] = [(head, ref(body)) for head, body in
                           (r.encoded() if isinstance(r, Record) else Record(r).encoded() for r in records)]
        for key in KEYED:
            v = state[key]
            state[key] = [ref(b) for b in (v if isinstance(v, Keyed) else Keyed.of(v)).encoded()]
    data = _quiet(marshal.dumps, state)
    tmp = os.path.join(d, f"state.{os.getpid()}.tmp")
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(MAGIC + len(data).to_bytes(8, "little"))
        f.write(data)
        for b in blobs:           # bytes, or views of the state this link read (its file is mapped)
            f.write(b)
    base_tmp = os.path.join(d, f"base.{os.getpid()}.tmp")
    if linked is not None:
        os.replace(linked, os.path.join(d, "base"))
    else:
        try:
            os.unlink(base_tmp)
        except FileNotFoundError:
            pass
        try:
            os.link(output, base_tmp, follow_symlinks=False)
            os.replace(base_tmp, os.path.join(d, "base"))
        except OSError:
            pass          # another filesystem's output: no base, the output itself is the base
    os.replace(tmp, os.path.join(d, "state"))
    # rename(2) of a link onto another link of the same inode (a relink that changed nothing: the
    # base already is the output) does nothing and leaves the source; and a link killed between
    # its link() and rename() leaves its name: either would keep an old output's blocks alive
    _tidy(d)
    return len(MAGIC) + 8 + len(data) + at[0]


def _tidy(d):
    """Remove base.<pid>.tmp and state.<pid>.tmp names of this process or of processes gone."""
    try:
        names = os.listdir(d)
    except OSError:
        return
    for name in names:
        parts = name.split(".")
        if len(parts) != 3 or parts[0] not in ("base", "state") or parts[2] != "tmp" or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid != os.getpid():
            try:
                os.kill(pid, 0)
                continue               # a link of this output running now: its own name
            except ProcessLookupError:
                pass
            except OSError:
                continue
        try:
            os.unlink(os.path.join(d, name))
        except OSError:
            pass


def drop(output):
    """Remove the state (a link that is not incremental leaves none that could be trusted)."""
    d = _safe_dir(state_dir(output), False)
    if d is None:
        return
    for name in ("state", "base"):
        try:
            os.unlink(os.path.join(d, name))
        except OSError:
            pass


def identity(path):
    """What says a file is unchanged without reading it: (device, inode, size, mtime in ns)."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def input_key(path):
    """The name an input is matched by across links. rustc names an object
    <crate>-<crate hash>.<codegen unit>.<per-session salt>.rcgu.o: the salt changes every build,
    so it is left out, and so is the name of the temporary directory rustc writes symbols.o in
    (rustcXXXXXX); every other input is its path."""
    d, name = os.path.split(path)
    d = _rustc_temp(d)                         # rustc's symbols.o, in a temporary directory per build
    if name.endswith(".rcgu.o"):
        parts = name.split(".")
        if len(parts) >= 5:
            return os.path.join(d, ".".join(parts[:-3] + parts[-2:]))
    return os.path.join(d, name)


def _rustc_temp(d):
    """A directory with rustc's temporary directory of this build (rustcXXXXXX, made anew by every
    rustc run: symbols.o, raw-dylibs/) named the same from build to build."""
    parent, sub = os.path.split(d)
    if sub.startswith("rustc") and len(sub) == 11:
        return os.path.join(parent, "rustc*")
    parent2, sub2 = os.path.split(parent)
    if sub2.startswith("rustc") and len(sub2) == 11:
        return os.path.join(parent2, "rustc*", sub)
    return d


def digest(*chunks) -> bytes:
    h = hashlib.blake2b(digest_size=12)
    for c in chunks:
        h.update(c)
    return h.digest()


def file_hash(view) -> bytes:
    """An input's whole bytes. rustc writes every object of a crate anew each build (a new name,
    inode and mtime) though all but the edited codegen units are byte-identical: this says so
    without parsing them (sha256: the fastest stdlib hash here, SHA extensions, ~2 GB/s)."""
    return hashlib.sha256(view).digest()[:16]


def section_hash(sec) -> bytes:
    """A section's contents and its relocation table (offsets, types, symbols, addends)."""
    view = sec.file.view
    body = b"" if sec.type == 8 else view[sec.offset:sec.offset + sec.size]   # SHT_NOBITS: its size only
    rel = b"" if sec.rela is None else view[sec.rela[0]:sec.rela[0] + sec.rela[1]]
    return digest(body, rel, sec.size.to_bytes(8, "little"))


def symbol_shape(obj) -> bytes:
    """Its locals in order and its globals as a set (name, binding and type, visibility, section):
    the compiler may emit the same globals in another order (gcc orders them by its call graph)."""
    fg = obj.first_global
    raw = obj.raw_syms
    return digest(repr([(n, i, o, x) for n, i, o, x, _v, _s in raw[:fg]]).encode(),
                  repr(sorted((n, i, o, x) for n, i, o, x, _v, _s in raw[fg:])).encode())


def fingerprint(opts) -> str:
    """Everything in the options but the inputs' paths (those are compared input by input, and an
    input added in the middle then shifts this list: the relink compares the paths first)."""
    from dataclasses import fields
    parts = []
    for f in fields(opts):
        if f.name in ("inputs", "time_phases", "stats"):
            continue
        value = getattr(opts, f.name)
        if f.name == "output":
            value = os.path.abspath(home(value))    # not the wrapper's private directory, new each link
        if f.name == "lib_dirs":
            # rustc adds -L <its temporary directory>/raw-dylibs: a new name every build, and what is
            # found there is an input, compared input by input. And gcc passes each -B prefix on as
            # a -L too: the wrapper's -B<shim> holds this linker, no library, and a line started
            # directly (run/direct.py) has no -L for it; the same link either way.
            me = _this_linker()
            value = tuple(_rustc_temp(x) for x in value if not (me and _holds(x, me)))
        parts.append(f"{f.name}={value!r}")
    for a in opts.inputs:
        # names are compared input by input (an added one is its own reason); not what applies to them
        rest = [getattr(a, k, None) for k in ("as_needed", "static", "whole_archive")]
        parts.append(f"{a.kind}:{rest}")
    return digest("\n".join(parts).encode()).hex()


def _this_linker():
    """The real path of the program running now (linkwrap-ld, whatever name started it), or None."""
    import sys
    return os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else None


def _holds(d, me) -> bool:
    """Directory d's `ld` is this very linker: a -B prefix (the wrapper's shim), not a library dir."""
    try:
        return os.path.realpath(os.path.join(d, "ld")) == me
    except (OSError, ValueError):
        return False


def pause(step):
    """A test's way to interrupt a link at a step (tests/ld/incremental: SIGKILL while stopped):
    LINKWRAP_INCREMENTAL_PAUSE=<step> stops the process there."""
    if os.environ.get("LINKWRAP_INCREMENTAL_PAUSE") == step:
        import signal
        os.kill(os.getpid(), signal.SIGSTOP)
