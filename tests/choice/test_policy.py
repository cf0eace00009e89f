"""policy.decide: a table per rule. decide is pure, so these build their inputs by hand.

Version boundaries come from shared/reference/linkers.md (§1.1 wild, §2.2 mold,
§3.2 lld, §4 GNU ld, §6 the compact table); kernel boundaries from §2.5 and §1.2.
"""
import builtins
import os

import pytest

from linkwrap.request import args, config

from linkwrap.choice import policy
from linkwrap.choice import write_mode
from linkwrap.facts.linkers import LinkerInfo
from linkwrap.choice.policy import FRESH, IN_PLACE
from linkwrap.facts.probe import OutputFacts, Probe

MOLD = (1, 10, 1)
LLD = (16, 0, 6)


def linker(name, version):
    return LinkerInfo(name, f"/opt/{name}/bin/{name}", version, f"{name} {version}")


def found(**versions):
    """found(mold=(1, 10, 1), lld=(16,)) -> {name: LinkerInfo}; rust_lld= for rust-lld."""
    return {name.replace("_", "-"): linker(name.replace("_", "-"), v) for name, v in versions.items()}


def output(**kw):
    # A safe output: one name, nobody holds it, its pages are cached (measured: >= 8 MiB).
    base = dict(exists=True, is_regular=True, size=16 << 20, nlink=1, inode=42, held_by_others=False,
                cached_fraction=1.0)
    base.update(kw)
    return OutputFacts(**base)


def probe(out=None, **kw):
    base = dict(fs="ext4", fs_options="rw,relatime", fs_local=True, kernel=(6, 18, 44),
                output=out if out is not None else output(), input_bytes=1 << 20, cpus=2,
                mem_available_mb=4000, mem_limit_mb=None, thp="madvise", jobserver=False, mem_used_mb=None,
                mem_group=None)
    base.update(kw)
    return Probe(**base)


def request(kind="pie", fuse_ld=None, rust_lld=None, out="/w/target/debug/deps/foo-0123"):
    argv = ["main.o", "-o", out]
    if kind == "shared":
        argv.append("-shared")
    elif kind == "relocatable":
        argv.append("-r")
    elif kind in ("exec", "static", "static-pie"):
        argv.append({"exec": "-no-pie", "static": "-static", "static-pie": "-static-pie"}[kind])
    req = args.parse(argv, driver="cc", environ={}, cwd="/w")
    assert req.kind == kind
    return req._replace(fuse_ld=fuse_ld, rust_lld=rust_lld)


def settings(env=None, **layer):
    """A Config as config.load would build it from one project file holding `layer`."""
    layers = [("project file /w/linkwrap.toml", layer)] if layer else []
    return config.merge(layers, env or {})


def decide(linkers=None, pr=None, req=None, cfg=None):
    return policy.decide(req or request(), pr or probe(),
                         found(mold=MOLD) if linkers is None else linkers, cfg or settings())


def has_reason(decision, text):
    return any(text in r for r in decision.reasons)


# --- which linker ----------------------------------------------------------

ALL = dict(mold=MOLD, wild=(0, 10, 0), lld=LLD, rust_lld=(22, 1, 2), bfd=(2, 40), gold=(2, 40),
           python=(0, 1, 0))


