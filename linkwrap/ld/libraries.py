"""PARSE, libraries: -l searched as GNU ld searches (find_library), an ar archive's index (members
parsed when resolution pulls them in, Archive.member) and a shared library's dynamic symbols and
version definitions (SharedFile)."""
import os
import sys

from linkwrap.ld import elf
from linkwrap.ld.diag import BadInput, Unsupported
from linkwrap.ld.objects import ObjectFile, _Strtab, _backstop, _bad, _elf_header, _table


class SharedFile:
    """A shared library: soname, defined dynamic symbols with their default versions."""

    def __init__(self, name, view, as_needed, needed_name=None):
        self.name = name
        self.view = view
        self.as_needed = as_needed
        # without DT_SONAME, DT_NEEDED is the name as GNU ld was given it: the path of a file
        # argument, the file name of a -l search
        self.soname = needed_name or name
        self.defs = {}                  # name -> (value, size, type, bind, version or None, shndx)
        self.undefs = set()
        self.by_value = {}              # value -> [names] (aliases, for copy relocations)
        self.section_aligns = []        # (start, end, align) of the library's sections
        _parse_shared(self)


class Archive:
    """An ar archive: its symbol index; members parsed on demand (member())."""

    def __init__(self, name, view, whole):
        self.name = name
        self.view = view
        self.whole = whole
        self.members = []               # (header offset, member name, data offset, size)
        self.index = {}                 # symbol name -> header offset
        self.loaded = {}                # header offset -> ObjectFile parsed to build a missing index
        _parse_archive(self)

    def member(self, hdr_off):
        """The member at hdr_off, parsed now (resolve keeps track of what it pulled in)."""
        obj = self.loaded.get(hdr_off)
        if obj is None:
            for h, mname, off, size in self.members:
                if h == hdr_off:
                    break
            else:
                raise BadInput(f"{self.name}: symbol index points to offset {hdr_off}, which is no member")
            if self.view[off:off + 4] != elf.ELFMAG:
                raise BadInput(f"{self.name}({mname}): member is not an ELF object")
            obj = ObjectFile(f"{self.name}({mname})", self.view[off:off + size], self)
        return obj


def _parse_archive(ar):
    v = ar.view
    n = len(v)
    off = 8
    longnames = b""
    index_raw = None
    index64 = False
    while off < n:
        if off + 60 > n:
            if bytes(v[off:n]).strip(b"\n") == b"":
                break
            raise BadInput(f"{ar.name}: truncated archive (member header at offset {off} cut short)")
        hdr = bytes(v[off:off + 60])
        if hdr[58:60] != b"`\n":
            raise BadInput(f"{ar.name}: malformed archive (bad member header at offset {off})")
        try:
            size = int(hdr[48:58].decode().strip() or 0)
        except ValueError:
            raise BadInput(f"{ar.name}: malformed archive (bad member size at offset {off})") from None
        if size < 0:
            raise BadInput(f"{ar.name}: malformed archive (bad member size at offset {off})")
        data = off + 60
        if data + size > n:
            raise BadInput(f"{ar.name}: truncated archive (member at offset {off} needs {size} bytes, "
                           f"{n - data} left)")
        raw_name = hdr[:16].decode("ascii", "replace").rstrip()
        if raw_name == "/":
            index_raw = (data, size)
        elif raw_name == "/SYM64/":
            index_raw, index64 = (data, size), True
        elif raw_name == "//":
            longnames = bytes(v[data:data + size])
        else:
            if raw_name.startswith("/") and raw_name[1:].isdigit():
                p = int(raw_name[1:])
                end = longnames.find(b"/\n", p)
                mname = longnames[p:end if end >= 0 else None].decode("utf-8", "replace")
            else:
                mname = raw_name[:-1] if raw_name.endswith("/") else raw_name
            ar.members.append((off, mname, data, size))
        off = data + size + (size & 1)
    if index_raw is not None:
        d, size = index_raw
        w = 8 if index64 else 4
        fmt = ">Q" if index64 else ">I"
        import struct
        if size < w:
            raise BadInput(f"{ar.name}: malformed archive symbol index")
        count = struct.unpack_from(fmt, v, d)[0]
        if w + count * w > size:
            raise BadInput(f"{ar.name}: malformed archive symbol index (claims {count} symbols)")
        offsets = struct.unpack_from(f">{count}{fmt[1]}", v, d + w)
        names = bytes(v[d + w + count * w:d + size]).split(b"\0")
        idx = ar.index
        for k in range(count):
            nm = names[k].decode("utf-8", "replace")
            if nm not in idx:
                idx[nm] = offsets[k]
    elif ar.members:
        _build_index(ar)


def _build_index(ar):
    """An archive without a symbol index (no ranlib): read every member's globals."""
    for h, mname, off, size in ar.members:
        if ar.view[off:off + 4] != elf.ELFMAG:
            continue
        obj = ar.loaded[h] = ar.member(h)
        for name, info, other, shndx, value, sz in obj.raw_syms[obj.first_global:]:
            if shndx != elf.SHN_UNDEF and name and name not in ar.index:
                ar.index[name] = h


# --- shared libraries ----------------------------------------------------------------


def _parse_shared(so):
    _backstop(_parse_shared_checked, so, "shared library")


