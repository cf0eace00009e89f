"""`linkwrap server status|stop`: the warm link server of this user and this world.

status prints one line per server found in the run directory (the one a link from
here would reach is marked), stop asks them to exit. Servers start by themselves,
from the first link that finds none (linkwrap/server/).
"""
import os


def add_arguments(parser) -> None:
    parser.add_argument("action", choices=("status", "stop"), help="show the servers, or stop them")


def run(args) -> int:
    from linkwrap.server import lifetime
    try:
        dfd = lifetime.open_run_dir()
    except FileNotFoundError:
        print("no link server (none has been started yet)")
        return 0
    except PermissionError as e:
        from linkwrap.errors import LinkwrapError
        raise LinkwrapError(str(e)) from None
    mine = {lifetime.socket_name(lifetime.world_key(install)) for install in reachable_installs()}
    found, stale = 0, []
    try:
        for name in sorted(os.listdir(f"/proc/self/fd/{dfd}")):
            if not name.startswith("s-") or name.endswith(".lock"):
                continue
            answer = ask(f"/proc/self/fd/{dfd}/{name}", args.action)
            here = " (this world)" if name in mine else ""
            if answer is None:
                stale.append(name + here)
                if args.action == "stop":
                    try:
                        os.unlink(f"/proc/self/fd/{dfd}/{name}")
                    except FileNotFoundError:
                        pass  # a link that found it stale replaced it first
                continue
            found += 1
            # A server told to stop answers "stopping" until it is gone (workers._control).
            stopping = args.action == "stop" or " stopping=1" in answer
            answer = answer.replace(" stopping=1", "")
            print(f"{name}{here}: {'stopping, ' if stopping else ''}{readable(answer)}")
    finally:
        os.close(dfd)
    if stale:
        # One line for what a killed server left: it is not running, whatever else is.
        what = f"socket{'s' if len(stale) > 1 else ''} {', '.join(stale)}"
        tail = (f"removed the stale {what}" if args.action == "stop"
                else f"a stale {what} of a server that died; the next link replaces it")
        print(f"no {'other ' if found else ''}link server running ({tail})")
    elif not found:
        print("no link server running")
    return 0


def reachable_installs() -> list:
    """The installs a link from here reaches: this interpreter's (install's native client) and, when
    the linkwrap-cc beside this linkwrap is the wheel's native client, that one's."""
    from linkwrap.errors import InstallError
    from linkwrap.install import launcher, marker
    from linkwrap.server import lifetime
    installs = [lifetime.install_id()]
    try:
        client = marker.script_path("linkwrap-cc")
    except InstallError:  # no console script beside us: this interpreter's install alone
        return installs
    if launcher.wheel_script(client):
        installs.append(lifetime.wheel_install_id(client))
    return installs


def readable(answer, now=None) -> str:
    """The server's line with its start (seconds since the epoch) as a UTC time and an age."""
    import re
    import time
    now = time.time() if now is None else now

    def when(m):
        t = int(m.group(1))
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
        return f"started={stamp} UTC ({_age(max(0, now - t))} ago)"
    return re.sub(r"\bstarted=(\d+)\b", when, answer)


def _age(seconds) -> str:
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds // 86400} days"


def ask(path, action):
    """One control exchange with the server at path; -> its status line, or None when none answers."""
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(path)
        s.sendall(server_control(action))
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        if data[:1] == b"A":  # the server's "alive", said to every connection
            data = data[1:]
        return data.decode("utf-8", "replace").strip() or None
    except OSError:
        return None
    finally:
        s.close()


def server_control(action) -> bytes:
    from linkwrap.server.protocol import CONTROL
    return CONTROL + action.encode() + b"\n"
