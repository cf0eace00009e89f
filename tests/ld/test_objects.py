"""objects.drop_pages: the pages of a shared mapping leave the RSS, and nothing written through the
mapping is lost (the passes drop the mapped output image's pages while they still fill it)."""
import mmap
import os

from linkwrap.ld.objects import drop_pages


def _mapped(tmp_path, size):
    path = tmp_path / "image"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    os.ftruncate(fd, size)
    return path, fd, mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)


def test_written_pages_of_a_shared_mapping_survive_a_drop(tmp_path):
    size = 64 * mmap.PAGESIZE
    path, fd, m = _mapped(tmp_path, size)
    try:
        data = bytes(range(256)) * (size // 256)
        m[:] = data
        drop_pages(m)                                   # the whole mapping
        assert m[:] == data                             # faulted in again from the page cache
        m[5 * mmap.PAGESIZE:6 * mmap.PAGESIZE] = b"\xab" * mmap.PAGESIZE
        drop_pages(m, 4 * mmap.PAGESIZE, 4 * mmap.PAGESIZE)   # a range, as the build-id's hash drops
        want = data[:5 * mmap.PAGESIZE] + b"\xab" * mmap.PAGESIZE + data[6 * mmap.PAGESIZE:]
        assert m[:] == want
        m.flush()
    finally:
        m.close()
        os.close(fd)
    assert path.read_bytes() == want


def test_a_view_of_a_mapping_drops_its_mapping_and_other_buffers_are_left_alone(tmp_path):
    size = 8 * mmap.PAGESIZE
    _, fd, m = _mapped(tmp_path, size)
    try:
        m[:] = b"\x5a" * size
        view = memoryview(m)[mmap.PAGESIZE:]            # an archive member's view of its archive
        drop_pages(view)
        assert bytes(view) == b"\x5a" * (size - mmap.PAGESIZE)
        view.release()
    finally:
        m.close()
        os.close(fd)
    buf = bytearray(b"kept")
    drop_pages(buf)                                     # not a mapping: nothing to drop
    drop_pages(memoryview(buf))
    assert buf == b"kept"
