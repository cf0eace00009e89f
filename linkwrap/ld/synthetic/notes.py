"""Notes: .note.gnu.build-id and .note.gnu.property (the inputs' x86 properties merged)."""
import hashlib
import struct

from linkwrap.ld import elf
from linkwrap.ld.synthetic.base import _put, Synthetic


class BuildId(Synthetic):
    type = elf.SHT_NOTE
    align = 4

    def __init__(self, style):
        super().__init__(".note.gnu.build-id")
        self.style = style
        if style.startswith("0x"):
            self.desc_len = len(bytes.fromhex(style[2:]))
        else:
            self.desc_len = {"sha1": 20, "md5": 16, "uuid": 16}[style]

    def size(self):
        return 16 + self.desc_len

    def write_to(self, buf, lk):
        # name "GNU", type NT_GNU_BUILD_ID (3); the digest is filled by fill_digest() at the very end
        head = struct.pack("<III", 4, self.desc_len, 3) + b"GNU\0"
        return _put(buf, lk.offset_of(self), head + b"\0" * self.desc_len)

    def fill_digest(self, buf, lk):
        off = lk.offset_of(self)
        if self.style in ("sha1", "md5"):
            self.chunks = chunk_digests(buf, self.style)
            d = tree_digest(self.chunks, self.style)
        elif self.style == "uuid":
            import os
            d = os.urandom(16)
        else:
            d = bytes.fromhex(self.style[2:])
        buf[off + 16:off + 16 + self.desc_len] = d


class PackageNote(Synthetic):
    """.note.package (--package-metadata): the FDO packaging-metadata note, owner "FDO", type
    0xcafe1a7e, the JSON text NUL-terminated and zero-padded to 4 bytes, as GNU ld 2.40 writes it."""
    type = elf.SHT_NOTE
    align = 4

    def __init__(self, text):
        super().__init__(".note.package")
        desc = text.encode() + b"\0"
        desc += b"\0" * (-len(desc) % 4)        # GNU ld counts the padding in descsz
        self.data = struct.pack("<III", 4, len(desc), 0xCAFE1A7E) + b"FDO\0" + desc

    def size(self):
        return len(self.data)

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), self.data)


# sha1 and md5 build ids are a digest of the 1 MiB chunks' digests, as lld computes them (mold
# likewise, in shards): unique to the contents as a digest of the whole file is, and an incremental
# relink hashes again only the chunks it wrote (ld/incremental/patch.py), not 60 MB.
CHUNK = 1 << 20


def chunk_digests(buf, style):
    """-> each CHUNK of buf's digest (the note's digest field must be zero in buf)."""
    h = hashlib.sha1 if style == "sha1" else hashlib.md5
    from linkwrap.ld.objects import drop_pages
    view = memoryview(buf)
    out = []
    try:
        for i in range(0, len(buf), CHUNK):
            out.append(h(view[i:i + CHUNK]).digest())
            if i % _DROP_EVERY == _DROP_EVERY - CHUNK:
                # a mapped image's hashed pages leave the RSS (they are the file's: objects.drop_pages)
                drop_pages(buf, i + CHUNK - _DROP_EVERY, _DROP_EVERY)
        return out
    finally:
        view.release()


_DROP_EVERY = 4 * CHUNK


def tree_digest(chunks, style):
    return (hashlib.sha1 if style == "sha1" else hashlib.md5)(b"".join(chunks)).digest()


class PropertyNote(Synthetic):
    """.note.gnu.property: the inputs' x86 properties merged as GNU ld merges them."""
    type = elf.SHT_NOTE

    def __init__(self, props):
        super().__init__(".note.gnu.property")
        desc = b"".join(struct.pack("<IIII", t, 4, v, 0) for t, v in sorted(props.items()))
        self.data = struct.pack("<III", 4, len(desc), 5) + b"GNU\0" + desc   # NT_GNU_PROPERTY_TYPE_0

    def size(self):
        return len(self.data)

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), self.data)


FEATURE_1_AND, ISA_1_NEEDED = 0xC0000002, 0xC0008002


FEATURE_1_IBT, FEATURE_1_SHSTK = 1, 2


def merge_properties(opts, objects) -> dict:
    """{pr_type: value} for the output (elfxx-x86.c's rules): an AND property survives only if every
    object has it; an OR property is the union of those that have it; an OR-AND property needs
    every object to have it. -z ibt / -z shstk force their bit, -z x86-64-vN adds an ISA level."""
    from linkwrap.ld.objects import PROPERTY_AND, PROPERTY_OR, PROPERTY_OR_AND
    lists = [obj.properties or {} for obj in objects]
    everyone = [obj.properties is not None for obj in objects]
    out = {}
    types = set().union(*lists) if lists else set()
    for t in types:
        have = [p[t] for p in lists if t in p]
        if t in PROPERTY_OR:
            out[t] = _or(have)
        elif (t in PROPERTY_AND or t in PROPERTY_OR_AND) and len(have) == len(lists) and all(everyone):
            v = have[0]
            for x in have[1:]:
                v = (v & x) if t in PROPERTY_AND else (v | x)
            out[t] = v
    forced = (FEATURE_1_IBT if opts.z_ibt else 0) | (FEATURE_1_SHSTK if opts.z_shstk else 0)
    if forced:
        out[FEATURE_1_AND] = out.get(FEATURE_1_AND, 0) | forced
    if opts.z_isa:
        out[ISA_1_NEEDED] = out.get(ISA_1_NEEDED, 0) | opts.z_isa
    return {t: v for t, v in out.items() if v}


def _or(values):
    v = 0
    for x in values:
        v |= x
    return v
