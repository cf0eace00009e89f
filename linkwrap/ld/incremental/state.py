"""The incremental state beside an output: where it lives, its format, identities and hashes.

<dir>/.<output name>.lwinc/ (mode 0700, made by this user, never followed through a symlink):
  state   the state file: a magic line b"LWINC <version>\\n", the header's length (8 bytes), the
          header -- one marshal'd dict of plain values (numbers, strings, bytes, tuples, lists,
          dicts; marshal builds no code objects from it). It names a blob file and points into it
          with (offset, size) pairs: each input's record body, and the globals and the reverse
          index in 4096 buckets each (Keyed). 31 MB of blobs on the generated 150 MB-input Rust
          link (`--incremental-stats` prints the live size), three fifths of them the inputs'
          bodies; the header is ~0.3 MB. What every relink needs (the inputs' heads, the layout) is
          in the header; a body or a bucket is decoded only when the relink asks for it.
  blobs-<token>
          the blob file, mapped, not read, and only ever appended to: a relink appends the
          blobs it changed (a few hundred KB) and writes a new header that points at them and at
          the old ones where they are, so it neither encodes nor writes the 31 MB again (writing
          them cost 50-120 ms a relink). A link killed while appending leaves bytes no header
          points at. When the file holds more than twice what the state uses, or at a full link,
          the live blobs go to a new blob file (runs copied in the kernel) and the old one is
          removed after the new header is in place (a reader's mapping keeps its inode).
  base    a hard link to the last output the state describes: Cargo removes deps/<bin>-<hash>
          before rustc links it again, so the relink copies from here when the output is gone.
  spare   the output before the last relink, and in the state the ranges that relink wrote: the
          next relink brings it up to date by copying those ranges and patches it, instead of
          copying the whole output (patch.py: when nobody else has a name for it or runs it).

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

VERSION = 5
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
    got = _own_file(os.path.join(d, "state"))
    if isinstance(got, str):
        return None, got
    fd, size = got
    try:
        data = os.pread(fd, size, 0)
    finally:
        os.close(fd)
    if size <= len(MAGIC) or data[:len(MAGIC)] != MAGIC:
        return None, "the incremental state has another format version"
    try:
        n = int.from_bytes(data[len(MAGIC):len(MAGIC) + 8], "little")
        if len(MAGIC) + 8 + n != len(data):
            raise ValueError("the header's length")
        state = _quiet(marshal.loads, memoryview(data)[len(MAGIC) + 8:])
        if not isinstance(state, dict) or state.get("version") != VERSION:
            return None, "the incremental state is damaged"
        if "inputs" in state:
            origin = _open_blobs(d, state.get("blobs"))
            if isinstance(origin, str):
                return None, origin
            n = len(origin.data)

            def ref(r):
                off, size = r
                if not 0 <= off <= off + size <= n:
                    raise ValueError("a blob outside the file")
                return (off, size)
            # the bodies and buckets stay (offset, size) in the mapping (the blob file is only
            # appended to, or replaced and unlinked: the mapped inode outlives any later link's
            # state): decoded when asked, and not written again by save()
            state["inputs"] = [Record(head, ref(r), origin) for head, r in state["inputs"]]
            for key in KEYED:
                state[key] = Keyed([ref(r) for r in state[key]], origin)
            state[ORIGIN] = origin
    except (ValueError, EOFError, TypeError, KeyError):
        return None, "the incremental state is damaged"
    return state, None


def _own_file(path):
    """-> (open fd, size) of a regular file of ours nobody else can write, or why not."""
    try:
        # O_NONBLOCK: a FIFO planted under the name must not hang the link (refused below)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return "no incremental state beside the output"
    st = os.fstat(fd)
    why = None
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        why = "the incremental state is not this user's own"
    elif not stat.S_ISREG(st.st_mode):
        why = "the incremental state is damaged"
    if why:
        os.close(fd)
        return why
    return fd, st.st_size


def _open_blobs(d, name):
    if not isinstance(name, str) or not name.startswith("blobs-") or "/" in name:
        return "the incremental state is damaged"
    got = _own_file(os.path.join(d, name))
    if isinstance(got, str):
        return "the incremental state is damaged" if got.startswith("no ") else got
    fd, size = got
    try:
        # mapped, not read into a buffer: 30 MB of fresh memory faulted in page by page cost a new
        # process 40-50 ms more than the file's cached pages mapped
        data = mmap.mmap(fd, 0, prot=mmap.PROT_READ) if size else b""
    except BaseException:
        os.close(fd)
        raise
    return Origin(fd, name, data)


ORIGIN = "origin"      # the state dict's key of the blob file it was read from (not written)


class Origin:
    """The blob file a state was read from: its mapping, kept open, and where in it each blob
    of the state lies (save() appends only the blobs that are not there)."""

    def __init__(self, fd, name, data):
        self.fd, self.name, self.data = fd, name, data
        self.view = memoryview(data)
        self.ino = os.fstat(fd).st_ino

    def bytes(self, blob):
        """A blob: bytes as they are, an (offset, size) in this file as a view of its mapping."""
        if isinstance(blob, tuple):
            return self.view[blob[0]:blob[0] + blob[1]]
        return blob

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


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
    An input that did not change is never decoded and stays where it is in the blob file; reading
    or setting any key of the body decodes it first."""
    __slots__ = ("_body", "_origin")

    def __init__(self, head, body=None, origin=None):
        super().__init__(head)
        self._body = body           # bytes, or (offset, size) in origin's blob file
        self._origin = origin

    def _open(self):
        body, self._body = self._body, None
        if body is not None:
            if isinstance(body, tuple):
                body = self._origin.bytes(body)
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
        """-> (head, body: bytes, or its (offset, size) in the blob file it was read from)."""
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
    __slots__ = ("_raw", "_open", "_dirty", "_origin")

    def __init__(self, raw, origin=None):
        if not isinstance(raw, list) or len(raw) != BUCKETS:
            raise ValueError("buckets")
        # each bucket: bytes, or (offset, size) in origin's blob file
        self._raw, self._open, self._dirty, self._origin = raw, {}, set(), origin

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
            raw = self._raw[i]
            if isinstance(raw, tuple):
                raw = self._origin.bytes(raw)
            b = self._open[i] = _quiet(marshal.loads, raw)
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
    """Write the state and the base hard link; -> the state's size in bytes (its header and the
    blobs it uses). linked: a file in the state's directory holding the linked bytes that becomes
    the base itself (renamed), the output left alone (--incremental-base-only)."""
    d = _safe_dir(state_dir(output), True)
    if d is None:
        return 0     # a planted or foreign directory: no state, every link is a full one
    origin = state.get(ORIGIN)
    state = {k: v for k, v in state.items() if k != ORIGIN}
    blobs = []

    def put(b):
        blobs.append(b)
        return len(blobs) - 1
    records = state.get("inputs")
    if records is not None:
        state["inputs"] = [(head, put(body)) for head, body in
                           (r.encoded() if isinstance(r, Record) else Record(r).encoded() for r in records)]
        for key in KEYED:
            v = state[key]
            state[key] = [put(b) for b in (v if isinstance(v, Keyed) else Keyed.of(v)).encoded()]
        refs, name, fresh = _put_blobs(d, blobs, origin)
        state["inputs"] = [(head, refs[k]) for head, k in state["inputs"]]
        for key in KEYED:
            state[key] = [refs[k] for k in state[key]]
        state["blobs"] = name
    else:
        fresh = None
    if origin is not None:
        origin.close()
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
    if fresh is not None or records is None:
        _drop_blobs(d, keep=fresh)      # the new header is in place: the old blob files are no one's
    if not state.get("spare"):
        try:
            os.unlink(os.path.join(d, "spare"))     # an older output no state names
        except OSError:
            pass
    # rename(2) of a link onto another link of the same inode (a relink that changed nothing: the
    # base already is the output) does nothing and leaves the source; and a link killed between
    # its link() and rename() leaves its name: either would keep an old output's blocks alive
    _tidy(d)
    return len(MAGIC) + 8 + len(data) + sum(_size(b) for b in blobs)


