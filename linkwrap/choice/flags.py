"""Which flags the chosen linker gets: --no-fork where no warm server reaps a forked worker,
--threads capped at the usable CPUs, wild's --mmap-output-file where it buffers, never a flag the
detected version rejects, and never one over the caller's own (docs/policy.md 3). Pure."""
from linkwrap.choice.rules import SINCE, WILD_BTRFS_BUFFERS_SINCE, WILD_BTRFS_MMAP_FIXED, _at_least, _v


def _has(info, flag) -> bool:
    since = SINCE[flag].get(info.name)
    return since is not None and info.version is not None and tuple(info.version) >= since


def _callers_flags(request) -> frozenset:
    """The caller's own linker flags, each without its value ("--threads=1" -> "--threads")."""
    from linkwrap.request.args import linker_flags
    return _names(linker_flags(request.args))


def _names(flags) -> frozenset:
    names = (f.split("=", 1)[0] for f in flags)
    return frozenset("-" + n if n[:1] == "-" and n[:2] != "--" else n for n in names)  # -threads = --threads


_CALLERS_THREADS = ("--threads", "--no-threads", "--thread-count")


_CALLERS_FORK = ("--fork", "--no-fork")


def _flags(info, probe, reasons, callers=frozenset(), reaps=False, extra=frozenset()) -> list:
    """The flags linkwrap adds for this linker; extra: the names of the configured extra_flags
    (added after these: they can still change what a fork means)."""
    flags = []
    if info.version is None and info.name in ("mold", "wild", "lld", "rust-lld"):
        reasons.append(f"{info.name}'s version is unknown: no version-gated flags")
        return flags
    name, v = info.name, _v(info.version)
    if name in SINCE["--no-fork"] and callers.intersection(_CALLERS_FORK):
        reasons.append(f"the command line says {'/'.join(sorted(callers.intersection(_CALLERS_FORK)))}: kept")
    elif name in SINCE["--no-fork"]:
        if not _has(info, "--no-fork"):
            reasons.append(f"{info.label} has no --no-fork (needs >= {_v(SINCE['--no-fork'][name])})")
        elif not reaps:
            flags.append("--no-fork")
            reasons.append(f"--no-fork: {name} forks by default, and this entry point (a process per link) "
                           "cannot wait for its worker: its time and memory would be lost")
        elif not _fork_ends_with_output(info, callers | extra, flags, reasons):
            flags.append("--no-fork")
        else:
            reasons.append(f"{name} forks: its worker is reaped after the answer (time and memory stay honest)")
    cpus = probe.cpus
    if name in SINCE["--threads="] and callers.intersection(_CALLERS_THREADS):
        reasons.append(f"the command line sets {'/'.join(sorted(callers.intersection(_CALLERS_THREADS)))}: "
                       "thread count kept")
    elif name in SINCE["--threads="]:
        if cpus is None or cpus < 1:
            reasons.append("CPUs available unknown: thread count left to the linker")
        elif _has(info, "--threads="):
            flags.append(f"--threads={cpus}")
            reasons.append(f"--threads={cpus}: the CPUs this process may use")
        else:
            reasons.append(f"{info.label} has no --threads=N (needs >= {_v(SINCE['--threads='][name])})")
    elif name == "bfd":
        reasons.append(f"GNU ld {v} has no --threads: single-threaded")
    if name == "wild":
        _wild_mmap(info, probe, reasons, flags)
    return flags


def _fork_ends_with_output(info, callers, flags, reasons) -> bool:
    """Whether the forking linker's first process ends only once every output is written (the
    link's end, which the answer waits for). mold >= 2.33 with --separate-debug-file and --detach
    (its default) lets it end before the debug file is written: --no-detach where the caller
    said nothing, else (the caller's own --detach) False. callers: the flags' names, the
    configured extra_flags' included. A linker response file (-Wl,@file) is not read here: it may
    hold either, so False."""
    files = sorted(n for n in callers if n[:1] == "@")
    if files:
        reasons.append(f"--no-fork: the linker reads {files[0]}, which may make its first process end "
                       "before every output is written")
        return False
    if info.name != "mold" or "--separate-debug-file" not in callers:
        return True
    if "--no-detach" in callers:
        return True
    if "--detach" in callers:
        reasons.append("--no-fork: the command line says --detach, so mold's first process would end "
                       "before its separate debug file is written")
        return False
    if _has(info, "--no-detach"):
        flags.append("--no-detach")
        reasons.append("--no-detach: mold would end before its separate debug file is written")
    return True


def _wild_mmap(info, probe, reasons, flags):
    fs = probe.fs
    if fs != "btrfs":
        return
    kernel = probe.kernel
    if kernel is not None and tuple(kernel[:2]) >= WILD_BTRFS_MMAP_FIXED:
        reasons.append(f"btrfs with kernel {_v(kernel)} (>= 7.2): wild mmaps its output by itself")
        return
    if _has(info, "--mmap-output-file") and not _at_least(info.version, WILD_BTRFS_BUFFERS_SINCE):
        reasons.append(f"{info.label} mmaps its output on btrfs by itself "
                       f"(wild buffers it there from {_v(WILD_BTRFS_BUFFERS_SINCE)} on)")
        return
    k = "unknown kernel" if kernel is None else f"kernel {_v(kernel)} (< 7.2)"
    if _has(info, "--mmap-output-file"):
        flags.append("--mmap-output-file")
        reasons.append(f"--mmap-output-file: wild buffers its output on btrfs with {k}; "
                       "forcing mmap cut 18-37 % of its link time")
    else:
        reasons.append(f"{info.label} has no --mmap-output-file (needs >= 0.7)")
