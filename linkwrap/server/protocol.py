"""The wire format between the native client (client.c) and a server child.

Owns: the request's framing (MAGIC and its length, then NUL-terminated fields: parse_request), how
its socket is read (_recv_exactly, the SO_RCVTIMEO timeouts, SO_PEERCRED's struct), CONTROL (what
`linkwrap server status|stop` send first), and the one-letter answers client.c reads: T or S (the
fds taken, or to be sent), then X, K or D (an exit status, a signal, become the driver); V or F at
any point (another version, or not here: the client runs the script). The same layout is written in
client.c, which stays the reference: change both together.
May import: the standard library only. The bottom of linkwrap.server: every other module of it may
import this one.
"""
import os
import sys

MAGIC = 0x3343574C  # "LWC3", little-endian, as client.c sends it (3: no "A" before "T")
CONTROL = b"LWS1"
MAX_FDS = 19

# The answers, each a letter client.c reads first.
TAKEN = b"T"  # the child took the client's fds itself (pidfd_getfd): the client waits for the result
SEND_FDS = b"S"  # the client sends its fds (SCM_RIGHTS, after an "R")
OTHER_VERSION = b"V"  # another linkwrap's server, or another client's request: the script links
NOT_HERE = b"F"  # not served here (a bad request, usage, a fault taking the link): the script links


def exited(status) -> bytes:
    """The link's exit status: the client exits with it."""
    return f"X{int(status)}\n".encode()


def killed(signal) -> bytes:
    """The link died of signal: the client kills itself with it."""
    return f"K{signal}\n".encode()


def become(argv) -> bytes:
    """Not a link after all: the client execs argv (the driver) itself."""
    return b"D" + b"\0".join(os.fsencode(a) for a in argv) + b"\0"


def parse_request(data: bytes) -> dict:
    """The client's payload: NUL-terminated fields (client.c's put_* calls, in order)."""
    # Decoded in one call, as os.fsdecode() would each field (a NUL is never part of a character):
    # fsdecode is a Python function, and a request has a few hundred fields.
    enc, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
    it = iter(data.decode(enc, errors).split("\0"))
    version, name, cwd = next(it), next(it), next(it)
    umask = int(next(it))
    pairs = [int(next(it)) for _ in range(2 * int(next(it)))]
    limits = {which: (pairs[2 * which], pairs[2 * which + 1]) for which in range(len(pairs) // 2)}
    cgroup = next(it).encode(enc, errors)
    argv = [next(it) for _ in range(int(next(it)))]
    env = {}
    for _ in range(int(next(it))):
        k, _, v = next(it).partition("=")
        env[k] = v
    targets = [int(next(it)) for _ in range(int(next(it)))]
    return {"version": version, "name": name, "cwd": cwd, "argv": argv, "env": env, "fds": targets,
            "umask": umask, "limits": limits, "cgroup": cgroup}


def _recv_exactly(conn, size, upto=0) -> bytes:
    """size bytes from conn (upto: more, if they came with them); the client gone or silent
    (conn's timeout) before them: exit quietly."""
    try:
        data = conn.recv(max(size, upto))
        if len(data) >= size:
            return data
        data = bytearray(data)
        while len(data) < size:
            chunk = conn.recv(min(1 << 20, size - len(data)))
            if not chunk:
                _quit()
            data += chunk
    except OSError:
        _quit()
    return bytes(data)


def _structs():
    import struct
    return (struct.Struct("3i"), struct.Struct("<II"), struct.pack("ll", 10, 0), struct.pack("ll", 5, 0),
            struct.pack("ll", 0, 0))


# SO_PEERCRED's struct ucred, the request's header, SO_RCVTIMEO's struct timeval of 10 s, 5 s and none
_CREDS, _HEAD, _TEN_S, _FIVE_S, _NO_TIMEOUT = _structs()


def _refuse(conn, why) -> None:
    try:
        conn.sendall(why)
    except OSError:
        pass
    _quit()


def _quit() -> None:
    """Exit without serving the link."""
    os._exit(0)
