"""OTLP's protobuf encoding of the traces linkwrap sends, written by hand with the standard library.

encode(request) takes the OTLP/JSON ExportTraceServiceRequest that export.otlp() builds (ids in
hex, int64 as strings) and returns the same message in protobuf's binary wire format, as an
OTLP/HTTP receiver expects it with `Content-Type: application/x-protobuf` (the OTel SDKs' default,
OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf). Only the fields linkwrap fills are known here; the
field numbers are opentelemetry-proto's (opentelemetry/proto/trace/v1/trace.proto,
common/v1/common.proto, resource/v1/resource.proto, collector/trace/v1/trace_service.proto).
The tests decode the result with opentelemetry-proto's own generated classes.

Why by hand: the protobuf runtime is a large dependency for five message types, and the wire
format is small: a field is a varint key (number << 3 | wire type) and then a varint (0), eight
little-endian bytes (1), a varint length and that many bytes (2), or four bytes (5).
"""
import struct

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5


def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64   # int64: two's complement, ten bytes
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number, wire) -> bytes:
    return _varint(number << 3 | wire)


def _len(number, payload: bytes) -> bytes:
    return _key(number, BYTES) + _varint(len(payload)) + payload


def _str(number, text) -> bytes:
    return _len(number, text.encode("utf-8", "surrogateescape")) if text else b""


def _uint(number, n) -> bytes:
    return _key(number, VARINT) + _varint(int(n)) if n else b""


def _fixed64(number, n) -> bytes:
    return _key(number, FIXED64) + struct.pack("<Q", int(n)) if n else b""


def any_value(v: dict) -> bytes:
    """AnyValue: string_value 1, bool_value 2, int_value 3, double_value 4 (a oneof: always written)."""
    if "stringValue" in v:
        return _len(1, v["stringValue"].encode("utf-8", "surrogateescape"))
    if "boolValue" in v:
        return _key(2, VARINT) + _varint(1 if v["boolValue"] else 0)
    if "intValue" in v:
        return _key(3, VARINT) + _varint(int(v["intValue"]))
    if "doubleValue" in v:
        return _key(4, FIXED64) + struct.pack("<d", float(v["doubleValue"]))
    raise ValueError(f"an attribute value linkwrap does not send: {sorted(v)}")


def key_value(kv: dict) -> bytes:
    """KeyValue: key 1, value 2."""
    return _str(1, kv["key"]) + _len(2, any_value(kv["value"]))


def _attributes(number, attrs) -> bytes:
    return b"".join(_len(number, key_value(kv)) for kv in attrs or ())


def status(st: dict) -> bytes:
    """Status: message 2, code 3."""
    return _str(2, st.get("message")) + _uint(3, st.get("code"))


def span(s: dict) -> bytes:
    """Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start 7, end 8 (fixed64),
    attributes 9, status 15."""
    out = (_len(1, bytes.fromhex(s["traceId"])) + _len(2, bytes.fromhex(s["spanId"]))
           + (_len(4, bytes.fromhex(s["parentSpanId"])) if s.get("parentSpanId") else b"")
           + _str(5, s.get("name")) + _uint(6, s.get("kind"))
           + _fixed64(7, s.get("startTimeUnixNano")) + _fixed64(8, s.get("endTimeUnixNano"))
           + _attributes(9, s.get("attributes")))
    if s.get("status"):
        out += _len(15, status(s["status"]))
    return out


def scope_spans(ss: dict) -> bytes:
    """ScopeSpans: scope 1 (InstrumentationScope: name 1, version 2), spans 2."""
    scope = ss.get("scope") or {}
    out = _len(1, _str(1, scope.get("name")) + _str(2, scope.get("version"))) if scope else b""
    return out + b"".join(_len(2, span(s)) for s in ss.get("spans") or ())


def resource_spans(rs: dict) -> bytes:
    """ResourceSpans: resource 1 (Resource: attributes 1), scope_spans 2."""
    out = _len(1, _attributes(1, (rs.get("resource") or {}).get("attributes")))
    return out + b"".join(_len(2, scope_spans(ss)) for ss in rs.get("scopeSpans") or ())


def encode(request: dict) -> bytes:
    """ExportTraceServiceRequest: resource_spans 1."""
    return b"".join(_len(1, resource_spans(rs)) for rs in request.get("resourceSpans") or ())
