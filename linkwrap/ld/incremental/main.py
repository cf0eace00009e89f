"""`linkwrap ld --incremental ARGS...`: relink by patching when the state allows it, else a full
incremental link; the decision and its reason are kept beside the output (`last`, read by explain).

  --incremental          this mode
  --incremental-check    after the link, link again from scratch into the same layout (every chunk
                         at the capacity the state gives it) and compare the two outputs byte for
                         byte; a difference is an error (exit 1) naming the first differing offset
  --incremental-why      print the decision ("patched: ...", "full: <reason>") to stderr
  --incremental-stats    print the state file's size and the time of each step to stderr
  --incremental-patch-only
                         patch when the state allows it (exit 0); otherwise write nothing (the
                         output, the state and `last` as they were), print one line
                         "linkwrap-ld: incremental: cannot patch: <reason>" and exit CANNOT_PATCH:
                         the wrapper then links the output with its fastest full linker
                         (LINKWRAP_LD_INCREMENTAL=patch-only asks the same through the -B shim)
  --incremental-base-only --incremental-names=FILE
                         the full incremental link, but its bytes go only to the state's base
                         (<state dir>/base) and the output on disk is left alone: the wrapper builds
                         a base in the background from a link's saved inputs (hard links of the
                         files, at other paths). FILE names the inputs the state records, one per
                         line (or NUL-separated when it holds a NUL), one per file argument in
                         arg_paths() order: the next real relink matches its inputs by those names.
                         The state then describes the base, not the output on disk, so that relink
                         patches a copy of the base

-shared and -r outputs are linked in full every time (their state says so, and explain gives it
as the reason).
"""
import os
import sys
import time

from linkwrap.ld.incremental import where

FLAGS = ("--incremental", "--incremental-check", "--incremental-why", "--incremental-stats",
         "--incremental-patch-only", "--incremental-base-only")
NAMES = "--incremental-names="
# the exit status of --incremental-patch-only when the state allows no patch (nothing was written)
CANNOT_PATCH = where.CANNOT_PATCH


class CannotPatch(Exception):
    """--incremental-patch-only and no patch possible: str() is the reason."""


def wants(argv) -> bool:
    """--incremental on the command line, or LINKWRAP_LD_INCREMENTAL=1 in the environment (how the
    wrapper asks it of the linkwrap-ld its -B shim runs: a shim holds only symlinks)."""
    return any(a in FLAGS or a.startswith(NAMES) for a in argv) \
        or os.environ.get(where.ENV) in (where.FULL_OR_PATCH, where.PATCH_ONLY, where.BASE_ONLY)


