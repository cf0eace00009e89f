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


def write_output(opts, mode, lk, buf, synth, image=None) -> None:
    for syn in synth.all:
        if syn not in lk.osec_of:
            continue
        n = syn.write_to(buf, lk)
        want = syn.size() if syn.type != elf.SHT_NOBITS else 0
        if n != want:
            raise AssertionError(f"{syn.name}: wrote {n} bytes, layout reserved {want}")
        if n >= _DROP_FROM and image is not None and image.map is not None:
            # a big one's written pages (.debug_str's 14 MB, .symtab) leave the RSS: they are the
            # mapped file's, in the page cache (objects.drop_pages); else they stay into the build-id's
            # hash, the link's peak
            from linkwrap.ld.objects import drop_pages
            drop_pages(buf)
    _headers(opts, mode, lk, buf)
    if synth.build_id is not None:
        synth.build_id.fill_digest(buf, lk)
    if image is not None and image.map is not None:
        image.commit()
    else:
        save(opts.output, buf)


# a synthetic section this big drops the image's pages after it is written (write_output)
_DROP_FROM = 1 << 20


def _map_type():
    import mmap

    class _Map(mmap.mmap):
        """The mapped image with what the passes use of bytearray's interface beyond slices."""

        def index(self, sub, start=0, end=None):
            at = self.find(bytes([sub]) if isinstance(sub, int) else sub, start,
                           len(self) if end is None else end)
            if at < 0:
                raise ValueError("subsection not found")
            return at
    return _Map


# From this size on the output is filled in its mapped file; below it a bytearray and one write()
# are faster (an image filled and saved, median of 15 here: 1 MiB 1.2 ms against 3.2 mapped, 16 MiB
# 38 against 40, 32 MiB 129 against 65, 60 MiB 222 against 98).
MAP_FROM = 32 << 20


class Image:
    """The output's bytes, filled in place: a shared mapping of a new temporary file beside the
    output, renamed over it by commit() (so no copy of the whole image at the end, and a reader
    never sees half a file); a bytearray that save() writes for an image under MAP_FROM bytes, or
    where the file cannot be mapped.

    The temporary file is created new (O_EXCL | O_NOFOLLOW: nothing another user put there is
    followed or reused) with the mode save() gives; abandon() removes it when the link fails."""

    def __init__(self, path, size, executable=True, map_from=None):
        import mmap
        self.path = path
        self.map = self.tmp = self.fd = None
        if size < (MAP_FROM if map_from is None else map_from):
            self.buf = bytearray(size)
            return
        _Map = _map_type()
        try:
            fd, tmp = _create_tmp(path, executable)
        except OSError:
            self.buf = bytearray(size)        # save() reports what is wrong with the directory
            return
        self.fd, self.tmp = fd, tmp
        try:
            os.ftruncate(fd, size)
            self.map = _Map(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except (OSError, ValueError):
            self.abandon()
            self.buf = bytearray(size)
            return
        self.buf = self.map

    def commit(self):
        self.map.close()
        self.map = None
        os.close(self.fd)
        self.fd = None
        os.replace(self.tmp, self.path)
        self.tmp = None

    def abandon(self):
        if self.map is not None:
            try:
                self.map.close()
            except BufferError:     # a failing pass's frame still holds a view: unlinked all the same
                pass
            self.map = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.tmp is not None:
            try:
                os.unlink(self.tmp)
            except OSError:
                pass
            self.tmp = None


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
        if isinstance(info, str):     # an output section's name (emitted relocations: emit_relocs.py)
            info = lk.by_name[info].index
        if o.name == ".rela.plt" and lk.synth.got_plt is not None and lk.synth.got_plt in lk.osec_of:
            info = lk.osec_of[lk.synth.got_plt].index
        elf.SHDR.pack_into(buf, off, names[o.name], o.type, o.flags, o.addr, o.offset, o.size, link, info,
                           o.align, o.entsize)
        off += 64
    elf.SHDR.pack_into(buf, off, names[".shstrtab"], elf.SHT_STRTAB, 0, 0, shstr_pos, len(lk.shstrtab),
                       0, 0, 1, 0)


def _create_tmp(path, executable):
    """-> (fd, name) of a new file beside path, with the mode the umask gives a new file.

    Created, never opened: a name already there (a dead run's, or a symlink someone planted)
    is unlinked — the link itself, not what it points to — and the file made anew."""
    d = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(d, f".{os.path.basename(path)}.linkwrap-ld.{os.getpid()}.tmp")
    umask = os.umask(0)
    os.umask(umask)
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    mode = (0o777 if executable else 0o666) & ~umask
    try:
        return os.open(tmp, flags, mode), tmp
    except FileExistsError:
        os.unlink(tmp)
        return os.open(tmp, flags, mode), tmp


def save(path, buf, executable=True):
    try:
        fd, tmp = _create_tmp(path, executable)
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
