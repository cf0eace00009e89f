"""`linkwrap log export` (JSON lines, OTLP/JSON), `linkwrap report --from`, and OTLP/HTTP from `linkwrap run`.

The OTLP output is parsed with the OpenTelemetry project's own protobuf definitions
(opentelemetry-proto) and received on a local HTTP endpoint (127.0.0.1 only).
"""
import base64
import http.server
import json
import os
import re
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from conftest import script, tool  # noqa: E402
from linkrecords import c_object, lw  # noqa: E402

from google.protobuf import json_format  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

from linkwrap.report import export  # noqa: E402


def project(tmp_path, name="proj", outputs=("app", "tool")):
    """A make project whose outputs link through linkwrap-cc; -> its directory."""
    d = tmp_path / name
    d.mkdir()
    c_object(d, "m")
    cc = script("linkwrap-cc")
    rules = "".join(f"{o}:\n\t{cc} m.o -o {o}\n" for o in outputs)
    (d / "Makefile").write_text(f"all: {' '.join(outputs)}\n{rules}")
    return d


def build(d, env=None):
    return lw("run", "--quiet", "--", "make", "-s", "-B", "all", cwd=d, env=env)


def otlp_request(text) -> ExportTraceServiceRequest:
    """OTLP/JSON -> the protobuf message. OTLP/JSON writes trace and span ids in hex where protobuf's
    JSON mapping has base64 (the OTLP specification's one deviation): convert, then parse strictly."""
    data = json.loads(text)
    for rs in data["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for k in ("traceId", "spanId", "parentSpanId"):
                    if k in span:
                        assert re.fullmatch(r"[0-9a-f]+", span[k]), span[k]
                        span[k] = base64.b64encode(bytes.fromhex(span[k])).decode()
    return json_format.Parse(json.dumps(data), ExportTraceServiceRequest())


def attributes(span) -> dict:
    out = {}
    for kv in span.attributes:
        which = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, which)
    return out


def check_traces(req, builds, links_per_build):
    [rs] = req.resource_spans
    res = attributes(rs.resource)
    assert res["service.name"] == "linkwrap" and res["host.name"] == export.host()
    spans = [s for ss in rs.scope_spans for s in ss.spans]
    roots = [s for s in spans if not s.parent_span_id]
    assert len(roots) == builds and len(spans) == builds * (1 + links_per_build)
    for root in roots:
        assert len(root.trace_id) == 16 and len(root.span_id) == 8 and root.name.startswith("build ")
        children = [s for s in spans if s.parent_span_id == root.span_id]
        assert len(children) == links_per_build
        for c in children:
            assert c.trace_id == root.trace_id and c.name.startswith("link ")
            assert root.start_time_unix_nano <= c.start_time_unix_nano <= c.end_time_unix_nano \
                <= root.end_time_unix_nano
            a = attributes(c)
            assert {"linkwrap.linker", "linkwrap.write_mode", "linkwrap.fs.type", "linkwrap.peak_rss_kb",
                    "linkwrap.input.bytes", "linkwrap.output.bytes"} <= set(a)
            assert a["linkwrap.peak_rss_kb"] > 0 and a["linkwrap.output.bytes"] > 0
            assert a["linkwrap.write_mode"] in ("fresh", "in-place")
    return spans


def test_jsonl_has_the_stable_fields_and_round_trips_into_a_report_of_two_machines(tmp_path, lw_home):
    d = project(tmp_path)
    build(d)
    build(d)
    mine = tmp_path / "here.jsonl"
    out = lw("log", "export", "-o", mine, cwd=d)
    assert out.stderr == f"Wrote {mine}: 4 links (jsonl)\n" and out.stdout == ""
    lines = [json.loads(line) for line in mine.read_text().splitlines()]
    assert len(lines) == 4
    for o in lines:
        assert set(export.FIELDS) <= set(o) and {"schema", "host", "uid", "build", "machine"} <= set(o)
        assert set(o["build"]) == set(export.BUILD_FIELDS)
        assert o["schema"] == export.SCHEMA and o["build"]["project_dir"] == str(d)
        assert o["exit_status"] == 0 and o["peak_rss_kb"] > 0 and isinstance(o["reasons"], list)
    # --since: nothing after now.
    assert lw("log", "export", "--since", "2999-01-01", cwd=d).stdout == ""

    # A second machine: the same tools under another host name (a UTS namespace of its own).
    other_home = tmp_path / "other-home"
    other = project(tmp_path, "elsewhere", outputs=("svc",))
    env = {"LINKWRAP_HOME": str(other_home)}
    build(other, env)
    theirs = tmp_path / "there.jsonl"
    subprocess.run([tool("unshare"), "--uts", "sh", "-c", f'hostname builder-2 && "$0" log export -o "$1"',
                    script("linkwrap"), str(theirs)], cwd=other, check=True, capture_output=True,
                   env={**os.environ, **env})
    assert {json.loads(line)["host"] for line in theirs.read_text().splitlines()} == {"builder-2"}

    page = lw("report", "--from", mine, theirs, "--html", "-", cwd=tmp_path).stdout
    sections = re.findall(r'<h1 class="machine" id="machine-([^"]+)">', page)
    assert sections == sorted([export.host(), "builder-2"])
    # Each machine's section holds its own links: 4 here, 1 there (a build of one link: a table row).
    here_part, there_part = (page.split('<h1 class="machine"')[1 + i] for i in
                             (sections.index(export.host()), sections.index("builder-2")))
    assert here_part.count('class="link-bar"') == 4 and there_part.count('class="link-bar"') == 0
    assert "1 build of one link each" in there_part
    assert "svc" in there_part and "svc" not in here_part

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "an export"}\n')
    done = lw("report", "--from", bad, cwd=tmp_path, check=False)
    assert done.returncode == 2 and done.stderr.startswith(f"linkwrap: error: {bad}:1: ")