def _parse_shared_checked(so):
    _, shdrs, shstrndx = _elf_header(so)
    v = so.view
    dynsym = versym = verdef = dynamic = None
    for sh in shdrs:
        t = sh[1]
        if t == elf.SHT_DYNSYM:
            dynsym = sh
        elif t == elf.SHT_GNU_VERSYM:
            versym = sh
        elif t == elf.SHT_GNU_VERDEF:
            verdef = sh
        elif t == elf.SHT_DYNAMIC:
            dynamic = sh
        if sh[2] & elf.SHF_ALLOC:
            so.section_aligns.append((sh[3], sh[3] + sh[5], sh[8] or 1))
    if dynsym is None:
        raise BadInput(f"{so.name}: shared library has no dynamic symbol table")
    if dynsym[6] >= len(shdrs):
        raise _bad(so, f"dynamic symbol table's string table index {dynsym[6]} out of range")
    strs = _Strtab(v, shdrs[dynsym[6]][4], shdrs[dynsym[6]][5], so.name)
    if dynamic is not None:
        for tag, val in elf.DYN.iter_unpack(_table(so, dynamic, -1, elf.DYN.size, "dynamic")):
            if tag == elf.DT_SONAME:
                so.soname = strs.get(val)
            elif tag == elf.DT_NULL:
                break
    vnames = {}
    if verdef is not None:
        off = verdef[4]
        for _ in range(verdef[7]):
            vd_version, vd_flags, vd_ndx, vd_cnt, vd_hash, vd_aux, vd_next = \
                __import__("struct").unpack_from("<HHHHIII", v, off)
            name_off = elf.U32.unpack_from(v, off + vd_aux)[0]
            vnames[vd_ndx] = strs.get(name_off)
            if not vd_next:
                break
            off += vd_next
    vers = None
    if versym is not None:
        vers = memoryview(bytes(_table(so, versym, -1, 2, "symbol version"))).cast("H")
    defs = so.defs
    by_value = so.by_value
    get = strs.get
    for k, (n, info, other, shndx, value, size) in enumerate(elf.SYM.iter_unpack(_table(so, dynsym, -1, elf.SYM.size, "dynamic symbol table"))):
        if k == 0:
            continue
        bind = info >> 4
        if bind == elf.STB_LOCAL:
            continue
        name = get(n)
        if shndx == elf.SHN_UNDEF:
            so.undefs.add(name)
            continue
        ver = None
        if vers is not None and k < len(vers):
            vi = vers[k]
            if vi & elf.VERSYM_HIDDEN:
                continue  # a non-default version (name@VER): only explicit requests bind to it
            vi &= 0x7FFF
            if vi >= 2:
                ver = vnames.get(vi)
        defs[name] = (value, size, info & 0xF, bind, ver, shndx)
        if info & 0xF == elf.STT_OBJECT:
            by_value.setdefault(value, []).append(name)


# --- -l search ---------------------------------------------------------------------------

# GNU ld 2.40's built-in SEARCH_DIRs for elf_x86_64 (its default script, `ld --verbose`), searched
# after every -L; "=" is the sysroot, so that --sysroot moves them too.
DEFAULT_LIB_DIRS = ("=/usr/local/lib/x86_64-linux-gnu", "=/lib/x86_64-linux-gnu", "=/usr/lib/x86_64-linux-gnu",
                    "=/usr/lib/x86_64-linux-gnu64", "=/usr/local/lib64", "=/lib64", "=/usr/lib64",
                    "=/usr/local/lib", "=/lib", "=/usr/lib", "=/usr/x86_64-linux-gnu/lib64",
                    "=/usr/x86_64-linux-gnu/lib")


def search_dirs(opts):
    """The directories -l searches, in GNU ld's order: each -L as given (all of them, wherever they
    stand on the command line), then the defaults unless -nostdlib."""
    if opts.nostdlib:
        return opts.lib_dirs
    root = opts.sysroot.rstrip("/")
    return opts.lib_dirs + tuple(root + d[1:] for d in DEFAULT_LIB_DIRS)


def find_library(name: str, opts, static: bool, quiet: bool = False):
    """-lname -> path, the way GNU ld searches: each directory of search_dirs in order, lib<name>.so
    before lib<name>.a in each (only .a under -Bstatic); -l:file looks for that file name. A file of
    another machine or class (a 32-bit libfoo.a) is skipped with GNU ld's note, and the search goes
    on, so that a multilib tree's wrong half does not hide the right one."""
    if name.startswith(":"):
        candidates = [name[1:]]
    elif static:
        candidates = [f"lib{name}.a"]
    else:
        candidates = [f"lib{name}.so", f"lib{name}.a"]
    for d in search_dirs(opts):
        for c in candidates:
            p = os.path.join(d, c)
            if os.path.isfile(p):
                if _compatible(p):
                    return p
                if not quiet:
                    print(f"linkwrap-ld: skipping incompatible {p} when searching for -l{name}", file=sys.stderr)
    return None


def _elf_ok(head):
    """An ELF header's first 20 bytes: 64-bit little-endian x86-64 (what this linker links)?"""
    return head[4] == 2 and head[5] == 1 and elf.U16.unpack_from(head, 18)[0] == elf.EM_X86_64


def _compatible(path):
    """False only for an ELF file, or an archive whose first object member is one, of another
    machine or class (GNU ld's bfd target check); scripts and unreadable files are left to the
    parse, which names what is wrong with them."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
            if head[:4] == elf.ELFMAG:
                return len(head) < 20 or _elf_ok(head)
            if head[:8] != b"!<arch>\n":
                return True
            f.seek(8)
            while True:
                hdr = f.read(60)
                if len(hdr) < 60:
                    return True
                try:
                    size = int(hdr[48:58].decode().strip() or 0)
                except ValueError:
                    return True
                if hdr[:16].rstrip() not in (b"/", b"//", b"/SYM64/"):
                    head = f.read(20)
                    return head[:4] != elf.ELFMAG or len(head) < 20 or _elf_ok(head)
                f.seek(size + (size & 1), 1)
    except OSError:
        return True
