"""Projects large enough to measure links on: a std-only Rust program and a C++ one, generated.

No registry is reachable here, so a realistic-size Rust link must come from code we write. The Rust
program is MODULES modules × FUNCS generic functions, each instantiated for four integer types: about
60 KB of debug objects per instantiation, plus ~22 MB of the toolchain's rlibs, so the defaults
(16 × 34) give rustc's debug link ~150 MB of inputs, the size of measurements.md's "generated std-only
program" (4 × 40: ~60 MB, for tests). The C++ program is FILES translation units of FUNCS templated functions each.
Both print a checksum that does not depend on the linker, so a test can compare the outputs of two
linkers by running them.

    python3 benchmarks/genproject.py rust DIR [--modules 16] [--funcs 34] [--link debug|release]
    python3 benchmarks/genproject.py cpp DIR [--files 40] [--funcs 60] [--link]

With --link, the project is built and the link's inputs are printed in bytes (rust: rustc's own link,
its objects kept with -C save-temps; cpp: the objects and the driver's command).

Tests and benchmarks import it: rust(), cpp(), rust_link(), cpp_link(), input_bytes().
"""
import argparse
import os
import shlex
import subprocess
import sys

TYPES = ("u8", "u16", "u32", "u64")


def host() -> str:
    """rustc's host triple (the [target.<triple>] a project's .cargo/config.toml names)."""
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("host:"))


def lw(*argv, cwd, env):
    """The `linkwrap` command of this interpreter's install, its output captured."""
    exe = os.path.join(os.path.dirname(sys.executable), "linkwrap")
    return subprocess.run([exe, *argv], cwd=cwd, env=env, capture_output=True, text=True)


