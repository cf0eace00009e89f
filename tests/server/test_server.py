"""The native client and the warm link server, with real links, real cgroups and real signals.

A stand-in `mold` (it says it is one) shows what the linker sees -- its cgroup, the
jobserver -- and can hold a link open; it then runs the real mold.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import stop_servers, tool
from linkrecords import c_object, db_rows
from linkwrap.install import launcher
from linkwrap.server import lifetime, protocol, world
from linkwrap.server import start

STANDIN = r'''#!{python}
# A STAND-IN for mold (not mold): notes what it sees, may hold the link, then runs the real mold.
import json, os, sys, time
if "--version" not in sys.argv:
    log = os.environ.get("PEEK_LOG")
    if log:
        import resource
        mask = os.umask(0)
        info = {{"cgroup": open("/proc/self/cgroup").read(), "makeflags": os.environ.get("CARGO_MAKEFLAGS"),
                "umask": mask, "nofile": resource.getrlimit(resource.RLIMIT_NOFILE),
                "policy": os.sched_getscheduler(0), "nice": os.getpriority(os.PRIO_PROCESS, 0)}}
        os.umask(mask)
        flags = info["makeflags"] or ""
        if "--jobserver-auth=" in flags:
            r, w = flags.split("--jobserver-auth=")[1].split()[0].split(",")
            token = os.read(int(r), 1)
            os.write(int(w), token)
            info["token"] = token.decode()
        with open(log, "a") as f:
            f.write(json.dumps(info) + "\n")
    hold = os.environ.get("PEEK_HOLD")
    if hold and not os.path.exists(hold):  # once: a link run again after this one goes through
        with open(sys.argv[sys.argv.index("-o") + 1], "wb") as f:
            f.write(b"partial")
        with open(hold + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(hold + ".tmp", hold)
        time.sleep(300)
os.execv({mold!r}, [{mold!r}] + sys.argv[1:])
'''


@pytest.fixture
def client(lw_home):
    path = launcher.fast_script("linkwrap-cc")
    assert open(path, "rb").read(4) == b"\x7fELF", "the native client did not compile"
    return path


@pytest.fixture
def standin(tmp_path):
    return mold_standin(tmp_path / "standin-bin", STANDIN)


def mold_standin(d, script):
    """A directory holding `mold`: script (a template of {python} and {mold}, the real one)."""
    d.mkdir()
    (d / "mold").write_text(script.format(python=sys.executable, mold=tool("mold")))
    (d / "mold").chmod(0o755)
    return d


def wait_for(cond, what, timeout=60):
    """Readiness, not timing: poll until cond() holds (a busy machine may take a while)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen")


def no_link_debris(directory):
    """Nothing of a link is left in directory's .linkwrap-tmp (nothing is made there ahead)."""
    top = os.path.join(str(directory), ".linkwrap-tmp")
    return not os.path.exists(top) or os.listdir(top) == []


def socket_path(home):
    return os.path.join(str(home), "run", lifetime.socket_name(lifetime.world_key()))


def server_pid(home):
    """The pid in the lock file of the one server running under home."""
    run = os.path.join(str(home), "run")
    for n in os.listdir(run):
        if n.endswith(".lock"):
            text = open(os.path.join(run, n)).read().split()
            if text:
                return int(text[0])
    return None


@pytest.fixture
def server(lw_home, client):
    pid = start.start_detached()
    wait_for(lambda: os.path.exists(socket_path(lw_home)), "the server's socket")
    yield pid
    stop_servers(lw_home)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass  # the test reaped it


def env_with(tmp_path, standin=None, **extra):
    env = {**os.environ, "LINKWRAP_LINKER": "mold", **extra}
    if standin is not None:
        env["PATH"] = f"{standin}:{env['PATH']}"
    return env


def link(client, tmp_path, env, out="hello", **kw):
    obj = c_object(tmp_path, body='#include <stdio.h>\nint main(void){puts("hi");return 0;}\n')
    return subprocess.run([client, obj, "-o", out], cwd=tmp_path, env=env, capture_output=True, **kw)


def entry_points(home):
    return [r["entry_point"] for r in db_rows(home)]


