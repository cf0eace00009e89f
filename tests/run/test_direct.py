"""direct: the linker started without the driver gets what the driver would have given it.

The oracle is the real driver: what collect2 hands to `ld` (caught by a recording `ld`
found through -B) and, for whole links, the bytes of the driver path's output.
"""
import os
import shutil
import subprocess

import pytest

from conftest import script, tool
from linkrecords import db_rows
from linkwrap.request import args, inputs
from linkwrap.run import direct
from linkwrap.facts import linkers
from linkwrap.choice.policy import FRESH, Decision, as_asked

STANDINS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "standins")


def decision(name, flags=(), driver_flags=()):
    return Decision(linkers.discover()[name], tuple(flags), tuple(driver_flags), FRESH, ("test",))


# --- the expansion, against what collect2 really runs -------------------------

def _what_collect2_runs(tmp_path, argv, driver="cc"):
    """The arguments gcc's collect2 gives `ld` for argv, minus the LTO plugin's."""
    bindir = tmp_path / "rec-ld"
    bindir.mkdir(exist_ok=True)
    shutil.copy(os.path.join(STANDINS, "record-driver"), bindir / "ld")
    log = tmp_path / "ld-args"
    subprocess.run([driver, f"-B{bindir}/", *argv], cwd=tmp_path, check=True,
                   env={**os.environ, "RECORD_TO": str(log)})
    got = log.read_text().split("\n")[:-1]
    out, skip = [], False
    for a in got:
        if skip:
            skip = False
        elif a == "-plugin":
            skip = True
        elif not a.startswith("-plugin-opt=") and a != f"-L{bindir}":
            out.append(a)
    return out


RUSTC_LIKE = ["-m64", "/tmp/rustcX/symbols.o", "main.main.1-cgu.0.rcgu.o", "main.2.rcgu.o", "-Wl,--as-needed",
              "-Wl,-Bstatic", "/s/lib/libstd-1.rlib", "/s/lib/libcore-2.rlib", "-Wl,-Bdynamic", "-lgcc_s", "-lutil",
              "-lrt", "-lpthread", "-lm", "-ldl", "-lc", "-L", "/tmp/rustcX", "-Wl,--eh-frame-hdr",
              "-Wl,-z,noexecstack", "-L", "/s/lib", "-o", "main", "-Wl,--gc-sections", "-pie", "-Wl,-z,relro,-z,now",
              "-nodefaultlibs"]


@pytest.mark.parametrize("argv", [
    ["hello.o", "-o", "hello"],
    ["hello.o", "-lm", "-l", "dl", "-o", "hello", "-Wl,--gc-sections", "-L/opt/x", "-static-pie"],
    ["-shared", "-o", "libh.so", "hello.o", "-Wl,-soname=libh.so", "-Lrel/dir", "-pthread"],
    ["-no-pie", "-ohello", "hello.o", "-u", "main", "-z", "now", "-rdynamic", "-s"],
    ["-static", "-o", "hello", "hello.o", "-Wl,--start-group", "-lc", "-lgcc", "-Wl,--end-group"],
    RUSTC_LIKE,
], ids=["plain", "libs-and-static-pie", "shared", "no-pie-and-paired", "static-group", "rustc-like"])
def test_the_direct_line_is_what_collect2_gives_ld(tmp_path, lw_home, argv):
    req = args.parse(argv, "cc", cwd=str(tmp_path))
    out = args.output_path(argv)
    cmd = direct.command(req, decision("bfd"), out, dict(os.environ))
    assert os.path.basename(cmd[0]) == "ld" and os.path.realpath(cmd[0]) == os.path.realpath(tool("ld.bfd"))
    assert cmd[1:] == _what_collect2_runs(tmp_path, argv)


def test_the_chosen_linker_flags_and_driver_flags_land_where_the_driver_puts_them(tmp_path, lw_home):
    argv = ["hello.o", "-o", "hello", "-lm"]
    d = decision("bfd", flags=("--no-fork", "-z", "now"), driver_flags=("-fno-use-linker-plugin",))
    cmd = direct.command(args.parse(argv, "cc", cwd=str(tmp_path)), d, "hello", dict(os.environ))
    assert cmd[1:] == _what_collect2_runs(tmp_path, argv + ["-Wl,--no-fork", "-Wl,-z", "-Wl,now",
                                                            "-fno-use-linker-plugin"])


