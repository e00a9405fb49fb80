"""A loopback front that checks AWS Signature Version 4 the way AWS does, before Apache Iceberg's
REST server (test/support/sigv4-proxy.ts starts it with the python of moto's venv, where botocore
is installed with moto).

Every request must carry `Authorization: AWS4-HMAC-SHA256 Credential=<key id>/<date>/<region>/
<service>/aws4_request, SignedHeaders=..., Signature=...`. The front looks the key id up among the
keys the test gave it, checks what AWS checks before the signature (the request's time within 5
minutes of its own clock, the scope's date, region and signing name, the session token and whether
it has expired, the body's SHA-256 against `x-amz-content-sha256`), then recomputes the signature
with botocore's own SigV4 signer (`botocore.auth.SigV4Auth`: the canonical request from the
request as received, only the headers the request says it signed, the query decoded and encoded
again) and compares. A refusal answers as AWS's JSON services do: 403 (400 for a malformed header),
`x-amzn-ErrorType`, and `{"__type", "message"}`. Like a careless gateway, each refusal's message
also quotes back the session token it was sent and the `echo` text the test chose (the secret the
client signs with): the client must keep both out of what it prints.

It looks like AWS Glue's Iceberg REST endpoint: under `--base` (`/iceberg`), `GET /v1/config?
warehouse=<account id>` answers the prefix `catalogs/<account id>`, and `/v1/catalogs/<account
id>/...` goes to the server as `/v1/...`. A request that passes goes on without its signature.

Control (no signature): `POST /_proxy/state` with `{"keys": {"<key id>": {"secret": "...",
"sessionToken": "...", "expiresAt": <epoch s>}}, "clockOffsetSeconds": n, "echo": "..."}` (each
part optional), `GET /_proxy/log` for every request with its verdict.

A header named by `--require-signed` (lower case; repeatable), when a request carries it, must be
among the headers it signed (verdict `unsigned-header`, 403 otherwise): what the catalog behind acts
on (`x-iceberg-access-delegation`) cannot be added in transit.

Arguments: --port --upstream --region --service --base --warehouse --require-signed.
"""

import argparse
import datetime
import email.utils
import hashlib
import hmac
import http.client
import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$"
)
AMZ_DATE = "%Y%m%dT%H%M%SZ"
MISMATCH = (
    "The request signature we calculated does not match the signature you provided. "
    "Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
)

state = {"keys": {}, "clockOffsetSeconds": 0, "echo": None}
log = []
lock = threading.Lock()


def now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) + datetime.timedelta(seconds=state["clockOffsetSeconds"])


