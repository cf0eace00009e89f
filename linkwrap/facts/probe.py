"""PROBE: the facts that decide what is fast and safe for one link -> Probe.

Input: a LinkRequest (request/args.py). Output: a Probe record (below), gathered here from
filesystems.py (where the output goes), cgroups.py (what this process may use), output_file.py (the
existing output: holders, page cache) and the machine facts below (kernel, memory, THP, jobserver,
input size). One small function per fact. None needs root; each may answer None (unknown); none may
raise or slow the link (all together <= 2 ms warm, benchmarks/bench_probe.py). Standard library
only, and only cheap modules: foreign calls (_ctypes, ~0.5 ms to set up) happen only for
cached_fraction of outputs of at least CACHE_PROBE_MIN_BYTES; ctypes itself (1.5-3 ms) only for the
mincore fallback (Linux < 6.5) and the statfs fallback (no /proc).
"""
import os
from linkwrap.records import record
from linkwrap.request import inputs
from linkwrap.facts.procfs import _read, _try
from linkwrap.facts.filesystems import existing_dir, filesystem, is_local, output_path, read_mountinfo
from linkwrap.facts.cgroups import cgroup_dirs, cpus, group_used_kb, memory_group
from linkwrap.facts.output_file import NO_OUTPUT, OutputFacts, UNKNOWN_OUTPUT, cached_later, output_facts


class Probe(record("Probe", [
    "fs",               # str | None: "btrfs", "ext4", "xfs", "tmpfs", "overlay", "nfs", ...
    "fs_options",       # str | None: mount options (e.g. "rw,relatime,compress=zstd:3")
    "fs_local",         # bool | None: False for nfs/cifs/fuse-like network filesystems
    "kernel",           # tuple[int, ...] | None: (6, 18, 44)
    "output",           # OutputFacts
    "input_bytes",      # int | None: total size of the input files
    "cpus",             # int | None: CPUs this process may use (affinity and cgroup cpu.max)
    "mem_available_mb", # int | None
    "mem_limit_mb",     # int | None: cgroup memory.max, None when unlimited
    "thp",              # str | None: transparent huge pages mode ("always", "madvise", "never")
    "jobserver",        # bool: CARGO_MAKEFLAGS or MAKEFLAGS carries a jobserver
    "mem_used_mb",      # int | None: what the limiting cgroup holds that reclaim cannot take back
    "mem_group",        # str | None: the cgroup directory whose memory limit applies
    "small_inputs",     # bool | None: a small C link (small_inputs(): few, small inputs, libc only)
], defaults=(None,))):
    """Facts about the machine and the output path, each possibly None."""
    __slots__ = ()


# Facts no choice depends on, only the record, the memory prediction and admission: a link that
# admission does not hold back learns them while its linker runs (snapshot(later=True), complete()).
LATER = ("input_bytes", "mem_available_mb", "thp", "jobserver", "mem_used_mb")
# And, with later=True, the output's cached_fraction where no choice can read it (another name for
# it, or held by another process: written fresh whatever it caches; output_file.output_facts()).


def snapshot(request, environ=None, later=False) -> Probe:
    """Every fact for one link. Never raises: a fact that fails is None.

    later=True leaves the LATER facts None, for complete() to fill in."""
    environ = os.environ if environ is None else environ
    mountinfo = _try(read_mountinfo)
    path = _try(output_path, request)
    where = _try(existing_dir, path) if path else None
    fs = _try(filesystem, where, mountinfo) if where else None
    fs_name, fs_options = fs if fs else (None, None)
    cgroups = _try(cgroup_dirs, mountinfo) if mountinfo else None
    group = _try(memory_group, cgroups) if cgroups else None
    if later:
        return Probe(fs=fs_name, fs_options=fs_options, fs_local=_try(is_local, fs_name) if fs_name else None,
                     kernel=_try(kernel_version),
                     output=(_try(output_facts, path, False) or UNKNOWN_OUTPUT) if path else UNKNOWN_OUTPUT,
                     input_bytes=None, cpus=_try(cpus, cgroups), mem_available_mb=None,
                     mem_limit_mb=group[0] >> 20 if group else None, thp=None, jobserver=None, mem_used_mb=None,
                     mem_group=group[1] if group else None, small_inputs=_try(small_inputs, request))
    used_kb = _try(group_used_kb, group[1]) if group else None
    return Probe(
        fs=fs_name,
        fs_options=fs_options,
        fs_local=_try(is_local, fs_name) if fs_name else None,
        kernel=_try(kernel_version),
        output=(_try(output_facts, path) or UNKNOWN_OUTPUT) if path else UNKNOWN_OUTPUT,
        input_bytes=_try(input_bytes, request),
        cpus=_try(cpus, cgroups),
        mem_available_mb=_try(mem_available_mb),
        mem_limit_mb=group[0] >> 20 if group else None,
        thp=_try(thp_mode),
        jobserver=bool(_try(jobserver, environ)),
        mem_used_mb=used_kb >> 10 if used_kb is not None else None,
        mem_group=group[1] if group else None,
        small_inputs=_try(small_inputs, request),
    )


