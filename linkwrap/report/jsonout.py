"""JSON as the commands print it: floats rounded, so `1.2345678901234` reads as 1.235.

Times are in milliseconds, so three decimals keep microseconds, more than any
figure linkwrap measures is worth; shares and fractions keep 0.1 %.
"""
import json

DECIMALS = 3


def rounded(value, decimals=DECIMALS):
    if isinstance(value, float):
        return round(value, decimals)
    if isinstance(value, dict):
        return {k: rounded(v, decimals) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(v, decimals) for v in value]
    return value


def dump(value, stream, **kw) -> None:
    """Indented JSON with rounded floats and a final newline."""
    kw.setdefault("indent", 2)
    json.dump(rounded(value), stream, **kw)
    stream.write("\n")
