"""write: the output is a new file beside the old one, mapped and filled in place, renamed at the end.

A link that fails after the image exists (a relocation overflow) leaves the old output and no
temporary file; a symlink planted at the temporary name is not followed; the file gets the
mode the umask gives, whatever is in its place.
"""
import os
import subprocess

from linkwrap.ld import write

from . import corpus

FAR = """
    .text
    .globl main
main:
    xor %eax, %eax
    ret
    .data
    .long far
    .section .note.GNU-stack,"",@progbits
"""


def test_a_link_failing_after_the_image_exists_keeps_the_old_output_and_leaves_no_file(tmp_path):
    (tmp_path / "far.s").write_text(FAR)
    subprocess.run(["as", "far.s", "-o", "far.o"], cwd=tmp_path, check=True)
    (tmp_path / "out").write_bytes(b"old")
    shim = corpus.shim_dir(str(tmp_path))
    r = subprocess.run(["gcc", f"-B{shim}", "-no-pie", "far.o", "-Wl,--defsym=far=0x123456789", "-o", "out"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 1
    assert "relocation truncated to fit: R_X86_64_32 against `far'" in r.stderr
    assert (tmp_path / "out").read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["far.o", "far.s", "lw-shim", "out"]


def test_a_symlink_at_the_temporary_name_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    out = tmp_path / "prog"
    os.symlink(victim, tmp_path / f".prog.linkwrap-ld.{os.getpid()}.tmp")
    old = os.umask(0o027)
    try:
        image = write.Image(str(out), 8, map_from=0)
        assert image.map is not None      # the file was mapped, not the bytearray fall-back
        image.buf[0:8] = b"ELFBYTES"
        image.commit()
    finally:
        os.umask(old)
    assert victim.read_bytes() == b"keep"
    assert out.read_bytes() == b"ELFBYTES"
    assert not out.is_symlink()
    assert os.stat(out).st_mode & 0o777 == 0o750
    assert sorted(os.listdir(tmp_path)) == ["prog", "victim"]


def test_a_small_image_is_a_bytearray_a_large_one_the_mapped_file(tmp_path):
    small = write.Image(str(tmp_path / "small"), write.MAP_FROM - 1)
    large = write.Image(str(tmp_path / "large"), write.MAP_FROM)
    assert small.map is None and isinstance(small.buf, bytearray)
    assert large.map is not None and len(large.buf) == write.MAP_FROM
    large.abandon()
    assert os.listdir(tmp_path) == []


def test_save_replaces_a_planted_symlink_too(tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    os.symlink(victim, tmp_path / f".part.o.linkwrap-ld.{os.getpid()}.tmp")
    write.save(str(tmp_path / "part.o"), b"object", executable=False)
    assert victim.read_bytes() == b"keep"
    assert (tmp_path / "part.o").read_bytes() == b"object"
