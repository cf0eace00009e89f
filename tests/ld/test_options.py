"""GNU ld's command-line grammar (options.py): one table, one- and two-dash long options.

The rules under test are GNU ld's (ld/lexsup.c, getopt_long_only): a word that names a long
option is that option with one dash or two; a short option takes a glued argument only when
the word starts no long option (-l and -L always glue, as `ld -lib` is -l ib); an
abbreviation or an unknown word is named, never split into a short option and an argument.
"""
import pytest

from linkwrap.ld import options, symbol_lists
from linkwrap.ld.diag import BadInput, Unsupported
from linkwrap.ld.options import parse_args


@pytest.mark.parametrize("argv, field, value", [
    (["-efoo"], "entry", "foo"),
    (["-e", "foo"], "entry", "foo"),
    (["--entry=foo"], "entry", "foo"),
    (["-entry", "foo"], "entry", "foo"),
    (["-ofile"], "output", "file"),
    (["--output", "file"], "output", "file"),
    (["-export-dynamic"], "export_dynamic", True),
    (["-E"], "export_dynamic", True),
    (["-eh-frame-hdr"], "eh_frame_hdr", True),
    (["-zorigin"], "dt_flags", 1),
    (["-z", "max-page-size=0x200000"], "max_page_size", 0x200000),
    (["-zmax-page-size=65536"], "max_page_size", 65536),
    (["-z", "execstack"], "z_execstack", True),
    (["-init=my_init"], "init", "my_init"),
    (["--fini", "my_fini"], "fini", "my_fini"),
    (["--defsym=a=1", "--defsym", "b=a+2"], "defsym", (("a", "1"), ("b", "a+2"))),
    (["-u", "f", "-ug", "--undefined=h"], "undefined", ("f", "g", "h")),
    (["--sysroot=/sr", "-L=/lib", "-L/x"], "lib_dirs", ("/sr/lib", "/x")),
    (["-plugin", "/usr/lib/liblto_plugin.so", "-plugin-opt=-fresolution=x", "a.o"], "inputs",
     (options.InputArg("file", "a.o"),)),
    (["-O1", "--hash-style=gnu", "-melf_x86_64", "--build-id"], "build_id", "sha1"),
    (["-allow-multiple-definition"], "allow_multiple_definition", True),
    (["-r"], "relocatable", True),
    (["--relocatable"], "relocatable", True),
    (["-i"], "relocatable", True),
    (["-z", "muldefs"], "allow_multiple_definition", True),
    (["--unresolved-symbols=ignore-in-shared-libs"], "unresolved", "ignore-in-shared-libs"),
    ([], "discard", "merge"),
    (["-x"], "discard", "all"),
    (["--discard-all"], "discard", "all"),
    (["-X"], "discard", "labels"),
    (["-discard-locals"], "discard", "labels"),
    (["-x", "--discard-none"], "discard", "none"),
    ([], "hash_style", "both"),
    ([], "z_dynamic_undefined_weak", True),
    (["-z", "nodynamic-undefined-weak"], "z_dynamic_undefined_weak", False),
    (["-znodynamic-undefined-weak", "-z", "dynamic-undefined-weak"], "z_dynamic_undefined_weak", True),
    (["--hash-style=sysv"], "hash_style", "sysv"),
    (["-hash-style", "gnu"], "hash_style", "gnu"),
    (["--exclude-libs=ALL"], "exclude_libs", ("ALL",)),
    (["--exclude-libs", "liba.a,libb:libc.a", "-exclude-libs=libd"], "exclude_libs", ("liba.a", "libb", "libc.a", "libd")),
    (["--export-dynamic-symbol=f*", "-export-dynamic-symbol", "g"], "export_symbols", ("f*", "g")),
    # -emit-relocs is the long option, never -e mit-relocs
    (["-emit-relocs"], "emit_relocs", True),
    (["--emit-relocs"], "emit_relocs", True),
    (["-q"], "emit_relocs", True),
    (["-emit-relocs"], "entry", "_start"),
    # -R FILE is --just-symbols, in its place among the inputs; -R DIR is -rpath
    (["a.o", "-R", "/no/such/file", "--just-symbols=b.elf", "c.o"], "inputs",
     (options.InputArg("file", "a.o"), options.InputArg("just-symbols", "/no/such/file"),
      options.InputArg("just-symbols", "b.elf"), options.InputArg("file", "c.o"))),
    (["-R", "/"], "rpath", ("/",)),
    (["-R", "/"], "inputs", ()),
])


