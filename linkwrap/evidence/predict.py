"""PREDICT: how much memory a link will add to its memory group, before it starts -> Prediction.

Input: the output path, the chosen linker's name, the probed input bytes, and two small marshal
tables (load()): the link path's own history (the last charges of each output, written by after()
at the end of every link, admitted or not, under the history's own lock) and the model the reading commands fit on links.db at
ingest (fit(), per linker: charge against input bytes). Output: Prediction(kb, source, detail).
predict() and charge() are pure; only load() reads files, and never SQLite.

Both per-output tables are split into SHARDS files by a crc of the key, and a link reads and
rewrites only the one its output is in: as one file of HISTORY_MAX_OUTPUTS outputs, the history
cost every link 2.5 ms of CPU to read and every Rust link 1.5 ms more to rewrite once it was full
(benchmarks/bench_admission.py --cost).

What is predicted is the charge, not the peak RSS (../shared/reference/measurements.md): lld, mold,
wild and gold map their inputs, and input pages already in the page cache (the compiler just wrote
them) are charged to whoever read them first, not to the link; GNU ld and linkwrap's own linker read
their inputs into the heap, which is charged. charge() turns wait4's peak RSS into that estimate.
"""
import os

from linkwrap.records import record

HISTORY = "memory-history"           # in the state dir, a shard per file: written by links (after())
HISTORY_LOCK = "memory-history.lock" # beside it: one writer at a time, so no update is lost
MODEL = "memory-linkers.marshal"     # in the cache dir, per linker: written by the reading commands (fit)
MODEL_OUTPUTS = "memory-model"       # beside it, the fitted per-output table in shards
# One file each before the shards: the reading commands remove them (refit()).
LEGACY = ("memory-history.marshal", "memory-model.marshal")
FORMAT = 2
SHARDS = 64

# Linkers that map their inputs (charge = peak RSS less the mapped inputs) and those that read
# them into the heap (charge = peak RSS). "as asked" is cc's default linker: GNU ld here.
MAPS_INPUTS = frozenset(("mold", "lld", "rust-lld", "wild", "gold"))
# A mapping linker's charge is never taken as less than this share of its peak RSS: its own heap
# (symbol tables, relocations) and the output pages it writes are charged whatever it maps.
MIN_SHARE_OF_RSS = 0.25
# With no record to go by: GNU ld measured 1.4-4.3 x its input bytes here (Rust debug inputs,
# mergeable strings), rust-lld about 0.5 x; the default takes the top of each, plus fixed costs.
DEFAULT_PER_INPUT = {"heap": 2.0, "maps": 1.0}
DEFAULT_FIXED_KB = 32 << 10
# A past charge is scaled up by the growth of the inputs, and given this margin (allocator noise).
OUTPUT_MARGIN = 1.1
HISTORY_DEPTH = 3            # last charges kept per (linker, output)
# A shard forgets its least recent outputs beyond this: 4096 in all. 2048 outputs spread by their crc
# (32 a shard on average) overflow some shard once in 80 000 (Poisson; with 48, one time in six).
SHARD_MAX_OUTPUTS = 64
HISTORY_MAX_OUTPUTS = 2048   # what the history is sized for (benchmarks fill it to this)
REMEMBER_MIN_KB = 16 << 10   # smaller links are not worth a history write


class Memory(record("Memory", [
    "predicted_kb",   # int | None: the prediction (predict())
    "source",         # str | None: "output" | "model" | "default"
    "charge_kb",      # int | None: what the link added, estimated after it (charge())
    "charge_how",     # str | None: how charge_kb was estimated
    "waited_ms",      # float | None: time spent waiting for memory; None when admission was off
    "wait_note",      # str | None: why it ran without fitting (alone, or the wait bound)
    "room_kb",        # int | None: the room when it was admitted
    "jobserver",      # str | None: what was done with the jobserver slot while waiting
])):
    """A link's memory for its record: here, not in admission.py, so a link with admission off
    never imports admission."""
    __slots__ = ()


def admission_enabled(settings, facts) -> bool:
    """[memory] admission: true or false; unset, on only when a memory limit applies."""
    setting = (getattr(settings, "memory", None) or {}).get("admission")
    if setting is None:
        return facts is not None and facts.mem_limit_mb is not None
    return bool(setting)