@pytest.mark.parametrize("installed, cfg, req, expected, reason", [
    (ALL, {}, None, "mold", "first installed of mold, wild, lld, rust-lld, bfd, gold"),
    ({k: ALL[k] for k in ("wild", "lld", "bfd")}, {}, None, "wild", "first installed"),
    ({k: ALL[k] for k in ("lld", "bfd", "gold")}, {}, None, "lld", "first installed"),
    ({k: ALL[k] for k in ("rust_lld", "bfd", "gold")}, {}, None, "rust-lld", "first installed"),
    ({k: ALL[k] for k in ("gold", "bfd")}, {}, None, "bfd", "first installed"),
    ({"gold": (2, 40)}, {}, None, "gold", "first installed"),
    # the Python linker only when asked for
    ({"python": (0, 1, 0)}, {}, None, None, "none of mold, wild, lld, rust-lld, bfd, gold is installed"),
    ({k: ALL[k] for k in ("python", "bfd")}, {"prefer": ["python", "bfd"]}, None, "python", "first installed"),
    ({}, {}, None, None, "linking as asked"),
    # configured order and forbidden linkers
    (ALL, {"prefer": ["lld", "mold"]}, None, "lld", "first installed of lld, mold"),
    (ALL, {"forbid": ["mold"]}, None, "wild", "(mold forbidden)"),
    (ALL, {"forbid": ["mold", "wild", "lld", "rust-lld"]}, None, "bfd", "forbidden"),
    ({"mold": MOLD}, {"forbid": ["mold"]}, None, None, "linking as asked"),
    # the environment wins, also over forbid
    (ALL, {"env": "wild"}, None, "wild", "LINKWRAP_LINKER=wild: wild 0.10.0"),
    (ALL, {"env": "python"}, None, "python", "LINKWRAP_LINKER=python"),
    (ALL, {"env": "gold", "forbid": ["gold"]}, None, "gold", "LINKWRAP_LINKER=gold"),
    ({"mold": MOLD, "lld": LLD}, {"env": "wild"}, None, "mold", "wild is not installed; choosing as usual"),
    # an empty preference list means what it says: nothing to choose
    (ALL, {"prefer": []}, None, None, "prefer = [] in project file /w/linkwrap.toml: no linker to choose"),
    (ALL, {"prefer": [], "env": "lld"}, None, "lld", "LINKWRAP_LINKER=lld"),
    (ALL, {"prefer": []}, dict(fuse_ld="gold"), "gold", "the command line asks for -fuse-ld=gold"),
    # the caller's own -fuse-ld= beats the preference; rustc's injected one does not
    (ALL, {}, dict(fuse_ld="gold"), "gold", "the command line asks for -fuse-ld=gold"),
    (ALL, {}, dict(fuse_ld="lld", rust_lld="/rs/bin/rust-lld"), "rust-lld",
     "rustc's own default, first of rust-lld, mold, wild, lld, bfd, gold while nothing is measured"),
    (ALL, {"forbid": ["rust-lld"]}, dict(fuse_ld="lld", rust_lld="/rs/bin/rust-lld"), "mold", "first installed"),
    (ALL, {"prefer": ["mold", "rust-lld"]}, dict(fuse_ld="lld", rust_lld="/rs/bin/rust-lld"), "mold",
     "first installed of mold, rust-lld"),
    ({k: ALL[k] for k in ("mold", "bfd")}, {}, dict(fuse_ld="lld", rust_lld="/rs/bin/rust-lld"), "mold",
     "first installed of rust-lld, mold"),
    ({"mold": MOLD, "bfd": (2, 40)}, {}, dict(fuse_ld="wild"), "mold", "wild is not installed"),
    (ALL, {"forbid": ["gold"]}, dict(fuse_ld="gold"), "mold", "gold is forbidden"),
    (ALL, {"env": "lld"}, dict(fuse_ld="gold"), "lld", "LINKWRAP_LINKER=lld"),
])
def test_linker_choice(installed, cfg, req, expected, reason):
    cfg = dict(cfg)
    env = {"LINKWRAP_LINKER": cfg.pop("env")} if "env" in cfg else {}
    d = decide(found(**installed), req=request(**(req or {})), cfg=settings(env, **cfg))
    assert (d.linker.name if d.linker else None) == expected
    assert has_reason(d, reason), d.reasons
    if expected is None:
        assert (d.linker_flags, d.driver_flags, d.write_mode) == ((), (), FRESH)
        assert not d.changes_anything


# --- flags by linker and version --------------------------------------------

@pytest.mark.parametrize("name, version, expected", [
    # mold: --no-fork since 1.0, --threads=N since 1.1 (1.0.1 only added it as an alias)
    ("mold", (0, 9, 6), []),
    ("mold", (1, 0, 0), ["--no-fork"]),
    ("mold", (1, 0, 3), ["--no-fork"]),
    ("mold", (1, 1, 0), ["--no-fork", "--threads=2"]),
    ("mold", (1, 10, 1), ["--no-fork", "--threads=2"]),
    ("mold", (2, 42, 0), ["--no-fork", "--threads=2"]),
    ("mold", None, []),
    # wild: --threads=N since 0.2, --no-fork since 0.3
    ("wild", (0, 1, 0), []),
    ("wild", (0, 2, 0), ["--threads=2"]),
    ("wild", (0, 3, 0), ["--no-fork", "--threads=2"]),
    ("wild", None, []),
    # lld: --threads=N since 11; nothing about mmap ever (its meaning flipped at 21)
    ("lld", (10, 0, 1), []),
    ("lld", (11, 0, 0), ["--threads=2"]),
    ("lld", (20, 1, 8), ["--threads=2"]),
    ("lld", (21, 1, 0), ["--threads=2"]),
    ("lld", None, []),
    ("rust-lld", (10, 0, 0), []),
    ("rust-lld", (22, 1, 2), ["--threads=2"]),
    # GNU ld 2.40 rejects --threads; gold is left alone
    ("bfd", (2, 40), []),
    ("bfd", (2, 44), []),
    ("gold", (2, 40), []),
    ("python", (0, 1, 0), []),
])
def test_flags_only_what_the_version_accepts(name, version, expected):
    # ext4 and a missing output: no mmap or in-place flags come into it.
    d = decide({name: linker(name, version)}, probe(output(exists=False, nlink=None)),
               cfg=settings({"LINKWRAP_LINKER": name}))
    assert list(d.linker_flags) == expected
    if version is None and name != "python":
        assert has_reason(d, "version is unknown: no version-gated flags")


@pytest.mark.parametrize("name, version", [("mold", (1, 0, 0)), ("mold", (1, 10, 1)), ("mold", (2, 42, 0)),
                                           ("wild", (0, 3, 0)), ("wild", (0, 10, 0))])
def test_a_forking_linker_forks_where_the_entry_point_reaps_its_worker(name, version):
    """The server's child is a child subreaper: the worker's figures reach the record after the answer."""
    req = args.parse(["main.o", "-o", "/w/app"], driver="cc", environ={}, cwd="/w")
    reaping = policy.decide(req, probe(), {name: linker(name, version)}, settings(), reaps=True)
    script = policy.decide(req, probe(), {name: linker(name, version)}, settings(), reaps=False)
    assert "--no-fork" not in reaping.linker_flags and "--no-fork" in script.linker_flags
    assert has_reason(reaping, f"{name} forks: its worker is reaped after the answer (time and memory stay honest)")
    assert has_reason(script, "--no-fork: ") and has_reason(script, "cannot wait for its worker")
    assert list(reaping.linker_flags) == [f for f in script.linker_flags if f != "--no-fork"]


