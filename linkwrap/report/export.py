"""Link records for a fleet: JSON lines, OTLP/JSON traces, and reading exports back.

write(db, stream, fmt) -> how many links: `linkwrap log export`.
  jsonl: one object per link, oldest first, FIELDS at the top level (record_uid
  is "uid"; JSON list columns are lists), the build under "build" (BUILD_FIELDS),
  "host", "machine" ({"cpus", "mem_total_mb"} at export time) and "schema" (SCHEMA). These names are a stable interface: a field
  may be added, none renamed or removed without a new SCHEMA.
  otlp: an OTLP/JSON ExportTraceServiceRequest (opentelemetry-proto's
  trace_service.proto in its JSON mapping, ids in hex as OTLP/JSON wants): one
  trace per build, whose root span is the build and whose children are its links,
  with the linker, write mode, filesystem, peak RSS, input and output bytes as
  attributes.
  With protobuf=True the same request in protobuf's binary encoding (otlp_proto.encode).
send_otlp(payload, environ): POST to $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
  $OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces (OTLP/HTTP), encoded as
  $OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else $OTEL_EXPORTER_OTLP_PROTOCOL, says: http/protobuf (the
  OTel SDKs' default, and linkwrap's) or http/json; grpc is not sent (a warning says so).
load(paths) -> {host: (in-memory store, machine)}: `linkwrap report --from`.
"""
import hashlib
import json
import os
import socket

from linkwrap.store import queries

SCHEMA = 1
FIELDS = (
    "started_utc", "output_path", "output_kind", "output_bytes", "crate_name", "crate_kind", "package_name",
    "primary_package", "linker", "linker_version", "linker_path", "asked_fuse_ld", "flags_added", "write_mode",
    "reasons", "fs_type", "fs_options", "kernel_release", "nlink_before", "output_held", "wall_ms", "user_ms",
    "sys_ms", "peak_rss_kb", "exit_status", "input_count", "input_bytes", "overhead_ms", "startup_ms",
    "fell_back", "first_exit_status", "first_wall_ms", "first_linker", "first_error", "fault", "driver",
    "cwd", "manifest_dir", "project_dir", "pid", "argv", "command",
    "predicted_peak_kb", "prediction_source", "charge_kb", "waited_ms", "wait_note", "mem_limit_mb",
    "compiles", "spawner_rss_kb",
)
BUILD_FIELDS = ("key", "tool", "command", "cwd", "project_dir", "build_dir", "started_utc", "finished_utc",
                "wall_ms", "exit_status")
_LISTS = ("flags_added", "reasons", "argv", "command", "first_command", "args_expanded")


def host() -> str:
    return socket.gethostname() or "unknown"


def machine() -> dict:
    """This machine as exports and reports name it: host, CPUs, memory."""
    mem = None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = int(line.split()[1]) // 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return {"host": host(), "cpus": os.cpu_count(), "mem_total_mb": mem}


def rows(db, *, project=None, since_utc=None, build_key=None):
    where, params = ["1"], []
    if build_key is not None:
        where.append("builds.build_key = ?")
        params.append(build_key)
    if project is not None:
        where.append("builds.project_dir = ?")
        params.append(project)
    if since_utc:
        where.append("links.started_utc >= ?")
        params.append(since_utc)
    return db.execute(
        "SELECT links.*, builds.build_key AS b_key, builds.tool AS b_tool, builds.command AS b_command, "
        "builds.cwd AS b_cwd, builds.project_dir AS b_project_dir, builds.build_dir AS b_build_dir, "
        "builds.started_utc AS b_started_utc, builds.finished_utc AS b_finished_utc, "
        "builds.wall_ms AS b_wall_ms, builds.exit_status AS b_exit_status "
        "FROM links JOIN builds ON builds.id = links.build_id "
        f"WHERE {' AND '.join(where)} AND links.output_path IS NOT NULL AND links.output_path != '' "
        "ORDER BY links.started_utc, links.id", params).fetchall()


