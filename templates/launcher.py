#!/bin/sh
# @tag@
# The entry point builds run: `@script@`, written by `linkwrap install`.
# It is both a shell script and a Python program. The shell part starts Python
# without site-packages processing (-S: 10-30 ms per link saved; the link path
# needs only the standard library and linkwrap), or, if that Python is gone,
# links exactly as asked.
''':'
py=@python_sh@
if [ -x "$py" ]; then
  # A ^C while Python starts would print "Fatal Python error: init_..." or a traceback: it starts with
  # SIGINT ignored (then it installs no handler of its own) and linkwrap.cc puts back SIG_DFL, unless
  # the caller ignored it already (SigIgn bit 2, read with builtins only).
  while read -r k v; do [ "$k" = SigIgn: ] && break; done < /proc/$$/status
  case $v in ''|*[2367abefABEF]) ;; *) trap '' INT; export LINKWRAP_SIGINT=default;; esac
  exec "$py" -IS "$0" "$@"
fi
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
    if os.environ.pop("LINKWRAP_SIGINT", None) == "default":  # the shell part ignored it for the start
        import _signal
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    sys.stderr.write("linkwrap: warning: cannot import linkwrap from " + @package_parent@ +
                     "; linking without it (run `linkwrap install` again)\n")
    argv = sys.argv[1:]
    if @is_launcher@:
        argv = argv[1:] if argv[:1] == ["--"] else argv
    else:
        argv = [os.environ.get("LINKWRAP_CC") or "cc", *argv]
    os.execvp(argv[0], argv)
entry()
