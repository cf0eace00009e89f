"""DIRECT: start the chosen linker itself, without the cc driver and collect2 in between.

Between the build and the linker sit two processes, the driver (cc) and, for
gcc, collect2; on a small link they cost about as much as the linker
(shared/reference/measurements.md, "The driver hop"). What they add to the
command line depends only on the driver and on the arguments that are not
inputs, so it is learnt once from `<driver> -### <skeleton>`:

    skeleton = the caller's flags as they are (-pie, -nodefaultlibs, -m64…)
             + one placeholder input, one placeholder -L, a placeholder -o

gcc prints the collect2 line, clang the ld line. In that line the placeholder
input is where gcc puts, in order, every input file, -l, -Wl, and -Xlinker
argument (its %o), the placeholder -L where every -L goes (%{L*}), the
placeholder output where -o goes. That line, minus the LTO plugin arguments
collect2 would hand to the linker, is cached per driver identity (real
path, device, inode, size, mtime), skeleton and the environment the driver reads
(linkers.marshal's way: a marshal file in the cache directory).

Anything the expansion cannot be trusted for keeps the driver: LTO (-flto*, an
input with LTO sections, plugin options), -v, -###, -print-*, -save-temps,
-x, -specs, the caller's own -B, source files, a -### output that does not
look as expected. A direct start that fails is run once more through the
driver (pipeline.py), so an LTO archive, which is not looked into, still links.
"""
import os

from linkwrap import cache as cache_mod
from linkwrap.request.args import SOURCE_SUFFIXES

_CACHE = "direct.marshal"
_FORMAT = 1
_MAX_ENTRIES = 64

# Placeholders: absolute paths under a directory that exists nowhere, so that
# no other argument of the expansion can contain them by chance.
_MARK = "/linkwrap-direct-placeholder/"
_IN = _MARK + "in.o"
_LDIR = _MARK + "L"
_OUT = _MARK + "out"
_LINK_OUT = _MARK + "link-out"  # the -o a link's own path takes in a split kept for the next link

# What the driver reads from the environment to build the line (gcc's and clang's manuals).
_ENV_KEYS = ("PATH", "COMPILER_PATH", "LIBRARY_PATH", "GCC_EXEC_PREFIX", "GCC_ROOT", "GCC_COMPARE_DEBUG",
             "LD_RUN_PATH", "CCC_OVERRIDE_OPTIONS", "CLANG_DEFAULT_LINKER")

# Driver options whose value is the next argument; kept together in the skeleton.
_PAIRED = frozenset("-u -z -T -e -Xassembler -Xpreprocessor -isystem -include -imacros -MF -MT -MQ "
                    "--sysroot -target --target -arch".split())
# Options that make the expansion untrustworthy or the command not a plain link.
_DRIVER_ONLY = ("-flto", "-fwhopr", "-fuse-linker-plugin", "-v", "-###", "-print-", "-dump", "-save-temps",
                "-x", "-c", "-S", "-E", "-specs", "--specs", "-wrapper", "-B", "--ld-path", "-fuse-ld",
                "-Wl,-plugin", "-Xlinker", "--help", "--version", "-time", "-fdump", "-pipe", "-combine")


# This process's last split() (its key, its result), and the lines learn() found, by key: the cache
# file read once, not per link (the key names the driver's file by inode, size and mtime).
_split = None
_lines = {}


class NotDirect(Exception):
    """Why this link keeps the driver (a sentence for explain)."""