@pytest.mark.parametrize("version, extra, flags, why", [
    # mold >= 2.33 with --separate-debug-file and --detach (its default) ends its first process before
    # the debug file is written: --no-detach keeps the link's end the files' end.
    ((2, 42, 0), [], ["--no-detach"], "--no-detach: mold would end before its separate debug file"),
    ((2, 33, 0), [], ["--no-detach"], "--no-detach: mold would end before its separate debug file"),
    ((2, 42, 0), ["-Wl,--no-detach"], [], "mold forks: its worker is reaped"),
    ((2, 42, 0), ["-Wl,--detach"], ["--no-fork"], "--no-fork: the command line says --detach"),
    # No --detach before 2.33 (nor --separate-debug-file: mold rejects it, and the link as asked says so).
    ((2, 32, 0), [], [], "mold forks: its worker is reaped"),
])
def test_mold_with_a_separate_debug_file_ends_after_writing_it(version, extra, flags, why):
    req = args.parse(["main.o", "-Wl,--separate-debug-file", *extra, "-o", "/w/app"], driver="cc", environ={},
                     cwd="/w")
    d = policy.decide(req, probe(), found(mold=version), settings(), reaps=True)
    assert [f for f in d.linker_flags if not f.startswith("--threads=")] == flags
    assert has_reason(d, why), d.reasons
    # Through the script: --no-fork, which needs no --no-detach (no worker to end first).
    script = policy.decide(req, probe(), found(mold=version), settings())
    assert "--no-fork" in script.linker_flags and "--no-detach" not in script.linker_flags


def test_configured_extra_flags_count_for_the_separate_debug_file():
    # Added after linkwrap's own flags, they still change what mold's fork means.
    req = args.parse(["main.o", "-o", "/w/app"], driver="cc", environ={}, cwd="/w")
    cfg = settings(linkers={"mold": {"extra_flags": ["--separate-debug-file"]}})
    d = policy.decide(req, probe(), found(mold=(2, 42, 0)), cfg, reaps=True)
    assert "--no-detach" in d.linker_flags and "--no-fork" not in d.linker_flags, d.linker_flags
    cfg = settings(linkers={"mold": {"extra_flags": ["--separate-debug-file", "--detach"]}})
    d = policy.decide(req, probe(), found(mold=(2, 42, 0)), cfg, reaps=True)
    assert "--no-fork" in d.linker_flags, d.linker_flags


@pytest.mark.parametrize("name, version", [("mold", (1, 10, 1)), ("wild", (0, 8, 0))])
def test_a_linker_response_file_keeps_a_forking_linker_from_forking(name, version):
    # -Wl,@file is not read by the policy: it could hold --separate-debug-file and --detach.
    req = args.parse(["main.o", "-Wl,@ld.rsp", "-o", "/w/app"], driver="cc", environ={}, cwd="/w")
    d = policy.decide(req, probe(), found(**{name: version}), settings(), reaps=True)
    assert "--no-fork" in d.linker_flags and has_reason(d, "--no-fork: the linker reads @ld.rsp"), d.reasons


@pytest.mark.parametrize("name, version", [("mold", (1, 10, 1)), ("mold", (2, 40, 0)), ("lld", (16, 0, 6)),
                                           ("lld", (21, 1, 0)), ("rust-lld", (22, 1, 2)), ("bfd", (2, 40)),
                                           ("gold", (2, 40))])
@pytest.mark.parametrize("fs", ["btrfs", "ext4", "xfs", "tmpfs", None])
def test_no_mmap_flag_for_anything_but_wild(name, version, fs):
    d = decide({name: linker(name, version)}, probe(fs=fs, kernel=(6, 18, 44)))
    assert not [f for f in d.linker_flags if "mmap" in f]


@pytest.mark.parametrize("cpus, expected", [(1, "--threads=1"), (2, "--threads=2"), (64, "--threads=64"), (None, None)])
def test_threads_follow_the_cpus_this_process_may_use(cpus, expected):
    d = decide(pr=probe(cpus=cpus))
    threads = [f for f in d.linker_flags if f.startswith("--threads")]
    assert threads == ([expected] if expected else [])
    if cpus is None:
        assert has_reason(d, "thread count left to the linker")
    # never the space form, which mold and wild would read as an input file
    assert "--threads" not in d.linker_flags and "--thread-count" not in d.linker_flags


# --- wild on btrfs ----------------------------------------------------------

