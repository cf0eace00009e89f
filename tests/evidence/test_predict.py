"""Predicting a link's memory from recorded tables: the output's last charges, a per-linker model, a default."""
import marshal
import os

import pytest

from linkwrap.evidence import predict
from linkwrap.evidence.predict import charge, fit, predict as pred, remember

MIB_KB = 1024
OUT = "/w/target/debug/deps/app-1234"


def rows_for(linker, points, output_of=lambda i: f"/w/out{i}"):
    """Recorded links (linker, output, input_bytes, charge_kb), oldest first."""
    return [(linker, output_of(i), int(mb_in * (1 << 20)), int(kb)) for i, (mb_in, kb) in enumerate(points)]


def test_the_outputs_last_charges_come_first_scaled_by_input_growth():
    history = {"outputs": {predict.key("bfd", OUT): [(100 * MIB_KB, 50 << 20), (120 * MIB_KB, 50 << 20)]}}
    p = pred(OUT, "bfd", 50 << 20, history, {})
    assert p.source == "output" and p.kb == int(120 * MIB_KB * predict.OUTPUT_MARGIN)
    assert "last 2 links of this output with bfd" in p.detail
    grown = pred(OUT, "bfd", 100 << 20, history, {})  # the inputs doubled
    assert grown.kb == int(120 * MIB_KB * 2 * predict.OUTPUT_MARGIN)


def test_the_same_output_with_another_linker_is_not_the_same_link():
    history = {"outputs": {predict.key("bfd", OUT): [(500 * MIB_KB, 1 << 20)]}}
    assert pred(OUT, "mold", 1 << 20, history, {}).source == "default"


def test_the_link_paths_history_wins_over_the_fitted_tables_outputs():
    history = {"outputs": {predict.key("bfd", OUT): [(90 * MIB_KB, 1)]}}
    model = {"outputs": {predict.key("bfd", OUT): [(10 * MIB_KB, 1)]}}
    assert pred(OUT, "bfd", 1, history, model).kb == int(90 * MIB_KB * predict.OUTPUT_MARGIN)
    assert pred(OUT, "bfd", 1, {}, model).kb == int(10 * MIB_KB * predict.OUTPUT_MARGIN)


def test_a_linker_model_fitted_on_recorded_links_predicts_a_new_output():
    # GNU ld here: about 1.5 MiB of charge per input MiB plus 20 MiB, with some noise.
    points = [(mb, 20 * MIB_KB + 1.5 * mb * MIB_KB * (1.05 if i % 3 == 0 else 1.0))
              for i, mb in enumerate((10, 20, 40, 60, 80, 100, 150, 200))]
    model = fit(rows_for("bfd", points))
    a, b, margin, n = model["linkers"]["bfd"]
    assert n == 8 and 1.3 * MIB_KB < b < 1.7 * MIB_KB and 1.0 <= margin <= 1.1
    p = pred("/w/new", "bfd", 120 << 20, {}, model)
    assert p.source == "model" and "fitted on 8 links" in p.detail
    actual = 20 * MIB_KB + 1.5 * 120 * MIB_KB
    assert actual <= p.kb <= actual * 1.2
    # Nine in ten recorded links are predicted at or above what they took.
    assert sum(pred(f"/w/x{i}", "bfd", int(mb * (1 << 20)), {}, model).kb >= kb
               for i, (mb, kb) in enumerate(points)) >= 0.9 * len(points)


def test_too_few_links_make_no_model_and_the_default_is_conservative():
    model = fit(rows_for("mold", [(100, 50 * MIB_KB)] * 3))
    assert "mold" not in model["linkers"]
    p = pred("/w/new", "mold", 100 << 20, {}, model)
    assert p.source == "default" and p.kb == 100 * MIB_KB + predict.DEFAULT_FIXED_KB
    heap = pred("/w/new", "bfd", 100 << 20, {}, {})
    assert heap.kb == 200 * MIB_KB + predict.DEFAULT_FIXED_KB   # GNU ld reads its inputs into the heap
    assert pred("/w/new", None, 100 << 20, {}, {}).kb == heap.kb   # as asked: cc's default ld


def test_one_input_size_fits_a_constant():
    model = fit(rows_for("lld", [(50, kb * MIB_KB) for kb in (60, 62, 64, 61, 63)]))
    a, b, margin, n = model["linkers"]["lld"]
    assert b == 0.0 and 61 * MIB_KB < a < 63 * MIB_KB


def test_the_fit_keeps_each_outputs_last_charges():
    rows = rows_for("bfd", [(10, k * MIB_KB) for k in (1, 2, 3, 4)], output_of=lambda i: OUT)
    model = fit(rows)
    assert [kb for kb, _ in model["outputs"][predict.key("bfd", OUT)]] == [2 * MIB_KB, 3 * MIB_KB, 4 * MIB_KB]


