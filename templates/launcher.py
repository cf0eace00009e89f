#!/bin/sh
# @tag@
# The entry point builds run: `@script@`, written by `linkwrap install`.
# It is both a shell script and a Python program. The shell part starts Python
# without site-packages processing (-S: 10-30 ms per link saved; the link path
# needs only the standard library and linkwrap), or, if that Python is gone,
# links exactly as asked.
''':'
py=@python_sh@
if [ -x "$py" ]; then exec "$py" -IS "$0" "$@"; fi
echo "linkwrap: warning: $py is gone; linking without linkwrap (run \`linkwrap install\` again)" >&2
@sh_fallback@
'''
import sys

sys.path.insert(0, @package_parent@)
try:
    from linkwrap.cc import @entry@ as entry
except ImportError:
    # linkwrap was uninstalled or moved: link exactly as asked, and say why.
    import os
    sys.stderr.write("linkwrap: warning: cannot import linkwrap from " + @package_parent@ +
                     "; linking without it (run `linkwrap install` again)\n")
    argv = sys.argv[1:]
    if @is_launcher@:
        argv = argv[1:] if argv[:1] == ["--"] else argv
    else:
        argv = [os.environ.get("LINKWRAP_CC") or "cc", *argv]
    os.execvp(argv[0], argv)
entry()
