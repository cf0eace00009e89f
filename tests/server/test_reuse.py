"""A server child that served a link serves the next one (reuse._back()): no fork, no rehearsal,
no exit per link -- and nothing of one link reaches the next: not its environment, working
directory, umask, fds, output or record; not a nice, limits or cgroup that cannot be put back;
not a forking linker's worker. Real server, real mold behind a stand-in that notes what it sees."""
import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import stop_servers, tool
from linkrecords import c_object, db_rows
from linkwrap.server import start
from tests.server.test_server import (_children, _gone, _hold, client, env_with, memory_cgroups,  # noqa: F401
                                      mold_standin, no_link_debris, server, server_moved_from_a_to_s, socket_path,
                                      standin, wait_for)

PEEK = r'''#!{python}
# A STAND-IN for mold (not mold): notes what the linker sees, then runs the real mold.
import json, os, sys
if "--version" not in sys.argv:
    fds = {{}}
    for n in os.listdir("/proc/self/fd"):
        try:
            fds[n] = os.readlink(f"/proc/self/fd/{{n}}")
        except OSError:
            pass  # the listing's own, closed by now
    fds = {{n: t for n, t in fds.items() if t != f"/proc/{{os.getpid()}}/fd"}}
    chain, p = [], os.getpid()
    while p > 1:  # the ancestors: the server's child is the one whose parent is the server
        p = int(open(f"/proc/{{p}}/stat").read().rsplit(")", 1)[1].split()[1])
        chain.append(p)
    import resource
    mask = os.umask(0)
    os.umask(mask)
    info = {{"chain": chain, "cwd": os.getcwd(), "umask": mask, "env": sorted(os.environ), "fds": fds,
            "nice": os.getpriority(os.PRIO_PROCESS, 0), "nofile": resource.getrlimit(resource.RLIMIT_NOFILE),
            "output": sys.argv[sys.argv.index("-o") + 1]}}
    with open(os.environ["PEEK_LOG"], "a") as f:
        f.write(json.dumps(info) + "\n")
    say = os.environ.get("PEEK_SAY")
    if say:
        os.write(1, f"stdout of {{say}}\n".encode())
        os.write(2, f"stderr of {{say}}\n".encode())
    burn = float(os.environ.get("PEEK_WORKER_S") or 0)
    if burn and os.fork() == 0:
        # A worker left running past the linker's exit, as a forking linker's: this much CPU time.
        while sum(os.times()[:2]) < burn:
            pass
        os._exit(0)
os.execv({mold!r}, [{mold!r}] + sys.argv[1:])
'''

# What a link may leave changed in a reused child's modules: the memos, each checked before its
# next use (docs/server.md), and the server's own bookkeeping. Anything else is a leftover.
MEMOS = {"linkwrap.server.world._KEPT", "linkwrap.server.world._LINK", "linkwrap.request.args._last",
         "linkwrap.request.args._compiled", "linkwrap.request.config._last", "linkwrap.facts.linkers._last",
         "linkwrap.run.direct._split", "linkwrap.run.direct._lines", "linkwrap.facts.filesystems._FS_LAST",
         "linkwrap.facts.cgroups._CGROUP_DIRS", "linkwrap.facts.filesystems._MOUNTINFO", "linkwrap.run.output._owner",
         "linkwrap.run.output._owners", "linkwrap.facts.build._seen",
         "linkwrap.facts.build._boot", "linkwrap.request.inputs._known"}


@pytest.fixture
def peek(tmp_path):
    return mold_standin(tmp_path / "peek-bin", PEEK)


def peek_env(tmp_path, peek, **extra):
    return env_with(tmp_path, peek, PEEK_LOG=str(tmp_path / "peek.log"),
                    LINKWRAP_TEST_STATE=str(tmp_path / "state.log"), **extra)


def notes(tmp_path):
    """[pid, what its link left changed...] per link its child served another after (or [pid,
    "exits:", why] where it could not), from LINKWRAP_TEST_STATE."""
    path = tmp_path / "state.log"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def seen(tmp_path):
    """What the stand-in saw, one dict per link, in order."""
    return [json.loads(line) for line in (tmp_path / "peek.log").read_text().splitlines()]


def served_by(info, server):
    """The server's child that ran the link the stand-in saw."""
    chain = info["chain"]
    for child, parent in zip(chain, chain[1:]):
        if parent == server:
            return child
    raise AssertionError(f"not linked by a child of server {server}: {chain}")


