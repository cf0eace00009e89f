"""What git will commit decides what install writes (issue 34): a bare name or this machine's path.

Input: the file install edits (a Cargo config, a CMake preset file, a ninja file) and the entry
point's name. Output: the value to write and one line saying which and why. A file git will commit
(tracked, or in a work tree and not ignored) names no path of this machine: it gets the bare name,
which each teammate's PATH resolves. A personal file (ignored, outside any work tree, the global
Cargo config, a CMake build directory) gets the absolute path of the native client, the fast entry
point whatever PATH holds. The three installs share this so the rule reads the same everywhere.
"""
import os
import shlex
import subprocess

from linkwrap.install import marker


class Written:
    """How a file names its entry point, and what fails where that name is not found, for the lines
    install says: `linker = "linkwrap-cc"` and Cargo's "linker not found", or a launcher word at the
    front of a link command and the shell's "not found"."""

    def __init__(self, name, value, fails, others_fail, alone):
        self.name = name                # the bare name: linkwrap-cc, linkwrap-launch
        self.value = value              # how the file reads with it
        self.fails = fails              # what happens here when PATH does not find it
        self.others_fail = others_fail  # what teammates see when the file names this machine's path
        self.alone = alone              # the install that stays personal


def cargo_written(name: str) -> Written:
    return Written(name, f'linker = "{name}"', f'Cargo stops with "linker `{name}` not found"',
                   'teammates\' Cargo would stop with "linker not found"',
                   "`linkwrap uninstall` and `linkwrap install --global`")


def launcher_written(name: str, where: str) -> Written:
    """A launcher word at the front of a link command (a ninja rule, CMake's <LANG>_LINKER_LAUNCHER):
    the shell that runs the command looks it up on PATH."""
    return Written(name, f"{where} {name}", f'the link stops with "{name}: not found" (exit 127)',
                   "teammates' links would stop with \"not found\"",
                   "`linkwrap uninstall` and `linkwrap install --absolute`")


def git_status(path: str):
    """What git will do with path: 'tracked', 'untracked' (in a work tree and not ignored: the next
    `git add -A` commits it), 'ignored' (.gitignore, .git/info/exclude, core.excludesFile) or None (no
    git, no work tree). Untracked is not personal: a new .cargo/config.toml is committed as a matter
    of course, so what decides is whether git would leave it out (issue 34)."""
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    try:
        def git(*argv):
            return subprocess.run(["git", "-C", folder, *argv], capture_output=True, text=True, timeout=30)
        if git("rev-parse", "--is-inside-work-tree").stdout.strip() != "true":
            return None
        if git("ls-files", "--error-unmatch", "--", os.path.abspath(path)).returncode == 0:
            return "tracked"
        if git("check-ignore", "-q", "--", os.path.abspath(path)).returncode == 0:
            return "ignored"
        return "untracked"
    except (OSError, subprocess.SubprocessError):
        return None


def committed(state) -> bool:
    """Whether a file in this git state will be committed (and so must name no path of this machine)."""
    return state in ("tracked", "untracked")


WHY_STATE = {"tracked": "it is tracked by git", "untracked": "git will commit it (in a work tree, not ignored)",
             "ignored": "git ignores it", None: "it is in no git work tree", "global": "your own Cargo config",
             "build-dir": "a build directory is not committed"}


def on_path(name: str, environ=os.environ):
    """The `name` a bare name runs for a build with this PATH, or None when there is none, it is not
    linkwrap's, or it is a version manager's shim (~60 ms per link)."""
    import shutil
    found = shutil.which(name, path=environ.get("PATH", os.defpath))
    if not found or marker._is_shim(found) or not is_entry_point(found):
        return None
    return found


def is_entry_point(path: str) -> bool:
    """True when path looks like one of linkwrap's entry points: pip's console script, linkwrap's own
    script or a native client all name linkwrap in their text; a compiler someone called linkwrap-cc
    does not."""
    try:
        with open(path, "rb") as f:
            return b"linkwrap" in f.read(8 << 20)
    except OSError:
        return False


def is_native(path) -> bool:
    """True when path runs the native client (client.c), not a Python script: an ELF file."""
    from linkwrap.install.launcher import is_elf
    return is_elf(path)


def to_write(written: Written, absolute, environ=os.environ, shared=True, state="tracked", bare=False):
    """(the value to write, sentences saying why) for a file that is committed (shared) or personal.

    A file git will commit gets the bare name when PATH finds linkwrap's entry point, so that it works
    for everyone who has linkwrap -- and, when that is a Python script (pip's console script: ~20 ms of
    interpreter start a link), the one line that puts the native client first on PATH. A personal
    file gets `absolute()`'s path: the native client, the fast entry point, whatever PATH says. Without
    linkwrap on PATH, the absolute path either way, unless --bare asked for the name (state:
    git_status()'s word, "global" or "build-dir"; it says why in one line)."""
    name = written.name
    found = on_path(name, environ)
    because = WHY_STATE.get(state, str(state))
    if (found and shared) or bare:
        reason = "as asked (--bare)" if bare else because
        if found:
            why = [f"note: wrote the bare name {written.value} (on PATH: {found}): {reason}, and the name "
                   f"works for everyone with linkwrap installed and its bin directory on PATH"]
        else:
            why = [f"note: wrote the bare name {written.value} {reason}, but no {name} of linkwrap's is on "
                   f"PATH here: {written.fails} until it is"]
        if found and not is_native(found):
            fast = absolute()
            if is_native(fast):
                why.append(f"note: {found} is a Python script (its start costs ~20 ms a link); the native "
                           f"client skips it on this machine: export PATH={shlex.quote(os.path.dirname(fast))}:$PATH")
        return name, why
    path = absolute()
    if found:
        return path, [f"note: a personal file ({because}): wrote the absolute path {path}, "
                      f"{'the native client' if is_native(path) else 'linkwrap'}'s entry point on this machine; "
                      f"in a file git will commit, `linkwrap install` writes the bare name {name}"]
    from linkwrap.install.launcher import in_state_dir
    lasts = ("while linkwrap's state directory is kept" if in_state_dir(path)
             else "while linkwrap stays installed there (an upgrade or reinstall keeps the path)")
    return path, [f"note: {name} is not on PATH, so the absolute path {path} was written: it works on this "
                  f"machine only, {lasts}; with linkwrap's bin directory on "
                  f"PATH, `linkwrap install` writes the bare name (or `--bare` now)"]


def teammates(path: str, written: Written, value: str, state):
    """(notes, warnings) for the user when the edited file will be committed."""
    if not committed(state):
        return [], []
    where = "is tracked by git" if state == "tracked" else "will be committed (git does not ignore it)"
    if value == written.name:
        return [f"note: {path} {where}: once it is committed, every teammate and CI runner needs linkwrap "
                f"(`pip install .` in a checkout of linkwrap, {written.name} on PATH), or {written.fails}; "
                f"for yourself alone: {written.alone}"], []
    # An absolute path in a file git will commit: what decided was the command line or PATH, say which.
    return [], [f"{path} {where}, and {value} exists on this machine only: do not commit it "
                f"({written.others_fail}); "
                + (f"with {written.name} on PATH, `linkwrap install` writes the bare name (`--bare` does now)"
                   if on_path(written.name) is None else "`linkwrap install` without --absolute writes the bare name")
                + (", or use `linkwrap install --global`" if "--global" in written.alone else "")]
