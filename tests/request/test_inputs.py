"""linkwrap.request.inputs: each input stat()ed once per link, and what was read of a file kept by
its identity -- a file written again, or replaced, is seen as changed."""
import os

from linkwrap.request import inputs


def test_within_a_link_an_input_is_stat_ed_once_and_anew_in_the_next(tmp_path):
    f = tmp_path / "a.o"
    f.write_bytes(b"x" * 10)
    inputs.begin()
    try:
        assert inputs.stat(str(f)).st_size == 10
        f.write_bytes(b"x" * 20)                    # changed while the link runs: its first look stands
        assert inputs.stat(str(f)).st_size == 10
        assert inputs.stat(str(tmp_path / "missing.o")) is None
    finally:
        inputs.end()
    assert inputs.stat(str(f)).st_size == 20         # outside a link: os.stat()
    inputs.begin()                                   # the next link
    try:
        assert inputs.stat(str(f)).st_size == 20
    finally:
        inputs.end()


def test_outside_a_link_nothing_is_kept(tmp_path):
    f = tmp_path / "a.o"
    f.write_bytes(b"1")
    assert inputs.stat(str(f)).st_size == 1
    f.write_bytes(b"22")
    assert inputs.stat(str(f)).st_size == 2


def test_a_fact_is_kept_by_identity_and_lost_when_the_file_is_rewritten_or_replaced(tmp_path):
    f = tmp_path / "a.o"
    f.write_bytes(b"old")
    inputs.learn("test", os.stat(f), "old content")
    assert inputs.known("test", os.stat(f)) == "old content"
    with open(f, "r+b") as h:                         # in place, same inode and size
        h.write(b"new")
    os.utime(f, ns=(1, 1))                            # even with an mtime from before: ctime moves
    assert inputs.known("test", os.stat(f)) is None
    inputs.learn("test", os.stat(f), "new content")
    (tmp_path / "b.o").write_bytes(b"new")
    os.replace(tmp_path / "b.o", f)                   # another inode at the same name
    assert inputs.known("test", os.stat(f)) is None
    assert inputs.known("other", os.stat(f)) is None  # facts are per kind


def test_the_table_stays_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "MAX_KNOWN", 4)
    monkeypatch.setattr(inputs, "_known", {})
    for i in range(10):
        f = tmp_path / f"{i}.o"
        f.write_bytes(b"x")
        inputs.learn("test", os.stat(f), i)
    assert len(inputs._known) <= 4 and inputs.known("test", os.stat(tmp_path / "9.o")) == 9