def link(client, tmp_path, env, out, cwd=None, **kw):
    obj = c_object(tmp_path)
    kw.setdefault("capture_output", True)
    done = subprocess.run([client, obj, "-o", out], cwd=cwd or tmp_path, env=env, **kw)
    assert done.returncode == 0, done.stderr
    return done


def until_served_by(child, client, tmp_path, env, server, outs):
    """Once child is back waiting, link outs one by one until one is served by it. -> (what its
    stand-in saw, its CompletedProcess). The children waiting take links in turn (EPOLLEXCLUSIVE
    wakes the one that has waited longest): others may come first."""
    wait_for(lambda: any(n[0] == str(child) and n[1:2] != ["exits:"] for n in notes(tmp_path)),
             f"child {child} back waiting for a link")
    for out in outs:
        done = link(client, tmp_path, env, out)  # stdout and stderr: pipes of its own
        info = seen(tmp_path)[-1]
        if served_by(info, server) == child:
            return info, done
    raise AssertionError(f"no link of {outs} was served by child {child} again")


def test_sequential_links_are_served_by_the_children_already_there(tmp_path, lw_home, client, server, peek):
    env = peek_env(tmp_path, peek)
    for i in range(5):
        link(client, tmp_path, env, f"app{i}")
    children = [served_by(info, server) for info in seen(tmp_path)]
    # Without reuse each link would be a fresh child's: five different processes.
    assert len(set(children)) < len(children), children
    assert [r["entry_point"] for r in db_rows(lw_home)] == ["server"] * 5
    # Each reused child says what the link left changed in its modules: only memos checked before use.
    noted = notes(tmp_path)
    assert noted and {int(n[0]) for n in noted} <= set(children)
    for note in noted:
        assert set(note[1:]) <= MEMOS, set(note[1:]) - MEMOS
    assert no_link_debris(tmp_path)
    # The server's figures count links, not processes; every child ends with the server, and the
    # private directories they made ahead beside the output with them.
    from linkwrap.cli.server import ask
    status = ask(socket_path(lw_home), "status")
    assert " links=5 " in status and " running=0 " in status, status
    stop_servers(lw_home)
    for c in set(children):
        wait_for(lambda: _gone(c), f"child {c}'s end with the server")
    wait_for(lambda: not os.path.exists(tmp_path / ".linkwrap-tmp"), "the children's directories' removal")


def test_a_reused_child_gives_the_next_link_nothing_of_the_last(tmp_path, lw_home, client, server, peek):
    """Link A with its own variable, working directory, umask 077, jobserver fds 5 and 6 and stdout
    to a file; then links without them until one is served by A's child: it sees none of A's."""
    a_dir = tmp_path / "a"
    a_dir.mkdir()
    r, w = os.pipe()
    os.write(w, b"+")
    a_out = tmp_path / "a-stdout"
    env = peek_env(tmp_path, peek)
    env_a = {**env, "LEAK_A": "1", "MAKEFLAGS": " -j2 --jobserver-auth=5,6", "PEEK_SAY": "A"}
    obj = c_object(tmp_path)
    done = subprocess.run(["bash", "-c", f'umask 077; exec 5<&{r} 6>&{w} >"{a_out}"; exec "$@"', "bash", client,
                           obj, "-o", str(tmp_path / "app-a")], cwd=a_dir, env=env_a, pass_fds=(r, w),
                          capture_output=True)
    assert done.returncode == 0, done.stderr
    a = seen(tmp_path)[-1]
    child = served_by(a, server)
    # What A's linker had: else nothing below would show a leak.
    assert a["cwd"] == str(a_dir) and a["umask"] == 0o077 and "LEAK_A" in a["env"] and "MAKEFLAGS" in a["env"]
    assert {"5", "6"} <= set(a["fds"])
    assert os.stat(tmp_path / "app-a").st_mode & 0o077 == 0
    b, done = until_served_by(child, client, tmp_path, {**env, "PEEK_SAY": "B"}, server,
                              [f"app-b{i}" for i in range(6)])
    # Its process as it waited before A: its environment, working directory, umask, fds, modules.
    after_a = [n for n in notes(tmp_path) if n[0] == str(child)][0]
    assert set(after_a[1:]) <= MEMOS, set(after_a[1:]) - MEMOS
    mask = os.umask(0)
    os.umask(mask)
    assert b["cwd"] == str(tmp_path) and b["umask"] == mask
    assert "LEAK_A" not in b["env"] and "MAKEFLAGS" not in b["env"]
    assert sorted(b["fds"]) == ["0", "1", "2"], b["fds"]  # no jobserver fd, nothing of the server's
    # The linker's messages (captured, then passed on) reach B's own stdout and stderr, none A's file.
    assert done.stdout == b"stdout of B\n" and done.stderr == b"stderr of B\n"
    assert a_out.read_bytes() == b"stdout of A\n"
    assert os.stat(tmp_path / b["output"].rsplit("/", 1)[-1]).st_mode & 0o777 == 0o777 & ~mask
    rows = {os.path.basename(r["output_path"]): r for r in db_rows(lw_home)}
    mine = rows[os.path.basename(b["output"])]
    assert mine["output_path"] == str(tmp_path / os.path.basename(b["output"]))
    assert json.loads(mine["argv"]) == [str(tmp_path / "hello.o"), "-o", os.path.basename(b["output"])]
    assert json.loads(rows["app-a"]["argv"]) == [str(tmp_path / "hello.o"), "-o", str(tmp_path / "app-a")]
    assert os.read(r, 1) == b"+"  # A's jobserver token went back; the pipe is the build's again
    os.close(r)
    os.close(w)


