"""Symbol lists the command line names: --dynamic-list files and --export-dynamic-symbol(-list)
patterns (what is exported, and in a shared object what stays interposable), and --exclude-libs
(the archives whose members export nothing).

Input: Options' fields and a file's text; output: predicates over names or Symbols, which
gc, synthetic and version_script ask.
"""
from linkwrap.ld.diag import BadInput, Unsupported


def read_dynamic_list(path):
    """A --dynamic-list file: `{ sym; pattern*; };` -> the names and glob patterns in it."""
    from linkwrap.ld.diag import read_text
    text = read_text(path, "dynamic list")
    import re
    text = re.sub(r"/\*.*?\*/|#[^\n]*", " ", text, flags=re.S)
    body = text.strip()
    if not (body.startswith("{") and body.rstrip(";").rstrip().endswith("}")):
        raise BadInput(f"{path}: syntax error in dynamic list")
    body = body[1:body.rstrip(";").rstrip().rfind("}")]
    names = []
    for item in body.split(";"):
        item = item.strip()
        if not item:
            continue
        if item.startswith("extern") or ":" in item or "{" in item or '"' in item:
            raise Unsupported(f"dynamic list entry `{item}' in {path} (only plain names and globs)")
        if not re.fullmatch(r"[A-Za-z0-9_.$@*?\[\]]+", item):
            raise BadInput(f"{path}: syntax error in dynamic list near `{item}'")
        names.append(item)
    return names


def dynamic_list_matcher(patterns):
    """--dynamic-list: plain names and glob patterns -> name -> bool."""
    if not patterns:
        return lambda name: False
    plain = {p for p in patterns if not any(c in p for c in "*?[")}
    globs = [p for p in patterns if p not in plain]
    if not globs:
        return plain.__contains__
    import fnmatch
    return lambda name: name in plain or any(fnmatch.fnmatchcase(name, g) for g in globs)


def shared_interposable_list(opts):
    """-shared: the matcher of the only exports that stay interposable, or None (GNU ld 2.40: a
    --dynamic-list file, or --export-dynamic-symbol with -Bsymbolic(-functions), makes exactly the
    listed ones interposable, whatever -Bsymbolic says; --export-dynamic-symbol alone changes nothing)."""
    if opts.dynamic_list_given or (opts.bsymbolic and opts.export_symbols):
        return dynamic_list_matcher(opts.dynamic_list + opts.export_symbols)
    return None


def excluded_from_export(exclude_libs):
    """--exclude-libs: -> symbol -> whether an archive member the list names defines it (GNU ld's
    check_excluded_libs: 'ALL', or the archive's base name, with or without its '.a')."""
    if not exclude_libs:
        return lambda s: False
    every = "ALL" in exclude_libs
    names = set(exclude_libs)

    def excluded(s):
        obj = s.file
        if obj is None or obj.archive is None:
            return False
        if every:
            return True
        base = obj.archive.name.rsplit("/", 1)[-1]
        return base in names or (base.endswith(".a") and base[:-2] in names)
    return excluded