def run(argv) -> int:
    prog = "linkwrap-ld"
    flags = {a for a in argv if a in FLAGS}
    env = os.environ.get(where.ENV)
    if env in (where.FULL_OR_PATCH, where.PATCH_ONLY, where.BASE_ONLY):
        flags.add("--incremental")
    if env == where.PATCH_ONLY:
        flags.add("--incremental-patch-only")
    names_file = next((a[len(NAMES):] for a in argv if a.startswith(NAMES)), None)
    names_map = None
    if env == where.BASE_ONLY:
        # the wrapper's background builder (bench/incremental_base.py): through the driver's -B shim,
        # so the saved copies' real names come as a map, not in arg_paths() order
        flags.add("--incremental-base-only")
        names_map = os.environ.get(where.NAMES_ENV)
        if not names_map:
            print(f"{prog}: {where.ENV}={where.BASE_ONLY} needs {where.NAMES_ENV}=FILE", file=sys.stderr)
            return 1
    rest = [a for a in argv if a not in FLAGS and not a.startswith(NAMES)]
    base_only = "--incremental-base-only" in flags
    if base_only and "--incremental-patch-only" in flags:
        print(f"{prog}: --incremental-base-only and --incremental-patch-only exclude each other", file=sys.stderr)
        return 1
    if base_only and not names_file and not names_map:
        print(f"{prog}: --incremental-base-only needs --incremental-names=FILE", file=sys.stderr)
        return 1
    from linkwrap.errors import LinkwrapError
    from linkwrap.ld.diag import Unsupported
    try:
        from linkwrap.ld.options import parse_args
        opts = parse_args(rest)
        if not opts.inputs:
            print(f"{prog}: no input files", file=sys.stderr)
            return 1
        if base_only:
            from linkwrap.ld.incremental import base
            paths = arg_paths(opts)
            names = base.read_map(names_map, paths) if names_map else base.read_names(names_file, len(paths))
            decision, stats = base.build(opts, paths, names)
        else:
            try:
                decision, stats = link(opts, patch_only="--incremental-patch-only" in flags)
            except CannotPatch as e:
                print(f"{prog}: incremental: cannot patch: {e}", file=sys.stderr)
                return CANNOT_PATCH
        if "--incremental-why" in flags:
            print(f"{prog}: incremental: {decision}", file=sys.stderr)
        if "--incremental-stats" in flags:
            for line in stats:
                print(f"{prog}: {line}", file=sys.stderr)
        if "--incremental-check" in flags and not base_only:
            diff = check(opts)
            if diff:
                print(f"{prog}: incremental check: {diff}", file=sys.stderr)
                return 1
        return 0
    except Unsupported as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    except LinkwrapError as e:
        for line in str(e).splitlines():
            print(f"{prog}: {line}" if not line.startswith(prog) else line, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug in this linker: one line, and linkwrap falls back
        import traceback
        tb = traceback.extract_tb(e.__traceback__)[-1]
        print(f"{prog}: internal error: {type(e).__name__}: {e} "
              f"(at {tb.filename.rsplit('/', 1)[-1]}:{tb.lineno})", file=sys.stderr)
        return 1


def arg_paths(opts):
    """The files the command line names, -l searched as parse searches them (no file is read)."""
    from linkwrap.ld.libraries import find_library
    out = []
    for a in opts.inputs:
        if a.kind == "file":
            out.append(a.name)
        elif a.kind == "lib":
            out.append(find_library(a.name, opts, a.static or opts.static, quiet=True) or f"-l{a.name}")
    return out


def link(opts, patch_only=False):
    """-> (decision, stats lines). Patches the output when it can; otherwise a full incremental
    link, or with patch_only CannotPatch (raised before anything is written)."""
    from linkwrap.ld.incremental import state as st
    t0 = time.perf_counter()
    stats = []
    if opts.relocatable or opts.shared:
        if patch_only:
            raise CannotPatch("-r and -shared outputs are linked in full")
        from linkwrap.ld.driver import link as full_link
        full_link(opts)
        why = "-r and -shared outputs are linked in full"
        st.save(opts.output, {"version": st.VERSION, "kind": "full-only", "why": why,
                              "fingerprint": st.fingerprint(opts)})
        _last(opts.output, f"full: {why}")
        return f"full: {why}", stats
    paths = arg_paths(opts)
    t1 = time.perf_counter()
    stats.append(f"{(t1 - t0) * 1000:8.1f} ms  the inputs' paths (-l searched)")
    state, why = st.load(opts.output)
    t0, t1 = t1, time.perf_counter()
    stats.append(f"{(t1 - t0) * 1000:8.1f} ms  read the state")
    if state is not None:
        from linkwrap.ld.incremental import relink
        new, why = relink.relink(opts, state, paths)
        if new is not None:
            st.pause("renamed")
            t2 = time.perf_counter()
            last = new["last"]
            stats.append(f"{(t2 - t1) * 1000:8.1f} ms  relink ({last['how']}): of {len(new['inputs'])} inputs "
                         f"{last['same_file']} the same files, {last['same_bytes']} the same bytes, "
                         f"{len(last['patched'])} patched")
            stats += [f"{ms:8.1f} ms    {label}" for label, ms in last.pop("steps", ())]
            size = st.save(opts.output, new)
            stats.append(f"{(time.perf_counter() - t2) * 1000:8.1f} ms  write the state ({size} bytes)")
            patched = new["last"]["patched"]
            decision = f"patched {len(patched)} input(s)" + (f": {', '.join(patched)}" if patched else "")
            _last(opts.output, decision)
            return decision, stats
    if patch_only:
        raise CannotPatch(why)
    from linkwrap.ld.incremental import full
    st.drop(opts.output)      # until the new output is in place, no state may describe it
    t, new = full.link(opts)
    new["args"] = paths
    t2 = time.perf_counter()
    size = st.save(opts.output, new)
    stats += [f"{ms:8.1f} ms  {label}" for label, ms in t.phases]
    stats.append(f"{(time.perf_counter() - t2) * 1000:8.1f} ms  write the state ({size} bytes)")
    decision = f"full: {why}"
    _last(opts.output, decision)
    return decision, stats


def _last(output, decision):
    """The decision, for explain: <state dir>/last (one line)."""
    from linkwrap.ld.incremental import state as st
    d = st._safe_dir(st.state_dir(output), True)
    if d is None:
        return
    tmp = os.path.join(d, f"last.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(decision + "\n")
        os.replace(tmp, os.path.join(d, "last"))
    except OSError:
        pass


def last_decision(output):
    """-> the last incremental link's decision for output, or None."""
    from linkwrap.ld.incremental import state as st
    d = st._safe_dir(st.state_dir(output), False)
    if d is None:
        return None
    try:
        fd = os.open(os.path.join(d, "last"), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd) as f:
        return f.read().strip() or None


def check(opts):
    """Link from scratch into the layout the state gives and compare; -> None or what differs."""
    from dataclasses import replace
    from linkwrap.ld.incremental import full, state as st
    state, why = st.load(opts.output)
    if state is None or state.get("kind") != "patchable":
        return None       # no state could be kept (a foreign directory): the link was from scratch
    pinned = state["caps"]
    tmp = os.path.join(st.state_dir(opts.output), "check.out")
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    full.link(replace(opts, output=tmp), pinned=pinned)
    try:
        with open(opts.output, "rb") as a, open(tmp, "rb") as b:
            x, y = a.read(), b.read()
    finally:
        os.unlink(tmp)
    if x == y:
        return None
    if len(x) != len(y):
        return f"the outputs differ in size ({len(x)} against {len(y)} bytes from scratch)"
    b = state["layout"]["build_id"]
    if b is not None:
        # the digest differs wherever anything does: name the first difference elsewhere
        lo, hi = b[0] + 16, b[0] + 16 + b[2]
        x, y = bytearray(x), bytearray(y)
        x[lo:hi] = y[lo:hi] = bytes(hi - lo)
        if x == y:
            return "the outputs differ only in their build id"
    at = next(i for i in range(len(x)) if x[i] != y[i])
    where = _section_at(state, at)
    return f"the outputs differ, first at offset 0x{at:x}{where}"


def _section_at(state, off):
    for name, (addr, o, size, _i, otype, *_f) in state["layout"]["osecs"].items():
        if o <= off < o + size and otype != 8:
            return f" (in {name}, +0x{off - o:x})"
    return ""