def _size(blob):
    return blob[1] if isinstance(blob, tuple) else len(blob)


def _put_blobs(d, blobs, origin):
    """-> ([(offset, size)] of each blob, the blob file's name, that name if the file is new else
    None). Appends the blobs that are not in the blob file the state was read from, when that is
    still the file under its name and holds at most twice what the state uses; else writes them
    all to a new file."""
    import fcntl
    live = sum(_size(b) for b in blobs)
    if origin is not None and origin.fd is not None:
        path = os.path.join(d, origin.name)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            fd = None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)      # two links of one output append one after another
                fst = os.fstat(fd)
                new = sum(len(b) for b in blobs if not isinstance(b, tuple))
                if fst.st_ino == origin.ino and fst.st_uid == os.getuid() and fst.st_size + new <= 2 * live + (1 << 20):
                    refs, pos, out = [], fst.st_size, []
                    for b in blobs:
                        if isinstance(b, tuple):
                            refs.append(b)
                        else:
                            refs.append((pos, len(b)))
                            out.append(b)
                            pos += len(b)
                    _write_all(fd, out)
                    return refs, origin.name, None
            finally:
                os.close(fd)
    name = f"blobs-{os.urandom(6).hex()}"
    fd = os.open(os.path.join(d, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    refs, pos = [], 0
    for b in blobs:
        refs.append((pos, _size(b)))
        pos += _size(b)
    with os.fdopen(fd, "wb") as f:
        _write_blobs(f, blobs, origin)
    return refs, name, name


def _write_all(fd, parts):
    with os.fdopen(os.dup(fd), "wb") as f:
        for b in parts:
            f.write(b)


def _drop_blobs(d, keep):
    try:
        names = os.listdir(d)
    except OSError:
        return
    for n in names:
        if n.startswith("blobs-") and n != keep:
            try:
                os.unlink(os.path.join(d, n))
            except OSError:
                pass


def _write_blobs(f, blobs, origin):
    """The blobs in order: bytes written, those still in the blob file the state was read from
    ((offset, size)) copied from it in the kernel, run by run (they lie there in the same order)."""
    runs = []            # [offset in the old file or None, size, [blobs]]
    for b in blobs:
        last = runs[-1] if runs else None
        if isinstance(b, tuple):
            if last is not None and last[0] is not None and last[0] + last[1] == b[0]:
                last[1] += b[1]
                last[2].append(b)
            else:
                runs.append([b[0], b[1], [b]])
        else:
            runs.append([None, len(b), [b]])
    for o, size, parts in runs:
        if o is not None and size >= 65536 and origin.fd is not None and _copy(origin.fd, f, o, size):
            continue
        for b in parts:
            f.write(origin.bytes(b) if isinstance(b, tuple) else b)


def _copy(src_fd, f, off, size) -> bool:
    """size bytes of src_fd at off appended to f in the kernel; False when it cannot (f as it was)."""
    f.flush()
    pos = f.tell()
    done = 0
    try:
        while done < size:
            n = os.copy_file_range(src_fd, f.fileno(), size - done, off + done, pos + done)
            if n <= 0:
                raise OSError("copy_file_range copied nothing")
            done += n
    except OSError:
        f.seek(pos)
        f.truncate()
        return False
    f.seek(pos + size)
    return True


def _tidy(d):
    """Remove base.<pid>.tmp and state.<pid>.tmp names of this process or of processes gone."""
    try:
        names = os.listdir(d)
    except OSError:
        return
    for name in names:
        parts = name.split(".")
        if len(parts) != 3 or parts[0] not in ("base", "state", "spare") or parts[2] != "tmp" or not parts[1].isdigit():
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
    for name in ("state", "base", "spare"):
        try:
            os.unlink(os.path.join(d, name))
        except OSError:
            pass
    _drop_blobs(d, keep=None)


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
