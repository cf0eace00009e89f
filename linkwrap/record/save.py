"""SAVE: keep a link replayable after its inputs are gone (on the link path, after the link).

Most of a rustc link's inputs do not outlive it: rustc deletes its `*.rcgu.o` objects and its
`rustcXXXXXX/` directory (symbols.o, the metadata object) when the linker returns, and the next
build rewrites deps/. So while the link is still ours, every input file that is not stable is
hard-linked into a store on the same filesystem: zero copy, a few microseconds a file. Where a
hard link cannot be made (another filesystem, a protected file) the file is cloned (FICLONE),
and copied only as a last resort, which the manifest counts (`copied_bytes`). Stable inputs (the
toolchain's rlibs, system libraries: under the Rust sysroot, /usr or /lib) are referenced by
path with their size and mtime, so a replay can say when one changed.

Objects are named by the identity of what was saved, `<inode>-<size>-<mtime_ns>` of the source:
rustc and Cargo write a new file for new content, so that identity stands for the content
without reading a byte (hashing 150 MB per link would cost more than the link's budget).

Layout: `<state>/saved/links/<id>.marshal` one manifest per output (the latest link of it);
`<store>/objects/<name>` where <store> is `<state>/saved` when the output is on the state
directory's filesystem, else `.linkwrap-saved/` at the top of the output's filesystem that this
user owns, so a hard link can always be made. Everything is created 0700/0600 whatever the
umask, and a store directory that is a symlink or belongs to someone else is not used.
A size cap (default 4 GiB of objects) evicts the least recently used manifests (replay touches
its manifest) and the objects no manifest references any more.
"""
import marshal
import os
import stat  # already imported by os: free
import time

from linkwrap.records import record

FORMAT = 1
CAP_BYTES = 4 << 30
EVICT_EVERY_S = 600     # the link path looks at the cap at most this often
STABLE_PREFIXES = ("/usr/", "/lib/", "/lib64/", "/opt/")


from linkwrap.errors import LinkwrapError


class SaveError(LinkwrapError):
    """A saved link that cannot be replayed; str() is the one line the user reads (exit 1)."""


from linkwrap.evidence.saved import manifest_id, saved_dir  # noqa: F401 (also this module's names)


def _private_dir(path) -> str:
    """path as a 0700 directory of ours; refuses a symlink or someone else's directory."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise SaveError(f"{path}: not a directory of this user's; not saving there")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def store_for(output_dir, state=None, links_only=False) -> str:
    """The object store on the same filesystem as output_dir. links_only (saving by default): only
    the state directory's own store; SaveError for an output on another filesystem, where saving
    would make a directory of its own at that filesystem's top."""
    from linkwrap import paths
    base = saved_dir(state)
    paths.make_private_dir(os.path.dirname(base))
    _private_dir(base)
    dev = os.stat(output_dir).st_dev
    if os.stat(base).st_dev == dev:
        return _private_dir(os.path.join(base, "objects"))
    if links_only:
        raise SaveError(f"{output_dir}: on another filesystem than {base}; saved only when asked "
                        "([bench] save, LINKWRAP_SAVE=1)")
    # The highest directory above the output on its filesystem that this user owns.
    top, d = None, os.path.realpath(output_dir)
    while True:
        try:
            st = os.stat(d)
        except OSError:
            break
        if st.st_dev != dev:
            break
        if st.st_uid == os.getuid() and os.access(d, os.W_OK):
            top = d
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    if top is None:
        raise SaveError(f"no directory of this user's on {output_dir}'s filesystem to keep saved inputs in")
    return _private_dir(os.path.join(_private_dir(os.path.join(top, ".linkwrap-saved")), "objects"))


# --- which arguments name files ---------------------------------------------

def file_refs(arg):
    """(prefix, path, suffix) for each part of one argument that may name a file:
    the whole argument, `--opt=PATH`, and each piece of `-Wl,a,b`."""
    if arg.startswith("-Wl,"):
        pieces = arg[4:].split(",")
        for i, piece in enumerate(pieces):
            for pre, path, suf in _one(piece):
                yield ("-Wl," + ",".join(pieces[:i] + [pre]), path, suf + "".join("," + p for p in pieces[i + 1:]))
        return
    yield from _one(arg)


def _one(arg):
    if arg.startswith("-"):
        eq = arg.find("=")
        if eq > 0 and len(arg) > eq + 1:
            yield arg[:eq + 1], arg[eq + 1:], ""
        return
    if arg:
        yield "", arg, ""


def _stable(path, sysroot) -> bool:
    return (sysroot is not None and path.startswith(sysroot)) or "/lib/rustlib/" in path \
        or path.startswith(STABLE_PREFIXES)


def _object_name(st) -> str:
    return f"{st.st_ino}-{st.st_size}-{st.st_mtime_ns}"


