"""Real Cargo projects for tests: the host triple from rustc, a fresh std-only crate, Cargo's env names."""
import os
import re
import subprocess


def host_triple() -> str:
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("host:"))


def env_name(triple: str, what: str = "LINKER") -> str:
    """CARGO_TARGET_<TRIPLE>_<WHAT>, mangled as Cargo does."""
    return f"CARGO_TARGET_{re.sub(r'[-.]', '_', triple).upper()}_{what}"


def new_crate(root, name="hello"):
    """`cargo new` (no VCS) at root/name; -> its path."""
    path = os.path.join(str(root), name)
    subprocess.run(["cargo", "new", "--quiet", "--vcs", "none", path], check=True, capture_output=True)
    return path
