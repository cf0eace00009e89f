"""The marshal caches: atomic, and anything odd reads as empty."""
from linkwrap import cache


def test_round_trip_and_format(lw_home):
    cache.store("t.marshal", {"format": 3, "x": (1, "a")})
    assert cache.load("t.marshal", 3) == {"format": 3, "x": (1, "a")}
    assert cache.load("t.marshal", 4) == {"format": 4}  # another format: start afresh


def test_corrupt_or_unwritable_cache_costs_nothing_but_the_cache(lw_home):
    (lw_home / "cache").mkdir()
    (lw_home / "cache" / "t.marshal").write_bytes(b"\x00garbage")
    assert cache.load("t.marshal", 1) == {"format": 1}
    (lw_home / "cache").chmod(0o500)
    try:
        (lw_home / "cache" / "t.marshal").unlink()
        (lw_home / "cache" / "t.marshal").mkdir()  # a directory where the file goes: replace fails
        cache.store("t.marshal", {"format": 1})  # does not raise
    finally:
        (lw_home / "cache").chmod(0o700)
