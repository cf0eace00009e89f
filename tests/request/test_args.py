"""ARGS: rustc's and ninja's command lines -> LinkRequest."""
import os
import re
import subprocess

from linkwrap.request import args

SYSROOT_GCC_LD = "/opt/rust/lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld"  # parsed only, never run


def test_rustc_lld_forcing_is_removed_and_rust_lld_learnt(tmp_path):
    argv = ["-m64", "a.o", f"-B{SYSROOT_GCC_LD}", "-fuse-ld=lld", "-Wl,--as-needed", "-o", "out", "-pie"]
    req = args.parse(argv, cwd=str(tmp_path), environ={})
    assert req.args == ("-m64", "a.o", "-Wl,--as-needed", "-o", "out", "-pie")
    assert req.removed == (f"-B{SYSROOT_GCC_LD}", "-fuse-ld=lld")
    assert req.fuse_ld == "lld"
    assert req.rust_lld == os.path.join(os.path.dirname(SYSROOT_GCC_LD), "rust-lld")
    assert req.output == str(tmp_path / "out")
    assert req.driver == "cc"
    assert req.inputs == ("a.o",)


def test_other_B_dirs_are_kept(tmp_path):
    req = args.parse(["-B/opt/my/bin", "x.o", "-o", "y"], cwd=str(tmp_path), environ={})
    assert "-B/opt/my/bin" in req.args and req.removed == ()


def test_driver_from_environment_or_launcher(tmp_path):
    assert args.parse(["-o", "x"], cwd=str(tmp_path), environ={"LINKWRAP_CC": "gcc-12"}).driver == "gcc-12"
    assert args.parse(["-o", "x"], driver="c++", cwd=str(tmp_path), environ={"LINKWRAP_CC": "gcc-12"}).driver == "c++"


def rustc_escape(arg: str) -> str:
    """How rustc writes a GNU-style linker response file: escape backslash and space."""
    return arg.replace("\\", "\\\\").replace(" ", "\\ ")


def test_response_file_with_spaces_and_backslashes(tmp_path):
    wanted = ["-m64", "/tmp/my dir/a b.o", "C:\\odd\\path.o", "-o", "out put", "-Wl,-z,relro"]
    rsp = tmp_path / "linker-arguments"
    rsp.write_text("\n".join(rustc_escape(a) for a in wanted))
    req = args.parse([f"@{rsp}"], cwd=str(tmp_path), environ={})
    assert list(req.args) == wanted
    assert req.used_response_file
    assert req.output == str(tmp_path / "out put")


def test_nested_and_quoted_response_files(tmp_path):
    (tmp_path / "inner").write_text("'quoted arg' \"double q\"\n-lm")
    (tmp_path / "outer").write_text("a.o @inner -o x")
    assert list(args.parse(["@outer"], cwd=str(tmp_path), environ={}).args) == \
        ["a.o", "quoted arg", "double q", "-lm", "-o", "x"]


def test_missing_response_file_stays_literal_like_gcc(tmp_path):
    assert args.parse(["@nope", "-o", "x"], cwd=str(tmp_path), environ={}).args[0] == "@nope"


def test_quote_is_the_inverse_of_split():
    for arg in ["plain", "with space", "back\\slash", "tab\there", "q'uote\"", ""]:
        assert args.split_response_text(args.quote_response_arg(arg)) == [arg]


# --- the response-file parser against the char-by-char one it replaced --------------------------

def reference_split_response_text(text: str) -> list:
    """split_response_text as it was until it went to re (a character at a time in Python: 29 s for
    100 MB): the oracle for what it must still do, and benchmarks/bench_overhead.py's old figure."""
    args, cur, have, quote, i = [], [], False, None, 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            cur.append(text[i + 1])
            have, i = True, i + 2
            continue
        if quote:
            if c == quote:
                quote = None
            else:
                cur.append(c)
        elif c in "'\"":
            quote, have = c, True
        elif c.isspace():
            if have:
                args.append("".join(cur))
                cur, have = [], False
        else:
            cur.append(c)
            have = True
        i += 1
    if have:
        args.append("".join(cur))
    return args


