"""A small C/C++ project edited and relinked through `gcc -B<shim> -Wl,--incremental`."""
import os
import re
import subprocess

from .. import corpus

WHY = re.compile(r"linkwrap-ld: incremental: (.*)")


class Project:
    def __init__(self, root, driver="gcc", cflags=("-O1",), ldflags=()):
        self.root = str(root)
        self.driver = driver
        self.cflags = list(cflags)
        self.ldflags = list(ldflags)
        self.shim = corpus.shim_dir(self.root)
        self.objs = []

    def path(self, name):
        return os.path.join(self.root, name)

    def write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)

    def compile(self, *names, flags=()):
        for n in names:
            subprocess.run([self.driver, *self.cflags, *flags, "-c", n, "-o", n.rsplit(".", 1)[0] + ".o"],
                           cwd=self.root, check=True)

    def link(self, objs, out="prog", extra=(), check=True):
        """-> (exit status, the decision line, stderr). With check: --incremental-check too."""
        wl = "--incremental,--incremental-why" + (",--incremental-check" if check else "")
        r = subprocess.run([self.driver, f"-B{self.shim}", *self.ldflags, *extra, *objs, f"-Wl,{wl}", "-o", out],
                           cwd=self.root, capture_output=True, text=True)
        m = WHY.search(r.stderr)
        return r.returncode, (m.group(1) if m else None), r.stderr

    def reference(self, objs, out="ref", extra=()):
        """The same inputs linked by GNU ld, from scratch."""
        subprocess.run([self.driver, *self.ldflags, *extra, *objs, "-o", out], cwd=self.root, check=True)
        return self.path(out)

    def run(self, out="prog"):
        r = corpus.run(self.path(out))
        return r.returncode, r.stdout


def symbols(path):
    """{name: address} of the defined functions and objects (`nm`)."""
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtDdBbRr":
            res[parts[2]] = int(parts[0], 16)
    return res


def call_targets(path, caller):
    """The addresses `objdump -d` shows caller's direct calls going to."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True, text=True,
                         check=True).stdout
    targets, inside = [], False
    for line in out.splitlines():
        if line.endswith(f"<{caller}>:"):
            inside = True
            continue
        if inside:
            if not line.strip():
                break
            m = re.search(r"\bcall\s+([0-9a-f]+)\s+<", line)
            if m:
                targets.append(int(m.group(1), 16))
    return targets
