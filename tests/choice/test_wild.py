"""The REAL wild (the `wild` fixture: on PATH, else shared/tools/wild/ beside the checkout), checked
against what policy.py says about it, alone and through linkwrap.

Every expectation comes from the policy's own tables and the version discovery found, so the same
tests judge another real wild. Other versions' behaviour: tests/choice/test_policy_wild.py (stand-in).
"""
import hashlib
import os
import stat
import subprocess
import sys
import time

import mounts
from conftest import script, tool
from linkrecords import db_rows
from linkwrap.choice import policy
from linkwrap.choice import rules
from linkwrap.facts import probe
from outputkit import OVERFLOW, STATIC, identity, objs, read  # noqa: F401

import pytest


def comment(path) -> str:
    return subprocess.run(["readelf", "-p", ".comment", str(path)], capture_output=True, text=True).stdout


def by_wild(path) -> bool:
    return "Linker: Wild" in comment(path)


def shim(tmp_path, wild):
    """gcc 12 rejects -fuse-ld=wild: a -B directory whose `ld` is wild, as linkwrap's own."""
    d = tmp_path / "wild-as-ld"
    if not d.exists():
        d.mkdir()
        os.symlink(wild.path, d / "ld")
    return d


def wild_alone(tmp_path, wild, argv, cwd=None, **kw):
    """cc with wild as its linker, no linkwrap; without the plugin gcc would hand wild < 0.9."""
    return subprocess.run(["cc", f"-B{shim(tmp_path, wild)}", "-fno-use-linker-plugin", *map(str, argv)],
                          cwd=cwd or tmp_path, capture_output=True, text=True, **kw)


def through_linkwrap(wild, argv, cwd, **env):
    return subprocess.run([script("linkwrap-cc"), *map(str, argv)], cwd=cwd, capture_output=True, text=True,
                          env=wild.env(LINKWRAP_LINKER="wild", **env))


def c_program(tmp_path, name="prog", body=None, big_mib=0):
    """An object of a C program printing its name; big_mib of initialised data make its output big."""
    src = tmp_path / f"{name}.c"
    # Referenced, or wild drops the unused section (GNU ld keeps it).
    data, use = (f"char big[{big_mib} << 20] = {{1}};\n", "big[c]") if big_mib else ("", "0")
    src.write_text(body or f'#include <stdio.h>\n#include <unistd.h>\n#include <stdlib.h>\n{data}'
                           f'int main(int c, char **v){{if (c > 1) sleep(atoi(v[1])); puts("{name}"); return {use};}}\n')
    subprocess.run(["cc", "-c", str(src), "-o", str(tmp_path / f"{name}.o")], check=True)
    return tmp_path / f"{name}.o"


def last_record(home):
    return db_rows(home)[-1]


def cpus():
    return len(os.sched_getaffinity(0))


# --- the flags ---------------------------------------------------------------

def test_the_real_wild_accepts_every_flag_the_policy_may_give_it(tmp_path, wild):
    obj = c_program(tmp_path)
    given = [f + ("2" if f.endswith("=") else "") for f, by in rules.SINCE.items()
             if "wild" in by and wild.version >= by["wild"]]
    assert "--no-fork" in given and "--threads=2" in given
    done = wild_alone(tmp_path, wild, [obj, "-o", "prog", *(f"-Wl,{f}" for f in given)])
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert by_wild(tmp_path / "prog")
    assert subprocess.run([tmp_path / "prog"], capture_output=True, text=True).stdout == "prog\n"


def test_the_real_wild_rejects_what_the_policy_never_gives(tmp_path, wild):
    obj = c_program(tmp_path)
    # `--threads 2` makes 2 an input file (the policy gives only the = form); unknown options are fatal.
    for bad in (["-Wl,--threads,2"], ["-Wl,--no-such-option-at-all"]):
        done = wild_alone(tmp_path, wild, [obj, "-o", "prog", *bad])
        assert done.returncode != 0 and "wild: error:" in done.stderr, done.stderr


