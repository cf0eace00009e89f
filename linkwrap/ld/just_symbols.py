"""-R FILE / --just-symbols=FILE: an ELF file whose symbols are taken, not its contents.

GNU ld (bfd's just_syms inputs) reads the file's symbol table where it stands on the command line
and defines each of its global and weak symbols at the address the file gives it, absolute: the
file is never relocated, copied or loaded, and is no DT_NEEDED. Its symbols then resolve like any
object's definitions (a second strong one is a multiple definition; an archive member defining a
name it already defines is not pulled), and stand in the output's .symtab as ABS symbols. Its own
notes (.note.GNU-stack, .note.gnu.property) count for nothing (bfd skips SEC_INFO_TYPE_JUST_SYMS).

Input: the path. Output: a JustSymbols record (resolve defines its symbols; nothing else reads it).
"""
from linkwrap.ld import elf
from linkwrap.ld.diag import BadInput, Unsupported


class JustSymbols:
    """What a Symbol's `file` names for a just-symbols definition: a file with no sections."""
    archive = None
    sections = ()

    def __init__(self, name, symbols):
        self.name = name
        self.symbols = symbols      # (name, info, other, value, size) of each global or weak definition

    def __repr__(self):
        return f"JustSymbols({self.name})"


def read(path) -> JustSymbols:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise BadInput(f"cannot open {path}: {e.strerror}") from None
    if data[:4] != elf.ELFMAG:
        raise Unsupported(f"-R {path}: not an ELF file (GNU ld takes a just-symbols file of any format bfd reads)")
    if len(data) < 64 or data[4] != 2 or data[5] != 1:
        raise BadInput(f"{path}: file in wrong format (not 64-bit little-endian ELF)")
    if elf.U16.unpack_from(data, 18)[0] != elf.EM_X86_64:
        raise BadInput(f"{path}: file in wrong format (not x86-64)")
    shoff = elf.U64.unpack_from(data, 40)[0]
    shnum = elf.U16.unpack_from(data, 60)[0]
    if shoff + 64 * shnum > len(data):
        raise BadInput(f"{path}: section headers lie outside the file")
    shdrs = [elf.SHDR.unpack_from(data, shoff + 64 * k) for k in range(shnum)]
    # .symtab; a stripped file has only .dynsym (bfd then reads the dynamic symbols)
    table = next((sh for sh in shdrs if sh[1] == elf.SHT_SYMTAB), None) or \
        next((sh for sh in shdrs if sh[1] == elf.SHT_DYNSYM), None)
    if table is None:
        return JustSymbols(path, ())
    _, _, _, _, off, size, link, first, _, entsize = table
    if entsize != 24 or off + size > len(data) or not 0 < link < shnum:
        raise BadInput(f"{path}: malformed symbol table")
    str_off, str_size = shdrs[link][4], shdrs[link][5]
    if str_off + str_size > len(data):
        raise BadInput(f"{path}: malformed string table")
    strs = data[str_off:str_off + str_size]
    out = []
    for k in range(max(first, 1), size // 24):
        st_name, info, other, shndx, value, sz = elf.SYM.unpack_from(data, off + 24 * k)
        bind, stype = info >> 4, info & 0xF
        if bind not in (elf.STB_GLOBAL, elf.STB_WEAK, elf.STB_GNU_UNIQUE) or shndx in (elf.SHN_UNDEF, elf.SHN_COMMON):
            continue
        end = strs.find(b"\0", st_name)
        if st_name >= len(strs) or end < 0:
            raise BadInput(f"{path}: symbol {k} has a name outside its string table")
        name = strs[st_name:end].decode("utf-8", "surrogateescape")
        if stype == elf.STT_TLS:
            raise Unsupported(f"-R {path}: thread-local symbol `{name}' (an offset in another file's TLS block)")
        if stype == elf.STT_GNU_IFUNC:
            raise Unsupported(f"-R {path}: IFUNC symbol `{name}'")
        if "@" in name:
            continue    # a versioned import's or definition's name: bfd's just_syms keeps those in the library
        out.append((name, (bind << 4) | stype, other, value, sz))
    return JustSymbols(path, tuple(out))
