"""The C/C++ test corpus: compile each case once, link it with GNU ld and with linkwrap.ld.

A case is a directory under cases/: every *.c / *.cpp file is compiled; files
named lib_*.c go into a static archive libcase.a linked after the objects.
A first-line comment `// lw-cflags: ...` adds compiler flags for that file.
Linking always goes through the gcc/g++ driver, the way builds do; linkwrap.ld
is reached through a -B directory whose `ld` is a symlink to linkwrap-ld,
exactly as linkwrap's wrapper puts it in front of the driver.
"""
import os
import subprocess
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
CASES_DIR = os.path.join(HERE, "cases")
MODES = {"static": ["-static"], "static-pie": ["-static-pie"], "pie": ["-pie"], "no-pie": ["-no-pie"]}
CASES = sorted(d for d in os.listdir(CASES_DIR) if os.path.isdir(os.path.join(CASES_DIR, d)))


def linkwrap_ld() -> str:
    path = os.path.join(sysconfig.get_path("scripts"), "linkwrap-ld")
    assert os.access(path, os.X_OK), "linkwrap-ld is not installed: pip install -e '.[test]'"
    return path


def shim_dir(root: str) -> str:
    """A directory whose `ld` is linkwrap-ld (what `gcc -B<dir>` runs as its linker)."""
    d = os.path.join(root, "lw-shim")
    if not os.path.isdir(d):
        os.makedirs(d)
        os.symlink(linkwrap_ld(), os.path.join(d, "ld"))
    return d


def _flags(src):
    with open(src) as f:
        first = f.readline()
    return first.split("lw-cflags:", 1)[1].split() if "lw-cflags:" in first else []


def rust_debug_link(root):
    """A small generated Rust debug link (benchmarks/genproject.py, 2 x 4) built under root:
    (root, rustc's link arguments without -o and its value, the environment, the cwd)."""
    import sys
    sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks"))
    import genproject
    project = genproject.rust(str(root / "proj"), modules=2, funcs=4)
    argv, link_env, cwd = genproject.rust_link(project, target_dir=str(root / "target"))
    # rustc's own choice of rust-lld is not what these tests are about: the driver's ld, or the shim's
    argv = [a for a in argv if a != "-fuse-ld=lld" and not a.endswith("/gcc-ld")]
    out = argv.index("-o")
    return root, argv[:out] + argv[out + 2:], {**os.environ, **link_env}, cwd


def compile_case(case: str, work: str):
    """-> (driver, objects, archive or None). Objects are PIE-compatible (-fPIE, gcc's default)."""
    src_dir = os.path.join(CASES_DIR, case)
    os.makedirs(work, exist_ok=True)
    objs, lib_objs = [], []
    driver = "gcc"
    for name in sorted(os.listdir(src_dir)):
        if not name.endswith((".c", ".cpp")):
            continue
        cc = "g++" if name.endswith(".cpp") else "gcc"
        if cc == "g++":
            driver = "g++"
        src = os.path.join(src_dir, name)
        obj = os.path.join(work, name.rsplit(".", 1)[0] + ".o")
        subprocess.run([cc, "-O1", "-g", "-c", src, "-o", obj, *_flags(src)], check=True)
        (lib_objs if name.startswith("lib_") else objs).append(obj)
    archive = None
    if lib_objs:
        archive = os.path.join(work, "libcase.a")
        if os.path.exists(archive):
            os.unlink(archive)
        subprocess.run(["ar", "rcs", archive, *lib_objs], check=True)
    return driver, objs, archive


def link(driver, objs, archive, mode, out, shim=None, extra=()):
    """Link through the driver; shim=None uses GNU ld. -> CompletedProcess."""
    cmd = [driver]
    if shim:
        cmd.append(f"-B{shim}")
    cmd += [*MODES[mode], *objs]
    if archive:
        cmd += [archive]
    cmd += ["-pthread", "-o", out, *extra]
    return subprocess.run(cmd, capture_output=True, text=True)


def run(path, env=None, timeout=30):
    return subprocess.run([path], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