def test_options_are_read_as_gnu_ld_reads_them(argv, field, value):
    assert getattr(parse_args(argv), field) == value


def test_exclude_libs_names_archives_by_base_name_with_or_without_a():
    class Obj:
        def __init__(self, archive):
            self.archive = archive
            self.name = "x.o"

    class Sym:
        def __init__(self, archive_path):
            self.file = Obj(type("A", (), {"name": archive_path})() if archive_path else None)

    ex = symbol_lists.excluded_from_export(("libfoo", "libbar.a"))
    assert ex(Sym("/x/libfoo.a")) and ex(Sym("libbar.a")) and not ex(Sym("/x/libfoo2.a"))
    assert not ex(Sym(None)) and not ex(Sym("/x/libfoo.ab")) and ex(Sym("/x/libbar.a.a"))  # as GNU ld compares
    assert symbol_lists.excluded_from_export(("ALL",))(Sym("any/libz.a"))
    assert not symbol_lists.excluded_from_export(())(Sym("any/libz.a"))


def test_glued_l_is_a_library_even_when_it_starts_a_long_option():
    opts = parse_args(["-lib", "-Lib", "-lc"])
    assert [a.name for a in opts.inputs] == ["ib", "c"] and opts.lib_dirs == ("ib",)


@pytest.mark.parametrize("argv, message", [
    (["-Wl,-emit-relocs"], "not supported yet: option -Wl,-emit-relocs"),
    (["-emit-rel"], "not supported yet: option -emit-rel (an abbreviation of a long option)"),
    (["--whole"], "not supported yet: option --whole (an abbreviation of a long option)"),
    (["--no-such-option"], "not supported yet: option --no-such-option"),
    (["-T", "x.ld"], "not supported yet: option -T x.ld"),
    (["--script=x.ld"], "not supported yet: option --script=x.ld"),
    (["-Map", "m"], "not supported yet: option -Map m"),
    (["-Ttext", "0x1000"], "not supported yet: option -Ttext 0x1000"),
    (["-z", "pack-relative-relocs"], "not supported yet: -z pack-relative-relocs"),
    (["-z", "common-page-size=16384"], "not supported yet: -z common-page-size=16384"),
    (["--defsym=a=b*2"], None),   # raised later, when symbols are known
    (["-m", "elf_i386"], "not supported yet: emulation elf_i386 (only elf_x86_64)"),
])
def test_what_is_not_implemented_is_named(argv, message):
    if message is None:
        parse_args(argv)
        return
    with pytest.raises(Unsupported) as e:
        parse_args(argv)
    assert str(e.value) == message


@pytest.mark.parametrize("argv, message", [
    (["-o"], "option requires an argument -- 'o'"),
    (["--entry"], "option requires an argument -- 'entry'"),
    (["--gc-sections=yes"], "option '--gc-sections' doesn't allow an argument"),
    (["--defsym", "novalue"], "--defsym novalue: expected SYMBOL=EXPRESSION"),
    (["-z", "max-page-size=3000"], "invalid max-page-size: 3000 (not a power of two)"),
    (["--unresolved-symbols=sometimes"], "bad --unresolved-symbols option: sometimes"),
])
def test_malformed_command_lines_are_one_clear_error(argv, message):
    with pytest.raises(BadInput) as e:
        parse_args(argv)
    assert str(e.value) == message


def test_every_gnu_long_option_is_known_with_one_and_two_dashes():
    # whatever GNU ld accepts is either handled or named; never mistaken for a short option
    for name, (takes, action) in options._LONG.items():
        for word in (f"-{name}", f"--{name}"):
            argv = [word] + (["x"] if takes is True else [])
            try:
                parse_args(argv)
            except Unsupported as e:
                assert action is None or name in ("dynamic-list",), (word, e)
                assert name in str(e), (word, str(e))
            except BadInput as e:
                assert action is not None, (word, e)


def test_response_file_words_are_options_too(tmp_path):
    rsp = tmp_path / "args"
    rsp.write_text('--defsym=a=1 "-z" now\n-o \'out file\'\n')
    opts = parse_args([f"@{rsp}"])
    assert opts.defsym == (("a", "1"),) and opts.z_now and opts.output == "out file"