def test_the_first_link_starts_a_server_and_the_next_ones_go_through_it(tmp_path, lw_home, client):
    env = env_with(tmp_path)
    done = link(client, tmp_path, env)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    wait_for(lambda: os.path.exists(socket_path(lw_home)), "a server started by the first link")
    proc = subprocess.Popen([client, "hello.o", "-o", "hello2"], cwd=tmp_path, env=env)
    assert proc.wait() == 0
    assert subprocess.run([str(tmp_path / "hello2")], capture_output=True).stdout == b"hi\n"
    rows = db_rows(lw_home)
    assert [r["entry_point"] for r in rows] == ["script", "server"]
    # The build and the pid are the client's, not the server's child's.
    assert rows[1]["pid"] == proc.pid and rows[1]["build_id"] == rows[0]["build_id"]
    assert rows[1]["linker"] == "mold" and rows[1]["linker_start"] == "direct"
    st = os.stat(os.path.join(str(lw_home), "run"))
    assert st.st_mode & 0o777 == 0o700
    assert os.stat(socket_path(lw_home)).st_mode & 0o077 == 0


def test_no_compiler_at_install_leaves_the_script_as_the_entry_point(tmp_path, lw_home, monkeypatch):
    empty = tmp_path / "no-cc"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    path = launcher.fast_script("linkwrap-cc")
    assert open(path, "rb").read(2) == b"#!" and open(path).read() == open(launcher.script_path("linkwrap-cc")).read()
    monkeypatch.undo()
    os.environ["LINKWRAP_HOME"] = str(lw_home)
    done = link(path, tmp_path, env_with(tmp_path))
    assert done.returncode == 0 and entry_points(lw_home) == ["script"]


def test_linkwrap_server_status_and_stop(lw_home, server):
    from linkrecords import lw
    out = lw("server", "status").stdout
    assert f"pid={server}" in out and "(this world)" in out
    assert re.search(r" started=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+ s ago\)", out), out
    assert "stopping" in lw("server", "stop").stdout
    wait_for(lambda: os.waitpid(server, os.WNOHANG)[0] == server, "the server's exit")
    assert not os.path.exists(socket_path(lw_home))
    assert "no link server running" in lw("server", "status").stdout


# A supervisor (tini, a container's init, systemd --user): a child subreaper that started the server.
# Its exit status says whether it was sent SIGTERM.
SUPERVISOR = r"""
import ctypes, signal, sys
assert ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
got = []
signal.signal(signal.SIGTERM, lambda *_: got.append(1))
from linkwrap.server.start import start_detached
print(start_detached(), flush=True)
sys.stdin.read()  # until the test is done
sys.exit(15 if got else 0)
"""