def link_object(row, hostname, here=None) -> dict:
    from linkwrap.report.jsonout import rounded
    d = {"schema": SCHEMA, "host": hostname, "uid": row["record_uid"]}
    if here:  # the exporting machine's CPUs and memory, as of the export
        d["machine"] = {"cpus": here["cpus"], "mem_total_mb": here["mem_total_mb"]}
    for f in FIELDS:
        v = row[f]
        if f in _LISTS:
            v = queries.json_list(v)
        elif f in ("primary_package", "output_held", "fell_back", "compiles") and v is not None:
            v = bool(v)
        d[f] = v
    d["build"] = {f: row[f"b_{f}"] for f in BUILD_FIELDS}
    return rounded(d)


def build_spans(db, build_key, hostname=None):
    """The OTLP/JSON request for one build, or None when it linked nothing."""
    hostname = hostname or host()
    objects = [link_object(r, hostname) for r in rows(db, build_key=build_key)]
    return otlp(objects, hostname) if objects else None


def write(db, stream, *, fmt="jsonl", project=None, since_utc=None, hostname=None, protobuf=False) -> int:
    """protobuf (otlp only): stream is binary and gets the protobuf encoding."""
    here = machine()
    hostname = hostname or here["host"]
    objects = [link_object(r, hostname, here) for r in rows(db, project=project, since_utc=since_utc)]
    if fmt == "jsonl":
        for o in objects:
            stream.write(json.dumps(o, separators=(",", ":")) + "\n")
    elif protobuf:
        from linkwrap.report import otlp_proto
        stream.write(otlp_proto.encode(otlp(objects, hostname)))
    else:
        # dumps, not dump: json.dump streams through the pure-Python encoder (10x slower here).
        stream.write(json.dumps(otlp(objects, hostname), separators=(",", ":")) + "\n")
    return len(objects)


# --- OTLP/JSON ----------------------------------------------------------------

def _id(text, nbytes) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:2 * nbytes]


def _ms(utc) -> float:
    """'2026-11-30T07:53:01.870Z' -> milliseconds since the epoch (fromisoformat: ~20x strptime)."""
    from datetime import datetime
    return datetime.fromisoformat(utc.replace("Z", "+00:00")).timestamp() * 1000


def _attr(key, value):
    if isinstance(value, bool):
        v = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}  # int64 is a string in the JSON mapping
    elif isinstance(value, float):
        v = {"doubleValue": value}
    else:
        v = {"stringValue": str(value)}
    return {"key": key, "value": v}


def _attrs(pairs) -> list:
    return [_attr(k, v) for k, v in pairs if v is not None]


LINK_ATTRIBUTES = (  # span attribute <- link field
    ("linkwrap.linker", "linker"), ("linkwrap.linker.version", "linker_version"),
    ("linkwrap.write_mode", "write_mode"), ("linkwrap.fs.type", "fs_type"),
    ("linkwrap.peak_rss_kb", "peak_rss_kb"), ("linkwrap.spawner_rss_kb", "spawner_rss_kb"),
    ("linkwrap.input.bytes", "input_bytes"),
    ("linkwrap.input.count", "input_count"), ("linkwrap.output.bytes", "output_bytes"),
    ("linkwrap.output.path", "output_path"), ("linkwrap.output.kind", "output_kind"),
    ("linkwrap.crate.name", "crate_name"), ("linkwrap.crate.kind", "crate_kind"),
    ("linkwrap.exit_status", "exit_status"), ("linkwrap.fell_back", "fell_back"),
    ("linkwrap.overhead_ms", "overhead_ms"), ("linkwrap.startup_ms", "startup_ms"),
    ("linkwrap.user_ms", "user_ms"), ("linkwrap.sys_ms", "sys_ms"), ("os.kernel", "kernel_release"),
    ("linkwrap.memory.waited_ms", "waited_ms"), ("linkwrap.memory.predicted_kb", "predicted_peak_kb"),
)


