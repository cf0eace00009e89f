"""Bounded state (issue 10, item 11): the spool, links.db and linkwrap.log stay within limits set in
[records] of linkwrap.toml, and a link's expanded command is stored once."""
import json
import os
import subprocess
import time

from conftest import script
from linkwrap import faults
from linkwrap.store import db, spool
from linkwrap.record import record


def _user_config(lw_home, text):
    path = lw_home / "config" / "linkwrap.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)


def frame(uid, started, **extra):
    return record.encode({"v": 1, "uid": uid, "started_unix": started, "build_key": f"k-{uid[:3]}",
                          "output_path": f"/x/{uid}", "wall_ms": 1.0, **extra})


def test_a_spool_nobody_reads_is_rotated_and_stays_bounded(tmp_path, lw_home, hello_obj):
    _user_config(lw_home, "[records]\nmax_spool_mb = 0.005\n")  # 5 KiB: two or three records
    for i in range(12):
        done = subprocess.run([script("linkwrap-cc"), str(hello_obj), "-o", f"p{i}"], cwd=tmp_path,
                              capture_output=True, text=True)
        assert (done.returncode, done.stderr) == (0, "")
    one = len(record.encode(record_of(lw_home)))
    sizes = [os.path.getsize(lw_home / n) for n in (record.SPOOL, record.ROTATED)]
    assert all(s <= 5 * 1024 + one for s in sizes), sizes
    # The newest records are the ones kept, and the reading commands take both files.
    data = json.loads(subprocess.run([script("linkwrap"), "summary", "--json"], capture_output=True,
                                     text=True).stdout)
    outputs = {os.path.basename(l["output_path"]) for b in data["builds"] for l in b["links"]}
    assert "p11" in outputs and "p0" not in outputs
    assert spool.pending(str(lw_home)) == 0


def record_of(lw_home):
    with open(lw_home / record.SPOOL, "rb") as f:
        return spool.parse(f.read())[0][-1]


def test_links_older_than_keep_days_and_beyond_max_db_mb_are_trimmed(lw_home):
    _user_config(lw_home, "[records]\nkeep_days = 30\nmax_db_mb = 0.5\n")
    now = time.time()
    state = str(lw_home)
    record.append(state, frame("old-1", now - 40 * 86400))
    pad = "x" * 2000
    for i in range(600):  # ~1.5 MB of reasons: three times the limit
        record.append(state, frame(f"new-{i:04d}", now - 600 + i, reasons=(pad,)))
    conn = db.open_store()
    uids = [r[0] for r in conn.execute("SELECT record_uid FROM links ORDER BY started_utc")]
    assert "old-1" not in uids
    assert uids and uids[-1] == "new-0599" and len(uids) < 600
    assert db.size_bytes(conn) <= 0.5 * (1 << 20)
    assert conn.execute("SELECT count(*) FROM builds WHERE build_key = 'k-old'").fetchone()[0] == 0
    status = subprocess.run([script("linkwrap"), "log", "status"], capture_output=True, text=True).stdout
    assert "Trimmed: links older than 30 days; links.db over 0.5 MiB;" in status


def test_the_fault_log_keeps_its_newer_half(lw_home, monkeypatch):
    monkeypatch.setattr(faults, "LOG_MAX_BYTES", 8 * 1024)
    for i in range(200):
        try:
            raise ValueError(f"fault number {i}")
        except ValueError as e:
            faults.note("testing", e)
    text = (lw_home / "linkwrap.log").read_text()
    assert len(text) <= 8 * 1024 and text.startswith("--- ")
    assert "fault number 199" in text and "fault number 0\n" not in text


def test_the_expanded_command_is_stored_once(tmp_path, lw_home, hello_obj):
    many = [f"-Wl,--defsym=s{i}=0" for i in range(20000)]
    done = subprocess.run([script("linkwrap-cc"), str(hello_obj), *many, "-o", "big"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0
    rec = record_of(lw_home)
    assert len(rec["argv"]) == 20003 and rec["args_expanded"] is None
    assert record.ARGS_MARK in rec["command"] and len(rec["command"]) < 60
    if rec["linker_start"] == "direct":  # the linker's own line: the driver's crt files and -L around it
        assert rec["command"][0].endswith("/ld") and "-o" in rec["command"]
    else:
        assert rec["command"][0] == "cc" and rec["command"][1].startswith("-B")
    conn = db.open_store()
    row = conn.execute("SELECT length(argv), length(command) FROM links").fetchone()
    assert row[0] > 400_000 and row[1] < 4000  # a direct line keeps the driver's crt files and -L paths
