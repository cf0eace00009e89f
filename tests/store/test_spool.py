"""The spool: torn records are skipped, ingestion is exactly-once even with writers and ingesters racing."""
import os
import subprocess
import sys
import textwrap

from linkwrap.store import db, spool
from linkwrap.record import record


def frame(uid, **extra):
    return record.encode({"v": 1, "uid": uid, "started_unix": 1_800_000_000.0, "build_key": "k", **extra})


def test_a_torn_last_record_and_garbage_cost_only_themselves():
    data = frame("a") + b"garbage" + frame("b") + frame("c")[:-7]
    records, skipped = spool.parse(data)
    assert [r["uid"] for r in records] == ["a", "b"]
    assert skipped == len(b"garbage") + len(frame("c")) - 7


def test_a_torn_record_in_the_middle_does_not_swallow_the_next_one():
    # A short write (disk full) followed by a later, whole record.
    data = frame("a") + frame("torn", pad="x" * 500)[:40] + frame("b")
    assert [r["uid"] for r in spool.parse(data)[0]] == ["a", "b"]


def flipped(data, at):
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]


def test_each_record_lost_to_flipped_bytes_is_counted_once_and_costs_only_itself():
    good = frame("g", pad="x" * 40)
    hit = frame("hit", pad="y" * 40)
    body = len(record.MAGIC) + 4
    # where the flip lands: its MAGIC, its length, its body (marshal's type byte), its trailer
    for at in (0, len(record.MAGIC), body, len(hit) - 1):
        for data, lost in ((good + flipped(hit, at) + good, 1), (good + flipped(hit, at) + flipped(hit, at) + good, 2),
                           (flipped(hit, at), 1)):
            unreadable = []
            records, _ = spool.parse(data, [], unreadable)
            assert (len(records), len(unreadable)) == (data.count(good), lost), at
    unreadable = []
    assert len(spool.parse(frame("a") + frame("torn", pad="x" * 500)[:40], [], unreadable)[0]) == 1
    assert unreadable == [len(frame("a"))]  # a torn last record is lost too, and counted


def test_dropped_records_are_counted_for_good_and_said_by_summary_and_log_status(tmp_path, lw_home):
    from linkrecords import lw
    state = str(lw_home)
    hit = frame("hit", output_path="/x/hit")
    for f in (frame("good", output_path="/x/a"), flipped(hit, 8), flipped(hit, 9), frame("bad", wall_ms="fast")):
        record.append(state, f)
    shown = lw("summary", "--all-projects", cwd=tmp_path).stdout
    assert shown.splitlines()[-1] == "3 link records were unreadable and dropped (see `linkwrap log status`)"
    assert not os.path.exists(os.path.join(state, record.SPOOL))
    status = lw("log", "status").stdout  # from the database now: the spool is gone
    assert "Dropped: 2 unreadable records from the spool, its bytes damaged (not counted above)\n" in status
    assert "Skipped: 1 malformed record from the spool (not counted above)\n" in status
    assert lw("summary", "--json", "--all-projects", cwd=tmp_path).stdout.count('"dropped_records": 3') == 1


def test_summary_says_nothing_of_dropped_records_when_there_are_none(tmp_path, lw_home):
    from linkrecords import lw
    record.append(str(lw_home), frame("good", output_path="/x/a"))
    assert "dropped" not in lw("summary", "--all-projects", cwd=tmp_path).stdout


def test_ingest_moves_records_into_the_database_and_empties_the_spool(lw_home):
    state = str(lw_home)
    for uid in ("u1", "u2", "u3"):
        record.append(state, frame(uid, wall_ms=5.0, reasons=("r1",)))
    conn = db.connect()
    assert spool.ingest(conn, state) == 3
    assert not os.path.exists(os.path.join(state, record.SPOOL))
    assert spool.pending(state) == 0
    rows = conn.execute("SELECT record_uid, wall_ms, reasons FROM links ORDER BY record_uid").fetchall()
    assert [tuple(r) for r in rows] == [("u1", 5.0, '["r1"]'), ("u2", 5.0, '["r1"]'), ("u3", 5.0, '["r1"]')]
    assert spool.ingest(conn, state) == 0


def test_a_links_lock_planted_as_a_symlink_is_not_followed_and_the_records_wait(lw_home, tmp_path):
    import pytest
    state = str(lw_home)
    record.append(state, frame("u1", wall_ms=5.0, reasons=("r1",)))
    victim = tmp_path / "victim"
    victim.write_bytes(b"kept")
    os.symlink(victim, os.path.join(state, spool.LOCK))
    conn = db.connect()
    with pytest.raises(OSError):
        spool.ingest(conn, state)
    assert victim.read_bytes() == b"kept" and spool.pending(state) > 0   # nothing lost, nothing followed