def test_cplusplus_driver_adds_its_runtime(tmp_path, lw_home):
    argv = ["m.o", "-o", "m"]
    cmd = direct.command(args.parse(argv, "g++", cwd=str(tmp_path)), decision("bfd"), "m", dict(os.environ))
    assert "-lstdc++" in cmd and cmd[1:] == _what_collect2_runs(tmp_path, argv, driver="g++")


@pytest.mark.parametrize("argv, why", [
    (["a.o", "-flto", "-o", "x"], "-flto"),
    (["a.o", "-flto=auto", "-o", "x"], "-flto=auto"),
    (["a.o", "-v", "-o", "x"], "-v"),
    (["a.o", "-save-temps", "-o", "x"], "-save-temps"),
    (["main.c", "-o", "x"], "main.c is compiled"),
    (["a.o", "-Wl,-plugin,/x.so", "-o", "x"], "-Wl,-plugin"),
    (["a.o", "-B/my/tools", "-o", "x"], "-B/my/tools"),
    (["a.o", "-x", "c", "-o", "x"], "-x"),
    (["a.o", "-Wl,", "-o", "x"], "-Wl,"),
    (["a.o"], "no -o"),
])
def test_what_the_expansion_cannot_be_trusted_with_keeps_the_driver(tmp_path, lw_home, argv, why):
    req = args.parse(argv, "cc", cwd=str(tmp_path))
    with pytest.raises(direct.NotDirect, match=why.replace("+", r"\+")):
        direct.command(req, decision("bfd"), args.output_path(argv), dict(os.environ))


def test_as_asked_and_linkwraps_own_linker_keep_the_driver(tmp_path, lw_home):
    req = args.parse(["a.o", "-o", "x"], "cc", cwd=str(tmp_path))
    with pytest.raises(direct.NotDirect, match="as asked"):
        direct.command(req, as_asked("test"), "x", {})
    with pytest.raises(direct.NotDirect, match="LINKWRAP_DIRECT"):
        direct.command(req, decision("bfd"), "x", {**os.environ, "LINKWRAP_DIRECT": "0"})


def test_an_object_with_gcc_lto_code_keeps_the_driver(tmp_path, lw_home):
    (tmp_path / "l.c").write_text("int main(void){return 0;}\n")
    subprocess.run(["cc", "-flto", "-c", "l.c", "-o", "l.o"], cwd=tmp_path, check=True)
    subprocess.run(["cc", "-c", "l.c", "-o", "plain.o"], cwd=tmp_path, check=True)
    with pytest.raises(direct.NotDirect, match="LTO"):
        direct.command(args.parse(["l.o", "-o", "x"], "cc", cwd=str(tmp_path)), decision("bfd"), "x",
                       dict(os.environ))
    assert direct.command(args.parse(["plain.o", "-o", "x"], "cc", cwd=str(tmp_path)), decision("bfd"), "x",
                          dict(os.environ))


def test_the_same_link_again_sees_an_lto_object_and_a_changed_driver(tmp_path, lw_home):
    """command() keeps its last split and the lines it learnt in memory (a server's spare computed
    them for the link it rehearsed): an input recompiled with -flto, or the driver's file changed
    between two links with the same command line, is still seen."""
    (tmp_path / "l.c").write_text("int main(void){return 0;}\n")
    subprocess.run(["cc", "-c", "l.c", "-o", "l.o"], cwd=tmp_path, check=True)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    driver = bindir / "mycc"
    driver.write_text(f'#!/bin/sh\nexec {tool("gcc")} "$@"\n')
    driver.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    req = args.parse(["l.o", "-o", "x"], "mycc", env, cwd=str(tmp_path))
    line = direct.command(req, decision("bfd"), "x", env)
    assert direct.command(req, decision("bfd"), "x", env) == line and "--defsym=memo=1" not in line
    driver.write_text(f'#!/bin/sh\nexec {tool("gcc")} -Wl,--defsym=memo=1 "$@"\n')  # another size, mtime
    assert "--defsym=memo=1" in direct.command(req, decision("bfd"), "x", env)
    subprocess.run(["cc", "-flto", "-c", "l.c", "-o", "l.o"], cwd=tmp_path, check=True)
    with pytest.raises(direct.NotDirect, match="LTO"):
        direct.command(req, decision("bfd"), "x", env)


