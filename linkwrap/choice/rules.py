"""The facts the choice's rules compare against: from which version a linker has a flag or
behaviour (SINCE, IN_PLACE_SINCE, WILD_*), the kernels that never answer ETXTBSY, -fuse-ld names.
Each figure says where it was seen; policy.py, flags.py and write_mode.py read them. Pure."""


MIN_MEASURED_RUNS = 3   # fewer timed runs of a replay give no confidence interval worth the name


# First version of each linker that accepts a flag (shared/reference/linkers.md §1.1, §2.2, §3.2, §6).
# A linker missing from a row never gets that flag: GNU ld 2.40 rejects --threads,
# gold needs --threads plus --thread-count, lld has no --no-fork.
SINCE = {
    "--no-fork": {"mold": (1, 0), "wild": (0, 3)},
    "--no-detach": {"mold": (2, 33)},         # with --detach (its default) came --separate-debug-file
    "--threads=": {"mold": (1, 1), "wild": (0, 2), "lld": (11,), "rust-lld": (11,)},
    "--mmap-output-file": {"wild": (0, 7)},   # mold 1.10 rejects it; lld's flipped meaning at 21
}


# In-place pays only for linkers that would reuse the inode: mold (every version)
# and wild >= 0.8 (its default became update-in-place). GNU ld, gold and lld always
# write a new inode, so for them fresh costs nothing.
IN_PLACE_SINCE = {"mold": (0,), "wild": (0, 8)}


# Linux 6.11 and 6.12 let a running executable be written (kernel commit
# 2a010c412853, reverted for 6.13); distribution backports can't be told apart.
NO_ETXTBSY = ((6, 11), (6, 12))


WILD_BTRFS_MMAP_FIXED = (7, 2)   # wild buffers its output on btrfs below this kernel


# ...but only from 0.10 on: 0.7-0.9 mmap it there as everywhere (wild 0.8.0 checked with strace here).
WILD_BTRFS_BUFFERS_SINCE = (0, 10)


# Before 0.9 wild has no linker-plugin support: it warns about gcc's `-plugin` on stdout at
# every link, and refuses GCC LTO objects ("GCC IR (LTO mode) is not supported yet").
WILD_PLUGIN_SINCE = (0, 9)


# The targets wild links (a cross link's triple starts with one; its x86-64 and aarch64 checked here).
WILD_ARCHES = ("x86_64", "aarch64")


MIN_CACHED_FRACTION = 0.5        # below this an in-place write first reads the old file back


# -fuse-ld=<x> values that name a linker linkwrap knows.
FUSE_LD = {"mold": "mold", "wild": "wild", "lld": "lld", "bfd": "bfd", "gold": "gold"}


def joined_args(args) -> str:
    """NUL + the arguments joined by NUL + NUL (NUL cannot occur inside an argument): a rustc link has
    thousands of arguments and a few that the rules look for, which str.find reaches at C speed. The
    last join is kept: policy.linker_options and incremental.release_or_lto read the same one."""
    if _JOINED[0] is not args:
        _JOINED[:] = [args, "\0" + "\0".join(args) + "\0"]
    return _JOINED[1]


_JOINED = [None, None]


def _at_least(version, since) -> bool:
    return version is not None and tuple(version) >= since


# --- which flags -----------------------------------------------------------


def _v(version) -> str:
    return ".".join(map(str, version)) if version else "?"


# --- how to write the output -----------------------------------------------
