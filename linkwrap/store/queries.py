"""Named read (and the few write) queries the commands use: no SQL in cli/ or report/."""
import json

from linkwrap.errors import UsageError


# A build that linked something: at least one record names an output. A record
# without one (`linkwrap-cc --help`, `cc -v` through the wrapper) is no link, and
# must never make its own one-record "build" the last build.
_LINKED = ("EXISTS (SELECT 1 FROM links WHERE links.build_id = builds.id "
           "AND links.output_path IS NOT NULL AND links.output_path != '')")


def last_build(db, project=None):
    """The latest build with at least one link that has an output (in project, when given)."""
    where, params = _in_project(project)
    return db.execute(f"SELECT * FROM builds WHERE {_LINKED}{where} "
                      "ORDER BY last_seen_utc DESC, id DESC LIMIT 1", params).fetchone()


def _in_project(project):
    return ("", ()) if project is None else (" AND builds.project_dir = ?", (project,))


def project_dirs(db) -> list:
    """[(project_dir, build_dir)] of every recorded build, distinct."""
    return [tuple(r) for r in db.execute(
        "SELECT DISTINCT project_dir, build_dir FROM builds WHERE project_dir IS NOT NULL")]


def current_project(db, cwd):
    """The project cwd is in -> (project_dir, recorded): the deepest recorded project or
    build directory holding cwd (recorded=True); else the project its files name
    (Cargo.toml, CMakeCache.txt) with no builds yet (recorded=False); else (None, False)."""
    import os
    here = os.path.realpath(cwd)
    best, depth = None, -1
    for project, build_dir in project_dirs(db):
        for d in (project, build_dir):
            if not d:
                continue
            real = os.path.realpath(d)
            if (here == real or here.startswith(real.rstrip("/") + "/")) and len(real) > depth:
                best, depth = project, len(real)
    if best is not None:
        return best, True
    from linkwrap.facts.build import cargo_root, cmake_source
    found = cargo_root(here) or cmake_source(here) or _cmake_top(here)
    return (found, False) if found else (None, False)


def _cmake_top(here):
    """A CMake source tree's top directory holding here: the highest of the CMakeLists.txt directories
    that lead up to it without a gap (a subdirectory's file is part of its parent's project)."""
    import os
    top, d = None, here
    while os.path.isfile(os.path.join(d, "CMakeLists.txt")):
        top, parent = d, os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return top


