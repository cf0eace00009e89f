"""record(): the interface of collections.namedtuple, for the link path's stage records.

An immutable tuple with named fields, _fields, _replace() and _asdict().
Why not namedtuple itself: `import collections` costs ~3.4 ms in the
interpreter linkwrap-cc runs (python -I -S, where site has not imported it),
and namedtuple builds each class with exec(). Why not a frozen dataclass:
`import dataclasses` costs ~16 ms (docs/hot-path.md, "The import budget").
"""
from _operator import itemgetter  # built in: `operator` is a module to import


def record(name: str, fields, defaults=()) -> type:
    """A tuple subclass named `name` with one read-only property per field; `defaults` are the
    last fields' values when left out (namedtuple's `defaults`)."""
    fields = tuple(fields.replace(",", " ").split() if isinstance(fields, str) else fields)
    count = len(fields)
    defaults = tuple(defaults)

    def __new__(cls, *values, **named):
        if named:
            rest = fields[len(values):]
            given = [f for f in rest if f in named]
            # Fields left out must be the last ones, and have defaults.
            if rest[:len(given)] != tuple(given) or len(rest) - len(given) > len(defaults):
                missing = next(f for f in rest if f not in named)
                raise TypeError(f"{name}() is missing '{missing}'")
            values += tuple(named.pop(f) for f in given)
            if named:
                raise TypeError(f"{name}() got unexpected fields {sorted(named)}")
        if len(values) < count and count - len(values) <= len(defaults):
            values += defaults[len(defaults) - (count - len(values)):]
        if len(values) != count:
            raise TypeError(f"{name}() takes {count} fields, not {len(values)}")
        return tuple.__new__(cls, values)

    def _replace(self, **changes):
        new = type(self)(*[changes.pop(f, v) for f, v in zip(fields, self)])
        if changes:
            raise TypeError(f"{name} has no fields {sorted(changes)}")
        return new

    def _asdict(self) -> dict:
        return dict(zip(fields, self))

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{f}={v!r}' for f, v in zip(fields, self))})"

    def __getnewargs__(self):
        return tuple(self)

    namespace = {"__slots__": (), "_fields": fields, "__new__": __new__, "_replace": _replace,
                 "_asdict": _asdict, "__repr__": __repr__, "__getnewargs__": __getnewargs__}
    for index, field_name in enumerate(fields):
        # itemgetter, not a lambda: a field read is then no Python call (~100 of them a link).
        namespace[field_name] = property(itemgetter(index), doc=field_name)
    return type(name, (tuple,), namespace)
