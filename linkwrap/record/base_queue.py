"""BASE QUEUE: which outputs want an incremental base built in the background (on the link path).

One empty file per output, <state>/incremental-bases/<manifest id> (0600 in a 0700 directory of this
user's, never written through a link): the pipeline touches it after a saved link that a full linker
made (policy Decision.wants_base), the warm server's builder (bench/incremental_base.py) takes the
oldest, and removes it once built unless it was asked again meanwhile (a newer mtime). A build that
failed leaves its one-line reason in the file, which no longer counts as wanted until the next save.
"""
import os

QUEUE = "incremental-bases"


def queue_dir(state=None) -> str:
    from linkwrap import paths
    return os.path.join(state or paths.state_dir(), QUEUE)


def want(cwd, output, state=None) -> None:
    """Ask for a base built from this output's saved link (its manifest is written by now)."""
    from linkwrap import paths
    from linkwrap.evidence.saved import manifest_id
    d = queue_dir(state)
    paths.make_private_dir(d)
    dfd = paths.open_private_dir(d, create=False)   # never written through a planted link
    try:
        fd = os.open(manifest_id(cwd, output), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600, dir_fd=dfd)
        os.close(fd)      # empty: wanted (a failed build writes its reason here)
    finally:
        os.close(dfd)


def wanted(state=None) -> list:
    """[(manifest id, mtime)] of the bases asked for and not failed, oldest first."""
    d = queue_dir(state)
    try:
        names = os.listdir(d)
    except OSError:
        return []
    out = []
    uid = os.getuid()
    for n in names:
        if len(n) != 8 or not all(c in "0123456789abcdef" for c in n):
            continue          # a builder's temporary name, or not ours
        try:
            st = os.lstat(os.path.join(d, n))
        except OSError:
            continue
        if st.st_uid == uid and st.st_size == 0 and (st.st_mode & 0o170000) == 0o100000:
            out.append((n, st.st_mtime_ns))
    return sorted(out, key=lambda x: x[1])


def done(ident, asked_ns, failure=None, state=None) -> None:
    """The marker gone (built), or holding why it failed; unless asked again since (a newer mtime)."""
    path = os.path.join(queue_dir(state), ident)
    try:
        st = os.lstat(path)
    except OSError:
        return
    if st.st_mtime_ns != asked_ns:
        return            # asked again while it was built: build again
    try:
        if failure is None:
            os.unlink(path)
        else:
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, "w") as f:
                f.write(failure[:500] + "\n")
            os.utime(path, ns=(asked_ns, asked_ns))
    except OSError:
        pass