def test_a_leftover_from_a_crashed_ingestion_is_taken_once(lw_home):
    state = str(lw_home)
    conn = db.connect()
    record.append(state, frame("x1"))
    spool.ingest(conn, state)
    # The ingester died after COMMIT but before removing its file: the same records come back.
    with open(os.path.join(state, spool.INGESTING), "wb") as f:
        f.write(frame("x1") + frame("x2"))
    record.append(state, frame("x3"))
    assert spool.ingest(conn, state) == 2
    assert sorted(r[0] for r in conn.execute("SELECT record_uid FROM links")) == ["x1", "x2", "x3"]


WRITER = textwrap.dedent("""
    import sys
    from linkwrap.record import record
    state, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for i in range(n):
        record.append(state, record.encode({"v": 1, "uid": f"{tag}-{i}", "started_unix": 1.8e9 + i,
                                            "build_key": tag}))
""")
INGESTER = textwrap.dedent("""
    import os, sys, time
    from linkwrap.store import db, spool
    state, stop = sys.argv[1], sys.argv[2]
    conn = db.connect()
    rounds = 0
    while not os.path.exists(stop) or rounds < 3:
        spool.ingest(conn, state)
        rounds += 1
        time.sleep(0.002)
    print(rounds)
""")


def test_racing_writers_and_two_ingesters_lose_and_double_nothing(lw_home, tmp_path):
    state, stop = str(lw_home), str(tmp_path / "stop")
    db.connect().close()
    env = {**os.environ, "LINKWRAP_HOME": state}
    ingesters = [subprocess.Popen([sys.executable, "-c", INGESTER, state, stop], env=env, stdout=subprocess.PIPE)
                 for _ in range(2)]
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, state, f"w{i}", "300"], env=env)
               for i in range(6)]
    assert [w.wait() for w in writers] == [0] * 6
    open(stop, "w").close()
    rounds = [int(p.communicate()[0]) for p in ingesters]
    assert all(r >= 3 for r in rounds)
    conn = db.connect()
    spool.ingest(conn, state)
    uids = [r[0] for r in conn.execute("SELECT record_uid FROM links")]
    assert len(uids) == len(set(uids)) == 6 * 300
    assert conn.execute("SELECT count(*) FROM builds").fetchone()[0] == 6


def test_a_real_links_record_is_valid(tmp_path, lw_home, hello_obj):
    # What the link path writes today passes the check ingestion applies.
    from conftest import script
    subprocess.run([script("linkwrap-cc"), str(hello_obj), "-o", "prog"], cwd=tmp_path, check=True)
    with open(lw_home / record.SPOOL, "rb") as f:
        rejected = []
        records, skipped = spool.parse(f.read(), rejected)
    assert len(records) == 1 and skipped == 0 and rejected == []


def test_crafted_records_are_skipped_counted_and_break_no_command(tmp_path, lw_home):
    from conftest import script
    state = str(lw_home)
    bad = [frame("b1", started_unix="yesterday"), frame("b2", wall_ms="fast"), frame("b3", reasons=(1, 2)),
           frame("b4", output_path=b"\x00"), frame("b5", started_unix=1e300), frame("b6", exit_status=1 << 70)]
    for f in [frame("good1", wall_ms=3.0, output_path="/x/a"), *bad, frame("good2", output_path="/x/b")]:
        record.append(state, f)
    for argv in (["summary"], ["summary", "--all"], ["report", "--html", str(tmp_path / "r.html")],
                 ["log", "status"]):
        proc = subprocess.run([script("linkwrap"), *argv], capture_output=True, text=True)
        assert proc.returncode == 0, (argv, proc.stderr)
    conn = db.connect()
    assert [r[0] for r in conn.execute("SELECT record_uid FROM links ORDER BY 1")] == ["good1", "good2"]
    assert f"Skipped: {len(bad)} malformed records" in proc.stdout


def test_fields_named_with_units_are_numbers():
    base = {"uid": "u", "started_unix": 1_800_000_000.0}
    good = {**base, "predicted_peak_kb": 300 << 10, "waited_ms": 800.0, "mem_limit_mb": None, "wait_note": "alone"}
    assert spool.valid(good)
    assert not spool.valid({**base, "waited_ms": "800"})
    assert not spool.valid({**base, "peak_rss_kb": 1.5})  # a whole number of KiB