def find_build(db, ref: str, project=None):
    """A build by number, by key, or by a unique key prefix. In a project (project given) a number
    is the project's own: 3 is its third build that linked something, as `summary --all` numbers
    them there; with every project in scope (project None) it is the build's number across all
    projects' records (its id, `#45` in those listings)."""
    ref = ref.strip().lstrip("#")
    if ref.isdigit():
        if project is not None:
            row = db.execute(f"SELECT * FROM builds WHERE project_dir = ? AND {_LINKED} ORDER BY id "
                             "LIMIT 1 OFFSET ?", (project, int(ref) - 1)).fetchone() if int(ref) > 0 else None
        else:
            row = db.execute("SELECT * FROM builds WHERE id = ?", (int(ref),)).fetchone()
        if row:
            return row
    row = db.execute("SELECT * FROM builds WHERE build_key = ?", (ref,)).fetchone()
    if row:
        return row
    rows = db.execute("SELECT * FROM builds WHERE build_key LIKE ? ESCAPE '\\' LIMIT 2",
                      (ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",)).fetchall()
    if len(rows) == 1:
        return rows[0]
    if rows:
        raise UsageError(f"build {ref!r} is ambiguous: give more of its key or its number")
    if ref.isdigit() and project is not None:
        n = db.execute(f"SELECT count(*) FROM builds WHERE project_dir = ? AND {_LINKED}", (project,)).fetchone()[0]
        raise UsageError(f"no build {ref} in the project in {project}: it has {n} (see `linkwrap summary "
                         "--all`; `--all-projects --build N` takes the number across every project)")
    raise UsageError(f"no build {ref!r} in the records (see `linkwrap summary --all`)")


# Listed builds: those that linked something, and those `linkwrap run` timed (a
# build that linked nothing is still a build); not the records of non-links alone.
_LISTED = f"({_LINKED} OR builds.wall_ms IS NOT NULL)"


def builds_since(db, since_utc: str, project=None, empty=False):
    where, params = _in_project(project)
    return db.execute(f"SELECT * FROM builds WHERE last_seen_utc >= ? AND {_LISTED if empty else _LINKED}{where} "
                      "ORDER BY last_seen_utc, id", (since_utc, *params)).fetchall()


def all_builds(db, project=None, empty=False):
    """Builds that linked something, oldest first; with empty=True also those that linked nothing."""
    where, params = _in_project(project)
    return db.execute(f"SELECT * FROM builds WHERE {_LISTED if empty else _LINKED}{where} "
                      "ORDER BY last_seen_utc, id", params).fetchall()


def last_link(db, project=None, output=None):
    """The latest recorded link with an output (in project, or writing output, when given)."""
    where, params = _in_project(project)
    if output is not None:
        where, params = where + " AND links.output_path = ?", (*params, output)
    return db.execute("SELECT links.* FROM links JOIN builds ON builds.id = links.build_id "
                      f"WHERE links.output_path IS NOT NULL AND links.output_path != ''{where} "
                      "ORDER BY links.started_utc DESC, links.id DESC LIMIT 1", params).fetchone()


def links_of(db, build_id: int):
    """The build's links, slowest first."""
    return db.execute("SELECT * FROM links WHERE build_id = ? ORDER BY wall_ms DESC, id",
                      (build_id,)).fetchall()


def links_since(db, build_id: int, since_utc: str):
    return db.execute("SELECT * FROM links WHERE build_id = ? AND started_utc >= ? ORDER BY wall_ms DESC, id",
                      (build_id, since_utc)).fetchall()


def counts(db, project=None) -> dict:
    where, params = _in_project(project)
    links, first, last = db.execute("SELECT count(*), min(links.started_utc), max(links.started_utc) FROM links "
                                    f"LEFT JOIN builds ON builds.id = links.build_id WHERE 1{where}", params).fetchone()
    builds = db.execute(f"SELECT count(*) FROM builds WHERE 1{where}", params).fetchone()[0]
    return {"links": links, "builds": builds, "first_utc": first, "last_utc": last,
            "rejected": store_count(db, "rejected_records"), "unreadable": store_count(db, "unreadable_records")}


def store_count(db, name) -> int:
    """A counter of the store itself (store_counts); 0 in a read-only database from before it."""
    import sqlite3
    try:
        row = db.execute("SELECT value FROM store_counts WHERE name = ?", (name,)).fetchone()
    except sqlite3.Error:
        return 0
    return row[0] if row else 0


def dropped_records(db) -> int:
    """Records the spool held that were dropped at ingestion: unreadable (damaged) or malformed."""
    return store_count(db, "unreadable_records") + store_count(db, "rejected_records")


def record_run(db, key, *, command, cwd, started_utc, finished_utc, wall_ms, exit_status, project=(None, None)) -> int:
    """Store what `linkwrap run` knows about its build; -> the build's number.
    project: (project_dir, build_dir) from its command (wrap.build.project_of)."""
    from linkwrap.store.spool import upsert_build
    db.execute("BEGIN IMMEDIATE")
    try:
        build_id = upsert_build(db, key, tool="linkwrap run", command=command, cwd=cwd)
        db.execute("UPDATE builds SET tool = 'linkwrap run', command = ?, cwd = ?, started_utc = ?, "
                   "finished_utc = ?, wall_ms = ?, exit_status = ?, "
                   "last_seen_utc = max(coalesce(last_seen_utc, ''), ?) WHERE id = ?",
                   (command, cwd, started_utc, finished_utc, wall_ms, exit_status, finished_utc, build_id))
        if project[0]:
            db.execute("UPDATE builds SET project_dir = ?, build_dir = ? WHERE id = ?", (*project, build_id))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return build_id


def json_list(text):
    return json.loads(text) if text else []


def latest_bench(conn) -> list:
    """The newest `linkwrap bench` result of each output, linker and variant (dicts), newest output first."""
    import sqlite3
    try:
        rows = conn.execute("""
            SELECT * FROM bench_results b WHERE id = (
                SELECT max(id) FROM bench_results c
                WHERE c.output_path = b.output_path AND c.linker = b.linker AND c.variant = b.variant)
            ORDER BY measured_utc DESC, output_path""").fetchall()
    except sqlite3.Error:   # a store from before m005 opened read-only
        return []
    return [dict(r) for r in rows]


def latest_bench_by_output(conn) -> list:
    """The newest `linkwrap bench` result of each project, output key (Cargo's hash left out), linker and
    variant (dicts): what `summary` reads to say what the caller's default would have taken."""
    import sqlite3
    try:
        rows = conn.execute("""
            SELECT * FROM bench_results b WHERE id = (
                SELECT max(id) FROM bench_results c
                WHERE c.project_dir IS b.project_dir AND c.output_key IS b.output_key
                  AND c.linker = b.linker AND c.variant = b.variant)""").fetchall()
    except sqlite3.Error:   # a store from before m005 opened read-only
        return []
    return [dict(r) for r in rows]


def project_links(conn, project=None) -> list:
    """Every link of the project's builds (of every project when None), with what report/saved.py
    reads of it: the project's history of what linkwrap saved."""
    where, params = _in_project(project)
    return conn.execute("SELECT links.build_id, links.cwd, links.output_path, links.linker, links.linker_path, "
                        "links.write_mode, links.wall_ms, links.first_wall_ms, links.fs_type, links.compiles, "
                        "links.exit_status FROM links JOIN builds ON builds.id = links.build_id "
                        f"WHERE links.output_path IS NOT NULL AND links.output_path != ''{where}",
                        params).fetchall()


def project_build_number(conn, build):
    """The build's number among its project's builds that linked something (1 for the first), or None
    when its project is unknown: build numbers (`--build`) count every project's."""
    project = build["project_dir"] if "project_dir" in build.keys() else None
    if not project:
        return None
    # A build that linked nothing (a no-op `linkwrap run`) has no number: it would repeat the one before.
    n, linked = conn.execute(f"SELECT count(*), max(id = ?) FROM builds WHERE project_dir = ? AND id <= ? "
                             f"AND {_LINKED}", (build["id"], project, build["id"])).fetchone()
    return n if linked else None


def build_label(conn, build, across=False) -> str:
    """A build row named as the summary names it (report.render.build_name)."""
    return named(project_build_number(conn, build), build["id"], build["project_dir"], across)


def named(number, build_id, project_dir, across=False) -> str:
    """'build 3': the project's third build (a user's first build in a project is build 1), what
    `--build 3` takes there. Where every project's builds are shown (across), 'build 3 of app (#45)':
    #45 counts every project's, what `--all-projects --build 45` takes. 'build #45' with no project."""
    import os
    if not number:
        return f"build #{build_id}"
    if across:
        return f"build {number} of {os.path.basename((project_dir or '').rstrip('/')) or '?'} (#{build_id})"
    return f"build {number}"
