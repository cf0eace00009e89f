"""Helpers for the link-record tests (store, report, record, summary/run/report/log CLIs).

Links go through the real linkwrap-cc script and commands through the real
`linkwrap` script (both by path), with whatever LINKWRAP_HOME the test set.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from conftest import script  # noqa: E402


def lw(*argv, cwd=None, env=None, check=True):
    """Run `linkwrap ARGV...`; -> CompletedProcess (text)."""
    # No terminal on stdin: commands that would ask (log clear) behave as in a script, wherever pytest runs.
    done = subprocess.run([script("linkwrap"), *map(str, argv)], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)
    if check:
        assert done.returncode == 0, f"linkwrap {' '.join(argv)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def summary_json(*argv, cwd=None, env=None) -> dict:
    return json.loads(lw("summary", "--json", *argv, cwd=cwd, env=env).stdout)


def cc_link(argv, cwd, env=None):
    """One link through the real linkwrap-cc script."""
    return subprocess.run([script("linkwrap-cc"), *argv], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})})


def not_small(body):
    """C source body with a constant array that makes its object more than probe.SMALL_INPUT_BYTES:
    a link of it is no small link (docs/policy.md 1.3), whose order a test of another rule expects."""
    from linkwrap.facts.probe import SMALL_INPUT_BYTES
    return body + f"const char linkwrap_test_pad[{SMALL_INPUT_BYTES}] = {{1}};\n"


def c_object(directory, name="hello", body='int main(void){return 0;}\n', big=False):
    """A compiled C object in directory (big: not_small()); -> its path."""
    src = os.path.join(str(directory), f"{name}.c")
    with open(src, "w") as f:
        f.write(not_small(body) if big else body)
    obj = os.path.join(str(directory), f"{name}.o")
    subprocess.run(["cc", "-c", src, "-o", obj], check=True)
    return obj


def db_rows(home, sql="SELECT * FROM links ORDER BY id"):
    """Rows of links.db under home, after ingesting the spool (as every reading command does)."""
    env_home = os.environ.get("LINKWRAP_HOME")
    os.environ["LINKWRAP_HOME"] = str(home)
    try:
        from linkwrap.store import db
        conn = db.open_store()
        return [dict(r) for r in conn.execute(sql)]
    finally:
        if env_home is None:
            del os.environ["LINKWRAP_HOME"]
        else:
            os.environ["LINKWRAP_HOME"] = env_home


def spool_record(home, **fields):
    """Append one hand-made record to the spool under home, as record.save would; -> its uid."""
    import time
    from linkwrap.record import record
    rec = {"v": record.FORMAT, "uid": f"hand-{time.time_ns()}", "started_unix": time.time(), "exit_status": 0,
           "wall_ms": 1.0, "fell_back": False, **fields}
    record.append(str(home), record.encode(rec))
    return rec["uid"]