@pytest.mark.parametrize("fs, kernel, version, mmap", [
    ("btrfs", (6, 10, 0), (0, 10, 0), True),
    ("btrfs", (6, 18, 44), (0, 10, 0), True),
    ("btrfs", (7, 1, 9), (0, 10, 0), True),
    ("btrfs", (7, 2, 0), (0, 10, 0), False),
    ("btrfs", (7, 3, 1), (0, 10, 0), False),
    ("btrfs", None, (0, 10, 0), True),          # unknown kernel: as wild itself assumes, buffered
    ("btrfs", (6, 18, 44), (0, 9, 0), False),   # 0.7-0.9 mmap on btrfs by themselves
    ("btrfs", (6, 18, 44), (0, 8, 0), False),
    ("btrfs", (6, 18, 44), (0, 7, 0), False),
    ("btrfs", (6, 18, 44), (0, 6, 0), False),   # and older ones have no flag
    ("btrfs", (6, 18, 44), None, False),
    ("ext4", (6, 18, 44), (0, 10, 0), False),
    ("xfs", (6, 18, 44), (0, 10, 0), False),
    ("tmpfs", (6, 18, 44), (0, 10, 0), False),
    (None, (6, 18, 44), (0, 10, 0), False),
])
def test_wild_on_btrfs_gets_mmap_below_kernel_7_2(fs, kernel, version, mmap):
    d = decide({"wild": linker("wild", version)}, probe(fs=fs, kernel=kernel))
    assert ("--mmap-output-file" in d.linker_flags) == mmap
    assert "--no-mmap-output-file" not in d.linker_flags
    if mmap:
        assert has_reason(d, "wild buffers its output on btrfs")
    if fs == "btrfs" and version in ((0, 7, 0), (0, 8, 0), (0, 9, 0)) and kernel < (7, 2):
        assert has_reason(d, "mmaps its output on btrfs by itself (wild buffers it there from 0.10 on)")
    if fs == "btrfs" and version == (0, 6, 0):
        assert has_reason(d, "has no --mmap-output-file (needs >= 0.7)")


# --- wild: the linker plugin, LTO, outputs that are not files ----------------

@pytest.mark.parametrize("version, argv, flag", [
    ((0, 8, 0), [], True),
    ((0, 8, 0), ["-fno-lto"], True),
    ((0, 8, 0), ["-flto", "-fno-lto"], True),     # the last one wins, as in gcc
    ((0, 8, 0), ["-flto-partition=one"], True),   # a setting of LTO, not LTO itself
    ((0, 8, 0), ["-fno-use-linker-plugin"], True),
    (None, [], True),                             # unknown version: the flag costs a non-LTO link nothing
    ((0, 9, 0), [], False),                       # wild has the plugin from 0.9
    ((0, 10, 0), [], False),
])
def test_wild_before_0_9_gets_no_linker_plugin(version, argv, flag):
    req = args.parse(["main.o", *argv, "-o", "/w/app"], driver="cc", environ={}, cwd="/w")
    d = decide({"wild": linker("wild", version)}, req=req)
    assert d.linker.name == "wild"
    assert d.driver_flags == (("-fno-use-linker-plugin",) if flag else ())
    assert not [f for f in d.linker_flags if "plugin" in f]


@pytest.mark.parametrize("argv", [["-flto"], ["-flto=auto"], ["-fno-lto", "-flto=4"], ["-fuse-linker-plugin"]])
def test_lto_links_pass_over_wild_before_0_9(argv):
    req = args.parse(["main.o", *argv, "-o", "/w/app"], driver="cc", environ={}, cwd="/w")
    d = decide(found(wild=(0, 8, 0), mold=MOLD), req=req, cfg=settings(prefer=["wild", "mold"]))
    assert d.linker.name == "mold" and d.driver_flags == ()
    assert has_reason(d, "wild 0.8.0 passed over: gcc's LTO needs the linker plugin")
    # From 0.9 wild is chosen, and the plugin left to gcc.
    d = decide(found(wild=(0, 9, 0), mold=MOLD), req=req, cfg=settings(prefer=["wild", "mold"]))
    assert d.linker.name == "wild" and d.driver_flags == ()
    # Forced, wild stands: the link is retried as asked if it fails, and no flag fights the caller's -flto.
    d = decide(found(wild=(0, 8, 0), mold=MOLD), req=req, cfg=settings({"LINKWRAP_LINKER": "wild"}))
    assert d.linker.name == "wild" and d.driver_flags == ()
    assert has_reason(d, "cannot link GCC LTO objects")


@pytest.mark.parametrize("out, chosen", [
    (output(is_regular=False, nlink=1, held_by_others=None, cached_fraction=None), "mold"),  # /dev/null
    (output(), "wild"),
    (output(exists=False, is_regular=None, nlink=None), "wild"),
    (output(is_regular=None), "wild"),
])
def test_wild_is_passed_over_for_an_output_that_is_not_a_regular_file(out, chosen):
    d = decide(found(wild=(0, 8, 0), mold=MOLD), probe(out), cfg=settings(prefer=["wild", "mold"]))
    assert d.linker.name == chosen
    assert has_reason(d, "not a regular file, which wild may chmod or replace") == (chosen == "mold")


def test_wild_writes_fresh_outputs_without_no_update_in_place():
    """output.py gives wild a new name; the flag would only make it replace a device it writes directly."""
    for out in (output(nlink=2), output(held_by_others=True), output(exists=False, nlink=None)):
        d = decide(found(wild=(0, 8, 0)), probe(out))
        assert d.write_mode == FRESH and "--no-update-in-place" not in d.linker_flags


# --- write mode -------------------------------------------------------------

def test_in_place_when_every_condition_holds():
    d = decide()
    assert d.write_mode == IN_PLACE
    assert d.reasons[-1].endswith("-> in-place")