def test_dynamic_list_names_and_globs(tmp_path):
    lst = tmp_path / "list"
    lst.write_text("{ hook; /* c */ glob_*; # sh\n };\n")
    opts = parse_args([f"--dynamic-list={lst}"])
    match = symbol_lists.dynamic_list_matcher(opts.dynamic_list)
    assert match("hook") and match("glob_x") and not match("other")
    lst.write_text('{ extern "C++" { ns::*; }; };')
    with pytest.raises(Unsupported):
        parse_args([f"--dynamic-list={lst}"])


@pytest.mark.parametrize("argv, field, value", [
    (["--disable-new-dtags"], "new_dtags", False),
    (["-disable-new-dtags", "--enable-new-dtags"], "new_dtags", True),
])
def test_dtags(argv, field, value):
    assert getattr(parse_args(argv), field) == value


@pytest.mark.parametrize("argv", [["--fatal-warnings"]])
def test_what_would_differ_from_gnu_ld_is_named(argv):
    with pytest.raises(Unsupported):
        parse_args(argv)


# Each option `linkwrap-ld --help` lists as handled, as a command line; the help may list
# nothing this table lacks, so a new line in the help needs its proof here.
HELP_HANDLED = {"-o": ["-o", "x"], "-r": ["-r"], "-L": ["-L", "/tmp"], "-l": ["-lc"], "-Bstatic": ["-Bstatic"],
                "-Bdynamic": ["-Bdynamic"], "--as-needed": ["--as-needed"], "--whole-archive": ["--whole-archive"],
                "-pie": ["-pie"], "-no-pie": ["-no-pie"], "-static": ["-static"], "-e": ["-e", "main"],
                "-u": ["-u", "f"], "--defsym": ["--defsym", "a=1"], "-init": ["-init", "f"],
                "-fini": ["-fini", "f"], "--dynamic-list": ["--dynamic-list", "@LIST@"],
                "--sysroot": ["--sysroot=/"], "--gc-sections": ["--gc-sections"], "--build-id": ["--build-id"],
                "--eh-frame-hdr": ["--eh-frame-hdr"], "--allow-multiple-definition": ["--allow-multiple-definition"],
                "-z": ["-z", "now", "-z", "relro", "-z", "origin", "-z", "max-page-size=4096", "-z", "ibt",
                       "-z", "shstk"],
                "-rpath": ["-rpath", "/x"], "-E": ["-E"], "-s": ["-s"], "-S": ["-S"], "-shared": ["-shared"],
                "-soname": ["-soname", "libx.so.1"], "--version-script": ["--version-script", "@LIST@"],
                "--no-undefined-version": ["--no-undefined-version"], "--no-undefined": ["--no-undefined"],
                "-Bsymbolic": ["-Bsymbolic"], "-Bsymbolic-functions": ["-Bsymbolic-functions"],
                "-x": ["-x"], "-X": ["-X"], "--discard-none": ["--discard-none"],
                "--exclude-libs": ["--exclude-libs=ALL"], "--export-dynamic-symbol": ["--export-dynamic-symbol=f"],
                "--export-dynamic-symbol-list": ["--export-dynamic-symbol-list", "@LIST@"],
                "--hash-style": ["--hash-style=sysv"], "--package-metadata": ["--package-metadata={}"],
                "-f": ["-shared", "-f", "libaux.so"], "-F": ["-shared", "-F", "libf.so"], "-t": ["-t"],
                "--emit-relocs": ["--emit-relocs"], "-q": ["-q"], "-R": ["-R", "/"],
                "--just-symbols": ["--just-symbols=x.elf"], "--section-start": ["--section-start=.s=1000"]}


def test_the_help_lists_what_the_linker_takes_and_refuses(tmp_path):
    import re
    from linkwrap.ld.__main__ import USAGE
    handled = USAGE[USAGE.index("keywords):"):USAGE.index("What it cannot")]
    named = set(re.findall(r"(?<![\w|=.-])-{1,2}[A-Za-z][\w-]*", handled))
    assert named == set(HELP_HANDLED)
    (tmp_path / "list").write_text("{ f; };\n")
    for option, argv in HELP_HANDLED.items():
        parse_args([a.replace("@LIST@", str(tmp_path / "list")) for a in argv] + ["a.o"])  # never Unsupported
    assert parse_args(["-r", "a.o"]).relocatable
    refused = USAGE[USAGE.index("What it cannot link ("):USAGE.index("names on one line")]
    assert "-r" not in refused.split()
    for argv in (["-T", "x.ld"], ["-Ttext", "0x1000"]):
        with pytest.raises(Unsupported):
            parse_args(argv + ["a.o"])