def command(request, decision, link_path, environ=os.environ) -> list:
    """The linker's own command line for this link, as the driver would have run it.

    Raises NotDirect with the reason when the driver must run it.
    """
    linker = decision.linker
    if linker is None:
        raise NotDirect("linked as asked: the driver runs it")
    if linker.name == "python" and decision.instead is None:
        # (a patch it tries, with a full linker standing by, starts directly: it is the one link of
        # linkwrap's own linker whose few ms the driver and collect2 would double; in_process.py)
        raise NotDirect("linkwrap's own linker is started through the driver")
    if environ.get("LINKWRAP_DIRECT", "1") in ("0", "off", "no"):
        raise NotDirect("LINKWRAP_DIRECT=0")
    global _split
    from linkwrap.request import args as args_mod
    # split() is a pure function of these: a server's child that served the same link (or a spare
    # that rehearsed it) finds the answer here, but for the name of rustc's own directory
    # (args.rustc_temp_dir()), new every link, which split() only passes on.
    tmp = args_mod.rustc_temp_dir(request.args)
    shape = args_mod.renamed(request.args, tmp, "\0") if tmp else request.args
    # Split for a placeholder output, not link_path: the rehearsal links to the output's own name,
    # the link to its private one, and split() only passes the -o's file on (output below).
    key = (shape, bool(link_path), tuple(decision.linker_flags), tuple(decision.driver_flags))
    if _split is not None and _split[0] == key and (_split[2] == tmp or not any(_split[2] in a for a in request.args)):
        # (an argument that still names the kept link's rustc directory names it for itself: split anew)
        skeleton, items, libdirs, output = _split[1]
        was = _split[2]
        if was != tmp:
            items, libdirs = list(args_mod.renamed(items, was, tmp)), list(args_mod.renamed(libdirs, was, tmp))
    else:
        body = args_mod.with_output(request.args, _LINK_OUT) if link_path else list(request.args)
        body += [f"-Wl,{f}" for f in decision.linker_flags]
        body += list(decision.driver_flags)
        skeleton, items, libdirs, output = split(body)
        _split = (key, (skeleton, items, libdirs, output), tmp)
    if output == _LINK_OUT:
        output = link_path
    if output is None:
        raise NotDirect("no -o")
    objects = [path for path in items if path[:1] != "-" and path.endswith(".o")]
    if "-plugin" not in "\0".join(request.args):
        # rustc's codegen units are LLVM machine code but under -C linker-plugin-lto, which always
        # passes the plugin's -plugin-opt= options: without one none is looked at, and a Rust link's
        # hundreds of objects cost no stat() before the linker (issue 36 item 6). Were one bitcode
        # after all, the direct start fails and the driver links it (pipeline.py), as for an archive.
        objects = [path for path in objects if not path.endswith(".rcgu.o")]
    found = lto_input(objects, request.cwd)
    if found is not None:
        raise NotDirect(lto_reason(found))
    template = learn(request.driver, skeleton, environ)
    from linkwrap.facts.linkers import shim_dir
    out = [os.path.join(shim_dir(linker), "ld")]
    for a in template:
        if a == _IN:
            out += items
        elif a == "-L" + _LDIR:
            out += ["-L" + d for d in libdirs]
        elif a == _OUT:
            out.append(output)
        else:
            out.append(a)
    return out


def split(args):
    """-> (skeleton, items, libdirs, output): the driver's view of a link command line.

    items: what gcc passes on in order (inputs, -l, -Wl and -Xlinker pieces);
    skeleton: every other argument as given, with placeholders for those.
    Raises NotDirect for what the expansion cannot be trusted with.
    """
    skeleton, items, libdirs, output = [], [], [], None
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        if a[:1] != "-":  # an input (most arguments): no option below starts otherwise
            dot = a.rfind(".")
            if dot > a.rfind("/") and a[dot + 1:] in SOURCE_SUFFIXES:
                raise NotDirect(f"{a} is compiled by the driver")
            items.append(a)
            i += 1
            continue
        nxt = args[i + 1] if i + 1 < n else None
        if a == "-o" or (a.startswith("-o") and len(a) > 2):
            if a == "-o":
                if nxt is None:
                    raise NotDirect("-o without a file")
                output, i = nxt, i + 2
            else:
                output, i = a[2:], i + 1
            continue
        if a == "-L" or a.startswith("-L"):
            if a == "-L":
                if nxt is None:
                    raise NotDirect("-L without a directory")
                libdirs.append(nxt)
                i += 2
            else:
                libdirs.append(a[2:])
                i += 1
            continue
        if a == "-l":
            if nxt is None:
                raise NotDirect("-l without a library")
            items.append("-l" + nxt)
            i += 2
            continue
        if a.startswith("-l"):
            items.append(a)
        elif a.startswith("-Wl,"):
            pieces = a[4:].split(",")
            if "" in pieces or any(p.startswith(("-plugin", "@")) for p in pieces):
                raise NotDirect(f"{a} is left to the driver")
            items += pieces
        elif a in _PAIRED:
            if nxt is None:
                raise NotDirect(f"{a} without a value")
            skeleton += [a, nxt]
            i += 2
            continue
        elif a == "-fno-use-linker-plugin":
            pass  # the plugin's arguments are dropped anyway: one cached line serves both
        elif a.startswith(_DRIVER_ONLY) or a == "-":
            raise NotDirect(f"{a} is left to the driver")
        else:
            skeleton.append(a)
        i += 1
    if items:
        skeleton.append(_IN)
    if libdirs:
        skeleton.append("-L" + _LDIR)
    skeleton += ["-o", _OUT]
    return skeleton, items, libdirs, output