def rust(dest, modules=16, funcs=34, name="genbig") -> str:
    """Write a Cargo project at dest (a binary crate, no dependencies); -> dest."""
    src = os.path.join(dest, "src")
    os.makedirs(src, exist_ok=True)
    _write(os.path.join(dest, "Cargo.toml"),
           f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n')
    for m in range(modules):
        _write(os.path.join(src, f"m{m}.rs"), _rust_module(m, funcs))
    mods = "".join(f"mod m{m};\n" for m in range(modules))
    calls = "".join(f"    acc = acc.wrapping_mul(31).wrapping_add(m{m}::run({m}));\n" for m in range(modules))
    _write(os.path.join(src, "main.rs"),
           f"{mods}\nfn main() {{\n    let mut acc: u64 = 0;\n{calls}    println!(\"checksum {{}}\", acc);\n}}\n")
    return dest


def _rust_module(m, funcs) -> str:
    out = ["use std::collections::{BTreeMap, HashMap};\nuse std::fmt::Debug;\n"]
    for i in range(funcs):
        # Each instantiation brings its own struct, Vec and Debug code and their debug info, as
        # generic-heavy crates do; the maps are shared, so the size grows with the count, not faster.
        out.append(f"""
#[derive(Debug, Clone, Default, PartialEq)]
pub struct S{i}<T> {{ pub a: T, pub b: String, pub c: Vec<u32> }}

pub fn f{i}<T: Debug + Clone + Copy + Into<u64>>(x: T, k: u64, seen: &mut HashMap<String, u64>) -> u64 {{
    let s = S{i} {{ a: x, b: format!("{m}-{i}-{{}}", k), c: vec![k as u32; (k % 5 + 1) as usize] }};
    let v = vec![s.clone(); 2];
    let text = format!("{{:?}}", v);
    *seen.entry(s.b.clone()).or_default() += 1;
    (text.len() as u64).wrapping_add(x.into()).wrapping_add(s.c.len() as u64)
}}
""")
    body = "".join(f"    acc = acc.wrapping_add(f{i}({i % 251} as {t}, seed + {i}, &mut seen));\n"
                   for i in range(funcs) for t in TYPES)
    out.append(f"\npub fn run(seed: u64) -> u64 {{\n    let mut acc: u64 = 0;\n    let mut seen = HashMap::new();\n"
               f"{body}    let order: BTreeMap<_, _> = seen.into_iter().collect();\n"
               f"    acc.wrapping_add(order.len() as u64)\n}}\n")
    return "".join(out)


def rust_link(project, profile="debug", target_dir=None, env=None):
    """Build project and capture rustc's link: -> (argv after the driver, env the link needs, cwd).

    The objects rustc would delete after the link are kept (-C save-temps), so the link can be run
    again, with any linker, for as long as target_dir exists."""
    env = {**(env or os.environ)}
    if target_dir:
        env["CARGO_TARGET_DIR"] = target_dir
    release = ["--release"] if profile == "release" else []
    subprocess.run(["cargo", "build", "-q", *release], cwd=project, env=env, check=True)
    os.utime(os.path.join(project, "src", "main.rs"))
    out = subprocess.run(["cargo", "rustc", "-q", *release, "--bin", _crate_name(project), "--",
                          "-C", "save-temps", "--print", "link-args"],
                         cwd=project, env=env, check=True, capture_output=True, text=True).stdout
    line = [l for l in out.splitlines() if '"cc"' in l][-1]
    parts = shlex.split(line)
    i = parts.index("cc")
    link_env = dict(p.split("=", 1) for p in parts[:i] if "=" in p)
    return parts[i + 1:], link_env, project


def _crate_name(project) -> str:
    with open(os.path.join(project, "Cargo.toml")) as f:
        for line in f:
            if line.startswith("name"):
                return line.split('"')[1]
    raise ValueError(f"no package name in {project}/Cargo.toml")


def cpp(dest, files=40, funcs=60) -> str:
    """Write a C++ program of `files` translation units; -> dest."""
    os.makedirs(dest, exist_ok=True)
    for f in range(files):
        fns = "".join(f"""
template <typename T> std::uint64_t t{f}_{i}(T x, std::uint64_t k) {{
    std::map<std::string, std::vector<T>> m;
    m["{f}-{i}-" + std::to_string(k)].assign(k % 5 + 1, x);
    std::unordered_map<std::uint64_t, std::string> u{{{{k, std::to_string(x)}}}};
    return m.begin()->first.size() + m.begin()->second.size() + u.size() + std::uint64_t(x);
}}
""" for i in range(funcs))
        calls = "".join(f"    acc = acc * 31 + t{f}_{i}<{t}>({i % 127}, seed + {i});\n"
                        for i in range(funcs) for t in ("int", "long", "unsigned", "short"))
        _write(os.path.join(dest, f"u{f}.cpp"),
               "#include <cstdint>\n#include <map>\n#include <string>\n#include <unordered_map>\n#include <vector>\n"
               f"{fns}\nstd::uint64_t run{f}(std::uint64_t seed) {{\n    std::uint64_t acc = 0;\n{calls}"
               "    return acc;\n}\n")
    decls = "".join(f"std::uint64_t run{f}(std::uint64_t);\n" for f in range(files))
    calls = "".join(f"    acc = acc * 31 + run{f}({f});\n" for f in range(files))
    _write(os.path.join(dest, "main.cpp"),
           f"#include <cstdint>\n#include <cstdio>\n{decls}int main() {{\n    std::uint64_t acc = 0;\n{calls}"
           '    std::printf("checksum %llu\\n", (unsigned long long)acc);\n    return 0;\n}\n')
    return dest


def cpp_link(project, flags=("-g", "-O0"), jobs=2):
    """Compile the C++ program's objects (in parallel); -> (the link's argv after `c++`, cwd).
    The output is `prog` in the project directory."""
    sources = sorted(s for s in os.listdir(project) if s.endswith(".cpp"))
    procs, objects = [], []
    for s in sources:
        obj = s[:-4] + ".o"
        objects.append(obj)
        procs.append(subprocess.Popen(["c++", *flags, "-c", s, "-o", obj], cwd=project))
        if len(procs) >= jobs:
            _wait(procs.pop(0))
    for p in procs:
        _wait(p)
    return [*objects, "-o", "prog"], project


def _wait(proc):
    if proc.wait() != 0:
        raise subprocess.CalledProcessError(proc.returncode, proc.args)


def input_bytes(argv, cwd) -> int:
    """What the link reads from the files named on its command line (the driver's own crt files and
    system libraries not counted)."""
    total = 0
    for a in argv:
        if a.startswith("-") or not a.endswith((".o", ".rlib", ".a")):
            continue
        try:
            total += os.stat(os.path.join(cwd, a)).st_size
        except OSError:
            pass
    return total


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="kind", required=True)
    r = sub.add_parser("rust")
    r.add_argument("dir")
    r.add_argument("--modules", type=int, default=16)
    r.add_argument("--funcs", type=int, default=34)
    r.add_argument("--link", choices=("debug", "release"))
    c = sub.add_parser("cpp")
    c.add_argument("dir")
    c.add_argument("--files", type=int, default=40)
    c.add_argument("--funcs", type=int, default=60)
    c.add_argument("--link", action="store_true")
    opts = ap.parse_args()
    if opts.kind == "rust":
        rust(opts.dir, opts.modules, opts.funcs)
        if opts.link:
            argv, _, cwd = rust_link(opts.dir, opts.link)
            print(f"{opts.link} link: {len(argv)} arguments, {input_bytes(argv, cwd) / 1e6:.1f} MB of inputs")
    else:
        cpp(opts.dir, opts.files, opts.funcs)
        if opts.link:
            argv, cwd = cpp_link(opts.dir)
            subprocess.run(["c++", *argv], cwd=cwd, check=True)
            print(f"link: {len(argv)} arguments, {input_bytes(argv, cwd) / 1e6:.1f} MB of inputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
