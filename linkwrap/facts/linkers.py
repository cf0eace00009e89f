"""Linker discovery: which linkers this machine has, where, and which version.

Finding them is a few stat() calls on PATH. Asking for versions means running
each linker with --version, so the answers are cached (marshal, keyed on each
binary's path, size and mtime): a warm link starts no --version process.
"""
import os
from linkwrap.records import record

from linkwrap import cache as cache_mod
from linkwrap import paths


class LinkerInfo(record("LinkerInfo", "name path version version_text")):
    """name: mold|wild|lld|rust-lld|bfd|gold|python; version: tuple of ints or None."""
    __slots__ = ()

    @property
    def label(self) -> str:
        v = ".".join(map(str, self.version)) if self.version else "?"
        return f"{self.name} {v}"


# The order in which executable names are tried for each linker.
CANDIDATES = {
    "mold": ("mold", "ld.mold"),
    "wild": ("wild", "ld.wild"),
    "lld": ("ld.lld",),            # and ld.lld-NN: the newest of them all (see _newest_lld)
    "bfd": ("ld.bfd",),
    "gold": ("ld.gold",),
    "rust-lld": ("rust-lld",),     # on PATH when rustc runs the link
}
# Fast linkers: the caller's own default goes first among these when nothing is measured, so a
# link through linkwrap is never slower than without it (rust-lld beat mold 1.15x on a real Rust
# link here, mold beat rust-lld 0.83x on a generated one: shared/reference/measurements.md). The
# policy races them; the evidence times them (evidence/learn.py): a fact both read, kept here.
FAST = ("mold", "wild", "lld", "rust-lld")
_CACHE_FORMAT = 5  # 5: lld is the newest of ld.lld and ld.lld-NN


# This process's last discover() for a link: (its key, the stamps of what it depends on, its answer).
# A server's spare found the linkers for the link it rehearsed (server/warm.rehearse()); the link then
# needs only the stat() calls that say nothing changed: PATH's directories (a linker installed or
# removed), the linkers themselves (upgraded: another version), where the Python linker is looked for.
_last = None
# The stat() of each path made during one discover() (cache.stamp's tuple, None when missing): the
# cache checks and the stamps kept in _last read the same moment, so a PATH directory or a linker is
# stat()ed once per link, not twice (22 of a link's 28 PATH stats were the second look).
_stamped = {}


def _stat(path):
    if path not in _stamped:
        _stamped[path] = cache_mod.stamp(path)
    return _stamped[path]


def discover(request=None, environ=os.environ) -> dict:
    """{name: LinkerInfo} for every linker found. Never raises for a missing one.

    A cross link (request.target another machine's) gets that target's GNU ld and gold
    (`aarch64-linux-gnu-ld.bfd`: the host's know only the host) and never the Python linker
    (x86-64 only); mold, wild and lld link for several machines with one binary."""
    global _last
    if request is None:  # the commands: rust-lld may come from `rustc --print sysroot`
        try:
            return _discover(request, environ)
        finally:
            _stamped.clear()
    key = (environ.get("PATH", os.defpath), request.target, request.driver, request.rust_lld)
    last = _last
    if last is not None and last[0] == key and cache_mod.unchanged(last[1]):
        return dict(last[2])
    _stamped.clear()
    try:
        found = _discover(request, environ)
        import sys
        watched = [d for d in key[0].split(os.pathsep) if d] + [info.path for info in found.values()]
        watched += [os.path.dirname(os.path.abspath(sys.argv[0])), os.path.dirname(sys.executable)]
        if request.rust_lld:
            watched.append(request.rust_lld)
        _last = (key, tuple((p, _stat(p)) for p in watched), found)
    finally:
        _stamped.clear()
    return dict(found)


def _discover(request, environ) -> dict:
    path_dirs = [d for d in environ.get("PATH", os.defpath).split(os.pathsep) if d]
    cache = _load_cache()
    prefix = ""
    if request is not None and (request.target or request.driver):
        from linkwrap.request import target
        prefix = target.tool_prefix(request.target, request.driver)
    found = _search_path(path_dirs, cache, prefix)
    rust_lld = _rust_lld(request, found, path_dirs, cache)
    found.pop("rust-lld", None)
    if rust_lld:
        found["rust-lld"] = rust_lld
    python_ld = None if prefix else _python_linker()
    if python_ld:
        found["python"] = python_ld
    return _with_versions(found, cache)