def test_a_link_again_but_for_rustcs_own_directory_gets_the_line_it_would_get_anew(tmp_path, lw_home):
    (tmp_path / "l.c").write_text("int main(void){return 0;}\n")
    lines = []
    for tmp in ("rustcAAAAAA", "rustcBBBBBB"):
        (tmp_path / tmp / "raw-dylibs").mkdir(parents=True)
        subprocess.run(["cc", "-c", "l.c", "-o", f"{tmp}/symbols.o"], cwd=tmp_path, check=True)
        argv = [f"{tmp_path}/{tmp}/symbols.o", "-L", f"{tmp_path}/{tmp}/raw-dylibs", "-o", "x"]
        req = args.parse(argv, "cc", cwd=str(tmp_path))
        lines.append(direct.command(req, decision("bfd"), "x", dict(os.environ)))
        assert direct._split[2] == f"{tmp_path}/rustcAAAAAA/"  # kept from the first, used renamed
    direct._split = None  # the second line, computed without what the first link left
    assert lines[1] == direct.command(req, decision("bfd"), "x", dict(os.environ)) != lines[0]
    assert lines[1] == [a.replace("rustcAAAAAA", "rustcBBBBBB") for a in lines[0]]


def test_lto_is_told_apart_in_gcc_llvm_and_rustc_objects(tmp_path):
    """GCC's LTO objects (.gnu.lto_ sections) and LLVM bitcode are the plugin's; LLVM's machine-code
    objects (clang's, rustc's), whose section names share the symbols' string table, are not."""
    (tmp_path / "l.c").write_text("int main(void){return 0;}\n")
    (tmp_path / "r.rs").write_text("fn main() {}\n")
    for cmd in (["gcc", "-flto", "-c", "l.c", "-o", "gcc-lto.o"], ["gcc", "-c", "l.c", "-o", "gcc.o"],
                ["clang", "-flto", "-c", "l.c", "-o", "clang-lto.o"], ["clang", "-c", "l.c", "-o", "clang.o"],
                [tool("rustc"), "--emit=obj", "-o", "rustc.o", "r.rs"]):
        subprocess.run(cmd, cwd=tmp_path, check=True)
    found = {name: direct._has_lto(name, str(tmp_path))
             for name in ("gcc-lto.o", "gcc.o", "clang-lto.o", "clang.o", "rustc.o")}
    assert found == {"gcc-lto.o": True, "gcc.o": False, "clang-lto.o": True, "clang.o": False, "rustc.o": False}


def test_the_lto_answer_is_kept_by_identity_and_an_object_recompiled_with_lto_is_seen(tmp_path):
    """lto_input() reads an object once; a relink of the unchanged object reads nothing (its answer
    is kept by identity), and the object compiled again with -flto, in place or as a new file, is
    read again and found."""
    (tmp_path / "l.c").write_text("int main(void){return 0;}\n")
    subprocess.run(["gcc", "-c", "l.c", "-o", "l.o"], cwd=tmp_path, check=True)
    obj = tmp_path / "l.o"
    assert direct.lto_input(["l.o"], str(tmp_path)) is None
    assert inputs.known("lto", os.stat(obj)) is False  # kept: the next link reads nothing of it
    for how in ("in place", "a new file"):
        if how == "in place":   # the same inode, written again (as `as` does)
            subprocess.run(["gcc", "-flto", "-c", "l.c", "-o", "lto.o"], cwd=tmp_path, check=True)
            with open(obj, "r+b") as f:
                f.write((tmp_path / "lto.o").read_bytes())
                f.truncate()
        else:
            subprocess.run(["gcc", "-c", "l.c", "-o", "l.o"], cwd=tmp_path, check=True)
            assert direct.lto_input(["l.o"], str(tmp_path)) is None
            subprocess.run(["gcc", "-flto", "-c", "l.c", "-o", "new.o"], cwd=tmp_path, check=True)
            os.replace(tmp_path / "new.o", obj)
        inputs.begin()  # a link, as pipeline.link() begins it
        try:
            assert direct.lto_input([str(obj)], str(tmp_path)) == str(obj), how
        finally:
            inputs.end()