# How a build can differ from the server's: a lower priority, a lower soft or hard limit.
OTHER_WORLD = {"nice": ["nice", "-n", "5"],
               "soft limit": ["sh", "-c", 'ulimit -Sn {low} && exec "$@"', "sh"],
               "hard limit": ["sh", "-c", 'ulimit -n {low} && exec "$@"', "sh"]}


@pytest.mark.parametrize("how", list(OTHER_WORLD))
def test_a_child_that_took_another_nice_or_limits_serves_the_next_link_as_its_own(tmp_path, lw_home, client,
                                                                                   server, peek, how):
    """A `nice`d build, or one with other limits: its link runs with them, and its child, set back,
    serves later links with the server's own (as root, which may raise a hard limit again and take
    a priority back: _limits_go_back() and _may_renice() say where that is refused)."""
    import resource
    env = peek_env(tmp_path, peek)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = min(soft, 4096) - 9
    wrap = [w.format(low=low) for w in OTHER_WORLD[how]]
    obj = c_object(tmp_path)
    done = subprocess.run([*wrap, client, obj, "-o", "app-a"], cwd=tmp_path, env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    a = seen(tmp_path)[-1]
    own = (os.getpriority(os.PRIO_PROCESS, server), [soft, hard])
    assert (a["nice"], a["nofile"]) == {"nice": (own[0] + 5, own[1]), "soft limit": (own[0], [low, hard]),
                                        "hard limit": (own[0], [low, low])}[how]  # the build's, in its link
    child = served_by(a, server)
    from linkwrap.server import world
    if (how == "hard limit" and not world._capable(24)) or (how == "nice" and not world._may_renice(own[0])):
        # No CAP_SYS_RESOURCE, or neither CAP_SYS_NICE nor RLIMIT_NICE room (so in some containers,
        # even as root): it cannot go back, and the child exits after that link; later links have
        # the server's limits and priority all the same.
        wait_for(lambda: _gone(child), "the exit of the child whose link took what cannot go back")
        link(client, tmp_path, env, "app-b")
        b = seen(tmp_path)[-1]
        assert served_by(b, server) != child
    else:
        b, _ = until_served_by(child, client, tmp_path, env, server, [f"app-b{i}" for i in range(6)])
    assert (b["nice"], b["nofile"]) == own  # the server's again


@pytest.fixture
def niced_server(lw_home, client):
    """A server started by a build at nice +5 (the first link of a `nice cargo build`)."""
    code = "from linkwrap.server import start; print(start.start_detached())"
    done = subprocess.run(["nice", "-n", "5", sys.executable, "-c", code], capture_output=True, text=True, check=True)
    wait_for(lambda: os.path.exists(socket_path(lw_home)), "the server's socket")
    yield int(done.stdout.split()[-1])
    stop_servers(lw_home)


def test_a_niced_servers_children_serve_the_links_of_builds_at_another_nice(tmp_path, lw_home, client,
                                                                              niced_server, peek):
    """Each link runs at its build's priority where the child may take it (CAP_SYS_NICE or RLIMIT_NICE;
    else at the server's), and goes back to the server's after: the children are reused (before,
    every link of such a server took a fresh child)."""
    from linkwrap.server import world
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    assert os.getpriority(os.PRIO_PROCESS, niced_server) == min(19, mine + 5)
    env = peek_env(tmp_path, peek)
    link(client, tmp_path, env, "app-a")
    a = seen(tmp_path)[-1]
    child = served_by(a, niced_server)
    b, _ = until_served_by(child, client, tmp_path, env, niced_server, [f"app-b{i}" for i in range(6)])
    may = world._may_renice(mine)  # whether nice +5 may go back to mine (the child takes the build's)
    assert a["nice"] == b["nice"] == (mine if may else min(19, mine + 5))


LIMITS_BACK = """
import resource, sys
from linkwrap.server import world
world._own_world()
own = resource.getrlimit(resource.RLIMIT_NOFILE)
lower = own[1] - 1 if sys.argv[1] == "hard" else own[1]  # NOFILE's hard limit is never unlimited
resource.setrlimit(resource.RLIMIT_NOFILE, (min(own[0], lower, 512), lower))
may = world._limits_go_back()
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, own)
    back = True
except (ValueError, OSError):
    back = False
print(may, back)
"""


@pytest.mark.parametrize("privileged", [False, True])
@pytest.mark.parametrize("lowered", ["soft", "hard"])
def test_a_child_knows_whether_its_limits_can_go_back(privileged, lowered):
    """A hard limit the client lowered is raised again only with CAP_SYS_RESOURCE (setpriv drops it;
    some containers' root has none): _limits_go_back() says what setrlimit() then does, and
    without it the child exits after that link (settle() notes "limits")."""
    drop = [] if privileged else [tool("setpriv"), "--bounding-set=-sys_resource", "--inh-caps=-sys_resource"]
    done = subprocess.run([*drop, sys.executable, "-c", LIMITS_BACK, lowered], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    may, back = done.stdout.split()
    assert may == back
    if lowered == "soft":
        assert may == "True"
    elif not privileged:
        assert may == "False"


def test_a_forking_linkers_worker_is_the_records_of_its_own_link_only(tmp_path, lw_home, client, server, peek):
    """The worker outlives the linker's first process: its link's child waits for it (run.reap)
    before it serves another link, and the next record has only that link's linker in it."""
    env = peek_env(tmp_path, peek)
    link(client, tmp_path, {**env, "PEEK_WORKER_S": "0.4"}, "app-a")
    child = served_by(seen(tmp_path)[-1], server)
    b, _ = until_served_by(child, client, tmp_path, env, server, [f"app-b{i}" for i in range(6)])
    rows = {os.path.basename(r["output_path"]): r for r in db_rows(lw_home)}
    a_cpu = rows["app-a"]["user_ms"] + rows["app-a"]["sys_ms"]
    b_row = rows[os.path.basename(b["output"])]
    assert a_cpu >= 400, a_cpu
    assert b_row["user_ms"] + b_row["sys_ms"] < 400, b_row


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_the_child_of_an_interrupted_link_exits_and_the_next_link_works(tmp_path, lw_home, client, server,
                                                                        standin, sig):
    proc, linker, out = _hold(client, tmp_path, standin, lw_home)
    child = int(open(f"/proc/{linker}/stat").read().rsplit(")", 1)[1].split()[1])
    assert int(open(f"/proc/{child}/stat").read().rsplit(")", 1)[1].split()[1]) == server
    proc.send_signal(sig)
    assert proc.wait() == -sig
    wait_for(lambda: _gone(child), "the interrupted link's child's exit")
    wait_for(lambda: no_link_debris(tmp_path), "the private directory's removal")
    assert out.read_bytes() == b"the last good binary"
    done = subprocess.run([client, str(tmp_path / "hello.o"), "-o", "next"], cwd=tmp_path, env=env_with(tmp_path),
                          capture_output=True)
    assert (done.returncode, done.stderr) == (0, b"")
    assert [r["entry_point"] for r in db_rows(lw_home)] == ["server"]


@pytest.fixture
def bounded_server(lw_home, client, monkeypatch):
    monkeypatch.setenv("LINKWRAP_TEST_LINKS_PER_CHILD", "2")
    pid = start.start_detached()
    wait_for(lambda: os.path.exists(socket_path(lw_home)), "the server's socket")
    yield pid
    stop_servers(lw_home)
    os.waitpid(pid, 0)


def test_a_child_exits_at_its_bound_of_links_and_links_go_on(tmp_path, lw_home, client, bounded_server, peek):
    env = peek_env(tmp_path, peek)
    for i in range(7):
        link(client, tmp_path, env, f"app{i}")
    children = [served_by(info, bounded_server) for info in seen(tmp_path)]
    counts = {c: children.count(c) for c in children}
    assert max(counts.values()) == 2 and len(counts) < len(children), children  # reused, twice at most
    for c, n in counts.items():
        if n == 2:
            wait_for(lambda: _gone(c), f"the exit of child {c} at its bound")
    assert [r["entry_point"] for r in db_rows(lw_home)] == ["server"] * 7


RENICE = """
import os
from linkwrap.server import world
may = world._may_renice(0)
os.nice(19)
try:
    os.setpriority(os.PRIO_PROCESS, 0, 0)
    back = True
except PermissionError:
    back = False
print(may, back)
"""


@pytest.mark.parametrize("privileged", [False, True])
def test_a_child_knows_whether_it_may_go_back_from_nice_19(privileged):
    """Without CAP_SYS_NICE (an unprivileged server: setpriv drops it from root here) and with
    RLIMIT_NICE 0 going back from the tidying's nice 19 is refused: a child that could not go back
    tidies at its own priority instead (workers._answer), and _may_renice() says which it is."""
    drop = [] if privileged else [tool("setpriv"), "--bounding-set=-sys_nice", "--inh-caps=-sys_nice"]
    done = subprocess.run([tool("prlimit"), "--nice=0", *drop, sys.executable, "-c", RENICE], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(privileged)] * 2


def test_a_child_that_joined_the_clients_cgroup_is_not_reused(tmp_path, lw_home, client, peek, memory_cgroups):
    """The server started from the build's group A, then moved to S; its spares forked after that are
    in S: a child joins A for its link, cannot leave it exactly, and exits after it."""
    pid, in_a = server_moved_from_a_to_s(lw_home, memory_cgroups)
    try:
        first = set(_children(pid))
        for c in first:  # the spares forked in A: the server forks others, in S
            os.kill(c, signal.SIGKILL)
        wait_for(lambda: len(set(_children(pid)) - first) >= 2, "two spares forked in S")
        env = peek_env(tmp_path, peek)
        obj = c_object(tmp_path)
        for i in range(2):
            done = subprocess.run(["sh", "-c", in_a, "sh", client, obj, "-o", f"app{i}"], cwd=tmp_path, env=env,
                                  capture_output=True)
            assert done.returncode == 0, done.stderr
            info = seen(tmp_path)[-1]
            child = served_by(info, pid)
            assert child not in first
            wait_for(lambda: _gone(child), "the exit of the child that joined the client's cgroup")
        assert [r["entry_point"] for r in db_rows(lw_home)] == ["server", "server"]
    finally:
        stop_servers(lw_home)
        wait_for(lambda: not os.path.exists(f"/proc/{pid}"), "the server's exit")


def test_a_reused_childs_memos_see_what_changed_between_its_links(tmp_path, lw_home, client, server, standin):
    """Children that served a link serve the next ones (another holds a link open): what each kept
    from its last link -- the configuration, the linkers found, the direct line -- is checked again
    before each use, as a spare's rehearsal is (tests/server/test_current.py)."""
    from tests.server.test_current import HI, _env
    held = tmp_path / "held"
    held.mkdir()
    proc, linker, _ = _hold(client, held, standin, lw_home)
    try:
        (tmp_path / ".git").mkdir()
        toml = tmp_path / "linkwrap.toml"
        toml.write_text('prefer = ["wild", "lld"]\n')
        bindir = tmp_path / "bin"
        bindir.mkdir()
        obj = c_object(tmp_path, body=HI)
        env = {**_env(tmp_path, bindir), "LINKWRAP_TEST_STATE": str(tmp_path / "state.log")}
        changes = [lambda: None,
                   lambda: os.symlink(tool("wild"), bindir / "wild"),  # a linker installed
                   lambda: toml.write_text('prefer = ["bfd"]\n'),  # the configuration edited
                   lambda: subprocess.run(["cc", "-flto", "-c", "hello.c", "-o", "hello.o"], cwd=tmp_path,
                                          check=True)]  # an input with LTO code: the driver's
        for i, change in enumerate(changes):
            change()
            done = subprocess.run([client, obj, "-o", "hello"], cwd=tmp_path, env=env, capture_output=True)
            assert (done.returncode, done.stderr) == (0, b"")
            wait_for(lambda: len(notes(tmp_path)) > i, "the child back waiting")
        # Served by the one child left and the spare forked while it linked, in turn: each served a
        # link with what it kept from an earlier one, changed since.
        served = [n[0] for n in notes(tmp_path)]
        assert len(served) == 4 and max(served.count(c) for c in served) >= 2, notes(tmp_path)
        assert all(n[1:2] != ["exits:"] for n in notes(tmp_path))
        rows = sorted((r for r in db_rows(lw_home) if r["output_path"] == str(tmp_path / "hello")),
                      key=lambda r: (r["started_utc"], r["id"]))
        assert [(r["linker"], r["linker_start"]) for r in rows] == [
            ("lld", "direct"), ("wild", "direct"), ("bfd", "direct"), ("bfd", "driver")]
    finally:
        os.kill(linker, signal.SIGKILL)  # the held link fails, and is linked again as asked
        proc.communicate(timeout=300)


def test_a_big_links_memory_is_not_the_record_of_a_later_link(tmp_path, lw_home, client, server, peek):
    """A linker's ru_maxrss takes in the memory of the process that spawned it (posix_spawn: its
    memory until the exec). After a link whose response file made its child some 20 MB bigger, that
    child serves again only once it is back to its size, with its peak reset (reuse._back()), or
    exits: no later link records the big link's memory as its own."""
    env = peek_env(tmp_path, peek)
    link(client, tmp_path, env, "small-first")
    small = [r["peak_rss_kb"] for r in db_rows(lw_home)][-1]
    wait_for(lambda: len(notes(tmp_path)) == 1, "the first link's child back waiting")
    rsp = tmp_path / "big.rsp"
    # ~60 000 arguments (2 MB): parsing and recording them makes the child tens of MB bigger.
    rsp.write_text(c_object(tmp_path) + "\n" +
                   "\n".join(f"-Wl,--defsym=linkwrap_test_symbol_{i}=0" for i in range(60_000)))
    done = subprocess.run([client, f"@{rsp}", "-o", "big"], cwd=tmp_path, env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    wait_for(lambda: len(notes(tmp_path)) == 2, "the big link's child back waiting, or gone")
    child = notes(tmp_path)[-1]
    outs = [f"after-{i}" for i in range(8)]
    if child[1:2] == ["exits:"]:
        assert " ".join(child[2:]) == "its memory", child
        for out in outs[:4]:
            link(client, tmp_path, env, out)
        after = [os.path.basename(b) for b in outs[:4]]
    else:  # served again: by the child that linked the big one
        b, _ = until_served_by(int(child[0]), client, tmp_path, env, server, outs)
        after = [os.path.basename(b["output"])]
    peaks = {os.path.basename(r["output_path"]): r["peak_rss_kb"] for r in db_rows(lw_home)}
    assert peaks["big"] > small + (15 << 10), (small, peaks["big"])  # the child's growth is in the big link's
    assert all(peaks[out] < small + (5 << 10) for out in after), (small, {out: peaks[out] for out in after})


def test_the_outputs_directory_can_go_as_soon_as_the_link_has_answered(tmp_path, lw_home, client, server):
    """`make clean`, CMake's try_compile: the caller removes the output's directory straight after
    the link. A reused child made nothing there after its answer (it made the next link's private
    directory ahead once: `rm -rf` then failed one time in ten with "Directory not empty")."""
    obj = c_object(tmp_path)
    env = env_with(tmp_path)
    for i in range(40):
        out = tmp_path / "build"
        out.mkdir()
        done = subprocess.run(["sh", "-c", f'"$0" {obj} -o build/app && rm -rf build', client], cwd=tmp_path,
                              env=env, capture_output=True)
        assert (done.returncode, done.stderr) == (0, b""), (i, done.stderr)
        assert not out.exists(), i
    assert [r["entry_point"] for r in db_rows(lw_home)] == ["server"] * 40