def reference_quote_response_arg(arg: str) -> str:
    """quote_response_arg as it was (a character at a time)."""
    out = []
    for c in arg:
        if c in "\\'\"" or c.isspace():
            out.append("\\")
        out.append(c)
    return "".join(out) if arg else "''"


TRICKY = [
    "", " ", "\n\n", "a", "a b\tc\nd\r\ne", "  lead and trail  ", "a\u00a0b\u2003c\u3000d\x1ce\x85f",
    "'", '"', "''", '""', "'' \"\" ''", "a'' b", "''a", "a\"\"", "'a b' \"c d\"", "a\"b c\"d", "a'b c'd e",
    "'it\"s' \"it's\"", "'a\\'b' \"a\\\"b\"", "'a\\\\b' \"a\\\\b\"", "'a\\nb' x\\ty", "\\", "a\\", "'a\\",
    "\"a\\", "a \\", "\\\\", "\\\\\\", "a\\ b", "a\\\nb", "a\\\r\nb", "\\'a\\\"", "\\ ", " \\ \\  ",
    "'unterminated run", "\"unterminated \\\" run", "'a'\"b\"c\\d", "\u00e9t\u00e9 'caf\u00e9 au lait'",
    "x\udc80y '\udcff'", "@inner -o\tout", "-Wl,-rpath,'$ORIGIN/../lib'", "'\n' \"\t\"", "a'\u2003'b",
    "a\0b 'c\0' \\\0 d",
]


def assert_splits_as_the_reference(text):
    """split_response_text, and each of its two ways whichever it takes here (the sparse one is for
    texts with few quotes and backslashes, the dense one a regex match for every argument)."""
    want = reference_split_response_text(text)
    assert args.split_response_text(text) == want, text
    if "\\" in text or "'" in text or '"' in text:
        assert args._split_sparse(text) == want, text
        assert args._unquoted(args._response_patterns()[0].findall(text)) == want, text


def test_response_text_splits_as_the_reference_on_tricky_text():
    for text in TRICKY:
        assert_splits_as_the_reference(text)


def test_response_text_splits_as_the_reference_on_random_text():
    import random
    rng = random.Random(31)
    alphabet = "a \t\n'\"\\"
    for n in range(4000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 24)))
        assert_splits_as_the_reference(text)
    mixed = alphabet + "b\r\u00a0\u2003\u00e9\0"  # a NUL: _unquoted's separator
    for n in range(1000):  # long texts: the fast paths and the pieces meet
        text = "".join(rng.choice(mixed) for _ in range(rng.randrange(50, 400)))
        assert_splits_as_the_reference(text)
    plain = "abc/.-_ \n\t"
    for n in range(300):  # few quotes and backslashes, as in rustc's files: the sparse way
        text = "".join(rng.choice(alphabet if rng.random() < 0.01 else plain) for _ in range(rng.randrange(500, 3000)))
        assert_splits_as_the_reference(text)


def test_quoting_is_the_references_and_splits_back():
    import random
    rng = random.Random(4)
    alphabet = "ab/. \t\n'\"\\\u00a0\u2003"
    for n in range(2000):
        argv = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12))) for _ in range(rng.randrange(1, 6))]
        quoted = [args.quote_response_arg(a) for a in argv]
        assert quoted == [reference_quote_response_arg(a) for a in argv], argv
        assert args.split_response_text("\n".join(quoted)) == argv


def test_one_long_argument_of_quoted_runs_and_escapes():
    """An argument can be the whole file: its pieces are undone at once, whatever their number."""
    for text in ("'a'\"b\"\\ " * 20000, "a\\\n" * 30000 + "'open \\' " * 1000, "\"x\\\"\"" * 20000 + " z"):
        assert_splits_as_the_reference(text)


