"""Helpers for the install tests: run real builds, see which programs they ran.

execs() runs a command under strace and returns every program it executed,
so a test can show that the links went through linkwrap-launch / linkwrap-cc
without relying on linkwrap's own records. comment() is the .comment section
of an ELF file (mold and lld sign their outputs there).
"""
import os
import re
import shutil
import subprocess
import tempfile

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")


def run(argv, cwd=None, env=None, check=True, timeout=600):
    done = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)
    if check:
        assert done.returncode == 0, f"{' '.join(map(str, argv))} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def execs(argv, cwd, env=None, tmp=None):
    """(CompletedProcess, [(program, argv text)]) of every execve that succeeded under argv.

    -ff writes one log per process, so calls of parallel jobs are never split
    into `<unfinished ...>` halves.
    """
    folder = tempfile.mkdtemp(prefix="strace-", dir=str(tmp or cwd))
    done = run(["strace", "-ff", "-qq", "-s", "4096", "-e", "trace=execve", "-e", "signal=none",
                "-o", os.path.join(folder, "log"), *argv], cwd=cwd, env=env)
    calls = []
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.search(r'execve\("([^"]*)", \[(.*)\], .* = 0$', line.rstrip())
                if m:
                    calls.append((m.group(1), m.group(2)))
    shutil.rmtree(folder)
    return done, calls


def ran(calls, program_basename):
    """The argv texts of every successful exec of a program with that basename (or of its Python entry
    point <name>-python, what conftest.script() gives for linkwrap-cc and linkwrap-launch)."""
    return [args for prog, args in calls if os.path.basename(prog) in (program_basename, f"{program_basename}-python")]


def comment(path) -> str:
    return run(["readelf", "-p", ".comment", path]).stdout


# What each linker writes into .comment (GNU ld writes nothing of its own).
SIGNATURE = {"mold": "mold", "lld": "LLD", "rust-lld": "LLD", "wild": "Linker: Wild"}


def check_signed_by_the_chosen_linker(link, binary):
    """The linker linkwrap recorded for a link (a summary --json link) is the one that wrote the output."""
    assert link["linker"] != "as asked", link
    text = comment(binary)
    if link["linker"] in SIGNATURE:
        assert SIGNATURE[link["linker"]] in text, text
    else:
        assert not any(s in text for s in SIGNATURE.values()), text


def linkwrap(*argv, cwd, env=None):
    """The real `linkwrap` console script (by its path, not a pyenv shim)."""
    from conftest import script
    return subprocess.run([script("linkwrap"), *map(str, argv)], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
