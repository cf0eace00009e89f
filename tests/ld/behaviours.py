"""The behaviour corpus: one small program per linker behaviour, its expected output beside it.

A case is a directory under behaviours/ with case.ini ([case] about, mode, cflags, ldflags,
facts, expect, output) and expected.stdout. Sources: *.c and *.s are the program (with
`mode = shared`: the shared object; prog_*.c are then the program GNU ld links against it); ar_*.c go
into the static archive libar.a (after the objects); so_*.c into the shared library
sub/libso.so, built without a SONAME and named by that relative path; root_lib_<name>.c into
root/lib/lib<name>.a (for --sysroot). `output = partial`: the link is a -r; GNU ld links
its output into the program that is run. In ldflags, @WORK@ is the build directory and @SRC@ the
case's directory; just_*.s are assembled into @WORK@/just_*.o and not linked (files for -R). `driver = g++` links (and finishes a -r) with g++. `expect = link` (the default): linkwrap.ld links it and the program runs
as expected, with the listed readelf facts equal to GNU ld's. `expect = unsupported`:
linkwrap.ld names what it cannot do, and linkwrap falls back to a linker that can.
"""
import configparser
import os
import re
import shlex
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
BEHAVIOURS_DIR = os.path.join(HERE, "behaviours")
CASES = sorted(d for d in os.listdir(BEHAVIOURS_DIR) if os.path.isdir(os.path.join(BEHAVIOURS_DIR, d)))
MODE_FLAGS = {"static": ["-static"], "static-pie": ["-static-pie"], "pie": ["-pie"], "no-pie": ["-no-pie"],
              "shared": ["-shared"], "none": []}


def spec(case):
    cp = configparser.ConfigParser(interpolation=None)
    cp.read(os.path.join(BEHAVIOURS_DIR, case, "case.ini"))
    c = cp["case"]
    with open(os.path.join(BEHAVIOURS_DIR, case, "expected.stdout")) as f:
        expected = f.read()
    return {"about": c["about"], "mode": c.get("mode", "none"), "cflags": shlex.split(c.get("cflags", "")),
            "ldflags": c.get("ldflags", ""), "facts": c.get("facts", "").split(),
            "expect": c.get("expect", "link"), "output": c.get("output", "program"), "stdout": expected,
            "symbols": c.get("symbols", "").split(), "driver": c.get("driver", "gcc")}


def build(case, work):
    """Compile the case in work -> the link command's arguments after the driver (no -o, no -B)."""
    src = os.path.join(BEHAVIOURS_DIR, case)
    s = spec(case)
    os.makedirs(work, exist_ok=True)
    objs, ar_objs, so_srcs = [], [], []
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if name.startswith("so_") and name.endswith(".c"):
            so_srcs.append(path)
        elif name.startswith("prog_") and name.endswith(".c"):
            # the program that uses a `mode = shared` case's output (linked by _check_output)
            subprocess.run(["gcc", "-O1", "-c", path, "-o", os.path.join(work, name[:-2] + ".o")], check=True)
        elif name.startswith("root_lib_") and name.endswith(".c"):
            d = os.path.join(work, "root", "lib")
            os.makedirs(d, exist_ok=True)
            obj = os.path.join(d, name[:-2] + ".o")
            subprocess.run(["gcc", "-O1", "-c", path, "-o", obj], check=True)
            subprocess.run(["ar", "rcs", os.path.join(d, "lib" + name[len("root_lib_"):-2] + ".a"), obj], check=True)
        elif name.startswith("just_") and name.endswith(".s"):
            # assembled, not linked: a file for -R/--just-symbols (ldflags name it @WORK@/just_*.o)
            subprocess.run(["gcc", "-c", path, "-o", os.path.join(work, name[:-2] + ".o")], check=True)
        elif name.endswith((".c", ".s", ".cpp")):
            obj = os.path.join(work, name.rsplit(".", 1)[0] + ".o")
            flags = s["cflags"] if name.endswith((".c", ".cpp")) else []
            cc = "g++" if name.endswith(".cpp") else "gcc"
            subprocess.run([cc, "-O1", "-c", path, "-o", obj, *flags], check=True)
            (ar_objs if name.startswith("ar_") else objs).append(obj)
    args = [*MODE_FLAGS[s["mode"]], *objs]
    if ar_objs:
        ar = os.path.join(work, "libar.a")
        if os.path.exists(ar):
            os.unlink(ar)
        subprocess.run(["ar", "rcs", ar, *ar_objs], check=True)
        args.append(ar)
    if so_srcs:
        os.makedirs(os.path.join(work, "sub"), exist_ok=True)
        tls = [f for f in s["cflags"] if f.startswith("-mtls-dialect")]
        subprocess.run(["gcc", "-O1", "-shared", "-fPIC", *tls, *so_srcs, "-o", os.path.join(work, "sub", "libso.so")],
                       check=True)
        args.append("sub/libso.so")
    ldflags = s["ldflags"].replace("@WORK@", work).replace("@SRC@", src)
    return args + ["-pthread"] * (s["mode"] != "none") + shlex.split(ldflags)