def _stop_after_the_servers_death(home):
    """A supervisor starts a server; a connection is taken by one of its children, the server is
    killed, then the child is told to stop. -> (the child's answer, the supervisor's exit status,
    the server's pid). The answer is empty when the child gave up first (it waits 5 s for a
    request): the exchange was not made, and says nothing."""
    import pids
    from linkwrap.cli.server import ask, server_control
    sup = subprocess.Popen([sys.executable, "-c", SUPERVISOR], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    answer = b""
    try:
        server = int(sup.stdout.readline())
        path = socket_path(home)
        wait_for(lambda: os.path.exists(path), "the server's socket")
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(60)
        conn.connect(path)
        # a child took the connection and told the server so (until then, the server's death ends it):
        # it waits for a request
        wait_for(lambda: " running=1" in (ask(path, "status") or ""), "the connection counted as running")
        assert pids.send(pids.identity(server), signal.SIGKILL)
        # dead, unreaped: its children were handed to the supervisor as it died
        wait_for(lambda: pids.state(server) == "Z", "the server's death")
        try:
            conn.sendall(server_control("stop"))
            while chunk := conn.recv(4096):
                answer += chunk
        except OSError:
            pass  # the child gave up waiting first
        conn.close()
    finally:
        sup.stdin.close()
    return answer, sup.wait(timeout=60), server


def test_a_stop_taken_after_the_server_died_signals_no_other_process(tmp_path, lw_home, client):
    """A server's child that took a `linkwrap server stop` told its parent to stop by getppid(): once the
    server had died (killed, or gone idle meanwhile), that was whoever adopted the child -- init, or a
    subreaper such as a supervisor or systemd --user, which SIGTERM ends. Only the server is told."""
    for _ in range(3):  # a busy machine may keep this process from asking within the child's 5 s
        answer, status, server = _stop_after_the_servers_death(lw_home)
        assert status == 0, "the supervisor was sent SIGTERM"
        if answer:
            break
    assert answer.startswith(f"pid={server} ".encode()), answer  # the server's pid, not the adopter's


def test_a_stale_socket_is_passed_by_and_replaced(tmp_path, lw_home, client):
    os.makedirs(os.path.dirname(socket_path(lw_home)), mode=0o700, exist_ok=True)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(socket_path(lw_home))
    s.close()  # bound, never listening: what a killed server leaves
    done = link(client, tmp_path, env_with(tmp_path))
    assert done.returncode == 0 and done.stderr == b""
    from linkwrap.cli.server import ask
    wait_for(lambda: ask(socket_path(lw_home), "status"), "a new server replacing the stale socket")
    assert link(client, tmp_path, env_with(tmp_path), out="h2").returncode == 0
    assert entry_points(lw_home) == ["script", "server"]


def test_a_server_of_another_uid_is_never_used(tmp_path, lw_home, client):
    os.makedirs(os.path.dirname(socket_path(lw_home)), mode=0o700, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path(lw_home))
    pid = os.fork()
    if pid == 0:  # listens as nobody: SO_PEERCRED names the listener's uid
        try:
            os.setgid(65534)
            os.setuid(65534)
            listener.listen(8)
            while True:
                conn, _ = listener.accept()
                conn.recv(1 << 16)
                conn.sendall(b"A")  # would take the link if the client let it
        finally:
            os._exit(0)
    listener.close()
    try:
        done = link(client, tmp_path, env_with(tmp_path), timeout=120)
        assert done.returncode == 0 and done.stderr == b""
        assert entry_points(lw_home) == ["script"]
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def test_a_run_directory_of_another_uid_is_never_used(tmp_path, lw_home, client):
    run = os.path.dirname(socket_path(lw_home))
    os.makedirs(run, mode=0o700)
    os.chown(run, 65534, 65534)
    done = link(client, tmp_path, env_with(tmp_path))
    assert done.returncode == 0 and done.stderr == b""
    assert entry_points(lw_home) == ["script"]
    assert not os.listdir(run)  # no server was started in it either


def test_a_server_of_another_version_is_passed_by(tmp_path, lw_home, client):
    import linkwrap
    parent = os.path.dirname(os.path.dirname(os.path.abspath(linkwrap.__file__)))
    old = subprocess.Popen([sys.executable, "-I", "-S", "-c",
                            f"import sys; sys.path.insert(0, {parent!r}); import linkwrap; "
                            "linkwrap.__version__ = '0.0.1'; from linkwrap.server.server import main; main()"],
                           env=os.environ, stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: os.path.exists(socket_path(lw_home)), "the old server's socket")
        done = link(client, tmp_path, env_with(tmp_path))
        assert done.returncode == 0 and done.stderr == b""
        assert entry_points(lw_home) == ["script"]
    finally:
        old.terminate()
        old.wait()


def test_64_concurrent_links_through_one_server(tmp_path, lw_home, client, server):
    obj = c_object(tmp_path, body='#include <stdio.h>\nint main(void){puts("hi");return 0;}\n')
    env = env_with(tmp_path)
    procs = [subprocess.Popen([client, obj, "-o", f"out{i}"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for i in range(64)]
    results = [(p.wait(), p.stdout.read(), p.stderr.read()) for p in procs]
    assert results == [(0, b"", b"")] * 64
    for i in (0, 31, 63):
        assert subprocess.run([str(tmp_path / f"out{i}")], capture_output=True).stdout == b"hi\n"
    rows = db_rows(lw_home)
    assert len(rows) == 64 and sorted(r["pid"] for r in rows) == sorted(p.pid for p in procs)
    # One server took them; on a very busy machine a client that waited past its timeout for a free
    # child links through the script instead (never a hang): a few may.
    assert sum(r["entry_point"] == "server" for r in rows) >= 56, [r["entry_point"] for r in rows]
    assert no_link_debris(tmp_path)
    # The listener's O_NONBLOCK belongs to the file every spare shares: a spare that had set it
    # blocking to wait would leave another's accept() blocked, or a third's raising.
    assert _listener_flags(server) & os.O_NONBLOCK


def _listener_flags(pid):
    """The open-file flags of pid's listening Unix socket (__SO_ACCEPTCON in /proc/net/unix)."""
    with open("/proc/net/unix") as f:
        listening = {line.split()[6] for line in list(f)[1:] if int(line.split()[3], 16) & 0x10000}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        target = os.readlink(f"/proc/{pid}/fd/{fd}")
        if target.startswith("socket:[") and target[8:-1] in listening:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                return int(f.read().split("flags:")[1].split()[0], 8)
    raise AssertionError(f"no listening socket in process {pid}")


def jobserver(tmp_path, standin):
    """A jobserver pipe holding one token, and the environment that names it to the build's links
    (the stand-in linker writes what it finds to the returned log)."""
    r, w = os.pipe()
    os.set_inheritable(r, True)
    os.set_inheritable(w, True)
    os.write(w, b"+")
    log = tmp_path / "peek.log"
    return r, w, log, env_with(tmp_path, standin, PEEK_LOG=str(log), CARGO_MAKEFLAGS=f"-j --jobserver-auth={r},{w}")


def test_the_jobserver_reaches_the_linker(tmp_path, lw_home, client, server, standin):
    r, w, log, env = jobserver(tmp_path, standin)
    obj = c_object(tmp_path)
    done = subprocess.run([client, obj, "-o", "app"], cwd=tmp_path, env=env, capture_output=True, pass_fds=(r, w))
    assert done.returncode == 0, done.stderr
    (seen,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert seen["token"] == "+" and f"--jobserver-auth={r},{w}" in seen["makeflags"]
    assert os.read(r, 1) == b"+"  # given back through the build's own pipe
    assert entry_points(lw_home) == ["server"]


def test_a_jobserver_on_fd_numbers_above_1023_reaches_the_linker_through_the_server(tmp_path, lw_home, client,
                                                                                    server, standin):
    """A build with many files open: the jobserver at 6 (where the child's connection may be: it is
    then moved above the highest target) and at 1101. Nothing after that may select() on it."""
    r, w, log, _ = jobserver(tmp_path, standin)
    env = env_with(tmp_path, standin, PEEK_LOG=str(log), CARGO_MAKEFLAGS="-j --jobserver-auth=6,1101")
    obj = c_object(tmp_path)
    done = subprocess.run(["bash", "-c", f'ulimit -Sn 4096; exec 6<&{r} 1101>&{w}; exec "$@"', "bash", client, obj,
                           "-o", "app"], cwd=tmp_path, env=env, capture_output=True, pass_fds=(r, w))
    assert done.returncode == 0, done.stderr
    (seen,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert seen["token"] == "+"
    assert os.read(r, 1) == b"+"
    assert entry_points(lw_home) == ["server"]  # served, not linked again by the script after a fault


def test_the_linker_runs_at_the_clients_scheduling_policy_and_nice_not_the_servers(tmp_path, lw_home, client,
                                                                                     server, standin):
    """`nice cargo build`: its links too run niced; and whatever the server runs at stays its own."""
    log = tmp_path / "peek.log"
    env = env_with(tmp_path, standin, PEEK_LOG=str(log))
    obj = c_object(tmp_path)
    done = subprocess.run(["nice", "-n", "7", client, obj, "-o", "app"], cwd=tmp_path, env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    seen = json.loads(log.read_text().splitlines()[-1])
    assert (seen["policy"], seen["nice"]) == (os.SCHED_OTHER, os.getpriority(os.PRIO_PROCESS, 0) + 7)
    assert entry_points(lw_home) == ["server"]
    done = subprocess.run([client, obj, "-o", "app2"], cwd=tmp_path, env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    seen = json.loads(log.read_text().splitlines()[-1])
    assert (seen["policy"], seen["nice"]) == (os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, 0))


def test_the_link_has_the_clients_umask_and_limits_not_the_servers(tmp_path, lw_home, client, server, standin):
    """The client sends its umask and resource limits with its request; the child takes them."""
    log = tmp_path / "peek.log"
    env = env_with(tmp_path, standin, PEEK_LOG=str(log))
    obj = c_object(tmp_path)
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lower = min(soft, 4096) - 7  # any value other than the server's own
    done = subprocess.run(["sh", "-c", f'umask 027; ulimit -Sn {lower}; exec "$@"', "sh", client, obj, "-o", "app"],
                          cwd=tmp_path, env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    (seen,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert seen["umask"] == 0o027 and seen["nofile"] == [lower, hard]
    assert os.stat(tmp_path / "app").st_mode & 0o777 == 0o750
    assert entry_points(lw_home) == ["server"]
    # The next link, with the caller's own umask and limits, has them again: nothing carried over.
    done = subprocess.run([client, obj, "-o", "app2"], cwd=tmp_path, env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    seen = json.loads(log.read_text().splitlines()[-1])
    mask = os.umask(0)
    os.umask(mask)
    assert seen["umask"] == mask and seen["nofile"] == [soft, hard]


# A seccomp filter that refuses pidfd_getfd (438 on every architecture) with EPERM, as some
# container runtimes' profiles do; installed in the process that then starts the server.
NO_PIDFD_GETFD = r"""
import ctypes, struct
prog = struct.pack("HBBI" * 4, 0x20, 0, 0, 0,            # A = seccomp_data.nr
                   0x15, 0, 1, 438,                        # A == pidfd_getfd ?
                   0x06, 0, 0, 0x00050000 | 1,             #   SECCOMP_RET_ERRNO | EPERM
                   0x06, 0, 0, 0x7FFF0000)                 # SECCOMP_RET_ALLOW
code = ctypes.create_string_buffer(prog, len(prog))
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
assert libc.prctl(22, 2, ctypes.byref(Prog(4, ctypes.addressof(code))), 0, 0) == 0  # SECCOMP_MODE_FILTER
assert libc.syscall(438, 0, 0, 0) == -1 and ctypes.get_errno() == 1
from linkwrap.server.start import start_detached
start_detached()
"""


def _client_trace(client, tmp_path, env, out, **kw):
    """Link through the client under strace: -> what the client sent and received on its socket."""
    trace = tmp_path / f"{out}.strace"
    obj = c_object(tmp_path)
    done = subprocess.run([tool("strace"), "-e", "trace=sendmsg,sendto,recvfrom", "-o", str(trace), client, obj,
                           "-o", out], cwd=tmp_path, env=env, capture_output=True, **kw)
    assert done.returncode == 0, done.stderr
    return trace.read_text()


def test_the_child_takes_the_fds_itself_or_the_client_sends_them(tmp_path, lw_home, client, standin):
    r, w, log, env = jobserver(tmp_path, standin)
    for refused in (False, True):
        if refused:  # a server where pidfd_getfd is refused: the client is asked for its fds ('S')
            subprocess.run([sys.executable, "-c", NO_PIDFD_GETFD], check=True)
        else:
            start.start_detached()
        pid = wait_for(lambda: os.path.exists(socket_path(lw_home)) and server_pid(lw_home), "the server")
        try:
            trace = _client_trace(client, tmp_path, env, f"app-{refused}", pass_fds=(r, w))
        finally:
            stop_servers(lw_home)
            wait_for(lambda: not os.path.exists(f"/proc/{pid}") or _gone(pid), "the server's exit")
        assert ('"S"' in trace and "SCM_RIGHTS" in trace) == refused, trace
        assert ('"T"' in trace and "SCM_RIGHTS" not in trace) == (not refused), trace
        seen = json.loads(log.read_text().splitlines()[-1])
        assert seen["token"] == "+"  # the jobserver's fds reached the linker either way
        assert os.read(r, 1) == b"+"
        os.write(w, b"+")
        assert subprocess.run([str(tmp_path / f"app-{refused}")]).returncode == 0
    assert entry_points(lw_home) == ["server", "server"]


def _memory_cgroup(pid="self"):
    for line in open(f"/proc/{pid}/cgroup"):
        _, controllers, path = line.rstrip("\n").split(":", 2)
        if "memory" in controllers.split(","):
            return path
    raise AssertionError("no memory cgroup")


@pytest.fixture
def memory_cgroups():
    """Two fresh memory cgroups (v1 here; the tests are root): A for the build, S for the server."""
    mnt = world._cgroup_mounts()["memory"][0]
    base = os.path.join(mnt, f"linkwrap-test-{os.getpid()}-{time.time_ns()}")
    groups = {n: os.path.join(base, n) for n in ("A", "S")}
    for g in groups.values():
        os.makedirs(g)
    yield groups
    for g in (*groups.values(), base):
        wait_for(lambda: _rmdir(g), f"removing {g}", timeout=30)


def _rmdir(path):
    try:
        os.rmdir(path)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


def test_a_link_runs_in_the_clients_memory_cgroup_not_the_servers(tmp_path, lw_home, client, standin,
                                                                   memory_cgroups):
    a = memory_cgroups["A"]
    pid, in_a = server_moved_from_a_to_s(lw_home, memory_cgroups)
    try:
        assert _memory_cgroup(pid).endswith("/S")
        log = tmp_path / "peek.log"
        obj = c_object(tmp_path)
        env = env_with(tmp_path, standin, PEEK_LOG=str(log))
        done = subprocess.run(["sh", "-c", in_a, "sh", client, obj, "-o", "app"], cwd=tmp_path, env=env,
                              capture_output=True)
        assert done.returncode == 0, done.stderr
        (seen,) = [json.loads(line) for line in log.read_text().splitlines()]
        memory = [l.split(":", 2)[2] for l in seen["cgroup"].splitlines() if ":memory:" in l]
        assert memory == [_memory_cgroup(pid).rsplit("/", 1)[0] + "/A"]
        assert entry_points(lw_home) == ["server"]
        assert int(open(os.path.join(a, "memory.max_usage_in_bytes")).read()) > 0
    finally:
        stop_servers(lw_home)
        wait_for(lambda: not os.path.exists(f"/proc/{pid}"), "the server's exit")


def server_moved_from_a_to_s(lw_home, memory_cgroups):
    """A server started from the build's memory cgroup A (its socket is keyed on it), then moved
    to S. -> (its pid, a `sh -c` script that runs its arguments in A)."""
    a, s = memory_cgroups["A"], memory_cgroups["S"]
    in_a = f"echo $$ > {a}/cgroup.procs && exec \"$@\""
    subprocess.run(["sh", "-c", in_a, "sh", sys.executable, "-c",
                    "from linkwrap.server.start import start_detached; start_detached()"], check=True)
    run = os.path.join(str(lw_home), "run")
    pid = wait_for(lambda: os.path.isdir(run) and server_pid(lw_home), "the server's lock")
    try:
        with open(os.path.join(s, "cgroup.procs"), "w") as f:
            f.write(str(pid))
    except BaseException:
        stop_servers(lw_home)
        raise
    return pid, in_a


def _hold(client, tmp_path, standin, lw_home):
    """A link through the server held by the stand-in linker; -> (client Popen, linker pid, output dir)."""
    out = tmp_path / "app"
    out.write_bytes(b"the last good binary")
    os.link(out, tmp_path / "app.keep")  # a second name, as Cargo's: the link writes a new file
    hold = tmp_path / "hold"
    obj = c_object(tmp_path)
    env = env_with(tmp_path, standin, PEEK_HOLD=str(hold))
    proc = subprocess.Popen([client, obj, "-o", "app"], cwd=tmp_path, env=env, stderr=subprocess.PIPE)
    linker = int(wait_for(lambda: hold.exists() and hold.read_text(), "the held link"))
    return proc, linker, out


def _gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_client_ends_the_link_and_the_client_dies_of_it(tmp_path, lw_home, client, server,
                                                                         standin, sig):
    proc, linker, out = _hold(client, tmp_path, standin, lw_home)
    proc.send_signal(sig)
    assert proc.wait() == -sig
    wait_for(lambda: _gone(linker), "the linker's end")
    wait_for(lambda: no_link_debris(tmp_path), "the private directory's removal")
    assert out.read_bytes() == b"the last good binary"
    assert db_rows(lw_home) == []  # an interrupted link leaves no record, as through the script


def test_sigkill_of_the_client_ends_the_link_and_cleans_up(tmp_path, lw_home, client, server, standin):
    proc, linker, out = _hold(client, tmp_path, standin, lw_home)
    proc.kill()
    assert proc.wait() == -signal.SIGKILL
    wait_for(lambda: _gone(linker), "the linker's end")
    wait_for(lambda: no_link_debris(tmp_path), "the private directory's removal")
    assert out.read_bytes() == b"the last good binary"
    # The server goes on serving.
    done = link(client, tmp_path, env_with(tmp_path), out="next")
    assert done.returncode == 0 and entry_points(lw_home) == ["server"]


def test_a_server_killed_mid_link_and_the_next_link(tmp_path, lw_home, client, server, standin):
    proc, linker, out = _hold(client, tmp_path, standin, lw_home)
    import pids
    link_child = int(open(f"/proc/{linker}/stat").read().rsplit(")", 1)[1].split()[1])  # the linker's parent
    assert link_child != server
    # named by identity first: once the server has died, nothing of ours reaps these two
    link_child, linker = pids.identity(link_child), pids.identity(linker)
    os.kill(server, signal.SIGKILL)
    pids.send(link_child, signal.SIGKILL)
    os.waitpid(server, 0)
    pids.send(linker, signal.SIGKILL)  # the held stand-in: as if the link had been in progress
    # The client lost its server before an answer: it links again through the script, which completes.
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert subprocess.run([str(out)], capture_output=True).stdout == b""  # c_object's main prints nothing
    done = link(client, tmp_path, env_with(tmp_path), out="next")
    assert done.returncode == 0
    assert no_link_debris(tmp_path)  # the dead link's directory was swept
    assert entry_points(lw_home)[-1] == "script" and len(entry_points(lw_home)) == 2


def test_the_spares_end_with_the_server_and_a_link_in_progress_answers(tmp_path, lw_home, client, server, standin):
    """Spares wait for a connection watching the server's life pipe: they end with the server,
    never the child that took a link."""
    proc, linker, out = _hold(client, tmp_path, standin, lw_home)
    link_child = int(open(f"/proc/{linker}/stat").read().rsplit(")", 1)[1].split()[1])
    spares = [p for p in _children(server) if p != link_child]
    assert spares and link_child in _children(server)
    os.kill(server, signal.SIGKILL)
    os.waitpid(server, 0)
    for pid in spares:
        wait_for(lambda: _gone(pid), f"spare {pid}'s end with the server")
    assert not _gone(link_child)
    os.kill(linker, signal.SIGKILL)  # the stand-in's held attempt fails: the link is tried again as asked
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert entry_points(lw_home) == ["server"]  # answered by the child, not linked again by the script


def _children(pid):
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        found += [int(c) for c in open(f"/proc/{pid}/task/{task}/children").read().split()]
    return found


EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "examples", "cargo-workspace")


def test_cargo_build_of_the_example_through_the_client_and_the_server(tmp_path, lw_home, server):
    """`linkwrap install` makes the native client Cargo's linker; every link of a clean build goes
    through the running server, in the build (the client's pid and build), with the jobserver passed."""
    import shutil
    from linkrecords import lw
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("target", ".cargo"))
    # PATH here finds pip's linkwrap-cc first; the server above is the state dir client's
    lw("install", "--absolute", cwd=root, env={"LINKWRAP_INSTALL_ENTRY": "state"})
    linker = [line for line in (root / ".cargo" / "config.toml").read_text().splitlines() if "linker" in line]
    assert linker and launcher.fast_script("linkwrap-cc", write=False) in linker[0]
    target = tmp_path / "target"
    done = subprocess.run(["cargo", "build", "--quiet"], cwd=root, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "CARGO_TARGET_DIR": str(target), "LINKWRAP_LINKER": "mold"})
    assert done.returncode == 0 and "linkwrap" not in done.stderr, done.stderr
    assert subprocess.run([str(target / "debug" / "app")], capture_output=True, text=True).stdout == \
        "Hello, linkwrap!\nanswer=42 Point (derived)\nbuilt by build.rs (debug)\n"
    rows = db_rows(lw_home)
    assert sorted((r["crate_name"], r["crate_kind"]) for r in rows) == [
        ("app", "bin"), ("app", "build-script"), ("greet_macros", "proc-macro")]
    assert {(r["entry_point"], r["linker"], r["linker_start"], r["exit_status"]) for r in rows} == {
        ("server", "mold", "direct", 0)}
    assert len({r["build_id"] for r in rows}) == 1
    builds = db_rows(lw_home, "SELECT tool FROM builds")
    assert builds == [{"tool": "cargo"}]
    for r in rows:
        assert r["wall_ms"] > 0 and r["peak_rss_kb"] > 1000


def test_the_launcher_entry_point_goes_through_the_server_too(tmp_path, lw_home, server):
    launch = launcher.fast_script("linkwrap-launch")
    assert open(launch, "rb").read(4) == b"\x7fELF"
    obj = c_object(tmp_path, body='#include <stdio.h>\nint main(void){puts("hi");return 0;}\n')
    done = subprocess.run([launch, "--", "cc", obj, "-o", "app"], cwd=tmp_path, capture_output=True,
                          env=env_with(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert subprocess.run([str(tmp_path / "app")], capture_output=True).stdout == b"hi\n"
    assert entry_points(lw_home) == ["server"]
    # Not a link: the script answers, as it always did.
    version = subprocess.run([launch, "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("linkwrap-launch (linkwrap ")
    usage = subprocess.run([launch], capture_output=True, text=True)
    assert usage.returncode == 2 and "usage: linkwrap-launch" in usage.stderr


def test_a_driver_question_through_the_server_is_answered_by_the_driver(tmp_path, lw_home, client, server):
    done = subprocess.run([client, "-dumpmachine"], capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stdout == subprocess.run(["cc", "-dumpmachine"], capture_output=True, text=True).stdout


def test_a_server_that_does_not_answer_is_passed_by(tmp_path, lw_home, client):
    """A wedged server (listening, never accepting): the client gives up after its timeout and links."""
    os.makedirs(os.path.dirname(socket_path(lw_home)), mode=0o700, exist_ok=True)
    wedged = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    wedged.bind(socket_path(lw_home))
    wedged.listen(8)
    try:
        done = link(client, tmp_path, env_with(tmp_path), timeout=120)
        assert done.returncode == 0 and done.stderr == b""
        assert entry_points(lw_home) == ["script"]
    finally:
        wedged.close()


def test_a_garbled_request_is_refused_and_the_server_goes_on(tmp_path, lw_home, client, server):
    import struct
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(socket_path(lw_home))
    s.sendall(struct.pack("<II", protocol.MAGIC, 5) + b"0.1\0x")  # a payload that ends too soon
    assert s.recv(16) == b"F"
    s.close()
    done = link(client, tmp_path, env_with(tmp_path))
    assert done.returncode == 0 and entry_points(lw_home) == ["server"]


def test_a_compile_through_the_server_is_the_drivers_alone(tmp_path, lw_home, server, client):
    # make CC=<the native client>: each `cc -c` is the driver's, straight from the client (test_client.py).
    (tmp_path / "m.c").write_text("int main(void){return 0;}\n")
    env = env_with(tmp_path)
    for flag in ("-c", "-S", "-E"):
        done = subprocess.run([client, flag, "m.c", "-o", f"m{flag}.out"], cwd=tmp_path, env=env, capture_output=True)
        assert (done.returncode, done.stderr) == (0, b""), done.stderr
    assert (tmp_path / "m-c.out").read_bytes()[:4] == b"\x7fELF"
    assert "main" in (tmp_path / "m-S.out").read_text()
    done = link(client, tmp_path, env)
    assert done.returncode == 0
    # Only the link is recorded, and it went through the server (so did the compiles before it).
    assert [os.path.basename(r["output_path"]) for r in db_rows(lw_home)] == ["hello"]
    assert entry_points(lw_home) == ["server"]


def test_a_forced_linker_that_is_not_installed_is_said_once_per_build_through_the_server(tmp_path, lw_home, client,
                                                                                      server):
    # wild is a known linker found on PATH only: without its directories it is not installed.
    path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep)
                           if d and not os.access(os.path.join(d, "wild"), os.X_OK))
    said = (b"linkwrap: warning: LINKWRAP_LINKER=wild, but wild is not installed: this build links with "
            b"linkwrap's usual choice (said once per build; `linkwrap config` shows what is installed)\n")
    for out, build, stderr in (("a", "one", said), ("b", "one", b""), ("c", "two", said)):
        env = env_with(tmp_path, PATH=path, LINKWRAP_LINKER="wild", LINKWRAP_BUILD_ID=build)
        done = link(client, tmp_path, env, out=out)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", stderr), done.stderr
    assert entry_points(lw_home) == ["server"] * 3