def otlp(objects, hostname) -> dict:
    """jsonl objects -> ExportTraceServiceRequest (OTLP/JSON)."""
    from linkwrap import __version__
    spans, builds = [], {}
    for o in objects:
        builds.setdefault(o["build"]["key"], []).append(o)
    for key, links in builds.items():
        b = links[0]["build"]
        trace = _id(f"{hostname}\0{key}", 16)
        root = _id(f"{hostname}\0{key}\0build", 8)
        starts = [_ms(l["started_utc"]) for l in links]
        # A link's span holds its wait for memory (admission), if any, then its run.
        ends = [s0 + (l.get("waited_ms") or 0) + (l["wall_ms"] or 0) for s0, l in zip(starts, links)]
        start = min(starts + ([_ms(b["started_utc"])] if b["started_utc"] else []))
        end = max(ends + ([_ms(b["finished_utc"])] if b["finished_utc"] else []))
        span = {"traceId": trace, "spanId": root, "name": f"build {b['tool'] or '?'}", "kind": 1,
                "startTimeUnixNano": str(round(start) * 1_000_000), "endTimeUnixNano": str(round(end) * 1_000_000),
                "attributes": _attrs((("linkwrap.build.key", key), ("linkwrap.build.tool", b["tool"]),
                                      ("linkwrap.build.command", b["command"]), ("linkwrap.project.dir", b["project_dir"]),
                                      ("linkwrap.build.exit_status", b["exit_status"]),
                                      ("linkwrap.build.links", len(links))))}
        if b["exit_status"] not in (0, None):
            span["status"] = {"code": 2, "message": f"exit status {b['exit_status']}"}
        spans.append(span)
        for s0, end_ms, l in zip(starts, ends, links):
            link = {"traceId": trace, "spanId": _id(l["uid"], 8), "parentSpanId": root,
                    "name": f"link {l['crate_name'] or os.path.basename(l['output_path'] or '?')}", "kind": 1,
                    "startTimeUnixNano": str(round(s0 * 1000) * 1000),
                    "endTimeUnixNano": str(round(end_ms * 1000) * 1000),
                    "attributes": _attrs((a, l[f]) for a, f in LINK_ATTRIBUTES)}
            if l["exit_status"] not in (0, None):
                link["status"] = {"code": 2, "message": f"exit status {l['exit_status']}"}
            spans.append(link)
    resource = _attrs((("service.name", "linkwrap"), ("service.version", __version__), ("host.name", hostname),
                       ("os.type", "linux"), ("host.arch", os.uname().machine)))
    return {"resourceSpans": [{"resource": {"attributes": resource},
                               "scopeSpans": [{"scope": {"name": "linkwrap", "version": __version__},
                                               "spans": spans}]}]}


def endpoint(environ=os.environ):
    """Where OTLP/HTTP traces go, or None: the OTel SDK's variables, as they define them."""
    url = (environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or "").strip()
    if url:
        return url
    base = (environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "").strip()
    return base.rstrip("/") + "/v1/traces" if base else None


PROTOCOLS = ("http/protobuf", "http/json")
PROTOCOL_VARS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")


def protocol(environ=os.environ, default="http/protobuf"):
    """(protocol, None) from the OTel SDK's variables (the traces one first), else (None, why not):
    linkwrap speaks OTLP over HTTP only."""
    for var in PROTOCOL_VARS:
        value = (environ.get(var) or "").strip()
        if value:
            if value in PROTOCOLS:
                return value, None
            return None, (f"{var}={value}: linkwrap sends OTLP over HTTP only "
                          f"({' or '.join(PROTOCOLS)})")
    return default, None


