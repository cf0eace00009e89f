"""The queue of incremental bases the warm server builds (linkwrap/record/base_queue.py): written on
the link path in linkwrap's state directory, so with explicit modes and never through a planted link."""
import os
import stat

import pytest

from linkwrap.record import base_queue


def test_asked_with_explicit_modes_whatever_the_umask_and_taken_back_once_built(lw_home):
    old = os.umask(0)
    try:
        base_queue.want("/w", "/w/app")
    finally:
        os.umask(old)
    [(ident, asked)] = base_queue.wanted()
    d = base_queue.queue_dir()
    assert stat.S_IMODE(os.lstat(d).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(os.path.join(d, ident)).st_mode) == 0o600
    base_queue.done(ident, asked + 1)        # asked again since (another mtime): still wanted
    assert base_queue.wanted() == [(ident, asked)]
    base_queue.done(ident, asked, "linkwrap ld: not supported yet: something")
    assert base_queue.wanted() == []         # failed: not wanted until the link is saved again
    base_queue.want("/w", "/w/app")
    assert [i for i, _ in base_queue.wanted()] == [ident]


def test_a_planted_symlink_for_the_queue_is_not_followed(lw_home, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    state = base_queue.queue_dir()
    os.makedirs(os.path.dirname(state), exist_ok=True)
    os.symlink(elsewhere, state)
    with pytest.raises(OSError):
        base_queue.want("/w", "/w/app")
    assert os.listdir(elsewhere) == []