def learn(driver, skeleton, environ=os.environ) -> tuple:
    """The driver's linker line for this skeleton, with placeholders; cached."""
    path = _which(driver, environ)
    if path is None:
        raise NotDirect(f"{driver} not found")
    # The file the driver's name leads to (through cc -> /etc/alternatives/cc -> gcc-12), by its real
    # path and its (device, inode, size, mtime): gcc finds its crt files, libgcc and collect2 from
    # where it really is, so two hard-linked copies of one toolchain (cp -al, rsync --link-dest, a
    # Nix store) are one inode that expands differently; an alternative switched to clang is another
    # file. A stale line here links another toolchain's files.
    real, st = _real(path)
    key = "\0".join((real, f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}", *skeleton, "\0",
                     *(f"{k}={environ.get(k, '')}" for k in _ENV_KEYS)))
    hit = _lines.get(key)
    if hit is None:
        cache = cache_mod.load(_CACHE, _FORMAT)  # not used if another user could have written it
        lines = cache.setdefault("lines", {})
        hit = lines.get(key)
        if hit is None:
            hit = _expand(path, skeleton, environ)
            if len(lines) >= _MAX_ENTRIES:
                lines.clear()  # drivers and flag sets change rarely: a full cache is stale
            lines[key] = hit
            cache_mod.store(_CACHE, cache)
        if len(_lines) >= _MAX_ENTRIES:
            _lines.clear()
        _lines[key] = hit
    if isinstance(hit, str):
        raise NotDirect(hit)
    return hit


