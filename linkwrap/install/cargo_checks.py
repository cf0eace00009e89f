"""Cargo, read back: the settings that would override or undo linkwrap's linker line (fights(), for
install's and status's warnings) and which targets link through linkwrap-cc now (installed()). The
editing itself is cargo.py's; this only reads configuration files and the environment."""
import os

from linkwrap.install import marker
from linkwrap.install.cargo import SCRIPT, config_file, env_key, global_config, linker_of, parse


# ---- what would fight it ----

def _flags_fight(flags) -> list[str]:
    if isinstance(flags, str):
        flags = flags.split()
    if not isinstance(flags, list):
        return []
    return [f for f in flags if isinstance(f, str) and ("-fuse-ld=" in f or "linker=" in f or "linker-flavor=" in f)]


def fights(triples, configs, environ=os.environ) -> list[str]:
    """One sentence per setting that would override or undo linkwrap for these triples.

    configs: [(path, parsed data)] in the order Cargo reads them (nearest first).
    """
    out = []
    for triple in triples:
        up = env_key(triple)
        var = f"CARGO_TARGET_{up}_LINKER"
        if environ.get(var):
            out.append(f"{var}={environ[var]} overrides the config file: unset it, or linkwrap is not used")
        for var in ("CARGO_ENCODED_RUSTFLAGS", "RUSTFLAGS", f"CARGO_TARGET_{up}_RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS"):
            value = environ.get(var)
            if not value:
                continue
            bad = _flags_fight(value.split("\x1f") if var == "CARGO_ENCODED_RUSTFLAGS" else value.split())
            if bad:
                out.append(f"{var} has {' '.join(bad)}: it fights the linker linkwrap chooses")
    seen_linker = False
    for path, data in configs:
        build = data.get("build") if isinstance(data.get("build"), dict) else {}
        bad = _flags_fight(build.get("rustflags"))
        if bad:
            out.append(f"{path}: [build] rustflags has {' '.join(bad)}: it fights the linker linkwrap chooses")
        targets = data.get("target") if isinstance(data.get("target"), dict) else {}
        for name, table in targets.items():
            if not isinstance(table, dict):
                continue
            bad = _flags_fight(table.get("rustflags"))
            if bad and (name in triples or name.startswith("cfg(")):
                out.append(f"{path}: [target.{name}] rustflags has {' '.join(bad)}: it fights the linker linkwrap chooses")
        for triple in triples:
            other = linker_of(data, triple)
            if other is not None and os.path.basename(str(other)) != SCRIPT and not seen_linker:
                out.append(f"{path} sets linker = {other!r} for {triple}, and Cargo reads it first: linkwrap is not used")
            if other is not None:
                seen_linker = True
    return out


def configs_read(root: str | None, environ=os.environ):
    """(path, data) of every config file Cargo reads from root, nearest first; unparsable ones skipped."""
    paths = []
    if root:
        here = os.path.abspath(root)
        while True:
            paths.append(config_file(os.path.join(here, ".cargo")))
            parent = os.path.dirname(here)
            if parent == here:
                break
            here = parent
    home = global_config(environ)
    if home not in paths:
        paths.append(home)
    found = []
    for p in paths:
        data = marker.read_bytes(p)
        if data is None:
            continue
        try:
            found.append((p, parse(p, data)))
        except ConfigError:
            continue
    return found


# ---- status ----

def installed(path: str) -> list[dict]:
    """[{target, linker, marked}] for each target whose linker is linkwrap-cc in path."""
    raw = marker.read_bytes(path)
    if raw is None:
        return []
    data = parse(path, raw)
    text = raw.decode("utf-8")
    targets = data.get("target") if isinstance(data.get("target"), dict) else {}
    out = []
    for name, table in targets.items():
        if isinstance(table, dict) and os.path.basename(str(table.get("linker", ""))) == SCRIPT:
            out.append({"target": name, "linker": table["linker"], "marked": marker.is_ours(text)})
    return out
