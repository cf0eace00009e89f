"""The relink: patch the last output for the inputs that changed, or say why it cannot.

relink(opts, state) -> (None, new state) when the output was patched, else (reason, None) and
nothing was written. Steps: the options' fingerprint; the output on disk (or the state's base)
is the one the state describes; the inputs, by key, in the same order; which changed (identity,
then section hashes); for each changed object what must hold for its patch to be exact (changed.py);
then a copy of the output (FICLONE, else copy_file_range) is patched and renamed over the output:
the changed inputs' chunks rewritten and relocated, references elsewhere to their moved symbols
applied again (the reverse index), GOT slots, RELATIVE relocations, .dynsym/.symtab values,
.eh_frame_hdr's table and the build id. Killed at any point, the output is the old one or the new
one (rename), and the state is written after the output: an old state then does not match the
output on disk and the next link is a full one.
"""
import os
import time

from linkwrap.ld.incremental import state as st
from linkwrap.ld.incremental.facade import Fallback


def relink(opts, state, arg_paths):
    try:
        return _relink(opts, state, arg_paths), None
    except Fallback as e:
        return None, str(e)


def _relink(opts, state, arg_paths):
    from linkwrap.ld.incremental import changed, patch
    if state.get("kind") != "patchable":
        raise Fallback(state.get("why", "the last link was not an incremental one"))
    old_args = state.get("args", [])
    new_keys, old_keys = [st.input_key(p) for p in arg_paths], [st.input_key(p) for p in old_args]
    if new_keys != old_keys:
        added = [p for p, k in zip(arg_paths, new_keys) if k not in set(old_keys)]
        gone = [p for p, k in zip(old_args, old_keys) if k not in set(new_keys)]
        which = f" ({(added or gone)[0]}{' and more' if len(added) + len(gone) > 1 else ''})" if added or gone else ""
        raise Fallback(f"an input was added or removed{which}")
    if state["fingerprint"] != st.fingerprint(opts):
        raise Fallback("the link's options changed")
    steps = Steps()
    src = _source(opts.output, state)
    records = state["inputs"]
    renamed = dict(zip(old_args, arg_paths))
    todo, todo_names = [], []
    for k, r in enumerate(records):
        path = renamed.get(r["path"], r["path"])
        try:
            ident = st.identity(path)
        except OSError:
            raise Fallback(f"{path}: cannot be read") from None
        if tuple(ident) == tuple(r["id"]):
            # the very file (device, inode, size, mtime) the last link read: Cargo's incremental
            # builds hard-link a codegen unit rustc did not rebuild from its cache under the new
            # name (the inode's link count grows build by build), so it is neither hashed nor parsed
            if path != r["path"]:
                todo_names.append((k, path, ident))
            continue
        if r["kind"] != "object":
            raise Fallback(f"{path}: a library or archive changed")
        todo.append((k, path, ident))
    steps.mark(f"identities of {len(records)} inputs")
    mapped = changed.hashed([path for _k, path, _i in todo])
    steps.mark(f"hash {len(todo)} new files")
    plans = [changed.examine(opts, state, k, path, ident, mapped[path]) for k, path, ident in todo]
    work = [p for p in plans if p is not None]
    steps.mark(f"examine {len(todo)}, parse and place {len(work)}")
    how = "unchanged"
    if work or src != opts.output:
        how = patch.apply(opts, state, src, work, steps)
    for p in work:
        r = records[p.k]
        r.update(p.record)
        if p.symtab is not None:       # its block of locals in .symtab was written anew
            r["symtab"], r["symtab_epoch"] = p.symtab, len(state["symtab_moves"])
        r["places"] = [(name, start, cap, [(getattr(m, "input", m).index, off, m.size) for m, off in placed])
                       for name, start, cap, placed, _used in p.places]
    for k, path, ident in todo + todo_names:
        records[k]["path"], records[k]["id"], records[k]["key"] = path, ident, st.input_key(path)
    state["args"] = list(arg_paths)
    state["output"] = st.identity(opts.output)
    state["last"] = {"how": how, "patched": [records[p.k]["path"] for p in work],
                     "same_file": len(records) - len(todo), "same_bytes": len(todo) - len(work)}
    steps.mark("update the records")
    state["last"]["steps"] = steps.done
    return state


class Steps:
    """--incremental-stats' times of a relink's steps: mark(label) ends the step since the last."""

    def __init__(self):
        self.done = []
        self.t = time.perf_counter()

    def mark(self, label):
        t = time.perf_counter()
        self.done.append((label, (t - self.t) * 1000))
        self.t = t


def _source(output, state):
    """The file to patch: the output, or the state's base when the output is gone (Cargo removes
    deps/<bin>-<hash> before it links) or another linker's (the wrapper's full link after a
    --incremental-patch-only refusal; a base built by --incremental-base-only); either must be the
    very file the state describes, and is copied, never patched in place."""
    want = tuple(state["output"])
    try:
        if tuple(st.identity(output)) == want:
            return output
    except OSError:
        pass
    base = os.path.join(st.state_dir(output), "base")
    try:
        if tuple(st.identity(base)) == want:
            return base
    except OSError:
        pass
    raise Fallback("the output on disk is not the one the incremental state describes")