def send_otlp(payload: dict, environ=os.environ):
    """POST payload as OTLP/HTTP, protobuf or JSON as the environment says; -> None when sent,
    else why not (one line)."""
    import urllib.error
    import urllib.parse
    import urllib.request
    url = endpoint(environ)
    proto, why = protocol(environ)
    if why:
        return why
    if proto == "http/protobuf":
        from linkwrap.report import otlp_proto
        headers, body = {"Content-Type": "application/x-protobuf"}, otlp_proto.encode(payload)
    else:
        headers, body = {"Content-Type": "application/json"}, json.dumps(payload, separators=(",", ":")).encode()
    for item in (environ.get("OTEL_EXPORTER_OTLP_HEADERS") or "").split(","):
        k, sep, v = item.partition("=")
        if sep and k.strip():
            headers[urllib.parse.unquote(k.strip())] = urllib.parse.unquote(v.strip())
    try:
        timeout = float(environ.get("OTEL_EXPORTER_OTLP_TIMEOUT") or 10000) / 1000
    except ValueError:
        timeout = 10.0
    try:
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
    except urllib.error.HTTPError as e:
        return f"{url} answered {e.code} {e.reason}"
    except (urllib.error.URLError, OSError, ValueError) as e:
        return f"{url}: {getattr(e, 'reason', None) or e}"
    return None


# --- reading exports back (`linkwrap report --from`) -------------------------

def load(paths) -> dict:
    """JSON-lines exports -> {host: (an in-memory store holding its builds and links, machine dict)}.

    Raises UsageError naming the file and line of anything that is not an export.
    """
    from linkwrap.errors import UsageError
    from linkwrap.store import db as store
    from linkwrap.store.spool import LINK_COLUMNS
    stores, build_ids = {}, {}
    for path in paths:
        try:
            f = open(path, encoding="utf-8")
        except OSError as e:
            raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
        with f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    o = json.loads(line)
                    if not isinstance(o, dict) or o.get("schema") != SCHEMA or "build" not in o:
                        raise ValueError("not a `linkwrap log export` record")
                except ValueError as e:
                    raise UsageError(f"{path}:{n}: {e} (give files written by `linkwrap log export`, "
                                     "--format jsonl)") from None
                h = o.get("host") or "unknown"
                if h not in stores:
                    stores[h] = (store.memory(), {"host": h, **(o.get("machine") or {})})
                conn = stores[h][0]
                b = o["build"]
                bid = build_ids.get((h, b["key"]))
                if bid is None:
                    conn.execute("INSERT OR IGNORE INTO builds (build_key, tool, command, cwd, project_dir, "
                                 "build_dir, started_utc, finished_utc, wall_ms, exit_status, last_seen_utc) "
                                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                 (b["key"], b["tool"], b["command"], b["cwd"], b["project_dir"], b["build_dir"],
                                  b["started_utc"], b["finished_utc"], b["wall_ms"], b["exit_status"],
                                  b["finished_utc"] or o["started_utc"]))
                    bid = build_ids[(h, b["key"])] = conn.execute(
                        "SELECT id FROM builds WHERE build_key = ?", (b["key"],)).fetchone()[0]
                conn.execute("UPDATE builds SET last_seen_utc = max(coalesce(last_seen_utc, ''), ?), "
                             "started_utc = coalesce(started_utc, ?) WHERE id = ?",
                             (o["started_utc"], o["started_utc"], bid))
                values = {c: o.get(c) for c in LINK_COLUMNS}
                values.update(record_uid=o.get("uid"), build_id=bid)
                for c in _LISTS:
                    if values.get(c) is not None:
                        values[c] = json.dumps(values[c])
                for c in ("primary_package", "output_held", "fell_back", "compiles"):
                    if values.get(c) is not None:
                        values[c] = int(bool(values[c]))
                values["fell_back"] = values["fell_back"] or 0
                conn.execute(f"INSERT OR IGNORE INTO links ({', '.join(LINK_COLUMNS)}) "
                             f"VALUES ({', '.join('?' for _ in LINK_COLUMNS)})",
                             [values[c] for c in LINK_COLUMNS])
    return stores