def test_an_lto_object_linked_without_flto_still_links_through_the_driver(tmp_path, lw_home):
    """The LTO check sees objects, not archive members: the failed direct start is retried by the driver."""
    (tmp_path / "f.c").write_text("int f(void){return 7;}\n")
    (tmp_path / "m.c").write_text("int f(void);\nint main(void){return f();}\n")
    subprocess.run(["cc", "-flto", "-c", "f.c", "m.c"], cwd=tmp_path, check=True)
    subprocess.run(["ar", "rcs", "libf.a", "f.o"], cwd=tmp_path, check=True)
    subprocess.run(["cc", "-c", "m.c", "-o", "m.o"], cwd=tmp_path, check=True)
    done = subprocess.run([script("linkwrap-cc"), "m.o", "libf.a", "-o", "app"], cwd=tmp_path,
                          capture_output=True, env={**os.environ, "LINKWRAP_LINKER": "bfd"})
    assert done.returncode == 0, done.stderr
    assert subprocess.run([str(tmp_path / "app")]).returncode == 7
    rows = db_rows(lw_home)
    assert [(r["linker"], r["linker_start"], r["fell_back"]) for r in rows] == [("bfd", "driver", 0)]


def test_clang_style_output_parses():
    text = ('clang version 16.0.6\nTarget: x86_64-pc-linux-gnu\nThread model: posix\nInstalledDir: /usr/bin\n'
            ' "/usr/bin/ld" "-pie" "--hash-style=both" "--eh-frame-hdr" "-m" "elf_x86_64" "-dynamic-linker" '
            '"/lib64/ld-linux-x86-64.so.2" "-o" "/linkwrap-direct-placeholder/out" "/lib/x86_64-linux-gnu/Scrt1.o" '
            '"-L/linkwrap-direct-placeholder/L" "-L/usr/lib/gcc/x86_64-linux-gnu/12" '
            '"/linkwrap-direct-placeholder/in.o" "-lgcc" "--as-needed" "-lgcc_s" "--no-as-needed" "-lc" '
            '"/lib/x86_64-linux-gnu/crtn.o"\n')
    skeleton = ["/linkwrap-direct-placeholder/in.o", "-L/linkwrap-direct-placeholder/L", "-o",
                "/linkwrap-direct-placeholder/out"]
    line = direct.parse_expansion(text, skeleton)
    assert line[:2] == ("-pie", "--hash-style=both") and line[-1] == "/lib/x86_64-linux-gnu/crtn.o"
    assert "not a linker" in direct.parse_expansion(' "/usr/bin/as" "-o" "x.o"\n', skeleton)
    assert "2 commands" in direct.parse_expansion(' "/usr/bin/as" "x"\n "/usr/bin/ld" "y"\n', skeleton)


def test_the_expansion_is_learnt_once_per_driver_and_flags(tmp_path, lw_home, monkeypatch):
    calls = []
    real = direct._expand
    monkeypatch.setattr(direct, "_expand", lambda *a: calls.append(a[1]) or real(*a))
    env = dict(os.environ)
    for out in ("a", "b"):
        req = args.parse(["x.o", f"y{out}.o", "-o", out, "-L", out], "cc", cwd=str(tmp_path))
        direct.command(req, decision("bfd"), out, env)
    assert len(calls) == 1
    direct.command(args.parse(["x.o", "-o", "c", "-static"], "cc", cwd=str(tmp_path)), decision("bfd"), "c", env)
    direct.command(args.parse(["x.o", "-o", "c"], "cc", cwd=str(tmp_path)), decision("bfd"), "c",
                   {**env, "LIBRARY_PATH": str(tmp_path)})
    assert len(calls) == 3
    cache = lw_home / "cache" / "direct.marshal"
    assert cache.stat().st_mode & 0o777 == 0o600


