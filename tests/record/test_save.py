"""linkwrap.record.save: what is kept, how, and the size cap."""
import os
import stat

import pytest

from linkwrap.record import save
from linkwrap.request import args


def request(tmp_path, out, *inputs, extra=()):
    return args.parse([*map(str, inputs), *extra, "-o", str(out)], driver="cc", environ={}, cwd=str(tmp_path))


class Done:
    wall_ms = 12.0
    linker = "mold 1.10.1"


def make(path, size):
    path.write_bytes(os.urandom(size))
    return path


def test_inputs_are_hard_linked_and_stable_ones_referenced(tmp_path, lw_home):
    a = make(tmp_path / "a.o", 1000)
    script = make(tmp_path / "list.ver", 10)
    out = make(tmp_path / "app", 50)
    libc = "/usr/lib/x86_64-linux-gnu/libc.so.6" if os.path.exists("/usr/lib/x86_64-linux-gnu/libc.so.6") else None
    extra = [f"-Wl,--version-script={script}"] + ([libc] if libc else [])
    path = save.save(request(tmp_path, out, a, extra=extra), Done())
    m = save.load(path)
    how, where, size, _ = m["files"][str(a)]
    assert how == "object" and size == 1000
    assert os.stat(where).st_ino == os.stat(a).st_ino           # a hard link: nothing copied
    assert m["copied_bytes"] == 0 and m["e_type"] is None        # "app" is no ELF file
    assert m["files"][str(script)][0] == "object"                # named inside -Wl,--version-script=
    if libc:
        assert m["files"][libc][0] == "stable"
    # private whatever the umask
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(where)).st_mode) == 0o700
    # the build deletes its objects: the replay arguments point into the store
    os.unlink(a)
    os.unlink(script)
    replayed = save.replay_args(m)
    assert where in replayed and f"-Wl,--version-script={m['files'][str(script)][1]}" in replayed


def test_a_saved_input_that_changed_is_one_clear_line(tmp_path, lw_home):
    a = make(tmp_path / "a.o", 100)
    m = save.load(save.save(request(tmp_path, tmp_path / "app", a), Done()))
    with open(m["files"][str(a)][1], "ab") as f:   # the same inode, written in place
        f.write(b"x")
    with pytest.raises(save.SaveError, match=r"changed since the link was saved \(100 -> 101 bytes\)"):
        save.replay_args(m)


def test_the_store_cap_evicts_the_least_recently_used(tmp_path, lw_home):
    paths = []
    for i in range(3):
        obj = make(tmp_path / f"in{i}.o", 4000)
        paths.append(save.save(request(tmp_path, tmp_path / f"out{i}", obj), Done()))
        os.utime(paths[-1], (1000 + i, 1000 + i))
    os.utime(paths[0], (2000, 2000))           # replayed lately: most recently used
    removed = save.evict(8000)
    assert removed == [paths[1]]
    kept = save.all_saved()
    assert {m["path"] for m in kept} == {paths[0], paths[2]}
    store = os.path.dirname(next(iter(kept[0]["files"].values()))[1])
    assert len(os.listdir(store)) == 2         # the evicted link's object is gone too


def test_a_store_directory_of_someone_else_is_refused(tmp_path, lw_home):
    os.makedirs(lw_home, exist_ok=True)
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, lw_home / "saved")
    a = make(tmp_path / "a.o", 10)
    with pytest.raises(save.SaveError, match="not a directory of this user's"):
        save.save(request(tmp_path, tmp_path / "app", a), Done())


def test_save_largest_keeps_a_projects_three_largest_outputs(tmp_path, lw_home):
    from linkwrap.request import config
    settings = config.merge([("project file", {"bench": {"save": "largest"}})], {})

    class Facts:
        def __init__(self, n):
            self.input_bytes = n

    def link(name, size):
        obj = make(tmp_path / f"{name}.o", 10)
        req = request(tmp_path, tmp_path / name, obj)
        if save.wanted(req, Facts(size), {}, settings):
            save.save(req, Done())

    for name, size in (("a", 100), ("b", 300), ("c", 200), ("tiny", 50), ("d", 400)):
        link(name, size)
    assert {os.path.basename(m["output"]) for m in save.all_saved()} == {"b", "c", "d"}
    assert not save.wanted(request(tmp_path, tmp_path / "x", make(tmp_path / "x.o", 1)), Facts(10), {},
                           config.merge([], {}))
    assert save.wanted(request(tmp_path, tmp_path / "x", make(tmp_path / "x.o", 1)), Facts(10),
                       {"LINKWRAP_SAVE": "1"}, config.merge([], {}))