def test_the_parsers_whitespace_is_str_isspace_on_every_code_point():
    """split_response_text's fast paths take whitespace as str.split() and re's \\s do: the very set
    of characters str.isspace() (the reference's test) says are whitespace."""
    every = "".join(map(chr, range(0x110000)))
    spaces = {c for c in every if c.isspace()}
    assert set(re.findall(r"\s", every)) == spaces
    assert set(every) - set("".join(every.split())) == spaces
    for c in sorted(spaces):
        assert_splits_as_the_reference(f"a{c}'b{c}'\\{c}c{c}x\\")


def test_a_large_response_file_with_quoted_and_escaped_arguments(tmp_path):
    """Through the file: rustc's one argument a line, some quoted, some escaped, a nested @file."""
    wanted = []
    for i in range(20000):
        wanted.append([f"/t/deps/libc{i}.rlib", f"/my dir/o {i}.o", f"-Wl,x'{i}\"", f"\u00e9\\{i}", ""][i % 5])
    lines = [args.quote_response_arg(a) for a in wanted]
    lines[6] = "'/my dir/o 6.o'"  # a quoted spelling of the same
    (tmp_path / "inner").write_text("-lm\r\n'-lpthread'\r\n")
    (tmp_path / "big").write_text("\n".join(lines) + "\n@inner\n", encoding="utf-8")
    assert args.expand_response_files(["@big"], str(tmp_path)) == wanted + ["-lm", "-lpthread"]


def test_output_kinds():
    assert args.output_kind(["-shared", "-o", "x.so"]) == "shared"
    assert args.output_kind(["-static-pie"]) == "static-pie"
    assert args.output_kind(["-static"]) == "static"
    assert args.output_kind(["-no-pie"]) == "exec"
    assert args.output_kind(["-r"]) == "relocatable"
    assert args.output_kind(["-pie"]) == "pie"


def test_with_output_replaces_both_spellings():
    assert args.with_output(["a.o", "-o", "x", "-lm"], "T") == ["a.o", "-o", "T", "-lm"]
    assert args.with_output(["a.o", "-ox"], "T") == ["a.o", "-oT"]