class Prediction(record("Prediction", [
    "kb",       # int: the memory the link is predicted to add to its group, KiB
    "source",   # "output" | "model" | "default"
    "detail",   # str: where the figure comes from, for explain and the record
])):
    __slots__ = ()


def key(linker, output) -> str:
    return f"{linker or 'as asked'}\0{output or ''}"


def shard(k) -> str:
    """The file name of the shard that holds key k (crc32: stable across processes, unlike hash())."""
    import zlib  # learn.py has it imported on the link path already
    return f"{zlib.crc32(k.encode('utf-8', 'surrogateescape')) % SHARDS:02x}.marshal"


def kind(linker) -> str:
    return "maps" if linker in MAPS_INPUTS else "heap"


def predict(output, linker, input_bytes, history=None, model=None) -> Prediction:
    """The output's last charges with this linker, else the linker's model, else the default."""
    k = key(linker, output)
    name = linker or "as asked"
    inputs = input_bytes or 0
    past = (history or {}).get("outputs", {}).get(k) or (model or {}).get("outputs", {}).get(k)
    if past:
        kb = 0
        for charge_kb, then_bytes in past:
            growth = inputs / then_bytes if then_bytes and inputs > then_bytes else 1.0
            kb = max(kb, int(charge_kb * growth * OUTPUT_MARGIN))
        return Prediction(kb, "output", f"the last {_links(len(past))} of this output with {name}")
    fitted = (model or {}).get("linkers", {}).get(name)
    if fitted:
        intercept_kb, kb_per_mb, margin, count = fitted
        kb = int(max(intercept_kb + kb_per_mb * inputs / (1 << 20), 0) * margin) + (4 << 10)
        return Prediction(kb, "model", f"{name}'s model fitted on {_links(count)} here "
                                       f"({kb_per_mb / 1024:.2f} MiB per input MiB, x{margin:.2f})")
    per_input = DEFAULT_PER_INPUT[kind(linker)]
    kb = int(inputs * per_input) // 1024 + DEFAULT_FIXED_KB
    return Prediction(kb, "default", f"no record of {name} here: {per_input:g} x the input bytes + "
                                     f"{DEFAULT_FIXED_KB >> 10} MiB")


def _links(n) -> str:
    return f"{n} link" if n == 1 else f"{n} links"


def charge(linker, peak_rss_kb, input_bytes):
    """(kb, how): what the link added to its memory group, estimated from wait4's peak RSS.

    GNU ld and linkwrap's own linker read their inputs into the heap: the charge is about the
    peak RSS. The others map them: their RSS counts input pages that are charged to whoever
    first read them (the compiler), so those are taken off, down to MIN_SHARE_OF_RSS.
    """
    if not peak_rss_kb:
        return None, None
    if kind(linker) == "heap":
        return int(peak_rss_kb), "peak RSS"
    inputs_kb = (input_bytes or 0) >> 10
    return max(int(peak_rss_kb) - inputs_kb, int(peak_rss_kb * MIN_SHARE_OF_RSS)), "peak RSS less mapped inputs"


def remember(history, linker, output, charge_kb, input_bytes) -> bool:
    """Add one link's charge to the history table (in place); False when not worth a write."""
    if not output or not charge_kb:
        return False
    outputs = history.setdefault("outputs", {})
    k = key(linker, output)
    if charge_kb < REMEMBER_MIN_KB and k not in outputs:
        return False
    past = outputs.pop(k, [])  # re-inserted last: dicts keep insertion order, the oldest go first
    outputs[k] = (past + [(int(charge_kb), int(input_bytes or 0))])[-HISTORY_DEPTH:]
    while len(outputs) > SHARD_MAX_OUTPUTS:
        del outputs[next(iter(outputs))]
    return True


def after(prediction, linker, output, outcome, input_bytes, state=None, small_too=False):
    """(charge_kb, how) of a link that ended; a passed link's charge goes into the history (the next
    prediction's input). small_too: also a charge below REMEMBER_MIN_KB (an admitted link's output
    already in the history). Never raises: a fault costs only the history."""
    try:
        charge_kb, how = charge(linker, getattr(outcome, "peak_rss_kb", None), input_bytes)
    except Exception as e:
        from linkwrap import faults
        faults.note("estimating the memory charge", e)
        return None, None
    if charge_kb and getattr(outcome, "returncode", 1) == 0 and getattr(prediction, "kb", None) is not None \
            and (small_too or charge_kb >= REMEMBER_MIN_KB):
        try:
            from linkwrap import paths
            keep(state or paths.state_dir(), linker, output, charge_kb, input_bytes)
        except Exception as e:
            from linkwrap import faults
            faults.note("keeping the memory history", e)
    return charge_kb, how