def test_gcc_hands_wild_the_lto_plugin_and_old_wild_warns_on_stdout(tmp_path, wild):
    """Why the policy gives -fno-use-linker-plugin to wild < 0.9 (and only to it)."""
    obj = c_program(tmp_path)
    done = subprocess.run(["cc", f"-B{shim(tmp_path, wild)}", obj, "-o", "prog"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0
    warns = "WARNING: wild: --plugin" in done.stdout
    assert warns == (wild.version < policy.WILD_PLUGIN_SINCE), done.stdout


# --- what wild does to an existing output, alone -----------------------------

def test_wild_alone_rewrites_the_inode_every_hard_link_shares(tmp_path, wild):
    """The policy's premise: wild >= 0.8 with several threads updates an existing output in place,
    so a relink changes Cargo's other name too; its single-thread path always unlinks."""
    obj = c_program(tmp_path)
    assert wild_alone(tmp_path, wild, [obj, "-o", "a.out"]).returncode == 0
    os.link(tmp_path / "a.out", tmp_path / "b.out")
    before = identity(tmp_path / "a.out")
    assert wild_alone(tmp_path, wild, [obj, "-o", "a.out", "-Wl,--threads=2"]).returncode == 0
    in_place = wild.version >= rules.IN_PLACE_SINCE["wild"]
    assert (identity(tmp_path / "a.out") == before) == in_place
    assert wild_alone(tmp_path, wild, [obj, "-o", "a.out", "-Wl,--threads=1"]).returncode == 0
    assert identity(tmp_path / "a.out") != before and identity(tmp_path / "b.out") == before


def test_wild_alone_changes_what_a_map_private_reader_sees(tmp_path, wild):
    """ETXTBSY protects only a running file: a MAP_PRIVATE reader sees an in-place write."""
    if wild.version < rules.IN_PLACE_SINCE["wild"]:
        pytest.fail(f"wild {wild.version} writes a new file: this test is for wild >= 0.8")
    obj, other = c_program(tmp_path), c_program(tmp_path, "other")
    assert wild_alone(tmp_path, wild, [obj, "-o", "a.out"]).returncode == 0
    with mapped(tmp_path / "a.out") as changed:
        assert wild_alone(tmp_path, wild, [other, "-o", "a.out", "-Wl,--threads=2"]).returncode == 0
        assert changed()


class mapped:
    """A process holding path MAP_PRIVATE; changed() says whether what it sees differs now."""

    CODE = ("import hashlib, mmap, sys\n"
            "f = open(sys.argv[1], 'rb'); m = mmap.mmap(f.fileno(), 0, mmap.MAP_PRIVATE, mmap.PROT_READ)\n"
            "print(hashlib.sha256(m[:]).hexdigest(), flush=True)\n"
            "sys.stdin.readline(); print(hashlib.sha256(m[:]).hexdigest(), flush=True)\n")

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", self.CODE, str(self.path)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.first = self.proc.stdout.readline().strip()
        assert self.first == hashlib.sha256(read(self.path)).hexdigest()
        return self.changed

    def changed(self):
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip() != self.first

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


# --- through linkwrap ----------------------------------------------------------

def test_relink_through_a_hard_link_gives_a_new_inode_and_keeps_the_other_name(tmp_path, lw_home, wild):
    obj, other = c_program(tmp_path), c_program(tmp_path, "other")
    assert through_linkwrap(wild, [obj, "-o", "a.out"], tmp_path).returncode == 0
    os.link(tmp_path / "a.out", tmp_path / "b.out")
    old, old_id = read(tmp_path / "b.out"), identity(tmp_path / "b.out")
    done = through_linkwrap(wild, [other, "-o", "a.out"], tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert by_wild(tmp_path / "a.out") and identity(tmp_path / "a.out") != old_id
    assert read(tmp_path / "b.out") == old and identity(tmp_path / "b.out") == old_id
    assert subprocess.run([tmp_path / "a.out"], capture_output=True, text=True).stdout == "other\n"
    rec = last_record(lw_home)
    assert rec["linker"] == "wild" and rec["write_mode"] == "fresh" and rec["nlink_before"] == 2
    assert "--no-update-in-place" not in rec["flags_added"]


def test_failed_relink_keeps_the_other_name_byte_identical(tmp_path, lw_home, wild, objs):
    good, bad, _ = objs
    assert through_linkwrap(wild, [*STATIC, good, "-o", "a.out"], tmp_path).returncode == 0
    assert by_wild(tmp_path / "a.out")
    os.link(tmp_path / "a.out", tmp_path / "b.out")
    old, old_id = read(tmp_path / "b.out"), identity(tmp_path / "b.out")
    done = through_linkwrap(wild, [*STATIC, bad, OVERFLOW, "-o", "a.out"], tmp_path)
    assert done.returncode != 0
    assert read(tmp_path / "b.out") == old and identity(tmp_path / "b.out") == old_id
    assert not (tmp_path / "a.out").exists()
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".linkwrap") or n.endswith(".delete")]
    rec = last_record(lw_home)
    assert rec["first_command"] and rec["fell_back"]  # wild failed first; the retry as asked failed too


def test_a_running_binary_and_a_private_mapping_survive_a_relink(tmp_path, lw_home, wild):
    """A big, cached, lone output that would be written in place -- but someone runs or maps it."""
    obj = c_program(tmp_path, big_mib=16)
    assert through_linkwrap(wild, [obj, "-o", "prog"], tmp_path).returncode == 0
    running = subprocess.Popen([tmp_path / "prog", "30"], stdout=subprocess.PIPE)
    try:
        deadline = time.time() + 30
        while os.path.realpath(f"/proc/{running.pid}/exe") != str(tmp_path / "prog") and time.time() < deadline:
            time.sleep(0.05)
        before = identity(tmp_path / "prog")
        done = through_linkwrap(wild, [obj, "-o", "prog"], tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert last_record(lw_home)["write_mode"] == "fresh"
        assert identity(tmp_path / "prog") != before
        assert os.stat(f"/proc/{running.pid}/exe").st_ino == int(before.split()[0])  # still its own inode
    finally:
        running.kill()
        running.wait()
    with mapped(tmp_path / "prog") as changed:
        before = identity(tmp_path / "prog")
        done = through_linkwrap(wild, [obj, "-o", "prog"], tmp_path)
        assert done.returncode == 0 and last_record(lw_home)["write_mode"] == "fresh"
        assert identity(tmp_path / "prog") != before and not changed()
    # Nobody holds it now: in place is chosen, and wild really reuses the inode (with more than one thread).
    before = identity(tmp_path / "prog")
    assert through_linkwrap(wild, [obj, "-o", "prog"], tmp_path).returncode == 0
    expected = "in-place" if cpus() > 1 else "fresh"
    assert last_record(lw_home)["write_mode"] == expected
    assert (identity(tmp_path / "prog") == before) == (expected == "in-place")
    assert subprocess.run([tmp_path / "prog"], capture_output=True, text=True).stdout == "prog\n"


def test_an_output_that_is_not_a_file_is_not_given_to_wild(tmp_path, lw_home, wild):
    """wild 0.8 chmods a device node and, with one thread, replaces it: /dev/null as root."""
    node = tmp_path / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    before = os.stat(node)
    (tmp_path / "linkwrap.toml").write_text('prefer = ["wild", "mold"]\n')
    obj = c_program(tmp_path)
    done = subprocess.run([script("linkwrap-cc"), obj, "-o", node], cwd=tmp_path, capture_output=True,
                          text=True, env=wild.env())
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    after = os.stat(node)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_mode == before.st_mode
    assert last_record(lw_home)["linker"] == "mold"
    # The premise, with wild alone and one thread:
    assert wild_alone(tmp_path, wild, [obj, "-o", node, "-Wl,--threads=1"]).returncode == 0
    assert stat.S_ISREG(os.stat(node).st_mode)


@pytest.mark.parametrize("fstype", ["btrfs", "xfs", "tmpfs"])
def test_outputs_on_btrfs_xfs_and_tmpfs(tmp_path, lw_home, wild, fstype):
    obj, other = c_program(tmp_path), c_program(tmp_path, "other")
    with mounts.filesystem(tmp_path, fstype) as point:
        out = os.path.join(point, "prog")
        assert through_linkwrap(wild, [obj, "-o", out], tmp_path).returncode == 0
        os.link(out, out + "-uplifted")
        old, old_id = read(out + "-uplifted"), identity(out)
        done = through_linkwrap(wild, [other, "-o", out], tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert by_wild(out) and identity(out) != old_id and read(out + "-uplifted") == old
        assert subprocess.run([out], capture_output=True, text=True).stdout == "other\n"
        assert sorted(os.listdir(point)) == ["prog", "prog-uplifted"]
        rec = last_record(lw_home)
        assert rec["fs_type"] == fstype
        mmap_flag = "--mmap-output-file" in rec["flags_added"]
        kernel = probe.kernel_version()
        assert mmap_flag == (fstype == "btrfs" and wild.version >= rules.WILD_BTRFS_BUFFERS_SINCE
                             and tuple(kernel[:2]) < rules.WILD_BTRFS_MMAP_FIXED)


def test_on_btrfs_wild_before_0_10_maps_its_output(tmp_path, wild):
    """Why the policy gives --mmap-output-file only from 0.10 on: before, wild mmaps on btrfs anyway."""
    obj = c_program(tmp_path)
    with mounts.filesystem(tmp_path, "btrfs") as point:
        trace = tmp_path / "trace"
        # -y names each fd's file: wild's threads and split calls need no pid or fd bookkeeping.
        done = subprocess.run([tool("strace"), "-f", "-y", "-o", trace, "-e", "trace=mmap,write,pwrite64",
                               "cc", f"-B{shim(tmp_path, wild)}", "-fno-use-linker-plugin", obj, "-o", "prog",
                               "-Wl,--no-fork"], cwd=point, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        output = f"{os.path.realpath(point)}/prog>"
    lines = trace.read_text().splitlines()
    mapped_rw = any(output in ln and "PROT_WRITE" in ln and "MAP_SHARED" in ln for ln in lines if "mmap(" in ln)
    written = any(output in ln for ln in lines if "write(" in ln or "pwrite64(" in ln)
    assert (mapped_rw, written) == ((True, False) if wild.version < rules.WILD_BTRFS_BUFFERS_SINCE
                                    else (False, True))


def test_no_fork_makes_the_recorded_peak_memory_wilds_own(tmp_path, lw_home, wild):
    """128 MiB of .data: forked, wait4 would see only the parent that waited for the real linker."""
    obj = c_program(tmp_path, big_mib=128)
    done = through_linkwrap(wild, [obj, "-o", "big"], tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    rec = last_record(lw_home)
    assert rec["linker"] == "wild" and "--no-fork" in rec["flags_added"]
    assert rec["peak_rss_kb"] > 128 << 10  # it maps 128 MiB of input and writes 128 MiB of output
    # Forked, as /usr/bin/time sees it (the seeds' 4 MiB). Not measured from this process: a child's
    # ru_maxrss starts at its parent's RSS before exec (pytest's, here), so it would hide the effect.
    forked = subprocess.run([tool("time"), "-f", "%M", "cc", f"-B{shim(tmp_path, wild)}", "-fno-use-linker-plugin",
                             str(obj), "-o", str(tmp_path / "big2")], capture_output=True, text=True)
    assert forked.returncode == 0
    forked_kb = int(forked.stderr.split()[-1])
    assert forked_kb < rec["peak_rss_kb"] / 4, (forked_kb, rec["peak_rss_kb"])


# --- silent on success -----------------------------------------------------------

CXX = """#include <iostream>
#include <stdexcept>
int main() { try { throw std::runtime_error("caught"); } catch (const std::exception &e) { std::cout << e.what() << "\\n"; } }
"""


@pytest.mark.parametrize("lang", ["c", "c++"])
def test_c_and_cxx_links_through_launch_print_nothing(tmp_path, lw_home, wild, lang):
    if lang == "c":
        obj, driver, expected = c_program(tmp_path), "cc", "prog\n"
    else:
        (tmp_path / "prog.cpp").write_text(CXX)
        subprocess.run(["c++", "-c", "prog.cpp", "-o", "prog.o"], cwd=tmp_path, check=True)
        obj, driver, expected = tmp_path / "prog.o", "c++", "caught\n"
    for _ in range(2):  # a first link and a relink over an existing output
        done = subprocess.run([script("linkwrap"), "launch", "--", driver, str(obj), "-o", "prog"], cwd=tmp_path,
                              capture_output=True, text=True, env=wild.env(LINKWRAP_LINKER="wild"))
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert by_wild(tmp_path / "prog")
    assert subprocess.run([tmp_path / "prog"], capture_output=True, text=True).stdout == expected
    rec = last_record(lw_home)
    assert rec["linker"] == "wild" and not rec["fell_back"]
    assert ("-fno-use-linker-plugin" in rec["flags_added"]) == (wild.version < policy.WILD_PLUGIN_SINCE)


def test_lto_links_go_to_another_linker_or_are_retried_as_asked(tmp_path, lw_home, wild):
    for name, body in (("lib", "int triple(int x) { return 3 * x; }\n"),
                       ("main", '#include <stdio.h>\nint triple(int);\nint main(void){printf("%d\\n", triple(14));}\n')):
        (tmp_path / f"{name}.c").write_text(body)
        subprocess.run(["cc", "-flto", "-O2", "-c", f"{name}.c"], cwd=tmp_path, check=True)
    (tmp_path / "linkwrap.toml").write_text('prefer = ["wild", "mold"]\n')
    lto = ["-flto", "-O2", "lib.o", "main.o", "-o", "prog"]
    # Preferred, wild < 0.9 is passed over for an LTO link.
    done = subprocess.run([script("linkwrap-cc"), *lto], cwd=tmp_path, capture_output=True, text=True,
                          env=wild.env())
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert subprocess.run([tmp_path / "prog"], capture_output=True, text=True).stdout == "42\n"
    rec = last_record(lw_home)
    assert (rec["linker"] == "wild") == (wild.version >= policy.WILD_PLUGIN_SINCE)
    # Forced, or slim LTO objects with no -flto on the link line: wild fails, the retry as asked links.
    for argv, forced in ((lto, "wild"), (lto[2:], None)):
        env = wild.env(LINKWRAP_LINKER=forced) if forced else wild.env()
        done = subprocess.run([script("linkwrap-cc"), *argv], cwd=tmp_path, capture_output=True, text=True, env=env)
        assert (done.returncode, done.stdout) == (0, "")
        if forced and wild.version < policy.WILD_PLUGIN_SINCE:
            # The user forced wild and it failed: one line says the link was made as asked instead.
            assert done.stderr.startswith("linkwrap: warning: LINKWRAP_LINKER=wild: ") and done.stderr.count("\n") == 1
        else:
            assert done.stderr == ""
        assert subprocess.run([tmp_path / "prog"], capture_output=True, text=True).stdout == "42\n"
        if wild.version < policy.WILD_PLUGIN_SINCE:
            assert last_record(lw_home)["fell_back"]
