"""The marshal caches: atomic, and anything odd reads as empty; the stamps memos are checked by."""
import os
import time

from linkwrap import cache


def test_round_trip_and_format(lw_home):
    cache.store("t.marshal", {"format": 3, "x": (1, "a")})
    assert cache.load("t.marshal", 3) == {"format": 3, "x": (1, "a")}
    assert cache.load("t.marshal", 4) == {"format": 4}  # another format: start afresh


def test_corrupt_or_unwritable_cache_costs_nothing_but_the_cache(lw_home):
    (lw_home / "cache").mkdir()
    (lw_home / "cache" / "t.marshal").write_bytes(b"\x00garbage")
    assert cache.load("t.marshal", 1) == {"format": 1}
    (lw_home / "cache").chmod(0o500)
    try:
        (lw_home / "cache" / "t.marshal").unlink()
        (lw_home / "cache" / "t.marshal").mkdir()  # a directory where the file goes: replace fails
        cache.store("t.marshal", {"format": 1})  # does not raise
    finally:
        (lw_home / "cache").chmod(0o700)


import pytest  # noqa: E402


@pytest.mark.parametrize("how", ["a symlink", "another user's", "writable by all"])
def test_a_shard_directory_another_user_could_change_is_neither_read_nor_written(tmp_path, lw_home, how):
    assert cache.store(os.path.join("shards", "00.marshal"), {"format": 1, "x": 1})
    assert os.stat(lw_home / "cache" / "shards").st_mode & 0o777 == 0o700
    assert cache.load(os.path.join("shards", "00.marshal"), 1) == {"format": 1, "x": 1}
    where = lw_home / "cache" / "shards"
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o700)
    (victim / "00.marshal").write_bytes((where / "00.marshal").read_bytes())
    if how == "a symlink":
        where.rename(tmp_path / "kept")
        where.symlink_to(victim)
    elif how == "another user's":
        os.chown(where, 65534, 65534)
    else:
        os.chmod(where, 0o777)
    assert cache.load(os.path.join("shards", "00.marshal"), 1) == {"format": 1}
    assert not cache.store(os.path.join("shards", "01.marshal"), {"format": 1})
    assert sorted(os.listdir(victim)) == ["00.marshal"]


def test_a_cache_directory_that_is_a_symlink_is_neither_read_nor_written(tmp_path, lw_home):
    assert cache.store("t.marshal", {"format": 1, "x": 1})
    victim = tmp_path / "victim"
    (lw_home / "cache").rename(victim)   # a directory of this user's, where a planted link points
    (lw_home / "cache").symlink_to(victim)
    assert cache.load("t.marshal", 1) == {"format": 1}
    assert not cache.store("u.marshal", {"format": 1})
    assert sorted(os.listdir(victim)) == ["t.marshal"]


COARSE = getattr(time, "CLOCK_REALTIME_COARSE", 5)  # Linux's number; Python names it not


def _after(path):
    """Once the kernel's coarse clock, which stamps files, has moved past path's change time: a change
    within the same tick keeps every time the same (a stamp tells it only from the next tick on)."""
    ctime = os.stat(path).st_ctime_ns
    while time.clock_gettime_ns(COARSE) <= ctime:
        os.sched_yield()


def test_stamps_tell_a_file_changed_made_or_removed_even_with_its_size_and_mtime_put_back(tmp_path):
    from linkwrap.cache import stamps, unchanged
    f, d, later = tmp_path / "linkwrap.toml", tmp_path / "bin", tmp_path / "later"
    f.write_text("prefer = ['lld']\n")
    d.mkdir()
    kept = stamps([str(f), str(d), str(later)])
    assert unchanged(kept)
    st = f.stat()
    _after(f)
    f.write_text("prefer = ['bfd']\n")  # the same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same mtime: the change time differs
    assert not unchanged(kept)
    kept = stamps([str(f), str(d), str(later)])
    _after(d)
    (d / "mold").write_text("")  # an entry made in a directory
    assert not unchanged(kept)
    kept = stamps([str(f), str(d), str(later)])
    later.write_text("")  # what was missing is there
    assert not unchanged(kept)
    kept = stamps([str(f), str(d), str(later)])
    f.unlink()
    assert not unchanged(kept)