def keep(state, linker, output, charge_kb, input_bytes) -> None:
    """One link's charge into its shard of the history, under the history's lock; readers (load(),
    unlocked) see the old or the new shard."""
    name = shard(key(linker, output))
    lock = _lock(state)
    try:
        where = _history_dir(state, create=True)
        try:
            history = read_table(name, dir_fd=where) or {"format": FORMAT}
            if remember(history, linker, output, charge_kb, input_bytes):
                _write(where, name, history)
        finally:
            os.close(where)
    finally:
        os.close(lock)  # closing releases the lock


def _write(where, name, table) -> None:
    """table into the file name of directory fd where (the history's lock held)."""
    import marshal
    from linkwrap import libc
    # Per process, and the lock held: no other writer has this name (a crashed one's is truncated).
    tmp = f"{name}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=where)
    try:
        data = marshal.dumps(table, 4)
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)
    libc.replace_file(tmp, name, dir_fd=where)


def _history_dir(state, create=False) -> int:
    """The history's directory, opened (paths.open_private_dir); a StateError when it is a symlink,
    another user's, or writable by others (a shared LINKWRAP_HOME)."""
    from linkwrap import paths
    where = os.path.join(state, HISTORY)
    try:
        return paths.open_private_dir(where, create)
    except FileNotFoundError:
        raise
    except OSError:
        from linkwrap.errors import StateError
        raise StateError(f"{where} is not this user's private directory (a symlink, another user's, or "
                         f"writable by others): the memory history is not kept") from None


def _lock(state) -> int:
    from linkwrap import paths
    return paths.lock(os.path.join(state, HISTORY_LOCK))


# --- the tables --------------------------------------------------------------

def load(linker, output):
    """(history, model) for predict(linker, output): the history's shard that holds the output, and
    the model's linkers with the shard of its per-output table; each {} when missing or unreadable."""
    from linkwrap import cache, paths
    name = shard(key(linker, output))
    try:
        where = _history_dir(paths.state_dir())
    except Exception:  # none yet, or not private: no history (keep() says which)
        history = {}
    else:
        try:
            history = read_table(name, dir_fd=where)
        finally:
            os.close(where)
    model = cache.load(MODEL, FORMAT)
    model["outputs"] = cache.load(os.path.join(MODEL_OUTPUTS, name), FORMAT).get("outputs", {})
    return history, model


def read_table(path, fmt=FORMAT, dir_fd=None) -> dict:
    """The marshal table at path (in directory fd dir_fd) if it is this user's and holds format fmt,
    else {}."""
    import marshal
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        # Another user's file (a shared LINKWRAP_HOME) could steer this user's links: not trusted.
        if st.st_uid != os.geteuid() or st.st_size > (4 << 20):
            return {}
        from linkwrap.cache import read_all
        data = marshal.loads(read_all(fd))
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    finally:
        os.close(fd)
    return data if isinstance(data, dict) and data.get("format") == fmt else {}


# --- fitting (the reading commands, never the link path) ----------------------

MODEL_MIN_LINKS = 5
MODEL_LAST_LINKS = 500


def fit(rows) -> dict:
    """The model table from recorded links, oldest first: (linker, output, input_bytes, charge_kb).

    Per linker: least squares charge_kb = a + b * input MiB over its last MODEL_LAST_LINKS links,
    then a margin, the 90th percentile of actual / fitted (at least 1, at most 3), so that nine of
    ten past links would have been predicted at or above their charge. Per output: its last charges,
    as the link path's history keeps them (a fresh history shard starts from these), at most
    SHARD_MAX_OUTPUTS of a shard.
    """
    per_linker, outputs = {}, {}
    for linker, output, input_bytes, charge_kb in rows:
        if not charge_kb or input_bytes is None:
            continue
        name = linker or "as asked"
        per_linker.setdefault(name, []).append((input_bytes / (1 << 20), charge_kb))
        if output:
            k = key(name, output)
            past = outputs.pop(k, [])
            outputs[k] = (past + [(int(charge_kb), int(input_bytes))])[-HISTORY_DEPTH:]
    # What the shards would hold: each output's shard keeps its SHARD_MAX_OUTPUTS most recent.
    counts, kept = {}, []
    for k in reversed(outputs):
        name = shard(k)
        if counts.get(name, 0) < SHARD_MAX_OUTPUTS:
            counts[name] = counts.get(name, 0) + 1
            kept.append(k)
    outputs = {k: outputs[k] for k in reversed(kept)}
    linkers = {}
    for name, points in per_linker.items():
        points = points[-MODEL_LAST_LINKS:]
        if len(points) < MODEL_MIN_LINKS:
            continue
        linkers[name] = _line(points)
    return {"format": FORMAT, "linkers": linkers, "outputs": outputs}