def test_charge_is_peak_rss_for_heap_linkers_and_less_mapped_inputs_for_the_others():
    assert charge("bfd", 200_000, 150 << 20) == (200_000, "peak RSS")
    assert charge(None, 200_000, 150 << 20) == (200_000, "peak RSS")
    # rust-lld here: 216 MiB peak RSS on 148 MB of inputs added ~74 MiB to a fresh group.
    kb, how = charge("rust-lld", 216 * MIB_KB, 148_000_000)
    assert how == "peak RSS less mapped inputs" and 70 * MIB_KB < kb < 80 * MIB_KB
    assert charge("mold", 100 * MIB_KB, 1 << 30)[0] == 25 * MIB_KB   # never below a quarter of its RSS
    assert charge("mold", 0, 1) == (None, None)


def test_remember_keeps_the_last_few_of_each_output_and_forgets_the_least_recent_outputs(monkeypatch):
    history = {}
    assert not remember(history, "bfd", OUT, 1 * MIB_KB, 1)   # a small link is not worth a write
    for kb in (20, 30, 40, 50):
        assert remember(history, "bfd", OUT, kb * MIB_KB, 1)
    assert [kb for kb, _ in history["outputs"][predict.key("bfd", OUT)]] == [30 * MIB_KB, 40 * MIB_KB, 50 * MIB_KB]
    assert remember(history, "bfd", OUT, 1, 1)  # known output: even a small charge updates it
    monkeypatch.setattr(predict, "SHARD_MAX_OUTPUTS", 2)
    remember(history, "bfd", "/a", 20 * MIB_KB, 1)
    remember(history, "bfd", "/b", 20 * MIB_KB, 1)
    assert list(history["outputs"]) == [predict.key("bfd", "/a"), predict.key("bfd", "/b")]


def test_tables_that_are_missing_corrupt_foreign_or_not_ours_read_as_empty(tmp_path):
    path = tmp_path / "t"
    assert predict.read_table(str(path)) == {}
    path.write_bytes(b"\x00garbage")
    assert predict.read_table(str(path)) == {}
    path.write_bytes(marshal.dumps({"format": 99}))
    assert predict.read_table(str(path)) == {}
    path.write_bytes(marshal.dumps({"format": predict.FORMAT, "outputs": {}}))
    assert predict.read_table(str(path)) == {"format": predict.FORMAT, "outputs": {}}
    os.chown(path, 65534, 65534)
    assert predict.read_table(str(path)) == {}
    link = tmp_path / "link"
    os.chown(path, 0, 0)
    os.symlink(path, link)
    assert predict.read_table(str(link)) == {}


def test_the_reading_commands_fit_the_model_the_link_path_reads(tmp_path, lw_home):
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
    from linkrecords import lw, spool_record
    for i, mb in enumerate((10, 20, 30, 40, 50, 60)):
        spool_record(lw_home, linker="bfd", output_path=f"/w/o{i}", input_bytes=mb << 20,
                     charge_kb=(8 + 2 * mb) * MIB_KB, peak_rss_kb=(8 + 2 * mb) * MIB_KB)
    from linkwrap import paths
    for base, name in zip((paths.state_dir(), paths.cache_dir()), predict.LEGACY):
        os.makedirs(base, exist_ok=True)
        with open(os.path.join(base, name), "wb") as f:  # the one-file tables of an earlier linkwrap
            f.write(marshal.dumps({"format": 1, "outputs": {}}))
    lw("summary")
    history, model = predict.load("bfd", "/w/o1")
    assert history == {} and model["linkers"]["bfd"][3] == 6
    assert pred("/w/o1", "bfd", 20 << 20, history, model).source == "output"
    history, model = predict.load("bfd", "/w/new")
    assert pred("/w/new", "bfd", 70 << 20, history, model).source == "model"
    assert not any(os.path.exists(os.path.join(base, name))
                   for base, name in zip((paths.state_dir(), paths.cache_dir()), predict.LEGACY))


def _keys_in_one_shard(n, linker="bfd"):
    by_shard = {}
    for i in range(100 * n):
        k = predict.key(linker, f"/w/o{i}")
        by_shard.setdefault(predict.shard(k), []).append(f"/w/o{i}")
        if len(by_shard[predict.shard(k)]) == n:
            return by_shard[predict.shard(k)]
    raise AssertionError("no shard got n keys")


def test_a_link_reads_and_rewrites_only_its_outputs_shard(lw_home):
    from linkwrap import paths
    state = paths.state_dir()
    outputs = [f"/w/o{i}" for i in range(300)]
    for i, out in enumerate(outputs):
        predict.keep(state, "bfd", out, (20 + i) * MIB_KB, 1 << 20)
    where = lw_home / predict.HISTORY
    files = sorted(os.listdir(where))
    # 300 outputs spread over the shards: none holds more than its bound, and together they hold all.
    assert len(files) > predict.SHARDS // 2 and all(f.endswith(".marshal") for f in files)
    assert all(os.stat(where / f).st_mode & 0o777 == 0o600 for f in files)
    assert os.stat(where).st_mode & 0o777 == 0o700
    tables = [predict.read_table(str(where / f))["outputs"] for f in files]
    assert sum(len(t) for t in tables) == len(outputs)
    history, _ = predict.load("bfd", outputs[7])
    assert len(history["outputs"]) < len(outputs) // 4
    assert history["outputs"][predict.key("bfd", outputs[7])] == [(27 * MIB_KB, 1 << 20)]
    assert pred(outputs[7], "bfd", 1 << 20, *predict.load("bfd", outputs[7])).source == "output"