@pytest.mark.parametrize("change, reason", [
    (dict(out=output(exists=False, nlink=None, is_regular=None)), "no existing output"),
    (dict(out=OutputFacts(None, None, None, None, None, None, None)), "unknown whether the output exists"),
    (dict(out=output(is_regular=False)), "not a regular file"),
    (dict(out=output(is_regular=None)), "type is unknown"),
    (dict(out=output(nlink=2)), "output has nlink=2 (a hard link, e.g. Cargo's uplifted copy) -> fresh"),
    (dict(out=output(nlink=3)), "nlink=3"),
    (dict(out=output(nlink=None)), "link count is unknown"),
    (dict(out=output(held_by_others=True)), "another process holds, maps or runs the output"),
    (dict(out=output(held_by_others=None)), "unknown whether another process holds"),
    (dict(out=output(cached_fraction=0.49)), "only 49% of the old output is cached"),
    (dict(out=output(cached_fraction=0.0)), "only 0%"),
    (dict(out=output(cached_fraction=None, size=16 << 20)), "share of the old output in the page cache unknown"),
    (dict(out=output(cached_fraction=None, size=None)), "share of the old output in the page cache unknown"),
    (dict(fs_local=False, fs="nfs"), "nfs is not a local filesystem"),
    (dict(fs_local=None), "unknown whether the filesystem is local"),
    (dict(kernel=None), "kernel version unknown"),
])
def test_each_unsafe_fact_means_fresh(change, reason):
    out = change.pop("out", None)
    d = decide(pr=probe(out, **change))
    assert d.write_mode == FRESH
    assert has_reason(d, reason), d.reasons


@pytest.mark.parametrize("size, words", [
    (1_200_000, "output is 1.1 MiB (< 8 MiB): in place would save at most 0.14 ms, "
                "and its page-cache share is not measured -> fresh"),
    ((8 << 20) - 1, "output is 7.9 MiB (< 8 MiB): in place would save at most 0.94 ms"),
    (4096, "output is 4 KiB (< 8 MiB): in place would save at most 0.01 ms"),
    (0, "output is 0 bytes (< 8 MiB)"),
])
def test_a_small_output_says_its_cache_share_was_not_measured(size, words):
    """probe.cached_fraction measures only outputs of CACHE_PROBE_MIN_BYTES or more: below that
    None means "not measured", and the reason must say that, not "unknown". Still fresh."""
    assert output_file.CACHE_PROBE_MIN_BYTES == 8 << 20
    d = decide(pr=probe(output(size=size, cached_fraction=None)))
    assert d.write_mode == FRESH
    fresh = [r for r in d.reasons if r.endswith("-> fresh")]
    assert len(fresh) == 1 and fresh[0].startswith(words), d.reasons
    assert not has_reason(d, "unknown"), d.reasons
    assert write_mode.cache_not_measured(output(size=size, cached_fraction=None)) == "< 8 MiB"


def test_a_measured_output_has_no_not_measured_note():
    assert write_mode.cache_not_measured(output(size=8 << 20, cached_fraction=None)) is None
    assert write_mode.cache_not_measured(output(size=None, cached_fraction=None)) is None
    assert write_mode.cache_not_measured(output(exists=False, size=None)) is None
    assert write_mode.cache_not_measured(output(is_regular=False, size=4096)) == "not a regular file"


def test_a_non_regular_output_is_not_judged_by_facts_the_probe_never_looked_at():
    # probe.output_facts opens only regular files: held and cached stay None, and a
    # directory's st_nlink counts subdirectories, not hard links.
    out = OutputFacts(True, False, 4096, 2, 7, None, None)
    d = decide(pr=probe(out))
    assert d.write_mode == FRESH
    assert [r for r in d.reasons if r.endswith("-> fresh")] == ["output is not a regular file -> fresh"]


@pytest.mark.parametrize("cached, words", [(0.499, "only 49% of"), (0.0, "only 0% of"), (0.4, "only 40% of")])
def test_cached_share_is_rounded_down_in_reasons(cached, words):
    d = decide(pr=probe(output(cached_fraction=cached, size=64 << 20)))
    assert d.write_mode == FRESH and has_reason(d, words), d.reasons


@pytest.mark.parametrize("n, text", [(0, "0 bytes"), (1, "1 byte"), (1023, "1023 bytes"), (1024, "1 KiB"),
                                     (1536, "1.5 KiB"), (1_200_000, "1.1 MiB"), ((8 << 20) - 1, "7.9 MiB"),
                                     (8 << 20, "8 MiB"), (3 << 30, "3 GiB"), (None, "of unknown size")])
def test_size_text_rounds_down(n, text):
    assert policy.size_text(n) == text


@pytest.mark.parametrize("kernel, mode", [
    ((6, 10, 14), IN_PLACE),
    ((6, 11, 0), FRESH),
    ((6, 11, 11), FRESH),
    ((6, 12, 0), FRESH),
    ((6, 12, 58), FRESH),
    ((6, 13, 0), IN_PLACE),
    ((6, 18, 44), IN_PLACE),
    ((7, 1, 0), IN_PLACE),
    ((7, 2, 0), IN_PLACE),
    ((5, 15, 0), IN_PLACE),
    (None, FRESH),
])
def test_kernels_that_let_writes_reach_a_running_executable(kernel, mode):
    d = decide(pr=probe(kernel=kernel))
    assert d.write_mode == mode
    if kernel and kernel[:2] in ((6, 11), (6, 12)):
        assert has_reason(d, "lets writes reach a running executable")


@pytest.mark.parametrize("kind, mode", [("pie", IN_PLACE), ("exec", IN_PLACE), ("static", IN_PLACE),
                                        ("static-pie", IN_PLACE), ("shared", FRESH), ("relocatable", FRESH)])
def test_shared_objects_and_relocatables_are_written_fresh(kind, mode):
    d = decide(req=request(kind))
    assert d.write_mode == mode


