"""Read ninja's .ninja_log (v5, v6, v7) -> the share of a build's time spent linking.

Format (ninja src/build_log.cc): a header `# ninja log v<N>`, then one line per
output: start_ms TAB end_ms TAB mtime TAB output TAB command_hash. Times are
milliseconds since that ninja run started, so they restart near 0 at every
run; lines are appended as edges finish, so within one run end_ms never goes
down and a decrease marks the next run (as Perfetto's importer does). v6 and
v7 changed the mtime resolution and the hash function, not the layout.
"""
import os
from collections import namedtuple

from linkwrap.errors import LinkwrapError

VERSIONS = (5, 6, 7)


class NinjaLogError(LinkwrapError):
    """A .ninja_log that cannot be read: the message names the file and line."""


class Entry(namedtuple("Entry", "start_ms end_ms mtime output command_hash")):
    __slots__ = ()


def read(path: str):
    """-> (version, [Entry]) for the whole file."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().split("\n")
    except OSError as e:
        raise NinjaLogError(f"cannot read {path}: {e.strerror or e}") from None
    header = lines[0].strip() if lines else ""
    prefix = "# ninja log v"
    if not header.startswith(prefix) or not header[len(prefix):].isdigit():
        raise NinjaLogError(f"{path}:1: not a ninja log (expected '# ninja log v5', v6 or v7)")
    version = int(header[len(prefix):])
    if version not in VERSIONS:
        raise NinjaLogError(f"{path}:1: ninja log v{version} is not supported (v5, v6 and v7 are)")
    entries = []
    last = len(lines) - 1
    while last > 0 and not lines[last].strip():
        last -= 1
    for number, line in enumerate(lines[1:last + 1], start=2):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        try:
            if len(fields) != 5:
                raise ValueError
            entries.append(Entry(int(fields[0]), int(fields[1]), int(fields[2]), fields[3], fields[4]))
        except ValueError:
            if number == last + 1:
                break  # a torn last line: ninja was stopped while writing it
            raise NinjaLogError(f"{path}:{number}: expected 5 tab-separated fields "
                                "(start_ms, end_ms, mtime, output, hash)") from None
    return version, entries


def runs(entries) -> list:
    """Split entries into ninja runs (end_ms going down starts a new one)."""
    out, cur, prev_end = [], [], None
    for e in entries:
        if prev_end is not None and e.end_ms < prev_end:
            out.append(cur)
            cur = []
        cur.append(e)
        prev_end = e.end_ms
    if cur:
        out.append(cur)
    return out


def looks_like_link(output: str) -> bool:
    """A guess when no link record names this output: executables and shared objects."""
    base = os.path.basename(output)
    if base.endswith(".so") or ".so." in base:
        return True
    if "." in base or "/CMakeFiles/" in f"/{output}" or base in ("all", "clean", "install"):
        return False
    return True


def busy_ms(intervals) -> float:
    """Length of the union of [start, end] intervals."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def link_share(path: str, link_outputs=()) -> dict:
    """What the last run in the log spent linking.

    link_outputs: absolute paths of outputs linkwrap recorded; when one of them
    is in the log, those are the link edges, else they are guessed by name.
    """
    version, entries = read(path)
    all_runs = runs(entries)
    last = all_runs[-1] if all_runs else []
    base = os.path.dirname(os.path.abspath(path))
    wanted = {os.path.normpath(p) for p in link_outputs if p}
    matched = [e for e in last if os.path.normpath(os.path.join(base, e.output)) in wanted]
    found = {os.path.normpath(os.path.join(base, e.output)) for e in matched}
    guessed = not matched
    links = matched if matched else [e for e in last if looks_like_link(e.output)]
    # One edge with several outputs writes one line per output with the same times.
    edges = {(e.start_ms, e.end_ms, e.command_hash) for e in last}
    link_edges = {(e.start_ms, e.end_ms, e.command_hash) for e in links}
    wall = (max(e.end_ms for e in last) - min(e.start_ms for e in last)) if last else 0
    link_busy = busy_ms((s, e) for s, e, _ in link_edges)
    return {
        "source": path,
        "version": version,
        "runs": len(all_runs),
        "edges": len(edges),
        "link_edges": len(link_edges),
        "links_guessed": guessed,
        "wall_ms": float(wall),
        "edges_sum_ms": float(sum(e - s for s, e, _ in edges)),
        "link_sum_ms": float(sum(e - s for s, e, _ in link_edges)),
        "link_busy_ms": link_busy,
        "link_share": (link_busy / wall) if wall > 0 else None,
        "links_matched": len(found),  # distinct link_outputs found in the last run
        "last_end_ms": float(max((e.end_ms for e in last), default=0)),  # since that ninja run began
    }
