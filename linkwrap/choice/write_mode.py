"""How the output is written: FRESH (a new inode, hard links keep the last good binary) or
IN_PLACE (only when every safety rule holds and it pays), with a reason per rule (docs/policy.md 2).
Pure: the output's facts come in as the probe's."""
from linkwrap.facts.output_file import CACHE_PROBE_MIN_BYTES
from linkwrap.choice.rules import IN_PLACE_SINCE, MIN_CACHED_FRACTION, NO_ETXTBSY, _v


IN_PLACE = "in-place"  # the linker may overwrite the existing inode: every hard link sees the new binary


FRESH = "fresh"        # a new inode: the old one, and every other name for it, stays untouched


def write_mode(request, probe, info, config, reasons) -> str:
    """IN_PLACE only when every condition holds and the linker gains from it; else FRESH.

    Each failed condition adds its own reason, so `linkwrap explain` lists all.
    """
    since = IN_PLACE_SINCE.get(info.name)
    if since is None or info.version is None or tuple(info.version) < since:
        why = "always writes a new file" if since is None else f"gains nothing in place (needs >= {_v(since)})"
        if since is not None and info.version is None:
            why = "has an unknown version"
        reasons.append(f"{info.label} {why} -> fresh")
        return FRESH
    if config is not None and not config.in_place:
        where = config.sources.get("in_place", "configuration")
        reasons.append(f"in_place = false in {where} -> fresh")
        return FRESH
    out = probe.output
    if out is None or out.exists is None:
        reasons.append("unknown whether the output exists -> fresh")
        return FRESH
    if not out.exists:
        reasons.append("no existing output -> fresh")
        return FRESH
    failed = _output_failures(out)
    kind = request.kind
    if kind in ("shared", "relocatable"):
        failed.append(f"output is {'-shared' if kind == 'shared' else '-r'}: the kernel does not "
                      "guard mapped libraries and objects")
    kernel = probe.kernel
    if kernel is None:
        failed.append("kernel version unknown")
    elif tuple(kernel[:2]) in NO_ETXTBSY:
        failed.append(f"kernel {_v(kernel)} lets writes reach a running executable (6.11/6.12)")
    local = probe.fs_local
    fs = probe.fs or "filesystem"
    if local is None:
        failed.append("unknown whether the filesystem is local")
    elif not local:
        failed.append(f"{fs} is not a local filesystem")
    cpus = probe.cpus
    if info.name == "wild" and cpus == 1:
        failed.append("wild with 1 thread always unlinks")
    if failed:
        reasons.extend(f"{f} -> fresh" for f in failed)
        return FRESH
    reasons.append(f"output is a lone, unheld, cached {fs} file on kernel {_v(kernel)} -> in-place")
    return IN_PLACE


def _output_failures(out) -> list:
    """What, in the existing output's own facts, rules an in-place write out."""
    if out.is_regular is False:
        # The probe opens only regular files: whether it is held or cached was never
        # looked at, and a directory's st_nlink counts its subdirectories.
        return ["output is not a regular file"]
    failed = [] if out.is_regular else ["output's type is unknown"]
    if out.nlink is None:
        failed.append("output's link count is unknown")
    elif out.nlink != 1:
        failed.append(f"output has nlink={out.nlink} (a hard link, e.g. Cargo's uplifted copy)")
    if out.held_by_others is None:
        failed.append("unknown whether another process holds the output")
    elif out.held_by_others:
        failed.append("another process holds, maps or runs the output")
    cached, unmeasured = out.cached_fraction, cache_not_measured(out)
    if cached is None and unmeasured:
        failed.append(f"output is {size_text(out.size)} ({unmeasured}): in place would save at most "
                      f"{_max_gain_ms(out.size):.2f} ms, and its page-cache share is not measured")
    elif cached is None:
        failed.append("share of the old output in the page cache unknown")
    elif cached < MIN_CACHED_FRACTION:
        # Rounded down: 49.6 % must not read as the 50 % that would pass.
        failed.append(f"only {int(cached * 100)}% of the old output is cached "
                      "(in place would read it back first)")
    return failed


# What in place saves on a warm output: 40-120 ms per GiB, an upper bound (seed 000).
MAX_GAIN_MS_PER_GIB = 120


def cache_not_measured(out):
    """Why probe.cached_fraction did not measure this output ("< 8 MiB", "not a
    regular file"), or None when it was measured or tried and failed."""
    if out is None or out.exists is not True:
        return None
    if out.is_regular is False:
        return "not a regular file"
    if out.size is not None and out.size < CACHE_PROBE_MIN_BYTES:
        return f"< {size_text(CACHE_PROBE_MIN_BYTES)}"
    return None


def _max_gain_ms(size) -> float:
    # Rounded up to 0.01 ms: an upper bound stays one.
    return -(-size * MAX_GAIN_MS_PER_GIB * 100 // (1 << 30)) / 100


def size_text(n) -> str:
    """Bytes for people, rounded down (8 MiB - 1 byte is "7.9 MiB", never "8.0 MiB")."""
    if n is None:
        return "of unknown size"
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            tenths = n * 10 >> shift
            return f"{tenths // 10} {unit}" if tenths % 10 == 0 else f"{tenths / 10:.1f} {unit}"
    return "1 byte" if n == 1 else f"{n} bytes"
