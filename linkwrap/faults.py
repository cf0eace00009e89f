"""linkwrap's own faults: kept in a log file, never shown during a link.

note() returns the one-line reason that goes into the link's record; the
traceback goes to $LINKWRAP_HOME/linkwrap.log (see `linkwrap log path`).
"""
import os


def note(doing: str, exc: BaseException) -> str:
    reason = f"linkwrap fault while {doing}: {type(exc).__name__}: {exc}"
    try:
        import time
        import traceback
        from linkwrap import __version__, paths
        path = paths.log_file()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        text = "".join(traceback.format_exception(exc))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"--- {stamp} linkwrap {__version__} pid {os.getpid()}\n{reason}\n{text}\n")
    except Exception:
        pass  # the log is a courtesy; the link goes on regardless
    return reason