def test_a_driver_name_pointed_at_another_driver_is_learnt_anew(tmp_path, lw_home):
    """The cache knows a driver by the file its name leads to: `cc` switched from gcc to g++ (as an
    alternatives switch does) keeps its name, and g++ adds its C++ runtime."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    gcc, gxx = os.path.realpath(shutil.which("gcc")), os.path.realpath(shutil.which("g++"))
    assert gcc != gxx
    os.symlink(gcc, bindir / "mycc")
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    req = args.parse(["x.o", "-o", "out"], "mycc", cwd=str(tmp_path))
    assert "-lstdc++" not in direct.command(req, decision("bfd"), "out", env)
    os.unlink(bindir / "mycc")
    os.symlink(gxx, bindir / "mycc")
    assert "-lstdc++" in direct.command(req, decision("bfd"), "out", env)


def test_a_drivers_real_path_is_the_kernels_name_for_it(tmp_path):
    """direct._real: what os.path.realpath() and stat() say, through symlinked files and directories."""
    (tmp_path / "real-bin").mkdir()
    exe = tmp_path / "real-bin" / "gcc-12"
    exe.write_text("#!/bin/sh\n")
    os.symlink("real-bin", tmp_path / "bin")
    os.symlink("gcc-12", tmp_path / "real-bin" / "gcc")
    os.symlink(str(tmp_path / "bin" / "gcc"), tmp_path / "cc")
    for path in (str(tmp_path / "cc"), str(tmp_path / "bin" / "gcc"), str(exe)):
        real, st = direct._real(path)
        assert real == os.path.realpath(path) == str(exe)
        assert (st.st_dev, st.st_ino, st.st_mtime_ns) == (exe.stat().st_dev, exe.stat().st_ino, exe.stat().st_mtime_ns)
    with pytest.raises(FileNotFoundError):
        direct._real(str(tmp_path / "missing"))


def test_a_hard_linked_copy_of_a_toolchain_is_learnt_anew(tmp_path, lw_home):
    """gcc finds its crt files and libgcc from where it really is: `cc` repointed from one toolchain
    tree to a hard-linked copy of it (cp -al: the same inode, size and mtime) expands into the copy."""
    gcc = os.path.realpath(shutil.which("gcc"))
    libdir = os.path.dirname(subprocess.run([gcc, "-print-libgcc-file-name"], capture_output=True, text=True,
                                            check=True).stdout.strip())
    rel = os.path.relpath(libdir, os.path.dirname(os.path.dirname(gcc)))  # lib/gcc/<triple>/<version>
    assert not rel.startswith(".."), rel
    one = tmp_path / "tc1"
    (one / "bin").mkdir(parents=True)
    shutil.copy2(gcc, one / "bin" / "gcc")
    (one / rel).mkdir(parents=True)
    for name in os.listdir(libdir):
        os.symlink(os.path.join(libdir, name), one / rel / name)
    subprocess.run(["cp", "-al", str(one), str(tmp_path / "tc2")], check=True)
    assert os.stat(one / "bin" / "gcc").st_ino == os.stat(tmp_path / "tc2" / "bin" / "gcc").st_ino
    bindir = tmp_path / "bin"
    bindir.mkdir()
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    req = args.parse(["x.o", "-o", "out"], "mycc", cwd=str(tmp_path))
    for tree in ("tc1", "tc2"):
        if (bindir / "mycc").is_symlink():
            os.unlink(bindir / "mycc")
        os.symlink(tmp_path / tree / "bin" / "gcc", bindir / "mycc")
        line = " ".join(direct.command(req, decision("bfd"), "out", env))
        assert str(tmp_path / tree / "bin") in line and f"/{'tc2' if tree == 'tc1' else 'tc1'}/" not in line, line


# --- whole links: the same bytes either way ------------------------------------

def _rust_bin_dir():
    sysroot = subprocess.run([tool("rustc"), "--print", "sysroot"], capture_output=True, text=True,
                             check=True).stdout.strip()
    host = next(line.split(":", 1)[1].strip() for line in subprocess.run(
        [tool("rustc"), "-vV"], capture_output=True, text=True, check=True).stdout.splitlines()
        if line.startswith("host:"))
    return os.path.join(sysroot, "lib", "rustlib", host, "bin")


def _link_env(tmp_path, linker):
    bindir = tmp_path / "lld-bin"
    bindir.mkdir(exist_ok=True)
    if not (bindir / "ld.lld").exists():
        os.symlink(tool("ld.lld-16"), bindir / "ld.lld")
    return {**os.environ, "LINKWRAP_LINKER": linker,
            "PATH": f"{bindir}:{_rust_bin_dir()}:{os.environ['PATH']}"}


def _build(tmp_path, lang, env):
    """One link of a C, C++ or Rust program through linkwrap; -> the output's bytes."""
    if lang == "rust":
        cmd = [tool("rustc"), "-C", f"linker={script('linkwrap-cc')}", "-o", "prog", "prog.rs"]
    else:
        cmd = [script("linkwrap-launch"), "g++" if lang == "c++" else "cc", "prog.o", "-o", "prog", "-lm"]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""
    data = (tmp_path / "prog").read_bytes()
    assert subprocess.run([str(tmp_path / "prog")], capture_output=True).stdout == b"hello 42\n"
    return data


