"""The hand-off of a link's request to the server, and the spare's rehearsal of it (warm.hand_off,
warm.rehearse): the next spare makes the last link's decisions before its own link comes, and keeps
what is pure (args, linkers, the direct line) and the private directory beside the output."""
import json
import os
import socket

from forked import in_a_fork
from linkrecords import c_object
from linkwrap.server import warm, world
from linkwrap.request import invocation


def _invocation(tmp_path, argv, env):
    return invocation.Invocation(tuple(argv), None, env, str(tmp_path), os.getpid(), None, "server", None, False)


def _handing_off():
    """(the server's end, the child's end) of a hand-off, the child's known by its inode as spare() does."""
    heard, told = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    heard.setblocking(False)
    st = os.fstat(told.fileno())
    world._OWN["handoff"] = (st.st_dev, st.st_ino)
    world._handoff = told
    return heard, told


def test_a_childs_request_reaches_the_server_whole_once_per_link(tmp_path):
    heard, told = _handing_off()
    env = {"PATH": os.environ["PATH"], **{f"CARGO_VAR_{i}": "x" * 100 for i in range(200)}}  # > PIPE_BUF
    argv = ["a.o", "-o", "out", *[f"-Wl,--defsym=s{i}=0" for i in range(100)]]
    warm.hand_off(_invocation(tmp_path, argv, env))
    warm.hand_off(_invocation(tmp_path, ["b.o", "-o", "again"], env))  # a retry's second start: not again
    state = {"last": None}
    warm._last_request(heard, state)
    assert warm._last_link(state["last"]) == (argv, None, str(tmp_path), env)
    heard.close()
    told.close()


def test_a_hand_off_whose_fd_number_went_to_a_clients_fd_sends_nothing(tmp_path):
    """take() puts the client's fds at their own numbers: one may land on the hand-off's."""
    heard, told = _handing_off()
    r, w = os.pipe()
    os.dup2(w, told.fileno())  # the client's pipe now has that number
    warm.hand_off(_invocation(tmp_path, ["a.o", "-o", "out"], {}))
    state = {"last": None}
    warm._last_request(heard, state)
    os.close(w)
    told.close()  # the pipe's last write end, at the hand-off's number
    assert state["last"] is None and os.read(r, 64) == b""  # nothing was written to the client's pipe
    os.close(r)
    heard.close()


def _rehearsed(last):
    """In a forked spare: rehearse(last), then what it kept. -> dict."""
    def rehearse():
        warm.rehearse(last)
        from linkwrap.request import args
        from linkwrap.run import direct
        return json.dumps({"args": args._last[0] if args._last else None,
                           "split_output": direct._split[1][3] if direct._split else None,
                           "output": args._last[1].output if args._last else None})
    return json.loads(in_a_fork(rehearse))


def test_the_spare_rehearses_the_last_link_and_keeps_what_it_found(tmp_path, lw_home):
    obj = c_object(tmp_path)
    env = {**os.environ, "LINKWRAP_LINKER": "mold"}
    argv = [obj, "-o", "app"]
    import marshal
    kept = _rehearsed(marshal.dumps((tuple(argv), None, str(tmp_path), env)))
    assert kept["args"] == [argv, None, str(tmp_path)]
    # split for a stand-in output, which the link's own private name takes: the link finds it kept
    from linkwrap.run import direct
    assert kept["split_output"] == direct._LINK_OUT and kept["output"] == str(tmp_path / "app")
    # Nothing made beside the output: after an answer the caller may be removing that directory.
    assert not os.path.exists(tmp_path / ".linkwrap-tmp")


def test_no_last_link_or_a_garbled_one_rehearses_the_stand_in_and_makes_nothing(tmp_path, lw_home, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the server's working directory: a build's source tree, perhaps
    for last in (None, b"garbage", __import__("marshal").dumps(("not", "a", "link", 1))):
        kept = _rehearsed(last)
        assert kept["args"] == [["linkwrap-rehearsal.o", "-o", "linkwrap-rehearsal"], None, str(tmp_path)]
    assert os.listdir(tmp_path) == ["lw-home"]
