"""--section-start=NAME=ADDR: an output section of a name of its own placed at ADDR.

GNU ld gives the output section statement its address; an orphan section (one the default script
has no place for: a name of its own, `.mysec`) then starts there. Here such a section becomes a
PT_LOAD of its own after the five classes (layout.py), at ADDR, its file offset congruent to ADDR
modulo the page (no hole in the file). Named instead, as this layout would differ from GNU ld's
in more than addresses: a section of the default layout's own (.text, .data, ... : GNU ld moves the
sections after it along), a name no input section has, an address below the sections before it
(the segments would overlap or leave address order), or not a multiple of the section's alignment.
-Ttext/-Tdata/-Tbss (those standard sections) stay named by the option table.

Input: Options, layout's output sections (their class set here, before addresses). Output: the
address and the segment flags layout asks.
"""
from linkwrap.ld import elf
from linkwrap.ld.diag import Unsupported

# --section-start: each named section is a class (a PT_LOAD) of its own, after the five, by address
STARTED = 10


def place(opts, osecs, ranks):
    """--section-start=NAME=ADDR for an output section of NAME's own (an orphan in GNU ld's script):
    a segment of its own at ADDR. A section the default layout places among others (.text, .data
    ...), or one no input has, is named: GNU ld would move the sections after it along."""
    for k, (name, addr) in enumerate(sorted(opts.section_start, key=lambda p: p[1])):
        o = osecs.get(name)
        if o is None:
            raise Unsupported(f"--section-start={name}=0x{addr:x}: no input section makes an output section {name}")
        if name in ranks or not o.flags & elf.SHF_ALLOC or o.flags & elf.SHF_TLS or o.type == elf.SHT_NOTE:
            raise Unsupported(f"--section-start={name}=0x{addr:x}: a section of the default layout's own "
                              f"(only a section of a name of its own is moved here)")
        o.cls, o.rank = STARTED + k, addr


def address(o, want, addr):
    if want < addr:
        raise Unsupported(f"--section-start={o.name}=0x{want:x}: below the end of the sections before it "
                          f"(0x{addr:x}): the segments would overlap or leave address order")
    if want % o.align:
        raise Unsupported(f"--section-start={o.name}=0x{want:x}: not a multiple of its alignment {o.align}")
    return want


def flags(cls, alloc):
    o = next(p for p in alloc if p.cls == cls)
    return elf.PF_R | (elf.PF_W if o.flags & elf.SHF_WRITE else 0) | (elf.PF_X if o.flags & elf.SHF_EXECINSTR else 0)