@pytest.mark.parametrize("cached, mode", [(0.49, FRESH), (0.5, IN_PLACE), (0.99, IN_PLACE)])
def test_cached_fraction_boundary(cached, mode):
    assert decide(pr=probe(output(cached_fraction=cached, size=16 << 20))).write_mode == mode


def test_all_failed_conditions_are_listed():
    d = decide(pr=probe(output(nlink=2, held_by_others=True), kernel=(6, 12, 1)))
    fresh = [r for r in d.reasons if r.endswith("-> fresh")]
    assert len(fresh) == 3 and d.write_mode == FRESH


@pytest.mark.parametrize("name, version, cpus, mode, reason", [
    ("mold", (1, 0, 0), 2, IN_PLACE, "-> in-place"),
    ("wild", (0, 8, 0), 2, IN_PLACE, "single-thread path always unlinks"),
    ("wild", (0, 10, 0), 8, IN_PLACE, "single-thread path always unlinks"),
    ("wild", (0, 8, 0), 1, FRESH, "wild with 1 thread always unlinks"),
    ("wild", (0, 7, 0), 2, FRESH, "gains nothing in place (needs >= 0.8)"),
    ("wild", None, 2, FRESH, "unknown version"),
    ("lld", LLD, 2, FRESH, "always writes a new file"),
    ("rust-lld", (22, 1, 2), 2, FRESH, "always writes a new file"),
    ("bfd", (2, 40), 2, FRESH, "always writes a new file"),
    ("gold", (2, 40), 2, FRESH, "always writes a new file"),
    ("python", (0, 1, 0), 2, FRESH, "always writes a new file"),
])
def test_in_place_only_for_linkers_that_gain_from_it(name, version, cpus, mode, reason):
    d = decide({name: linker(name, version)}, probe(cpus=cpus), cfg=settings({"LINKWRAP_LINKER": name}))
    assert d.write_mode == mode
    assert has_reason(d, reason), d.reasons


def test_configuration_can_forbid_in_place():
    d = decide(cfg=settings(in_place=False))
    assert d.write_mode == FRESH
    assert has_reason(d, "in_place = false in project file /w/linkwrap.toml -> fresh")


# --- configuration ----------------------------------------------------------

def test_extra_flags_come_last_and_only_for_their_linker():
    cfg = settings(linkers={"mold": {"extra_flags": ["--icf=all", "-z", "now"]}, "lld": {"extra_flags": ["-O2"]}})
    d = decide(cfg=cfg)
    assert d.linker_flags == ("--no-fork", "--threads=2", "--icf=all", "-z", "now")
    assert has_reason(d, "extra flags for mold from project file /w/linkwrap.toml: --icf=all -z now")
    d = decide(found(lld=LLD), cfg=cfg)
    assert d.linker_flags == ("--threads=2", "-O2")


def test_profile_overrides_reach_the_decision():
    layers = [("project file /w/linkwrap.toml", {"prefer": ["mold", "lld"]}),
              ("project file /w/linkwrap.toml [profile.release]", {"prefer": ["lld"], "in_place": False})]
    cfg = config.merge(layers, {}, "release")
    d = decide(found(mold=MOLD, lld=LLD), cfg=cfg)
    assert d.linker.name == "lld"
    assert has_reason(d, "first installed of lld")


# --- shape and purity ---------------------------------------------------------

def test_reasons_are_short_sentences():
    d = decide(found(wild=(0, 10, 0)), probe(output(nlink=2), fs="btrfs"))
    assert d.reasons and all(isinstance(r, str) and 0 < len(r) <= 160 and "\n" not in r for r in d.reasons)


def test_unknown_everything_is_conservative():
    unknown = Probe(None, None, None, None, OutputFacts(True, None, None, None, None, None, None),
                    None, None, None, None, None, False, None, None)
    d = decide(found(mold=MOLD, wild=(0, 10, 0)), unknown)
    assert d.linker.name == "mold"
    assert d.write_mode == FRESH
    assert d.linker_flags == ("--no-fork",)   # no thread count without a CPU count


def test_decide_does_no_io():
    def refuse(*a, **kw):
        raise AssertionError("policy.decide did I/O")

    class NoEnviron(dict):
        def __getitem__(self, key):
            refuse()
        get = __contains__ = __getitem__

    cfg = settings(linkers={"wild": {"extra_flags": ["--gc-sections"]}})
    cases = [(request(), pr, found(**installed) if installed is ALL else installed)
             for installed in (ALL, found(wild=(0, 10, 0)), {})
             for pr in (probe(), probe(output(nlink=2), fs="btrfs", kernel=None))]
    # Patched around decide() alone: pytest itself writes files (the -v result line) between phases.
    with pytest.MonkeyPatch.context() as patch:
        for name in ("stat", "lstat", "open", "listdir", "scandir", "access", "getcwd", "uname", "getenv"):
            patch.setattr(os, name, refuse)
        patch.setattr(os, "environ", NoEnviron())
        patch.setattr(builtins, "open", refuse)
        for req, pr, linkers in cases:
            policy.decide(req, pr, linkers, cfg)


# --- real linkers accept what decide() gives ------------------------------------
# The one place here that runs things: the real facts of this machine, the real
# linkers found on it, and the driver command run.py builds from the decision.

import subprocess  # noqa: E402
import sys  # noqa: E402