def _real(path):
    """(real path, stat) of path: the kernel's name for an O_PATH fd of it, and that fd's fstat;
    os.path.realpath() lstat()s every component in Python (a third of the direct line's time)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (OSError, AttributeError):
        real = os.path.realpath(path)
        return real, os.stat(real)
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
        st = os.fstat(fd)
    except OSError:
        real = None
    finally:
        os.close(fd)
    if real is None or not real.startswith("/") or real.endswith(" (deleted)"):
        real = os.path.realpath(path)  # no /proc, or a file that is going
        return real, os.stat(real)
    return real, st


def _which(driver, environ):
    if "/" in driver:
        return os.path.abspath(driver) if os.access(driver, os.X_OK) else None
    for d in environ.get("PATH", os.defpath).split(os.pathsep):
        p = os.path.join(d or ".", driver)
        if os.access(p, os.X_OK) and not os.path.isdir(p):
            return p
    return None


def _expand(driver_path, skeleton, environ):
    """Run `<driver> -###`; -> the linker's arguments (tuple) or why not (str, cached too)."""
    import subprocess  # a cache miss only: once per driver and flag set
    env = {k: v for k, v in environ.items() if not k.startswith("LINKWRAP_")}
    env["LC_ALL"] = "C"
    try:
        p = subprocess.run([driver_path, "-###", *skeleton], stdin=subprocess.DEVNULL, capture_output=True,
                           env=env, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return f"{driver_path} -### failed: {e}"
    if p.returncode != 0:
        return f"{driver_path} -### exited {p.returncode}"
    return parse_expansion(p.stderr.decode("utf-8", "surrogateescape"), skeleton)


def parse_expansion(text, skeleton):
    """The linker arguments in `-###` output (gcc: the collect2 line; clang: the ld line)."""
    import shlex
    commands = []
    for line in text.splitlines():
        # Both print each command they would run indented by one space; gcc quotes only
        # what needs it, clang quotes everything.
        if line.startswith(" ") and line.strip():
            try:
                commands.append(shlex.split(line))
            except ValueError:
                return "the driver's -### line does not parse"
    if len(commands) != 1:
        return f"the driver would run {len(commands)} commands"
    argv = commands[0]
    tool = os.path.basename(argv[0])
    if not (tool == "collect2" or tool == "ld" or tool.startswith("ld.") or tool.endswith("-ld")):
        return f"the driver runs {tool}, not a linker"
    out, i = [], 1
    while i < len(argv):
        a = argv[i]
        if a == "-plugin" or a == "-plugin-opt":
            i += 2  # LTO only: a link with LTO code keeps the driver
            continue
        if a.startswith(("-plugin=", "-plugin-opt=", "--plugin-opt=")):
            i += 1
            continue
        out.append(a)
        i += 1
    expected = {mark: int(mark in skeleton) for mark in (_IN, "-L" + _LDIR)}
    expected[_OUT] = 1
    for mark, count in expected.items():
        if out.count(mark) != count:
            return f"the driver's line does not keep {mark} once"
    if any(_MARK in a and a not in expected for a in out):
        return "the driver's line rewrites a placeholder"
    if "-o" not in out or out[out.index("-o") + 1] != _OUT:
        return "the driver's line has no -o"
    return tuple(out)


def lto_input(paths, cwd):
    """The first of paths that holds LTO code, or None.

    Each object's answer is kept by its identity (request/inputs.py): a relink reads only the
    objects that changed since, and stat()s the others once (that stat serves the probe and the
    saved copy too). 280 objects of a Rust link: 258 opens and 770 reads, ~4 ms, before."""
    from linkwrap.request import inputs
    stat, known, join = inputs.stat, inputs.known, os.path.join
    for path in paths:
        st = stat(path if path[:1] == "/" else join(cwd, path))
        if st is None:
            continue  # the linker will say so, as the driver's would
        found = known("lto", st)
        if found is None:
            found = _has_lto(path, cwd, learn=True)
        if found:
            return path
    return None


def lto_reason(path) -> str:
    return f"{path} holds LTO code: the driver's plugin links it"


def _has_lto(path, cwd, learn=False) -> bool:
    """An object file with LTO code (GCC's .gnu.lto_ sections, LLVM bitcode): the plugin's work.

    Reads the ELF header and the section-name table only. Archives are not looked
    into: an LTO archive makes the direct start fail, and the driver links it. learn: the answer
    is kept by the identity of the file read (its fstat: a file replaced since its stat() is
    kept as what was read).
    """
    if not path.endswith(".o"):
        return False
    try:
        fd = os.open(os.path.join(cwd, path), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False  # the linker will say so, as the driver's would
    try:
        found = _read_lto(fd)
        if learn:
            from linkwrap.request import inputs
            inputs.learn("lto", os.fstat(fd), found)
        return found
    except OSError:
        return False
    finally:
        os.close(fd)


def _read_lto(fd) -> bool:
    try:
        head = os.pread(fd, 64, 0)
        if head[:4] == b"BC\xc0\xde" or head[:4] == b"\xde\xc0\x17\x0b":
            return True
        if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            return False
        shoff = int.from_bytes(head[0x28:0x30], "little")
        shentsize = int.from_bytes(head[0x3A:0x3C], "little")
        shstrndx = int.from_bytes(head[0x3E:0x40], "little")
        if not shoff or shentsize != 64:
            return False
        sh = os.pread(fd, 64, shoff + shstrndx * 64)
        off = int.from_bytes(sh[0x18:0x20], "little")
        size = int.from_bytes(sh[0x20:0x28], "little")
        if os.pread(fd, 8, off + int.from_bytes(sh[0:4], "little")) == b".strtab\0":
            # LLVM's objects (rustc's, clang's) name their sections in the symbols' string table,
            # megabytes for a Rust codegen unit (4.6 ms a 150 MB link); GCC, the one that writes
            # .gnu.lto_ sections, keeps a .shstrtab of their own.
            return False
        names = os.pread(fd, min(size, 1 << 20), off)
        return b".gnu.lto_" in names  # LLVM's .llvmbc / .llvm.lto sit beside machine code
    except IndexError:
        return False