def program_using(s, path, cwd):
    """A `mode = shared` case: GNU ld links its prog_*.o against the shared object at path (named
    by that path, so the loader finds it) -> the program's path."""
    progs = sorted(os.path.join(cwd, n) for n in os.listdir(cwd) if n.startswith("prog_") and n.endswith(".o"))
    subprocess.run([s["driver"], *progs, path, "-o", path + ".prog"], capture_output=True, text=True, cwd=cwd,
                   check=True)
    return path + ".prog"


def run(path, cwd):
    return subprocess.run([path], capture_output=True, text=True, cwd=cwd, timeout=30)


def facts(path, symbols=()):
    """readelf facts a case may ask to compare with GNU ld's output (symbols: names whose nm
    kind letter is compared)."""
    def readelf(*flags):
        return subprocess.run(["readelf", *flags, path], capture_output=True, text=True, check=True).stdout
    dyn, ph, notes = readelf("-dW"), readelf("-lW"), readelf("-nW")
    osabi = re.search(r"OS/ABI:\s+(.*)", readelf("-hW")).group(1).strip()
    out = {
        "needed": re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", dyn),
        "soname": re.findall(r"\(SONAME\)\s+Library soname: \[(.*?)\]", dyn),
        "versions": re.findall(r"Name: (\S+)", readelf("-VW").split("Version needs section")[0])[1:],  # not BASE
        "flags": sorted(re.findall(r"\((FLAGS(?:_1)?)\)\s+(.*)", dyn)),
        "init": sorted(re.findall(r"\((INIT|FINI)\)", dyn)),
        "osabi": osabi,
        "rpath": re.findall(r"\((RPATH|RUNPATH)\)\s+\S+ \S+ \[(.*?)\]", dyn),
        "segments": sorted(set(re.findall(r"^\s+([A-Z_]+)\s+0x", ph, re.M))),
        "property": [l.strip() for l in notes.splitlines() if "x86 " in l or "Properties:" in l],
        "load_align": sorted({l.split()[-1] for l in ph.splitlines() if l.strip().startswith("LOAD")}),
        "stack": [" ".join(l.split()[6:-1]) for l in ph.splitlines() if l.strip().startswith("GNU_STACK")],
    }
    syms = readelf("-sW")
    out["rsyms"] = sorted((p[7], p[4], p[3], p[6] if p[6] in ("UND", "COM", "ABS") else "defined", p[5])
                          for p in (line.split() for line in syms.splitlines())
                          if len(p) == 8 and p[4] in ("GLOBAL", "WEAK"))
    # .dynsym's definitions: name@version, type, binding, visibility
    out["dynsyms"] = sorted((p[7], p[3], p[4], p[5]) for p in (line.split() for line in readelf("--dyn-syms", "-W").splitlines())
                            if len(p) >= 8 and p[0].rstrip(":").isdigit() and p[6] != "UND")
    rows = [line.split() for line in syms.split("Symbol table '.symtab'")[-1].splitlines()]
    rows = [p for p in rows if len(p) >= 7 and p[0].rstrip(":").isdigit()]
    # the objects' STT_FILE names (not GNU ld's empty one: it ends the locals of linker-made
    # symbols, which this linker writes as globals)
    out["files"] = sorted(p[7] for p in rows if p[3] == "FILE" and len(p) == 8)
    # .symtab's type, binding and visibility of the named symbols
    out["symrows"] = sorted((p[7], p[3], p[4], p[5]) for p in rows if len(p) == 8 and p[7] in symbols)
    out["filters"] = re.findall(r"\((AUXILIARY|FILTER)\)\s+\S+ library: \[(.*?)\]", dyn)
    # the --package-metadata note's bytes (readelf's hex dump without the addresses)
    out["package_note"] = [l.split(None, 1)[1][:35] for l in readelf("-x", ".note.package").splitlines()
                           if l.strip().startswith("0x")]
    # which symbol hash tables there are: sections and .dynamic tags
    out["hash"] = sorted(set(re.findall(r"\s(\.(?:gnu\.)?hash)\s", readelf("-SW"))) |
                         set(re.findall(r"\(((?:GNU_)?HASH)\)", dyn)))
    # the dynamic relocations against the named symbols: (type, symbol)
    out["dynrelocs"] = sorted({(p[2], p[4]) for p in (line.split() for line in readelf("-rW").splitlines())
                               if len(p) >= 5 and p[2].startswith("R_X86_64_") and p[4] in symbols})
    out["emitted"] = emitted_relocs(path)
    out["emitted_summary"] = emitted_summary(out["emitted"])
    nm = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    kinds = {line.split()[-1]: line.split()[-2] for line in nm.splitlines() if line.strip()}
    out["symbols"] = [(name, kinds.get(name)) for name in symbols]
    return out