def test_a_full_shard_forgets_its_least_recent_output(lw_home):
    from linkwrap import paths
    same = _keys_in_one_shard(predict.SHARD_MAX_OUTPUTS + 1)
    for out in same:
        predict.keep(paths.state_dir(), "bfd", out, 20 * MIB_KB, 1 << 20)
    history, _ = predict.load("bfd", same[0])
    assert list(history["outputs"]) == [predict.key("bfd", out) for out in same[1:]]
    # The fit bounds its shards the same way: the least recent goes.
    model = fit([("bfd", out, 1 << 20, 20 * MIB_KB) for out in same])
    assert list(model["outputs"]) == [predict.key("bfd", out) for out in same[1:]]


@pytest.mark.parametrize("how", ["writable by all", "another user's", "a symlink"])
def test_a_history_directory_another_user_could_change_is_not_used(tmp_path, lw_home, how):
    from linkwrap import paths
    from linkwrap.errors import StateError
    where = lw_home / predict.HISTORY
    predict.keep(paths.state_dir(), "bfd", OUT, 20 * MIB_KB, 1 << 20)
    assert predict.load("bfd", OUT)[0]
    victim = tmp_path / "victim"   # where a planted link points: a directory of this user's
    victim.mkdir(mode=0o700)
    if how == "writable by all":
        os.chmod(where, 0o777)
    elif how == "another user's":
        os.chown(where, 65534, 65534)
    else:
        where.rename(tmp_path / "kept")
        where.symlink_to(victim)
    assert predict.load("bfd", OUT)[0] == {}
    with pytest.raises(StateError, match="not this user's private directory"):
        predict.keep(paths.state_dir(), "bfd", OUT, 30 * MIB_KB, 1 << 20)
    assert os.listdir(victim) == []
    # The link's own fault handling: one line in the log, no traceback.
    from linkwrap.run.run import Outcome
    done = Outcome(0, 1.0, 1.0, 1.0, 40 << 10, b"", b"", (), "fresh", 1, None, "direct")
    assert predict.after(pred(OUT, "bfd", 1 << 20), "bfd", OUT, done, 1 << 20)[0] == 40 << 10
    log = (lw_home / "linkwrap.log").read_text()
    assert "not this user's private directory" in log and "Traceback" not in log


def test_an_earlier_linkwraps_one_file_history_moves_into_the_shards(tmp_path, lw_home):
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
    from linkrecords import lw, spool_record
    from linkwrap import paths
    predict.keep(paths.state_dir(), "bfd", "/w/both", 50 * MIB_KB, 1 << 20)   # newer than the old file's
    old = {predict.key("bfd", "/w/old"): [(30 * MIB_KB, 1 << 20)], predict.key("bfd", "/w/both"): [(1, 1)]}
    legacy = lw_home / predict.LEGACY[0]
    legacy.write_bytes(marshal.dumps({"format": 1, "outputs": old}))
    os.chmod(legacy, 0o600)
    spool_record(lw_home, linker="bfd", output_path="/w/x", input_bytes=1 << 20, charge_kb=20 * MIB_KB)
    lw("summary")   # a reading command: it ingests the record and refits
    assert not legacy.exists()
    assert predict.load("bfd", "/w/old")[0]["outputs"][predict.key("bfd", "/w/old")] == [(30 * MIB_KB, 1 << 20)]
    assert predict.load("bfd", "/w/both")[0]["outputs"][predict.key("bfd", "/w/both")] == [(50 * MIB_KB, 1 << 20)]


def test_a_writer_killed_before_its_unlink_leaves_no_tmp_file_after_a_reading_command(tmp_path, lw_home):
    """keep() exchanges its new shard in and then unlinks the old contents under the tmp name; a
    process killed in between leaves `<shard>.<pid>.tmp`. The next reading command sweeps it."""
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
    from linkrecords import lw, spool_record
    from linkwrap import paths
    predict.keep(paths.state_dir(), "bfd", "/w/kept", 50 * MIB_KB, 1 << 20)
    where = lw_home / predict.HISTORY
    [shard] = os.listdir(where)
    stale = where / f"{shard}.4194301.tmp"   # a pid of a process that is gone
    stale.write_bytes(b"old contents")
    spool_record(lw_home, linker="bfd", output_path="/w/x", input_bytes=1 << 20, charge_kb=20 * MIB_KB)
    lw("summary")
    assert sorted(os.listdir(where)) == [shard]
    assert predict.load("bfd", "/w/kept")[0]["outputs"][predict.key("bfd", "/w/kept")] == [(50 * MIB_KB, 1 << 20)]
