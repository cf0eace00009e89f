"""The same inputs give the same output, byte for byte, whatever Python's hash seed."""
import os
import subprocess
import sysconfig


def test_static_link_does_not_depend_on_the_hash_seed(tmp_path):
    (tmp_path / "r.c").write_text('#include <stdio.h>\n#include <string.h>\n'
                                  'int main(void){char b[32]; strcpy(b, "hi"); printf("%s %zu\\n", b, strlen(b));}\n')
    subprocess.run(["gcc", "-c", "r.c"], cwd=tmp_path, check=True)
    shim = tmp_path / "shim"
    shim.mkdir()
    os.symlink(os.path.join(sysconfig.get_path("scripts"), "linkwrap-ld"), shim / "ld")
    outputs = []
    for seed in ("1", "2", "3"):
        subprocess.run(["gcc", f"-B{shim}", "-static", "r.o", "-o", f"r{seed}"], cwd=tmp_path, check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed})
        outputs.append((tmp_path / f"r{seed}").read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]
    assert b"Linker: linkwrap.ld" in outputs[0]
    assert subprocess.run([str(tmp_path / "r1")], capture_output=True, text=True).stdout == "hi 2\n"