class Refusal(Exception):
    def __init__(self, verdict, status, kind, message):
        super().__init__(message)
        self.verdict, self.status, self.kind, self.message = verdict, status, kind, message


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def date_time_string(self, timestamp=None):
        # Every answer's Date is this front's clock, as AWS's answers carry AWS's.
        return email.utils.format_datetime(now().replace(tzinfo=datetime.timezone.utc), usegmt=True)

    def do_GET(self):
        self.handle_any()

    def do_POST(self):
        self.handle_any()

    def do_DELETE(self):
        self.handle_any()

    def do_HEAD(self):
        self.handle_any()

    def handle_any(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path.startswith("/_proxy/"):
            return self.control(body)
        record = {"method": self.command, "path": self.path, "verdict": "valid", "status": 0}
        try:
            record.update(self.verify(body))
        except Refusal as refusal:
            record["verdict"] = refusal.verdict
            record["status"] = refusal.status
            with lock:
                log.append(record)
            return self.refuse(refusal)
        with lock:
            log.append(record)
        self.forward(body, record)

    def verify(self, body):
        header = self.headers.get("authorization")
        if header is None:
            raise Refusal("anonymous", 403, "MissingAuthenticationTokenException", "Missing Authentication Token")
        match = AUTHORIZATION.match(header)
        if match is None:
            raise Refusal("malformed", 400, "IncompleteSignatureException", "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders'.")
        key_id, scope_date, region, service, signed, signature = match.groups()
        seen = {"accessKeyId": key_id, "region": region, "service": service, "signedHeaders": signed}
        key = state["keys"].get(key_id)
        if key is None:
            raise Refusal("unknown-key", 403, "UnrecognizedClientException", "The security token included in the request is invalid.")
        signed_names = signed.split(";")
        amz_date = self.headers.get("x-amz-date")
        if amz_date is None or "x-amz-date" not in signed_names or "host" not in signed_names:
            raise Refusal("unsigned-date", 403, "InvalidSignatureException", "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header, signed with host.")
        try:
            at = datetime.datetime.strptime(amz_date, AMZ_DATE)
        except ValueError:
            raise Refusal("malformed", 400, "IncompleteSignatureException", f"Date must be in ISO-8601 'basic format'. Got '{amz_date}'.")
        current = now()
        window = datetime.timedelta(minutes=5)
        if at < current - window:
            raise Refusal(
                "skewed", 403, "InvalidSignatureException",
                f"Signature expired: {amz_date} is now earlier than {(current - window).strftime(AMZ_DATE)} ({current.strftime(AMZ_DATE)} - 5 min.)",
            )
        if at > current + window:
            raise Refusal(
                "skewed", 403, "InvalidSignatureException",
                f"Signature not yet current: {amz_date} is still later than {(current + window).strftime(AMZ_DATE)} ({current.strftime(AMZ_DATE)} + 5 min.)",
            )
        if scope_date != amz_date[:8]:
            raise Refusal("scope", 403, "InvalidSignatureException", "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP.")
        if region != args.region:
            raise Refusal("scope", 403, "InvalidSignatureException", f"Credential should be scoped to a valid region, not '{region}'.")
        if service != args.service:
            raise Refusal("scope", 403, "InvalidSignatureException", f"Credential should be scoped to correct service: '{args.service}'.")
        token = self.headers.get("x-amz-security-token")
        if key.get("sessionToken") is not None:
            if token != key["sessionToken"]:
                raise Refusal("token-invalid", 403, "UnrecognizedClientException", "The security token included in the request is invalid.")
            if key.get("expiresAt") is not None and current.replace(tzinfo=datetime.timezone.utc).timestamp() >= key["expiresAt"]:
                raise Refusal("token-expired", 403, "ExpiredTokenException", "The security token included in the request is expired")
        elif token is not None:
            raise Refusal("token-invalid", 403, "UnrecognizedClientException", "The security token included in the request is invalid.")
        content_sha = self.headers.get("x-amz-content-sha256")
        if content_sha is not None and content_sha != hashlib.sha256(body).hexdigest():
            raise Refusal("body-hash", 400, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.")
        # The canonical request from the request as received: its path as sent, its query decoded
        # and encoded again by botocore, the headers it says it signed with their received values.
        parts = urllib.parse.urlsplit(self.path)
        headers = {name: ",".join(self.headers.get_all(name) or []) for name in signed_names}
        request = AWSRequest(
            method=self.command,
            url=f"http://{self.headers.get('host')}{parts.path}",
            headers=headers,
            data=body,
            params=urllib.parse.parse_qsl(parts.query, keep_blank_values=True),
        )
        request.context["timestamp"] = amz_date
        signer = SigV4Auth(Credentials(key_id, key["secret"], token), service, region)
        canonical = signer.canonical_request(request)
        expected = signer.signature(signer.string_to_sign(request, canonical), request)
        if not hmac.compare_digest(expected, signature):
            raise Refusal("mismatch", 403, "InvalidSignatureException", MISMATCH)
        # A header the catalog acts on (`--require-signed`) must be covered by the signature: one
        # added after signing passes the check above (only signed headers enter it) unprotected.
        for name in args.require_signed:
            if self.headers.get(name) is not None and name not in signed_names:
                raise Refusal("unsigned-header", 403, "AccessDeniedException", f"The {name} header is not among the signed headers.")
        return seen

    def refuse(self, refusal):
        echoed = [value for value in (self.headers.get("x-amz-security-token"), state["echo"]) if value]
        message = refusal.message + ("" if not echoed else f" (request credentials: {', '.join(echoed)})")
        payload = json.dumps({"__type": refusal.kind, "message": message}).encode()
        self.send_response(refusal.status)
        self.send_header("x-amzn-ErrorType", f"{refusal.kind}:http://internal.amazon.com/coral/com.amazon.coral.service/")
        self.send_header("content-type", "application/x-amz-json-1.1")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def forward(self, body, record):
        parts = urllib.parse.urlsplit(self.path)
        path = parts.path
        if path.startswith(args.base):
            path = path[len(args.base):]
        prefix = f"/v1/catalogs/{args.warehouse}/"
        if path == "/v1/config":
            asked = dict(urllib.parse.parse_qsl(parts.query)).get("warehouse")
            overrides = {"prefix": f"catalogs/{args.warehouse}"} if asked == args.warehouse else {}
            return self.answer(200, {"content-type": "application/json"}, json.dumps({"defaults": {}, "overrides": overrides}).encode(), record)
        if not path.startswith(prefix):
            payload = json.dumps({"error": {"message": f"no such path {path}", "type": "NotFoundException", "code": 404}}).encode()
            return self.answer(404, {"content-type": "application/json"}, payload, record)
        upstream = urllib.parse.urlsplit(args.upstream)
        connection = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=60)
        headers = {
            name: value for name, value in self.headers.items()
            if name.lower() not in ("authorization", "host", "content-length", "connection") and not name.lower().startswith("x-amz-")
        }
        target = "/v1/" + path[len(prefix):] + (f"?{parts.query}" if parts.query else "")
        connection.request(self.command, target, body=body if body else None, headers=headers)
        response = connection.getresponse()
        payload = response.read()
        answer_headers = {
            name: value for name, value in response.getheaders() if name.lower() not in ("transfer-encoding", "content-length", "connection")
        }
        connection.close()
        self.answer(response.status, answer_headers, payload, record)

    def answer(self, status, headers, payload, record):
        record["status"] = status
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def control(self, body):
        if self.command == "POST" and self.path == "/_proxy/state":
            update = json.loads(body or b"{}")
            with lock:
                state["keys"].update(update.get("keys", {}))
                if "clockOffsetSeconds" in update:
                    state["clockOffsetSeconds"] = update["clockOffsetSeconds"]
                if "echo" in update:
                    state["echo"] = update["echo"]
            payload = b"{}"
        else:
            with lock:
                payload = json.dumps(log).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--upstream", required=True)
parser.add_argument("--region", required=True)
parser.add_argument("--service", required=True)
parser.add_argument("--base", default="/iceberg")
parser.add_argument("--warehouse", required=True)
parser.add_argument("--require-signed", action="append", default=[], type=str.lower)
args = parser.parse_args()
ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()