def _keep(src, objects, st, links_only=False):
    """Put src into the store; -> (bytes copied: 0 for a hard link or a clone, whether this call
    made the object). links_only: a hard link or SaveError (saving by default costs no copy: a few
    microseconds a file, no disk)."""
    dst = os.path.join(objects, _object_name(st))
    try:
        # No stat() first: the link itself says when the object is there (a relink's unchanged inputs).
        os.link(src, dst, follow_symlinks=True)
        return 0, True
    except FileExistsError:
        return 0, False
    except OSError as e:
        if links_only:
            raise SaveError(f"{src}: no hard link into {objects} ({e.strerror}); saved only when asked") from None
    tmp = f"{dst}.{os.getpid()}.tmp"
    fdin = os.open(src, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fdout = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            copied = 0
            try:
                import fcntl
                fcntl.ioctl(fdout, 0x40049409, fdin)  # FICLONE: shares the blocks (btrfs, xfs)
            except OSError:
                while True:   # the last resort: a real copy, counted
                    n = os.copy_file_range(fdin, fdout, 1 << 30) if hasattr(os, "copy_file_range") else 0
                    if n <= 0:
                        break
                    copied += n
                if copied < st.st_size:
                    os.lseek(fdin, copied, os.SEEK_SET)
                    while chunk := os.read(fdin, 1 << 20):
                        os.write(fdout, chunk)
                        copied += len(chunk)
        finally:
            os.close(fdout)
        os.replace(tmp, dst)
        return copied, True
    finally:
        os.close(fdin)
        if os.path.exists(tmp):
            os.unlink(tmp)


# keep_inputs()'s answer: the store, {input: manifest entry}, bytes copied, the objects it made, and
# whether this output has no saved link yet (its manifest must come before the answer: below).
Kept = record("Kept", "objects files copied made first")


def keep_inputs(request, state=None, links_only=False, learn_only=False) -> Kept:
    """Put every input that may not outlive the link into the store (stable ones are named by path,
    size and mtime): the part of saving that must come before the answer. It may run while the
    linker does (pipeline.py, saving by default): the inputs are there as long as the link runs.

    Each file as this link first stat()ed it (request/inputs.py); whether it is stable is told
    from its real path, with each directory's real path found once: os.path.realpath() of every
    input lstat()ed each component in Python (~2000 calls, ~20 ms on a 280-input Rust link).

    learn_only: nothing is put into the store; what is already there, and which inputs are stable,
    is learnt (request/inputs.py's memory) for a link to come in this process: a warm server's
    spare does it for its last link while it waits (server/warm.rehearse), and the link then tries
    no hard link for an input it already has, the edit-build loop's ~250 of ~260 (~19 ms of system
    calls on a 277-input Rust link, made while the linker runs, on the CPUs it links with)."""
    from linkwrap.request import inputs
    output = request.output
    if not output:
        raise SaveError("the link has no -o output")
    objects = store_for(os.path.dirname(output), state, links_only)
    sysroot = os.path.dirname(os.path.dirname(os.path.dirname(request.rust_lld))) if request.rust_lld else None
    files, copied, seen, made, real_dirs = {}, 0, set(), [], {}
    in_store = ("in store", objects)
    for arg in request.args:
        for _, path, _ in file_refs(arg):
            full = os.path.join(request.cwd, path)
            if full in seen or full == output:
                continue
            seen.add(full)
            st = inputs.stat(full)
            if st is None or not stat.S_ISREG(st.st_mode):
                continue
            stable = inputs.known(("stable", full), st)
            if stable is None:
                stable = _stable(_real_path(full, real_dirs), sysroot)
                inputs.learn(("stable", full), st, stable)
            if stable:
                files[full] = ("stable", full, st.st_size, st.st_mtime_ns)
                continue
            dst = os.path.join(objects, _object_name(st))
            files[full] = ("object", dst, st.st_size, st.st_mtime_ns)
            # A file this process found or made in the store, at the same identity since: its link
            # count, and so its ctime, has not changed, so that hard link is still there.
            if inputs.known(in_store, st):
                continue
            if learn_only:
                linked = inputs.stat_now(dst)
                if linked is not None and (linked.st_dev, linked.st_ino) == (st.st_dev, st.st_ino):
                    inputs.learn(in_store, linked, True)
                continue
            n, new = _keep(full, objects, st, links_only)
            copied += n
            if new:
                made.append(dst)
            # Known only for a hard link, made now or found there (a clone or a copy is another
            # inode, whose removal the input's ctime would not show). It is the input's own inode:
            # its stat() is the input's identity now, ctime moved by the link made included.
            linked = inputs.stat_now(dst)
            if linked is not None and (linked.st_dev, linked.st_ino) == (st.st_dev, st.st_ino):
                inputs.learn(in_store, linked, True)
    # An output's first saved link is written before the answer: the server looks for a saved link
    # as soon as it is idle after it (bench/background.py), and finding none it looks again only
    # minutes later. A relink's manifest replaces one that is there: after the answer.
    first = not os.path.exists(os.path.join(saved_dir(state), "links", manifest_id(request.cwd, output) + ".marshal"))
    return Kept(objects, files, copied, tuple(made), first)


def _real_path(path, real_dirs) -> str:
    """os.path.realpath(path), its directory's part found once per directory (real_dirs)."""
    head, tail = os.path.split(path)
    if tail in ("", ".", "..") or stat.S_ISLNK(os.lstat(path).st_mode):
        return os.path.realpath(path)
    real = real_dirs.get(head)
    if real is None:
        real = real_dirs[head] = os.path.realpath(head)
    return os.path.join(real, tail)


def drop(kept) -> None:
    """The objects keep_inputs() made, removed again (the link failed: nothing will name them)."""
    for path in kept.made:
        try:
            os.unlink(path)
        except OSError:
            pass


def save(request, outcome, facts=None, state=None, links_only=False, kept=None) -> str:
    """Keep this (successful) link replayable; -> the manifest's path. links_only: saving by default,
    which hard-links or saves nothing (SaveError): no copy, no store on another filesystem. kept:
    keep_inputs()'s answer for this link, made while its linker ran (else made now)."""
    started = time.perf_counter_ns()
    output = request.output
    if kept is None:
        kept = keep_inputs(request, state, links_only)
    files, copied = kept.files, kept.copied
    e_type = None
    try:
        with open(output, "rb") as f:
            head = f.read(18)
        if head[:4] == b"\x7fELF":
            e_type = int.from_bytes(head[16:18], "little")
    except OSError:
        pass
    manifest = {
        "format": FORMAT, "cwd": request.cwd, "driver": request.driver, "args": list(request.args),
        "output": output, "kind": request.kind, "rust_lld": request.rust_lld, "fuse_ld": request.fuse_ld,
        "target": getattr(request, "target", None),
        "files": files, "e_type": e_type, "wall_ms": getattr(outcome, "wall_ms", None),
        "linker": getattr(outcome, "linker", None), "saved_utc": time.time(),
        "input_bytes": sum(f[2] for f in files.values()), "copied_bytes": copied,
        "fs": getattr(facts, "fs", None),
        "save_ms": (time.perf_counter_ns() - started) / 1e6,
    }
    links = _private_dir(os.path.join(saved_dir(state), "links"))
    path = os.path.join(links, manifest_id(request.cwd, output) + ".marshal")
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        marshal.dump(manifest, f)
    os.replace(tmp, path)
    _maybe_evict(state)
    return path


LARGEST = 3   # [bench] save = "largest" (the default) keeps this many outputs per project


def wanted(request, facts, environ, settings, state=None) -> bool:
    """LINKWRAP_SAVE=1 (`linkwrap run --save` sets it), `[bench] save = "all"`, or "largest" (the
    default; LINKWRAP_SAVE=0 and CI make it "off", request/config.py) and
    this output is one of its project's LARGEST largest by input bytes (the others' saved links
    are dropped as they fall out). Never a link whose driver compiles sources too: replaying it
    would time the compile as the linker's."""
    from linkwrap.request.args import compiles
    if compiles(request.args):
        return False
    if environ.get("LINKWRAP_SAVE") == "1":
        return True
    mode = getattr(settings, "save", "off")
    if mode == "all":
        return True
    if mode != "largest" or not request.output or not getattr(facts, "input_bytes", None):
        return False
    from linkwrap.evidence.measured import output_key
    index_path = os.path.join(saved_dir(state), "largest.marshal")
    try:
        with open(index_path, "rb") as f:
            index = marshal.loads(f.read())
        if not isinstance(index, dict):
            index = {}
    except (OSError, EOFError, ValueError, TypeError):
        index = {}
    top = dict(index.get(request.cwd, ()))
    key = output_key(request.output)
    if key not in top and len(top) >= LARGEST and facts.input_bytes <= min(top.values()):
        return False
    if top.get(key) == facts.input_bytes:
        return True   # ranked as before: the link path rewrites nothing (a relink of unchanged size)
    top[key] = facts.input_bytes
    ranked = sorted(top.items(), key=lambda kv: -kv[1])
    for dropped, _ in ranked[LARGEST:]:
        try:
            os.unlink(os.path.join(saved_dir(state), "links", manifest_id(request.cwd, dropped) + ".marshal"))
        except OSError:
            pass
    index[request.cwd] = tuple(ranked[:LARGEST])
    from linkwrap import paths
    paths.make_private_dir(os.path.dirname(saved_dir(state)))
    _private_dir(saved_dir(state))
    tmp = f"{index_path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        marshal.dump(index, f)
    os.replace(tmp, index_path)
    return True


# --- reading saved links ------------------------------------------------------

def load(path) -> dict:
    """A manifest, checked: SaveError (one line) when it cannot be replayed."""
    try:
        with open(path, "rb") as f:
            m = marshal.loads(f.read())
    except FileNotFoundError:
        raise SaveError(f"{path}: no such saved link") from None
    except (OSError, EOFError, ValueError, TypeError) as e:
        raise SaveError(f"{path}: not a saved link ({e})") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise SaveError(f"{path}: not a saved link of this linkwrap (format {m.get('format') if isinstance(m, dict) else '?'})")
    m["path"] = path
    return m


def all_saved(state=None) -> list:
    links = os.path.join(saved_dir(state), "links")
    try:
        names = sorted(n for n in os.listdir(links) if n.endswith(".marshal"))
    except OSError:
        return []
    found = []
    for n in names:
        try:
            found.append(load(os.path.join(links, n)))
        except SaveError:
            continue
    return found


def find(words, cwd, state=None) -> list:
    """The saved links named by outputs (or manifest paths), else the cwd project's slowest."""
    saved = all_saved(state)
    if not words:
        mine = [m for m in saved if m["cwd"] == cwd or m["cwd"].startswith(cwd.rstrip("/") + "/")]
        if not mine:
            raise SaveError(f"no saved link for {cwd}: save some with `linkwrap run --save -- cargo build`")
        return [max(mine, key=lambda m: m.get("wall_ms") or 0)]
    from linkwrap.evidence.measured import output_key
    chosen = []
    for w in words:
        if w.endswith(".marshal") and os.path.exists(w):
            chosen.append(load(w))
            continue
        key = output_key(os.path.abspath(os.path.join(cwd, w)))  # ./app names app
        hits = [m for m in saved if output_key(m["output"]) == key]
        if not hits:
            raise SaveError(f"{w}: no saved link of this output (save it with `linkwrap run --save -- <build>`)")
        chosen.append(hits[0])
    return chosen


def replay_args(manifest) -> list:
    """The saved arguments with every saved input pointing into the store.

    Raises SaveError naming the first input that is gone or changed since it was saved.
    """
    files = manifest["files"]
    checked = {}
    for orig, (how, where, size, mtime_ns) in files.items():
        try:
            st = os.stat(where)
        except OSError:
            what = "saved copy" if how == "object" else "input"
            raise SaveError(f"{manifest['output']}: the {what} of {orig} is gone ({where}); "
                            "save the link again") from None
        if (st.st_size, st.st_mtime_ns) != (size, mtime_ns):
            raise SaveError(f"{manifest['output']}: {where} changed since the link was saved "
                            f"({size} -> {st.st_size} bytes); save the link again")
        checked[orig] = where
    out = []
    cwd = manifest["cwd"]
    for arg in manifest["args"]:
        new = arg
        for pre, path, suf in file_refs(arg):
            target = checked.get(os.path.join(cwd, path))
            if target is not None:
                new = pre + target + suf
                break
        out.append(new)
    return out


def touch(manifest) -> None:
    """Mark a saved link as used (eviction keeps the most recently used)."""
    try:
        os.utime(manifest["path"])
    except OSError:
        pass


# --- the size cap -------------------------------------------------------------

def _maybe_evict(state):
    mark = os.path.join(saved_dir(state), ".evicted")
    try:
        if time.time() - os.stat(mark).st_mtime < EVICT_EVERY_S:
            return
    except OSError:
        pass
    fd = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    os.close(fd)
    os.utime(mark)
    evict(CAP_BYTES, state)


def evict(cap_bytes, state=None) -> list:
    """Drop least recently used manifests until their objects fit in cap_bytes; then drop objects
    nothing references. -> paths of the manifests removed."""
    saved = all_saved(state)
    saved.sort(key=lambda m: _mtime(m["path"]), reverse=True)   # newest first
    keep, total, removed, refs = [], 0, [], set()
    for m in saved:
        objs = {w for how, w, size, _ in m["files"].values() if how == "object"}
        new = sum(m["files"][o][2] for o in m["files"] if m["files"][o][0] == "object"
                  and m["files"][o][1] in objs - refs)
        if keep and total + new > cap_bytes:
            removed.append(m["path"])
            continue
        keep.append(m)
        total += new
        refs |= objs
    for p in removed:
        try:
            os.unlink(p)
        except OSError:
            pass
    stores = {os.path.dirname(w) for m in saved for how, w, _, _ in m["files"].values() if how == "object"}
    for store in stores:
        try:
            names = os.listdir(store)
        except OSError:
            continue
        for n in names:
            p = os.path.join(store, n)
            if p not in refs:
                try:
                    os.unlink(p)
                except OSError:
                    pass
    return removed


def _mtime(path) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0