import mounts  # noqa: E402
from linkwrap.facts import probe as probe_mod  # noqa: E402
from linkwrap.facts import output_file  # noqa: E402
from linkwrap.run import run
from linkwrap.choice.choose import choose  # noqa: E402

STANDINS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "standins")


def link_as_decided(cwd, argv, env):
    req = args.parse(argv, driver="cc", environ=env, cwd=str(cwd))
    d = choose(req, env).decision
    done = subprocess.run(run.command(req, d, req.output), cwd=cwd, capture_output=True, text=True, env=env)
    return d, done


@pytest.mark.parametrize("name", ["mold", "lld", "rust-lld", "bfd", "gold"])
def test_installed_linkers_accept_every_flag(tmp_path, lw_home, hello_obj, name):
    from conftest import comment_mark, rust_gcc_ld
    marker = {"bfd": None, "gold": ".note.gnu.gold-version"}[name] if name in ("bfd", "gold") else comment_mark(name)
    env = {**os.environ, "LINKWRAP_LINKER": name}
    # an existing output so that the write-mode rules run too
    (tmp_path / "hello").write_bytes(b"old")
    argv = [str(hello_obj), "-o", "hello"]
    if name == "rust-lld":  # rust-lld is found where rustc says, as rustc >= 1.90 says it
        argv += [f"-B{rust_gcc_ld()}", "-fuse-ld=lld"]
    d, done = link_as_decided(tmp_path, argv, env)
    assert d.linker.name == name
    assert (done.returncode, done.stderr) == (0, ""), (d.linker_flags, done.stderr)
    assert subprocess.run([str(tmp_path / "hello")], capture_output=True, text=True).stdout == "hello\n"
    if marker:
        sections = subprocess.run(["readelf", "-W", "-p", ".comment", "-S", str(tmp_path / "hello")],
                                  capture_output=True, text=True).stdout
        assert marker in sections


@pytest.fixture(scope="module")
def btrfs(tmp_path_factory):
    with mounts.filesystem(tmp_path_factory.mktemp("btrfs"), "btrfs") as point:
        yield point


