"""linkwrap.records.record: namedtuple's interface, immutable."""
import pytest

from linkwrap.records import record

Point = record("Point", "x y")


class Named(record("Named", ["a", "b", "c"])):
    __slots__ = ()

    @property
    def total(self):
        return self.a + self.b + self.c


def test_fields_by_name_position_and_keyword():
    p = Point(1, y=2)
    assert (p.x, p.y) == (1, 2) and p == (1, 2) and tuple(p) == (1, 2)
    assert Point._fields == ("x", "y") and p._asdict() == {"x": 1, "y": 2}
    assert p._replace(y=5) == Point(1, 5) and repr(p) == "Point(x=1, y=2)"
    assert Named(1, 2, 3).total == 6 and isinstance(Named(1, 2, 3)._replace(a=0), Named)


def test_immutable_and_strict():
    p = Point(1, 2)
    with pytest.raises(AttributeError):
        p.x = 3
    with pytest.raises(AttributeError):
        p.z = 3  # __slots__: no new attributes
    with pytest.raises(TypeError):
        Point(1)
    with pytest.raises(TypeError):
        Point(1, 2, 3)
    with pytest.raises(TypeError):
        Point(1, 2, z=3)
    with pytest.raises(TypeError):
        p._replace(z=1)


def test_defaults_fill_the_last_fields_only():
    Row = record("Row", "a b c", defaults=(None, 0))
    assert Row(1) == (1, None, 0) and Row(1, 2) == (1, 2, 0) and Row(1, 2, 3) == (1, 2, 3)
    assert Row(a=1) == (1, None, 0) and Row(1, b=2) == (1, 2, 0)
    with pytest.raises(TypeError):
        Row()
    with pytest.raises(TypeError):
        Row(a=1, c=3)   # b left out before a field that is given
    with pytest.raises(TypeError):
        Point(x=1)