def _line(points):
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx > 1e-9:
        b = max(0.0, sum((x - mx) * (y - my) for x, y in points) / sxx)
    else:  # every link had the same inputs: a constant
        b = 0.0
    a = my - b * mx
    ratios = sorted(y / max(a + b * x, 1.0) for x, y in points)
    margin = min(3.0, max(1.0, ratios[min(n - 1, int(n * 0.9))]))
    return (float(a), float(b), float(margin), n)


def refit(db) -> None:
    """Fit the model on links.db and store it for the link path (a reading command's job): the
    per-output shards first, the linkers' file last."""
    from linkwrap import cache, paths
    rows = db.execute("SELECT linker, output_path, input_bytes, charge_kb FROM links "
                      "WHERE charge_kb IS NOT NULL AND exit_status = 0 ORDER BY id DESC LIMIT 20000").fetchall()
    model = fit([tuple(r) for r in reversed(rows)])
    shards = {}
    for k, past in model["outputs"].items():
        shards.setdefault(shard(k), {})[k] = past
    for i in range(SHARDS):
        name = f"{i:02x}.marshal"
        cache.store(os.path.join(MODEL_OUTPUTS, name), {"format": FORMAT, "outputs": shards.get(name, {})})
    cache.store(MODEL, {"format": FORMAT, "linkers": model["linkers"]})
    _migrate_history(paths.state_dir())
    _sweep_history(paths.state_dir())
    try:
        os.unlink(os.path.join(paths.cache_dir(), LEGACY[1]))  # the fit above replaces it
    except OSError:
        pass


def _sweep_history(state) -> int:
    """Remove what a writer killed between its exchange and its unlink left in the history's
    directory (`<shard>.<pid>.tmp`, the old contents); -> names removed. A writer holds the lock from
    creating its tmp file until it is renamed away, so under the lock every tmp file is stale."""
    lock = _lock(state)
    try:
        from linkwrap.errors import StateError
        try:
            where = _history_dir(state)
        except (OSError, StateError):  # none yet, or not private (keep() says so): nothing of ours to sweep
            return 0
        removed = 0
        try:
            for name in os.listdir(where):
                if name.endswith(".tmp"):
                    try:
                        os.unlink(name, dir_fd=where)
                        removed += 1
                    except OSError:
                        pass
        finally:
            os.close(where)
        return removed
    finally:
        os.close(lock)


def _migrate_history(state) -> None:
    """The one-file history of an earlier linkwrap into the shards (outputs a shard has already are
    newer there), then removed: its charges are the next predictions of those outputs."""
    legacy = os.path.join(state, LEGACY[0])
    if not os.path.lexists(legacy):
        return
    old = read_table(legacy, fmt=1).get("outputs") or {}
    lock = _lock(state)
    try:
        where = _history_dir(state, create=True)
        try:
            by_shard = {}
            for k, past in old.items():
                if isinstance(k, str) and isinstance(past, list):
                    by_shard.setdefault(shard(k), {})[k] = past
            for name, moved in by_shard.items():
                table = read_table(name, dir_fd=where) or {"format": FORMAT}
                outputs = table.setdefault("outputs", {})
                # The old entries first (least recent), the shard's own after them.
                merged = {**{k: v for k, v in moved.items() if k not in outputs}, **outputs}
                table["outputs"] = dict(list(merged.items())[-SHARD_MAX_OUTPUTS:])
                _write(where, name, table)
        finally:
            os.close(where)
        os.unlink(legacy)
    finally:
        os.close(lock)
