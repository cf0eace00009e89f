"""WRITE: Layout + relocated image -> the output file.

Input: Layout, the image from relocate, Synthetics. Output: the executable on
disk. Synthetic sections write themselves (and each must fill exactly the
bytes layout reserved for it), then the ELF header, program headers, section
headers and .shstrtab, then the build-id over the finished image. The file is
written next to the output under a temporary name and renamed over it, so a
reader never sees half a file and hard links to an old output keep the old
contents.
"""
import os

from linkwrap.ld import elf


def write_output(opts, mode, lk, buf, synth) -> None:
    for syn in synth.all:
        if syn not in lk.osec_of:
            continue
        n = syn.write_to(buf, lk)
        want = syn.size() if syn.type != elf.SHT_NOBITS else 0
        if n != want:
            raise AssertionError(f"{syn.name}: wrote {n} bytes, layout reserved {want}")
    _headers(opts, mode, lk, buf)
    if synth.build_id is not None:
        synth.build_id.fill_digest(buf, lk)
    save(opts.output, buf)


def _headers(opts, mode, lk, buf):
    shnum = len(lk.osecs) + 2
    ident = elf.ELFMAG + bytes([2, 1, 1, 3 if lk.synth.gnu_osabi else 0]) + b"\0" * 8
    etype = elf.ET_DYN if mode.pic else elf.ET_EXEC
    elf.EHDR.pack_into(buf, 0, ident, etype, elf.EM_X86_64, 1, lk.entry, 64 if lk.segments else 0,
                       lk.shoff, 0, 64, 56, len(lk.segments), 64, shnum, shnum - 1)
    for k, seg in enumerate(lk.segments):
        elf.PHDR.pack_into(buf, 64 + 56 * k, seg.type, seg.flags, seg.offset, seg.vaddr, seg.vaddr,
                           seg.filesz, seg.memsz, seg.align)
    shstr_pos = lk.shstr_offsets["#pos"]
    buf[shstr_pos:shstr_pos + len(lk.shstrtab)] = lk.shstrtab
    off = lk.shoff + 64
    names = lk.shstr_offsets
    for o in lk.osecs:
        link = lk.osec_of[o.link].index if o.link is not None and o.link in lk.osec_of else 0
        info = o.info
        if o.name == ".rela.plt" and lk.synth.got_plt is not None and lk.synth.got_plt in lk.osec_of:
            info = lk.osec_of[lk.synth.got_plt].index
        elf.SHDR.pack_into(buf, off, names[o.name], o.type, o.flags, o.addr, o.offset, o.size, link, info,
                           o.align, o.entsize)
        off += 64
    elf.SHDR.pack_into(buf, off, names[".shstrtab"], elf.SHT_STRTAB, 0, 0, shstr_pos, len(lk.shstrtab),
                       0, 0, 1, 0)


def save(path, buf, executable=True):
    d = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(d, f".{os.path.basename(path)}.linkwrap-ld.{os.getpid()}.tmp")
    umask = os.umask(0)
    os.umask(umask)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, (0o777 if executable else 0o666) & ~umask)
    except OSError as e:  # a read-only or unwritable directory: the caller's to fix, said as GNU ld says it
        raise _failed("cannot open output file", path, e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(buf)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise _failed("cannot write output file", path, e) from None
        raise


def _failed(what, path, e):
    from linkwrap.ld.diag import LinkFailed
    return LinkFailed(f"{what} {path}: {e.strerror or e}")