@pytest.mark.parametrize("version, expected", [
    ("0.6.0", ["--no-fork", "--threads="]),
    ("0.7.0", ["--no-fork", "--threads="]),     # 0.7-0.9 mmap on btrfs by themselves
    ("0.8.0", ["--no-fork", "--threads="]),
    ("0.10.0", ["--no-fork", "--threads=", "--mmap-output-file"]),
])
def test_wild_versions_accept_every_flag_on_btrfs(tmp_path, lw_home, hello_obj, btrfs, version, expected):
    """Against the RECORDING STAND-IN for wild (tests/standins/wild.py), for versions other than the
    real one (tests/choice/test_wild.py). From 0.6 on, wild (and the stand-in) refuse an unknown option,
    so a flag too new fails the link."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "wild").write_text(f'#!/bin/sh\nWILD_STANDIN_VERSION={version} exec {sys.executable} '
                                 f'{STANDINS}/wild.py "$@"\n')
    (bindir / "wild").chmod(0o755)
    log = tmp_path / "wild.log"
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "LINKWRAP_LINKER": "wild",
           "WILD_STANDIN_LOG": str(log)}
    out = os.path.join(btrfs, f"hello-{version}")
    d, done = link_as_decided(tmp_path, [str(hello_obj), "-o", out], env)
    assert (done.returncode, done.stderr) == (0, ""), (d.linker_flags, done.stderr)
    assert [f.split("=")[0] + ("=" if "=" in f else "") for f in d.linker_flags] == expected
    seen = [f for f in (log.read_text().splitlines()) if f]
    assert len(seen) == 1 and all(flag in seen[0] for flag in d.linker_flags)
    assert subprocess.run([out], capture_output=True, text=True).stdout == "hello\n"


# --- the caller's own linker choices (issue 10, item 9) ----------------------

@pytest.mark.parametrize("extra, own", [
    (["--ld-path=/opt/ld/ld.lld"], "--ld-path=/opt/ld/ld.lld"),
    (["-fuse-ld=/opt/ld/ld.mold"], "-fuse-ld=/opt/ld/ld.mold"),
])
def test_the_callers_own_linker_binary_is_linked_as_asked(extra, own):
    req = args.parse(["main.o", "-o", "/w/app", *extra], driver="clang", environ={}, cwd="/w")
    assert req.own_linker == own
    d = policy.decide(req, probe(), found(mold=MOLD, lld=LLD), settings())
    assert d.linker is None and not d.changes_anything
    assert d.reasons == (f"the command line names its own linker ({own}): linking as asked",)


@pytest.mark.parametrize("flag, kept", [
    ("-Wl,--threads=1", "--threads"), ("-Wl,-threads,2", "--threads"), ("-Wl,--no-threads", "--no-threads"),
    ("-Wl,--fork", "--fork"), ("-Xlinker --no-fork", "--no-fork"),
])
def test_the_callers_own_thread_and_fork_flags_are_not_overridden(flag, kept):
    req = args.parse(["main.o", *flag.split(), "-o", "/w/app"], driver="cc", environ={}, cwd="/w")
    d = policy.decide(req, probe(), found(mold=MOLD, lld=LLD), settings())
    assert d.linker.name == "mold"
    ours = "--no-fork" if "fork" in kept else "--threads="
    assert not any(f.startswith(ours) for f in d.linker_flags)
    assert any(kept in r and "kept" in r for r in d.reasons)
    # The other flag is still added.
    other = "--threads=" if "fork" in kept else "--no-fork"
    assert any(f.startswith(other) for f in d.linker_flags)


# --- small links (probe.small_inputs; docs/policy.md 1.3) -------------------------------------

@pytest.mark.parametrize("installed, small, callers_ld, req, expected, reason", [
    # GNU ld is the caller's own: on a small link mold and lld go after it, wild stays before it
    (ALL, True, None, None, "wild", "mold and lld and rust-lld after GNU ld"),
    ({k: ALL[k] for k in ("mold", "lld", "bfd", "gold")}, True, None, None, "bfd",
     "first installed of wild, bfd, mold, lld, rust-lld, gold"),
    # no GNU ld to go before them (gold, deprecated, stays last): the static order as it was
    ({k: ALL[k] for k in ("mold", "lld", "gold")}, True, None, None, "mold", "first installed of mold, wild"),
    ({k: ALL[k] for k in ("wild", "bfd")}, True, None, None, "wild", "first installed of mold, wild"),
    # not small, or not known to be: the static order as it was
    (ALL, False, None, None, "mold", "first installed of mold, wild"),
    (ALL, None, None, None, "mold", "first installed of mold, wild"),
    # a fast linker that is the caller's own default keeps its place: rustc's rust-lld, ld -> mold
    (ALL, True, None, dict(fuse_ld="lld", rust_lld="/rs/bin/rust-lld"), "rust-lld", "rustc's own default"),
    (ALL, True, "mold", None, "mold", "the driver's own ld"),
])
def test_a_small_link_keeps_gnu_ld_before_the_linkers_slower_there(installed, small, callers_ld, req, expected,
                                                                  reason):
    d = policy.decide(request(**(req or {})), probe(small_inputs=small), found(**installed), settings(),
                      callers_ld=callers_ld)
    assert (d.linker.name if d.linker else None) == expected and has_reason(d, reason), d.reasons
    assert has_reason(d, "a small link") == (small is True and (req, callers_ld) == (None, None) and "bfd" in installed
                                            and any(n in installed for n in ("mold", "lld", "rust_lld")))


@pytest.mark.parametrize("cfg, failed, expected", [
    ({"forbid": ["bfd"]}, (), "mold"),    # GNU ld not allowed: not gold before mold
    ({}, ("bfd",), "mold"),               # GNU ld failed on this output
    ({"forbid": ["wild"]}, (), "bfd"),
])
def test_a_small_link_puts_nothing_before_mold_but_an_allowed_gnu_ld(cfg, failed, expected):
    d = policy.decide(request(), probe(small_inputs=True), found(**ALL), settings(**cfg), failed=frozenset(failed))
    assert d.linker.name == expected, d.reasons


@pytest.mark.parametrize("flags, kind", [(["-r"], "relocatable"), (["-m32"], None)])
def test_wild_is_passed_over_where_it_cannot_link(flags, kind):
    """wild 0.8.0 through gcc: "unrecognized option(s): -r", "-m elf_i386 is not yet supported"."""
    req = args.parse(["main.o", *flags, "-o", "/w/out"], driver="cc", environ={}, cwd="/w")
    assert kind is None or req.kind == kind
    d = policy.decide(req, probe(small_inputs=True), found(**{k: ALL[k] for k in ("wild", "bfd")}), settings())
    assert d.linker.name == "bfd" and has_reason(d, "wild 0.10.0 passed over: wild"), d.reasons
    plain = args.parse(["main.o", "-o", "/w/out"], driver="cc", environ={}, cwd="/w")
    aarch64 = plain._replace(target="aarch64-linux-gnu")
    assert policy.decide(aarch64, probe(), found(wild=ALL["wild"], bfd=(2, 40)), settings()).linker.name == "wild"
    i686 = policy.decide(plain._replace(target="i686-linux-gnu"), probe(), found(wild=ALL["wild"], bfd=(2, 40)),
                         settings())
    assert i686.linker.name == "bfd" and has_reason(i686, "programs only"), i686.reasons


def test_a_configured_order_or_a_forced_linker_is_kept_on_a_small_link():
    small = probe(small_inputs=True)
    d = policy.decide(request(), small, found(**ALL), settings(prefer=["mold", "bfd"]))
    assert d.linker.name == "mold" and not has_reason(d, "a small link"), d.reasons
    d = policy.decide(request(), small, found(**ALL), settings({"LINKWRAP_LINKER": "lld"}))
    assert d.linker.name == "lld"
    d = policy.decide(request(fuse_ld="mold"), small, found(**ALL), settings())
    assert d.linker.name == "mold"


def test_a_small_link_is_not_explored_and_a_measurement_still_wins():
    from linkwrap.evidence import learn
    small = probe(small_inputs=True)
    two = found(mold=MOLD, lld=LLD, bfd=(2, 40))
    # Evidence that would have tried lld on this relink (mold timed once, lld not yet).
    ev = learn.Learned(("/w", "/w/target/debug/deps/foo"), {"mold": (1, 50.0)}, frozenset(), 1, 0, False)
    d = policy.decide(request(), small, two, settings(), None, None, ev)
    assert d.linker.name == "bfd" and not has_reason(d, learn.EXPLORING), d.reasons
    d = policy.decide(request(), probe(), two, settings(), None, None, ev)
    assert d.linker.name == "lld" and has_reason(d, learn.EXPLORING), d.reasons  # not small: explored
