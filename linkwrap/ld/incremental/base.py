"""`--incremental-base-only`: the full incremental link made into the state's base, not the output.

The wrapper links an output with its fastest full linker and builds the incremental base after, in
the background, from the link's saved inputs (hard links of the very files, at other paths;
issue 36 item 4). The linked bytes go to <state dir>/base only: the output on disk is whatever the
full linker wrote, and the state describes the base (its "output" identity is the base's), so the
next relink finds the output foreign and patches a copy of the base (relink._source). The state
records the inputs by the names the real link gives them (the names file), not by the saved
copies' paths: the next relink matches its inputs by those names (state.input_key), and a saved
hard link has the original's identity (device, inode, size, mtime), so an unchanged input is seen
as the very file the base was linked from.
"""
import os
import time

from linkwrap.ld.diag import BadInput
from linkwrap.ld.incremental import state as st


def read_names(path, count):
    """-> the names the state records, one per file argument: FILE's lines, or its NUL-separated
    fields when it holds a NUL (a path may hold a newline)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise BadInput(f"cannot read the names file {path}: {e.strerror}") from None
    sep = b"\0" if b"\0" in data else b"\n"
    names = data.split(sep)
    if names and names[-1] == b"":
        names.pop()
    if len(names) != count:
        raise BadInput(f"the names file {path} names {len(names)} inputs; the link has {count} file arguments")
    return [os.fsdecode(n) for n in names]


def read_map(path, paths):
    """-> the names the state records, one per file argument: FILE holds NUL-separated pairs (a
    saved copy's path, the real name); an argument not in it keeps its own path."""
    try:
        with open(path, "rb") as f:
            fields = f.read().split(b"\0")
    except OSError as e:
        raise BadInput(f"cannot read the names file {path}: {e.strerror}") from None
    if fields and fields[-1] == b"":
        fields.pop()
    if len(fields) % 2:
        raise BadInput(f"the names file {path} holds an odd number of fields (pairs expected)")
    real = {os.fsdecode(a): os.fsdecode(b) for a, b in zip(fields[::2], fields[1::2])}
    return [real.get(p, p) for p in paths]


def build(opts, paths, names):
    """-> (decision, stats lines). paths: the link's file arguments (main.arg_paths), names: the
    name each is recorded under."""
    from dataclasses import replace
    from linkwrap.ld.incremental import full
    if opts.relocatable or opts.shared:
        return "full: -r and -shared outputs are linked in full (no base)", []
    d = st._safe_dir(st.state_dir(opts.output), True)
    if d is None:
        raise BadInput(f"{st.state_dir(opts.output)}: not a directory of this user's that only it can write")
    linked = os.path.join(d, f"base.{os.getpid()}.tmp")
    try:
        os.unlink(linked)
    except FileNotFoundError:
        pass
    try:
        t, new = full.link(replace(opts, output=linked))
        rename_inputs(new, dict(zip(paths, names)))
        new["args"] = list(names)
        new["fingerprint"] = st.fingerprint(opts)      # the real output's, not the base's name
        new["output"] = st.identity(linked)            # the state describes the base, not the output
        t2 = time.perf_counter()
        size = st.save(opts.output, new, linked=linked)
    finally:
        try:
            os.unlink(linked)
        except FileNotFoundError:
            pass
    stats = [f"{ms:8.1f} ms  {label}" for label, ms in t.phases]
    stats.append(f"{(time.perf_counter() - t2) * 1000:8.1f} ms  write the state ({size} bytes)")
    return "base built: the output on disk was left alone", stats


def rename_inputs(state, names):
    """Record the inputs under their real names: each record's path and key, and the chunk
    capacities' keys (an archive member's is its archive's name with "(member)")."""
    keys = {st.input_key(p): st.input_key(n) for p, n in names.items()}
    for r in state["inputs"]:
        n = names.get(r["path"])
        if n is not None:
            r["path"], r["key"] = n, st.input_key(n)

    def real(key):
        if key in keys:
            return keys[key]
        head, paren, member = key.partition("(")
        if paren and head in keys:
            return keys[head] + paren + member
        return key
    state["caps"] = {(real(k), name): cap for (k, name), cap in state["caps"].items()}