SOURCES = {
    "c": ("prog.c", '#include <stdio.h>\n#include <math.h>\nint main(void){printf("hello %d\\n", '
                    '(int)sqrt(1764.0));return 0;}\n'),
    "c++": ("prog.cpp", '#include <iostream>\n#include <vector>\nint main(){std::vector<int> v{42};'
                        'std::cout << "hello " << v[0] << std::endl;}\n'),
    "rust": ("prog.rs", 'fn main() { let v: Vec<u32> = (0..7).collect(); println!("hello {}", v.len() * 6); }\n'),
}


@pytest.mark.parametrize("lang", ["c", "c++", "rust"])
@pytest.mark.parametrize("linker", ["mold", "lld", "rust-lld", "bfd"])
def test_direct_and_driver_outputs_are_byte_identical(tmp_path, lw_home, linker, lang):
    name, text = SOURCES[lang]
    (tmp_path / name).write_text(text)
    if lang != "rust":
        subprocess.run(["g++" if lang == "c++" else "cc", "-c", name, "-o", "prog.o"], cwd=tmp_path, check=True)
    env = _link_env(tmp_path, linker)
    direct_bytes = _build(tmp_path, lang, env)
    driver_bytes = _build(tmp_path, lang, {**env, "LINKWRAP_DIRECT": "0"})
    assert direct_bytes == driver_bytes
    rows = db_rows(lw_home)
    assert [(r["linker"], r["linker_start"], r["fell_back"]) for r in rows] == [
        (linker, "direct", 0), (linker, "driver", 0)]
    first = rows[0]["command"]
    assert '"-o"' in first and "collect2" not in first


def test_a_rust_codegen_unit_is_not_looked_into_without_a_plugin_option_and_lto_in_one_still_links(tmp_path,
                                                                                                  lw_home):
    """rustc's *.rcgu.o are LLVM machine code unless -C linker-plugin-lto (which passes -plugin-opt=):
    they are not stat()ed or read before the linker. One holding LTO code all the same (GCC's, here,
    under that name) fails the direct start, and the driver links it: the link still passes."""
    (tmp_path / "f.c").write_text("int f(void){return 7;}\n")
    (tmp_path / "m.c").write_text("int f(void);\nint main(void){return f();}\n")
    subprocess.run(["cc", "-flto", "-c", "f.c", "-o", "f.1bsb6mj.rcgu.o"], cwd=tmp_path, check=True)
    subprocess.run(["cc", "-c", "m.c", "-o", "m.o"], cwd=tmp_path, check=True)
    req = args.parse(["m.o", "f.1bsb6mj.rcgu.o", "-o", "app"], "cc", cwd=str(tmp_path))
    inputs.begin()
    try:
        direct.command(req, decision("bfd"), "app", dict(os.environ))   # not refused: not looked into
        assert os.path.join(str(tmp_path), "f.1bsb6mj.rcgu.o") not in inputs._stats
    finally:
        inputs.end()
    os.link(tmp_path / "f.1bsb6mj.rcgu.o", tmp_path / "f.o")       # under another name it is looked into
    with pytest.raises(direct.NotDirect, match="holds LTO code"):
        direct.command(args.parse(["m.o", "f.o", "-o", "app"], "cc", cwd=str(tmp_path)), decision("bfd"), "app",
                       dict(os.environ))
    done = subprocess.run([script("linkwrap-cc"), "-flto", "m.o", "f.1bsb6mj.rcgu.o", "-o", "app"], cwd=tmp_path,
                          capture_output=True, env={**os.environ, "LINKWRAP_LINKER": "bfd"})
    assert done.returncode == 0, done.stderr
    assert subprocess.run([str(tmp_path / "app")]).returncode == 7
    assert [(r["linker"], r["exit_status"]) for r in db_rows(lw_home)] == [("bfd", 0)]