def candidates(prefix=""):
    """CANDIDATES for a target whose GNU tools carry `prefix` (`aarch64-linux-gnu-`)."""
    if not prefix:
        return CANDIDATES
    return {**CANDIDATES, "bfd": (f"{prefix}ld.bfd", f"{prefix}ld"), "gold": (f"{prefix}ld.gold",)}


def _search_path(path_dirs, cache, prefix="") -> dict:
    """The linkers on PATH. Remembered per PATH and its directories' mtimes
    (installing or removing a binary changes its directory's mtime), so a warm
    link makes one stat() per PATH entry instead of listing directories."""
    key = []
    for d in path_dirs:
        st = _stat(d)
        key.append((d, st[4] if st is not None else -1))  # st_mtime_ns
    key = (prefix, tuple(key))
    hit = cache.get("search" + prefix)
    if hit and hit[0] == key:
        return dict(hit[1])
    found = {}
    for name, exes in candidates(prefix).items():
        path = _newest_lld(path_dirs) if name == "lld" else _which_any(exes, path_dirs)
        if path:
            found[name] = path
    cache["search" + prefix] = (key, found)
    cache["dirty"] = True
    return dict(found)


def _which_any(names, path_dirs):
    for d in path_dirs:
        for n in names:
            p = os.path.join(d, n)
            if os.access(p, os.X_OK) and not os.path.isdir(p):
                return p
    return None


def _newest_lld(path_dirs):
    """The newest LLD of ld.lld and ld.lld-NN on PATH (Debian's lld is 14, lld-16 is ld.lld-16 only).

    Versions are asked only when there are several: this runs on a cold cache, when PATH changed."""
    found, seen = [], set()
    for d in path_dirs:
        try:
            names = os.listdir(d)
        except OSError:
            continue
        numbered = sorted((n for n in names if n.startswith("ld.lld-") and n[7:].isdigit()),
                          key=lambda n: -int(n[7:]))
        for n in (["ld.lld"] if "ld.lld" in names else []) + numbered:
            p = os.path.join(d, n)
            real = os.path.realpath(p)
            if real not in seen and os.access(p, os.X_OK) and not os.path.isdir(p):
                seen.add(real)
                found.append(p)
    if len(found) < 2:
        return found[0] if found else None
    # max() keeps the first of equals: PATH order decides between the same version.
    return max(found, key=lambda p: parse_version("lld", version_text("lld", p)) or ())


def _rust_lld(request, found, path_dirs, cache):
    """rust-lld: where rustc's injected -B said, else on PATH (rustc puts
    <sysroot>/lib/rustlib/<host>/bin there), else, for the commands only, where
    `rustc --print sysroot` says. A link rustc did not make never runs rustc:
    rustup would resolve a toolchain for that directory, maybe download one."""
    if request is not None and request.rust_lld and os.access(request.rust_lld, os.X_OK):
        return request.rust_lld
    if found.get("rust-lld"):
        return found["rust-lld"]
    if request is not None:
        return None
    return _cached_sysroot_rust_lld(path_dirs, cache)


def _python_linker():
    """linkwrap-ld: the console script installed next to the one running now."""
    import sys
    for d in (os.path.dirname(os.path.abspath(sys.argv[0])), os.path.dirname(sys.executable)):
        p = os.path.join(d, "linkwrap-ld")
        if os.access(p, os.X_OK):
            return p
    return None


# --- versions, cached ------------------------------------------------------

def _load_cache():
    return cache_mod.load("linkers.marshal", _CACHE_FORMAT)


def _store_cache(data):
    cache_mod.store("linkers.marshal", data)


def _stamp(path):
    st = _stat(path)
    if st is None:
        raise FileNotFoundError(2, "No such file or directory", path)
    return (st[3], st[4])  # st_size, st_mtime_ns


def _with_versions(found: dict, cache: dict) -> dict:
    versions = cache.setdefault("versions", {})
    dirty = cache.pop("dirty", False)
    stamps, ask = {}, []
    for name, path in found.items():
        try:
            stamps[name] = _stamp(path)
        except OSError:
            continue
        entry = versions.get(f"{name}\0{path}")
        if entry is None or tuple(entry[0]) != stamps[name]:
            ask.append(name)
    # A cold cache (a new machine, a linker upgraded) asks every linker at once: the first link of
    # a fresh install waits for the slowest `--version`, not for their sum.
    texts = version_texts({name: found[name] for name in ask}) if ask else {}  # warm: no subprocess import
    result = {}
    for name, stamp in stamps.items():
        key = f"{name}\0{found[name]}"
        if name in texts:
            versions[key] = (stamp, parse_version(name, texts[name]), texts[name])
            dirty = True
        entry = versions[key]
        result[name] = LinkerInfo(name, found[name], entry[1], entry[2])
    if dirty:
        _store_cache(cache)
    return result