@pytest.mark.parametrize("fstype, copies", [("btrfs", False), ("ext4", True)])
def test_where_no_hard_link_can_be_made_a_clone_then_a_counted_copy(tmp_path, lw_home, monkeypatch, fstype, copies):
    """btrfs clones the blocks (FICLONE): nothing copied; ext4 cannot clone: the copy is counted.
    The store sits on the output's filesystem (a loop mount here, not the state directory's)."""
    import mounts

    def refuse(*a, **k):   # as fs.protected_hardlinks refuses another user's file
        raise PermissionError(1, "Operation not permitted")

    with mounts.loop_mount(tmp_path, fstype) as point:
        obj = make(tmp_path.__class__(point) / "a.o", 1 << 20)
        monkeypatch.setattr(os, "link", refuse)
        m = save.load(save.save(request(tmp_path, tmp_path.__class__(point) / "app", obj), Done()))
        monkeypatch.undo()
        how, where, size, _ = m["files"][str(obj)]
        assert how == "object" and where.startswith(os.path.join(point, ".linkwrap-saved"))
        assert os.stat(where).st_dev == os.stat(point).st_dev
        with open(where, "rb") as a, open(obj, "rb") as b:
            assert a.read() == b.read()
        assert m["copied_bytes"] == (size if copies else 0)