def nm_addresses(path):
    nm = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    return {p[2]: int(p[0], 16) for p in (line.split() for line in nm.splitlines()) if len(p) == 3}


def emitted_relocs(path):
    """--emit-relocs: per emitted relocation section (non-loaded SHT_RELA) the section it applies to
    and its relocations, independent of where the linker put things: the offset in the target
    section, the type, the symbol's name (a section symbol's: its section's), and the addend --
    against a section symbol of a string section, the string the place points at instead (string
    merging may order the strings differently). .eh_frame's by count and types only (GNU ld merges
    identical CIEs, which moves every record)."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    shoff, = struct.unpack_from("<Q", data, 40)
    shnum, shstrndx = struct.unpack_from("<HH", data, 60)
    shdrs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * k) for k in range(shnum)]

    def cstr(off):
        return data[off:data.index(b"\0", off)].decode()
    names = [cstr(shdrs[shstrndx][4] + sh[0]) for sh in shdrs]
    out = {}
    for sh in shdrs:
        if sh[1] != 4 or sh[2] & 2:                 # SHT_RELA, not SHF_ALLOC (.rela.dyn/.rela.plt)
            continue
        symtab, target = shdrs[sh[6]], shdrs[sh[7]]
        tname = names[sh[7]]
        strtab = shdrs[symtab[6]]
        rows = []
        for k in range(sh[5] // 24):
            r_off, info, addend = struct.unpack_from("<QQq", data, sh[4] + 24 * k)
            st_name, st_info, _, st_shndx, st_value, _ = struct.unpack_from("<IBBHQQ", data, symtab[4] + 24 * (info >> 32))
            typ = info & 0xFFFFFFFF
            if info >> 32 == 0:
                sym = ""
            elif st_info & 0xF == 3 and st_shndx < len(names):     # STT_SECTION
                sym = names[st_shndx]
                tsh = shdrs[st_shndx]
                if tsh[2] & 0x20 or sym.startswith(".debug_str") or sym == ".debug_line_str":
                    # SHF_STRINGS (or a string table whose output lost the flag): the string itself
                    at = tsh[4] + addend
                    addend = data[at:data.index(b"\0", at)].decode(errors="replace")
            else:
                sym = cstr(strtab[4] + st_name)
            place = r_off - target[3] if target[2] & 2 else r_off
            rows.append((place, typ, sym, addend))
        if tname == ".eh_frame":
            rows = [len(rows), sorted((t, s) for _, t, s, _ in rows if t)]
        out[tname] = rows
    return out


# a GOT access relaxed or not (bfd turns a non-PIE `mov x@GOTPCREL` into `mov $x`, R_X86_64_32S, where
# this linker writes `lea x(%rip)`, R_X86_64_PC32: both programs right, their bytes differ)
_GOT_OR_DIRECT = {2: "pc32/32s/gotpcrelx", 11: "pc32/32s/gotpcrelx", 41: "pc32/32s/gotpcrelx",
                  42: "pc32/32s/gotpcrelx"}


def emitted_summary(emitted):
    """emitted_relocs without the places (a static link's libc sections are laid out in another order
    by GNU ld's script): how many relocations of each type against each global symbol, and against
    section symbols as one, in all sections together."""
    from collections import Counter
    c = Counter()
    for name, rows in emitted.items():
        if name == ".eh_frame":
            c[".eh_frame"] += rows[0]
            continue
        for _, typ, sym, _ in rows:
            sec = sym.startswith(".") or sym in emitted or sym.startswith("__libc_")
            c[(_GOT_OR_DIRECT.get(typ, typ), "(section)" if sec else sym)] += 1
    return sorted(c.items(), key=repr)