def version_texts(paths: dict) -> dict:
    """{name: path} -> {name: the first line each prints for its version}, the linkers asked together."""
    import subprocess  # cold path only: the cache answers warm links
    out, running = {}, []
    for name, path in paths.items():
        if name == "python":
            out[name] = version_text(name, path)
            continue
        try:
            running.append((name, subprocess.Popen(_version_cmd(name, path), stdout=subprocess.PIPE,
                                                   stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                                   env={**os.environ, "LC_ALL": "C"})))
        except OSError:
            out[name] = ""
    for name, proc in running:
        try:
            text, _ = proc.communicate(timeout=10)
        except subprocess.SubprocessError:
            proc.kill()
            proc.wait()
            text = b""
        out[name] = _first_line(text)
    return out


def _version_cmd(name, path):
    return [path, "-flavor", "gnu", "--version"] if name == "rust-lld" else [path, "--version"]


def _first_line(out: bytes) -> str:
    lines = out.decode("utf-8", "replace").strip().splitlines()
    return lines[0].strip() if lines else ""


def version_text(name: str, path: str) -> str:
    """The first line the linker prints for its version ('' when it won't say)."""
    import subprocess  # cold path only: the cache answers warm links
    if name == "python":
        from linkwrap import __version__
        return f"linkwrap.ld {__version__}"
    try:
        out = subprocess.run(_version_cmd(name, path), capture_output=True, timeout=10, stdin=subprocess.DEVNULL,
                             env={**os.environ, "LC_ALL": "C"}).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    return _first_line(out)


# One pattern per linker, from the version strings in shared/reference/linkers.md.
_VERSION_PATTERNS = {
    "mold": r"^mold (?:\(sold\) )?(\d+(?:\.\d+)+)",
    "wild": r"^Wild (?:version )?(\d+(?:\.\d+)+)",
    "lld": r"\bLLD (\d+\.\d+(?:\.\d+)?)",
    "rust-lld": r"\bLLD (\d+\.\d+(?:\.\d+)?)",
    "bfd": r"^GNU ld .*?(\d+\.\d+(?:\.\d+)?)(?:[-.\w]*)\s*$",
    "gold": r"^GNU gold .*?\)\s+(\d+\.\d+)",
    "python": r"^linkwrap\.ld (\d+(?:\.\d+)+)",
}


def parse_version(name: str, text: str):
    """'mold 1.10.1 (compatible with GNU ld)' -> (1, 10, 1); None when unknown.

    For gold the binutils release (2.40) is returned, not gold's own 1.16.
    """
    import re
    if name == "gold":
        m = re.search(r"Binutils[^)]*?(\d+\.\d+(?:\.\d+)?)\)", text) or re.search(r"version (\d+\.\d+)", text)
    else:
        m = re.search(_VERSION_PATTERNS.get(name, r"(\d+\.\d+(?:\.\d+)?)"), text)
    if not m:
        return None
    return tuple(int(x) for x in m.group(1).split("."))


def _cached_sysroot_rust_lld(path_dirs, cache):
    """Ask `rustc --print sysroot` once per rustc binary (cached like versions)."""
    rustc = _which_any(("rustc",), path_dirs)
    if not rustc:
        return None
    sysroots = cache.setdefault("sysroot", {})
    try:
        stamp = _stamp(rustc)
    except OSError:
        return None
    entry = sysroots.get(rustc)
    if entry is None or tuple(entry[0]) != stamp:
        import subprocess
        try:
            root = subprocess.run([rustc, "--print", "sysroot"], capture_output=True, timeout=20,
                                  stdin=subprocess.DEVNULL).stdout.decode().strip()
            host = subprocess.run([rustc, "-vV"], capture_output=True, timeout=20,
                                  stdin=subprocess.DEVNULL).stdout.decode()
            triple = next((l.split(":", 1)[1].strip() for l in host.splitlines() if l.startswith("host:")), "")
        except (OSError, subprocess.SubprocessError):
            return None
        candidate = os.path.join(root, "lib", "rustlib", triple, "bin", "rust-lld") if root and triple else ""
        entry = (stamp, candidate)
        sysroots[rustc] = entry
        cache["dirty"] = True
    return entry[1] if entry[1] and os.access(entry[1], os.X_OK) else None