def test_real_link_through_a_response_file_with_odd_paths(tmp_path, lw_home, linkwrap_cc):
    """A real object in a directory with a space and a backslash, linked via @file."""
    odd = tmp_path / "my dir\\x"
    odd.mkdir()
    src = odd / "m a.c"
    src.write_text('#include <stdio.h>\nint main(void){puts("odd paths ok");return 0;}\n')
    obj = odd / "m a.o"
    subprocess.run(["cc", "-c", str(src), "-o", str(obj)], check=True)
    rsp = tmp_path / "linker-arguments"
    rsp.write_text("\n".join(rustc_escape(a) for a in [str(obj), "-o", str(odd / "out prog")]))
    done = subprocess.run([linkwrap_cc, f"@{rsp}"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""
    assert subprocess.run([str(odd / "out prog")], capture_output=True, text=True).stdout == "odd paths ok\n"


def test_commands_that_stop_before_the_link_are_told_apart_from_links(tmp_path):
    stops = [["-c", "m.c", "-o", "m.o"], ["-S", "m.c"], ["-E", "m.c"], ["-M", "m.c"], ["-MM", "m.c"],
             ["-fsyntax-only", "m.c"], ["--version"], ["-dumpmachine"], ["-print-prog-name=ld"],
             ["m.o", "-fuse-ld=lld", "-print-file-name=libc.so"], ["-###", "m.o"],
             ["-MD", "-MF", "m.d", "-c", "m.c", "-o", "m.o"]]
    for argv in stops:
        assert not args.links(argv, str(tmp_path)), argv
    linking = [["m.o", "-o", "m"], ["m.c", "-MD", "-MF", "m.d", "-o", "m"], ["-I", "-c", "m.o", "-o", "m"],
               ["-Wl,-c", "m.o"], ["-Xlinker", "-S", "m.o"],
               ["m.o", "-Wl,--defsym=a=1", "-fuse-ld=lld", "-o", "m"], ["-x", "c", "m.c"], ["-shared", "m.o", "-o", "m.so"]]
    for argv in linking:
        assert args.links(argv, str(tmp_path)), argv
    (tmp_path / "rsp").write_text("-c\nm.c\n")
    assert not args.links(["@rsp"], str(tmp_path))
    assert args.links(["@missing", "m.o"], str(tmp_path))  # gcc keeps it literal: a link, as written


def test_compiles_says_what_the_driver_itself_would_compile(tmp_path):
    # Checked against gcc's own plan (-###): a compiler proper (cc1, cc1plus) runs iff compiles().
    (tmp_path / "main.cpp").write_text("int main() {}\n")
    (tmp_path / "x.o").write_bytes(b"")
    (tmp_path / "noext").write_text("int main(void) { return 0; }\n")
    cases = [["x.o", "-o", "app"], ["-o", "app", "main.cpp"], ["-x", "c", "noext", "-o", "app"],
             ["-xc", "noext", "-x", "none", "x.o", "-o", "app"], ["-o", "main.c", "x.o"],
             ["-L", "dir.c", "x.o", "-o", "app"], ["-Wl,--version-script=v.c", "x.o", "-o", "app"],
             ["-I", "inc.c", "x.o", "-o", "app"]]
    for argv in cases:
        plan = subprocess.run(["g++", "-###", *argv], cwd=tmp_path, capture_output=True, text=True).stderr
        # The compiler proper as a command of the plan, not "/cc1" anywhere: gcc's temporary file
        # names (-fresolution=/tmp/ccXXXXXX.res) begin with cc1 one time in 62.
        proper = re.search(r'^ "?[^" ]*/cc1(plus)?"?( |$)', plan, re.M) is not None
        assert args.compiles(argv) == proper, (argv, plan)


def test_a_command_line_parsed_again_still_sees_the_cargo_configuration_and_its_files(tmp_path):
    """parse() keeps its last answer in memory (a server's spare parsed the link it rehearsed): the
    driver Cargo's configuration names is asked again, and an @file or a -B directory is read again."""
    triple = f"{os.uname().machine}-unknown-linux-gnu"
    argv = ["m.o", "-L", f"/sysroot/lib/rustlib/{triple}/lib", "-o", "m"]
    env = {"CARGO_HOME": str(tmp_path / "no-cargo-home")}
    first = args.parse(argv, None, env, cwd=str(tmp_path))
    assert args.parse(list(argv), None, env, cwd=str(tmp_path)) is first and first.driver == "cc"
    config = tmp_path / ".cargo" / "config.toml"
    config.parent.mkdir()
    config.write_text(f'[target.{triple}]\nlinker = "linkwrap-cc"  '
                      f'# linkwrap (ID: x) replaced: "linker = \\"/opt/my/cc\\""\n')
    assert args.parse(argv, None, env, cwd=str(tmp_path)).driver == "/opt/my/cc"
    assert args.parse(argv, None, {**env, "LINKWRAP_CC_" + triple.upper().replace("-", "_"): "their-cc"},
                      cwd=str(tmp_path)).driver == "their-cc"
    rsp = tmp_path / "args"
    rsp.write_text("a.o -o out\n")
    assert args.parse(["@args"], "cc", env, cwd=str(tmp_path)).args == ("a.o", "-o", "out")
    rsp.write_text("b.o -o out\n")
    assert args.parse(["@args"], "cc", env, cwd=str(tmp_path)).args == ("b.o", "-o", "out")
    bdir = tmp_path / "tools"
    bdir.mkdir()
    assert args.parse(["-Btools", "a.o", "-o", "x"], "cc", env, cwd=str(tmp_path)).own_linker is None
    (bdir / "ld").write_text("#!/bin/sh\n")
    (bdir / "ld").chmod(0o755)
    assert args.parse(["-Btools", "a.o", "-o", "x"], "cc", env, cwd=str(tmp_path)).own_linker


def test_a_link_again_but_for_rustcs_own_directory_is_parsed_as_anew(tmp_path):
    """rustc names a new directory for each link (its symbols.o, raw-dylibs): the kept answer is used
    with that name put in, and is what parsing the new command line gives."""
    def argv(tmp):  # anything may name it: the output and rustc's linker forcing too, here
        return ["-m64", f"{tmp_path}/deps/{tmp}/symbols.o", f"{tmp_path}/deps/app.app.rcgu.o",
                f"-B{tmp_path}/deps/{tmp}/lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld", "-fuse-ld=lld",
                "-L", f"{tmp_path}/deps/{tmp}/raw-dylibs", "-Wl,--as-needed", "-o", f"{tmp_path}/deps/{tmp}/app"]
    env = {"CARGO_HOME": str(tmp_path / "no-cargo-home")}
    first = args.parse(argv("rustcAAAAAA"), None, env, cwd=str(tmp_path))
    assert args.rustc_temp_dir(argv("rustcAAAAAA")) == f"{tmp_path}/deps/rustcAAAAAA/"
    again = args.parse(argv("rustcBBBBBB"), None, env, cwd=str(tmp_path))
    assert args._last[1] is first and again == args._parse(argv("rustcBBBBBB"), None, env, str(tmp_path))
    assert args.rustc_temp_dir(["x/symbols.o", "-o", "y"]) is None  # not rustc's: no new name to expect


def test_a_kept_request_never_renames_rustcs_directory_in_the_cwd_or_in_another_name(tmp_path):
    """The same link but for rustc's directory is served from the kept request with the new name
    put in -- only where an argument names that directory, never in the working directory (a
    project under a directory named rustcA: its output stayed there) or in another path."""
    cwd = tmp_path / "rustcA" / "proj"
    cwd.mkdir(parents=True)
    for a, b in ((["main.o", "rustcA/symbols.o", "-o", "app"], ["main.o", "rustcB/symbols.o", "-o", "app"]),
                 (["main.o", f"{tmp_path}/d/rustcA/symbols.o", f"/x{tmp_path}/d/rustcA/y.o", "-o", "app"],
                  ["main.o", f"{tmp_path}/d/rustcB/symbols.o", f"/x{tmp_path}/d/rustcA/y.o", "-o", "app"])):
        args._last = None
        args.parse(a, "cc", {}, cwd=str(cwd))
        kept = args.parse(b, "cc", {}, cwd=str(cwd))
        args._last = None
        assert kept == args.parse(b, "cc", {}, cwd=str(cwd))
        assert kept.output == str(cwd / "app")


def test_a_fuse_ld_after_rustcs_injected_pair_is_the_callers_and_wins(tmp_path):
    """rustc puts `-C link-arg`s after its own `-B…/gcc-ld -fuse-ld=lld`; gcc obeys the last -fuse-ld=."""
    from linkwrap.choice.policy import _callers_choice
    rustc = ["a.o", f"-B{SYSROOT_GCC_LD}", "-fuse-ld=lld", "-o", "out"]
    for name in ("bfd", "gold", "mold", "lld"):
        req = args.parse(rustc + [f"-fuse-ld={name}"], cwd=str(tmp_path), environ={})
        assert (req.fuse_ld, req.overrides_rustc, args.rustc_forces_lld(req)) == (name, True, False)
        assert _callers_choice(req) == name and f"-fuse-ld={name}" not in req.args
        assert req.rust_lld  # still known, for rust-lld as a candidate
    # rustc's own pair alone, or a -fuse-ld= before it (gcc takes the last), is rustc's default
    for argv in (rustc, ["-fuse-ld=bfd"] + rustc):
        req = args.parse(argv, cwd=str(tmp_path), environ={})
        assert (req.fuse_ld, req.overrides_rustc, args.rustc_forces_lld(req)) == ("lld", False, True)
        assert _callers_choice(req) is None
    # -C link-self-contained=-linker: -fuse-ld=lld without rustc's -B, the caller's lld
    req = args.parse(["a.o", "-fuse-ld=lld", "-o", "out"], cwd=str(tmp_path), environ={})
    assert _callers_choice(req) == "lld" and not args.rustc_forces_lld(req)