def test_a_link_that_compiles_too_saved_before_is_not_benchmarked(tmp_path, lw_home):
    # Saved by a linkwrap that did not yet leave such links out: bench says why, in one line.
    import subprocess
    from conftest import script
    (tmp_path / "main.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["cc", "main.c", "-o", "app"], cwd=tmp_path, check=True)
    save.save(args.parse(["main.c", "-o", str(tmp_path / "app")], driver="cc", environ={}, cwd=str(tmp_path)),
              Done())
    done = subprocess.run([script("linkwrap"), "bench", "--budget", "1", "app"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "compiles sources too" in done.stderr and done.stdout == "", done


# --- saved without asking ---------------------------------------------------------------------

def cargo_build(root, target, lw_home, **env):
    """A real `cargo build` through linkwrap-cc; env values of None are left out (not inherited)."""
    from cargokit import env_name, host_triple
    from conftest import script
    import subprocess
    env = {**os.environ, "CI": None, "LINKWRAP_SAVE": None, "LINKWRAP_HOME": str(lw_home),
           "CARGO_TARGET_DIR": str(target), env_name(host_triple()): script("linkwrap-cc"), **env}
    done = subprocess.run(["cargo", "build", "--quiet"], cwd=root, env={k: v for k, v in env.items() if v is not None},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def test_a_first_cargo_build_saves_its_link_with_no_flag_and_it_replays(tmp_path, lw_home):
    import json
    from cargokit import new_crate
    from clirun import linkwrap
    root = new_crate(tmp_path)
    cargo_build(root, tmp_path / "target", lw_home)
    saved = save.all_saved()
    assert [os.path.basename(os.path.dirname(m["output"])) for m in saved] == ["deps"], saved
    (m,) = saved
    assert os.path.basename(m["output"]).startswith("hello-") and m["kind"] in ("pie", "exec")
    # rustc's temporary inputs are gone; the saved copies stand in for them
    assert m["files"] and any(how == "object" for how, *_ in m["files"].values())
    assert save.replay_args(m)
    # ...and `linkwrap bench` replays it, with no `linkwrap run --save` before
    done = linkwrap("bench", "--json", "--budget", "1", "--linker", "rust-lld", cwd=root,
                    env={"LINKWRAP_HOME": str(lw_home)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["rows"][0]["runs"] >= 3


def test_linkwrap_save_0_and_ci_save_nothing(tmp_path, lw_home):
    from cargokit import new_crate
    root = new_crate(tmp_path)
    cargo_build(root, tmp_path / "target", lw_home, LINKWRAP_SAVE="0")
    assert save.all_saved() == []
    cargo_build(root, tmp_path / "target-ci", lw_home, CI="true")
    assert save.all_saved() == []


def test_the_defaults_and_what_turns_saving_off():
    from linkwrap.request import config
    assert config.merge([], {}).save == "largest"
    off = config.merge([("project file", {"bench": {"save": "all"}})], {"LINKWRAP_SAVE": "0"})
    assert (off.save, off.sources["bench.save"]) == ("off", "env LINKWRAP_SAVE")
    ci = config.merge([], {"CI": "true"})
    assert (ci.save, ci.sources["bench.save"]) == ("off", "env CI")
    assert config.merge([], {"CI": "false"}).save == "largest"
    # a file's own word wins over CI's default
    assert config.merge([("project file", {"bench": {"save": "largest"}})], {"CI": "1"}).save == "largest"


def test_saving_by_default_only_hard_links_and_makes_no_store_on_another_filesystem(tmp_path, lw_home):
    """Nobody asked (the default): an output on another filesystem than the state directory is not
    saved, and nothing is made there; an input that cannot be hard-linked is not copied."""
    import mounts
    with mounts.loop_mount(tmp_path, "ext4") as point:
        obj = make(tmp_path.__class__(point) / "a.o", 1 << 16)
        with pytest.raises(save.SaveError):
            save.save(request(tmp_path, tmp_path.__class__(point) / "app", obj), Done(), links_only=True)
        assert not os.path.exists(os.path.join(point, ".linkwrap-saved"))
    other = tmp_path / "elsewhere"
    other.mkdir()
    with mounts.loop_mount(other, "ext4") as point:   # the input there, the output beside the state
        obj = make(tmp_path.__class__(point) / "b.o", 1 << 16)
        with pytest.raises(save.SaveError, match="no hard link"):
            save.save(request(tmp_path, tmp_path / "app", obj), Done(), links_only=True)
    assert save.all_saved() == []


def test_inputs_kept_during_the_link_then_the_manifest(tmp_path, lw_home):
    """keep_inputs() (while the linker runs) hard-links what the build will delete; save() with it
    writes the manifest only; drop() takes back what a failed link made and nothing else."""
    a = make(tmp_path / "a.o", 100)
    out = make(tmp_path / "app", 10)
    req = request(tmp_path, out, a)
    kept = save.keep_inputs(req, links_only=True)
    where = kept.files[str(a)][1]
    assert kept.made == (where,) and os.stat(where).st_ino == os.stat(a).st_ino
    os.unlink(a)                                     # rustc deletes it once the link returns
    m = save.load(save.save(req, Done(), kept=kept))
    assert m["files"][str(a)][1] == where and save.replay_args(m)[0] == where
    assert kept.first                                # no saved link of this output yet: before the answer
    again = save.keep_inputs(req, links_only=True)   # gone now: nothing to keep, nothing made
    assert again.files == {} and again.made == () and not again.first  # a relink's: after it
    b = make(tmp_path / "a.o", 200)                  # the next build's object, a new identity
    failed = save.keep_inputs(req, links_only=True)
    assert failed.made and failed.files[str(b)][1] != where
    save.drop(failed)                                # that link failed: its object goes, the first stays
    assert not os.path.exists(failed.made[0]) and os.path.exists(where)


def test_a_changed_input_is_kept_as_its_new_content(tmp_path, lw_home):
    a = make(tmp_path / "a.o", 100)
    out = make(tmp_path / "app", 10)
    first = save.keep_inputs(request(tmp_path, out, a), links_only=True).files[str(a)][1]
    with open(a, "ab") as f:                         # written again in place: another size and mtime
        f.write(b"more")
    second = save.keep_inputs(request(tmp_path, out, a), links_only=True).files[str(a)][1]
    assert second != first and os.path.getsize(second) == 104


def test_stable_is_told_from_the_real_path_with_directories_found_once(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "f.o").write_bytes(b"x")
    (tmp_path / "via").symlink_to(real)
    (tmp_path / "link.o").symlink_to(real / "f.o")
    dirs = {}
    for p in (tmp_path / "via" / "f.o", tmp_path / "link.o", real / "f.o", tmp_path / "via" / ".."):
        assert save._real_path(str(p), dirs) == os.path.realpath(p)


def test_a_relink_of_inputs_already_in_the_store_is_known_until_their_object_goes(tmp_path, lw_home):
    """What the store holds is kept by the input's identity: removing the store's hard link changes
    the input's link count and so its ctime, and the next keep links it again."""
    from linkwrap.request import inputs
    a = make(tmp_path / "a.o", 100)
    req = request(tmp_path, make(tmp_path / "app", 10), a)
    where = save.keep_inputs(req, links_only=True).files[str(a)][1]
    assert inputs.known(("in store", os.path.dirname(where)), os.stat(a))  # the next link makes no link()
    assert save.keep_inputs(req, links_only=True).made == ()
    os.unlink(where)                                 # evicted (or the store removed)
    assert not inputs.known(("in store", os.path.dirname(where)), os.stat(a))
    again = save.keep_inputs(req, links_only=True)
    assert again.made == (where,) and os.stat(where).st_ino == os.stat(a).st_ino