def shim_dir(info: LinkerInfo) -> str:
    """A private directory of symlinks that makes the cc driver run `info`.

    gcc 12 has no --ld-path and rejects -fuse-ld=wild (reference §5), so the
    driver gets `-B<this dir>` first; it finds `ld` (or `ld.<x>` for any
    -fuse-ld=<x>) here. Only symlinks live here because gcc adds every -B dir
    as a -L dir too. Created atomically so concurrent links never see half.
    """
    try:
        return _shim_in(os.path.join(paths.cache_dir(), "shim"), info)
    except paths.UntrustedDir as e:
        _refuse(e)
    except OSError:
        pass  # a cache dir that cannot be written (read-only, full) must not turn the choice off
    tmp = os.path.join(os.environ.get("TMPDIR") or "/tmp", f"linkwrap-{os.geteuid()}")
    try:
        return _shim_in(os.path.join(tmp, "shim"), info, own_from=tmp)
    except paths.UntrustedDir as e:
        _refuse(e)


# The names a driver looks for under -B. wild >= 0.9 picks its platform from argv[0]'s stem:
# never name it ld64*, link, wasm-ld.
SHIM_NAMES = ("ld", "ld.lld", "ld.bfd", "ld.gold", "ld.mold", "ld.wild")


def _shim_in(root, info, own_from=None) -> str:
    """The shim for info under root, made when missing or stale. Every directory on the way is
    checked (paths.open_trusted_dir): the driver runs whatever `ld` the shim holds. /tmp is shared:
    there $TMPDIR/linkwrap-<uid> (own_from) must be ours, whoever made that name first."""
    import zlib  # a builtin: hashlib costs milliseconds to import
    name = f"{info.name}-{zlib.crc32(info.path.encode()):08x}"
    d = os.path.join(root, name)
    try:
        fd = paths.open_trusted_dir(d, own_from=own_from)
    except FileNotFoundError:
        fd = None
    if fd is not None:
        try:
            if _points_at(fd, info.path):
                return d
        finally:
            os.close(fd)
    dfd = paths.open_trusted_dir(root, create=True, own_from=own_from)
    try:
        _make_shim(dfd, name, info.path)
    finally:
        os.close(dfd)
    return d


def _make_shim(dfd, name, target) -> None:
    """Shim `name` in the directory of dfd, made aside and renamed: concurrent links never see half."""
    tmp = f"{name}.{os.getpid()}.tmp"
    try:
        os.mkdir(tmp, 0o700, dir_fd=dfd)
    except FileExistsError:
        pass  # left by a link of this pid that died: completed
    tfd = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
    try:
        for n in SHIM_NAMES:
            try:
                os.symlink(target, n, dir_fd=tfd)
            except FileExistsError:
                pass
    finally:
        os.close(tfd)
    try:
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except OSError:
        # Another link made it first (or an old one is stale): keep a correct one.
        import shutil
        if not _points_at(dfd, target, name):
            shutil.rmtree(name, dir_fd=dfd, ignore_errors=True)
            try:
                os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except OSError:
                pass
        shutil.rmtree(tmp, dir_fd=dfd, ignore_errors=True)


def _points_at(dfd, path, name="") -> bool:
    """The shim (the directory of dfd, or its entry name) has the `ld` symlink to path that _make_shim
    makes. One readlink: two realpath()s (an lstat per component of both paths) cost a tenth of a
    link's choice."""
    try:
        return os.readlink(os.path.join(name, "ld"), dir_fd=dfd) == path
    except OSError:  # no such shim, or its `ld` is not a symlink: made anew
        return False


def _refuse(e):
    """The driver runs whatever `ld` the shim holds: never one another user could have put there."""
    from linkwrap import faults
    from linkwrap.errors import LinkwrapError
    faults.warn_once("unsafe-shim", f"{e.directory} can be written by other users: linking as asked "
                                    "until it is removed (linkwrap makes its own directories 0700)")
    raise LinkwrapError(str(e))