def test_otlp_export_parses_with_the_opentelemetry_definitions(tmp_path, lw_home):
    d = project(tmp_path)
    build(d)
    build(d)
    text = lw("log", "export", "--format", "otlp", cwd=d).stdout
    check_traces(otlp_request(text), builds=2, links_per_build=2)
    # http/protobuf: the same request in protobuf's binary encoding, decoded by opentelemetry-proto
    proto = {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
    out = tmp_path / "traces.binpb"
    done = lw("log", "export", "--format", "otlp", "-o", out, cwd=d, env=proto)
    assert done.stderr == f"Wrote {out}: 4 links (otlp, http/protobuf)\n"
    req = ExportTraceServiceRequest.FromString(out.read_bytes())
    check_traces(req, builds=2, links_per_build=2)
    assert req == otlp_request(text)                       # field for field what the JSON says
    done = subprocess.run([script("linkwrap"), "log", "export", "--format", "otlp"], cwd=d, capture_output=True,
                          env={**os.environ, **proto})
    assert done.returncode == 0 and ExportTraceServiceRequest.FromString(done.stdout) == req
    # the traces variable wins; what linkwrap cannot send is one line
    env = {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}
    assert otlp_request(lw("log", "export", "--format", "otlp", cwd=d, env=env).stdout) == req
    done = lw("log", "export", "--format", "otlp", cwd=d, env={"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, check=False)
    assert done.returncode == 2 and done.stderr == ("linkwrap: error: OTEL_EXPORTER_OTLP_PROTOCOL=grpc: linkwrap sends "
                                                    "OTLP over HTTP only (http/protobuf or http/json)\n")


def test_the_protobuf_encoding_matches_the_opentelemetry_definitions_value_for_value():
    from linkwrap.report import otlp_proto
    span = {"traceId": "0123456789abcdef0123456789abcdef", "spanId": "0011223344556677",
            "parentSpanId": "8899aabbccddeeff", "name": "link ünïcode", "kind": 1,
            "startTimeUnixNano": str(1 << 62), "endTimeUnixNano": str((1 << 62) + 5),
            "attributes": export._attrs((("neg", -3), ("big", 1 << 40), ("zero", 0), ("f", 0.25), ("t", True),
                                         ("no", False), ("s", "x" * 300), ("empty", ""))),
            "status": {"code": 2, "message": "exit status 1"}}
    payload = {"resourceSpans": [{"resource": {"attributes": export._attrs((("service.name", "linkwrap"),))},
                                  "scopeSpans": [{"scope": {"name": "linkwrap", "version": "1"},
                                                  "spans": [span, dict(span, parentSpanId=None, status=None,
                                                                       spanId="0000000000000001")]}]}]}
    got = ExportTraceServiceRequest.FromString(otlp_proto.encode(payload))
    for s in payload["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for k in ("parentSpanId", "status"):
            if s.get(k) is None:
                s.pop(k, None)
    assert got == otlp_request(json.dumps(payload))
    assert attributes(got.resource_spans[0].scope_spans[0].spans[0])["neg"] == -3


class Collector(http.server.BaseHTTPRequestHandler):
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Collector.received.append((self.path, self.headers["Content-Type"], self.headers.get("X-Team"), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def test_run_sends_its_builds_spans_over_otlp_http_and_a_failed_send_is_a_warning(tmp_path, lw_home):
    server = http.server.HTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Collector.received = []
    try:
        d = project(tmp_path)
        url = f"http://127.0.0.1:{server.server_port}"
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_HEADERS": "x-team=links",
               "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        done = build(d, env)
        assert done.stderr == ""  # --quiet, and the send succeeded: nothing to say
        # One request for the whole build, at its end; the links themselves sent nothing.
        [(path, ctype, team, body)] = Collector.received
        # http/protobuf unless the environment says otherwise: the OTel SDKs' default
        assert path == "/v1/traces" and ctype == "application/x-protobuf" and team == "links"
        check_traces(ExportTraceServiceRequest.FromString(body), builds=1, links_per_build=2)
        Collector.received = []
        done = build(d, {**env, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})
        assert done.stderr == ""
        [(path, ctype, team, body)] = Collector.received
        assert path == "/v1/traces" and ctype == "application/json" and team == "links"
        check_traces(otlp_request(body), builds=1, links_per_build=2)
        done = build(d, {**env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"})
        assert done.returncode == 0 and len(Collector.received) == 1
        assert done.stderr == ("linkwrap: warning: could not send this build's spans: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
                               "=grpc: linkwrap sends OTLP over HTTP only (http/protobuf or http/json)\n")
    finally:
        server.shutdown()
        server.server_close()
    # Nobody listens there now: the build's status stands, and the failure is one warning.
    done = lw("run", "--quiet", "--", "make", "-s", "-B", "all", cwd=d, env=env)
    assert done.returncode == 0
    assert done.stderr.startswith(f"linkwrap: warning: could not send this build's spans: {url}/v1/traces")
    assert len(done.stderr.splitlines()) == 1