def complete(facts, request, environ=None) -> Probe:
    """facts (snapshot(later=True)) with the LATER facts learnt now."""
    environ = os.environ if environ is None else environ
    used_kb = _try(group_used_kb, facts.mem_group) if facts.mem_group else None
    path = _try(output_path, request) if facts.output.cached_fraction is None and facts.output.exists else None
    out = (_try(cached_later, facts.output, path) or facts.output) if path else facts.output
    return facts._replace(output=out, input_bytes=_try(input_bytes, request), mem_available_mb=_try(mem_available_mb),
                          thp=_try(thp_mode), jobserver=bool(_try(jobserver, environ)),
                          mem_used_mb=used_kb >> 10 if used_kb is not None else None)


# --- the machine -----------------------------------------------------------

def kernel_version(release=None):
    """'6.18.44-fc-v669' -> (6, 18, 44); at most three numbers; None if none."""
    if release is None:
        release = os.uname().release
    numbers = []
    for part in release.split(".")[:3]:
        digits = part[:len(part) - len(part.lstrip("0123456789"))]
        if not digits:
            break
        numbers.append(int(digits))
        if len(digits) < len(part):  # "44-fc-v669": the rest is not a version
            break
    return tuple(numbers) or None


def mem_available_mb():
    """MemAvailable from /proc/meminfo (Linux >= 3.14), in MiB."""
    kb = mem_available_kb()
    return None if kb is None else kb // 1024


def mem_available_kb():
    """MemAvailable from /proc/meminfo (Linux >= 3.14), in KiB."""
    text = _read("/proc/meminfo", limit=4096)  # it is the third line
    if not text:
        return None
    at = text.find("MemAvailable:")
    if at < 0:
        return None
    return int(text[at + 13:text.index("kB", at)])


def thp_mode(text=None):
    """The bracketed word of transparent_hugepage/enabled: always, madvise or never."""
    if text is None:
        text = _read("/sys/kernel/mm/transparent_hugepage/enabled")
    if not text or "[" not in text:
        return None
    return text[text.index("[") + 1:text.index("]")]


def jobserver(environ):
    """Whether make or cargo handed us a jobserver (its slots are the build's CPUs)."""
    for name in ("CARGO_MAKEFLAGS", "MAKEFLAGS"):
        flags = environ.get(name, "")
        if "--jobserver-auth=" in flags or "--jobserver-fds=" in flags:
            return True
    return False


def input_bytes(request):
    """Total size of the input files on the command line; missing ones are skipped. Each as this
    link first stat()ed it (request/inputs.py: the LTO check, small_inputs(), the saved copy)."""
    total = 0
    cwd = request.cwd or ""
    for name in request.inputs:
        st = inputs.stat(os.path.join(cwd, name))
        if st is not None:
            total += st.st_size
    return total


# A small C link: at most this many input files of at most this many bytes together, and no library
# but the C library's own. There the fast linkers' fixed costs (mold's threads and fork, lld's
# libLLVM) outweigh what they save, and GNU ld is as fast alone and faster beside other links
# (benchmarks/bench_small.py, docs/policy.md 1.3). Not with libstdc++, nor a big shared library:
# GNU ld took 3x mold's time on a C++ hello world, 1.25x on a C one with -lcrypto.
SMALL_INPUT_BYTES = 512 << 10   # mold's crossover here: 1.07x GNU ld's time at 0.5 MB, 0.87x at 1 MB
SMALL_INPUT_FILES = 64
SMALL_LIBRARIES = frozenset(("c", "m", "pthread", "dl", "rt", "gcc", "gcc_s"))
# Arguments after which the linker reads archives the command line does not name.
_STATIC = ("-static-libstdc++", "-static-libgcc", "-static-libasan", "-static-libtsan", "-static-libubsan",
           "-static-liblsan", "-Bstatic", "-dn", "-non_shared")


def small_inputs(request):
    """Whether this is a small C link: at most SMALL_INPUT_FILES files on the command line, under
    SMALL_INPUT_BYTES together, and no -l library but SMALL_LIBRARIES. None (unknown) where the
    linker reads more than the command line shows: a C++ driver (libstdc++), another library, a
    static link (libc.a), -static-lib*, -Bstatic, a linker script (-T: its INPUT and GROUP); or
    when an input cannot be stat()ed.

    Decides a choice, so it comes before the link, and stops at its first answer: the inputs'
    count, their sizes (a big link is found big within its first few), then one pass over the
    arguments of what is left: a small link's few."""
    names = request.inputs
    if not names:
        return None
    if len(names) > SMALL_INPUT_FILES:
        return False
    if request.kind in ("static", "static-pie") or "++" in os.path.basename(request.driver or ""):
        return None
    cwd = request.cwd or ""
    total = 0
    for name in names:
        st = inputs.stat(os.path.join(cwd, name))
        if st is None:
            return None
        total += st.st_size
        if total >= SMALL_INPUT_BYTES:
            return False
    it = iter(request.args)
    for a in it:
        if a[:2] == "-l":
            if (a[2:] or next(it, "")) not in SMALL_LIBRARIES:
                return None
        elif _unseen(a) or (a[:4] == "-Wl," and any(_unseen(p) for p in a[4:].split(","))) or \
                (a == "-Xlinker" and _unseen(next(it, ""))):
            return None
    return True


def _unseen(option) -> bool:
    """Whether the linker, after this option, reads files the command line does not name: static
    archives, or a linker script (its INPUT and GROUP)."""
    return option in _STATIC or option[:2] == "-T" or option.startswith("--script")
