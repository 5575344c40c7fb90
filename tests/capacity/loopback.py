"""A loopback HTTP(S) server for fetcher tests: a fake of a cloud REST API, answering from a route table.

Each route maps (method, path) to a list of (status, JSON body) answers given in order (the last one
repeats), so a test can script throttling then success. Requests are recorded for assertions.
"""

from __future__ import annotations

import datetime as dt
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

Answer = tuple[int, dict[str, Any]]


@dataclass
class Fake:
    routes: dict[tuple[str, str], list[Answer]] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)  # method, path?query, headers
    url: str = ""

    def answer(self, method: str, path: str) -> Answer:
        answers = self.routes.get((method, path))
        if not answers:
            return 404, {"error": {"code": 404, "message": f"no fake route for {method} {path}"}}
        return answers.pop(0) if len(answers) > 1 else answers[0]


class JsonHandler(BaseHTTPRequestHandler):
    """A request handler that answers JSON and logs nothing."""

    def reply(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        return


def _handler(fake: Fake) -> type[BaseHTTPRequestHandler]:
    class Handler(JsonHandler):
        def do_GET(self) -> None:
            fake.requests.append(("GET", self.path, dict(self.headers)))
            self.reply(*fake.answer("GET", urlsplit(self.path).path))

    return Handler


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made here (test-only)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def service_account(directory: Path, token: str) -> Path:
    """A service-account-shaped directory (token, ca.crt) and the fake API server's key, for 127.0.0.1: the CA
    certificate signs itself and is the server's."""
    cert, _ = self_signed(directory)
    cert.rename(directory / "ca.crt")
    (directory / "token").write_text(token + "\n")
    return directory


@contextmanager
def listening(handler: type[BaseHTTPRequestHandler], tls: tuple[Path, Path] | None = None) -> Iterator[str]:
    """A threaded server on 127.0.0.1 with ``handler`` (HTTPS with ``tls``: certificate, key); its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    scheme = "http"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def https_servers(account: Path,
                  handler: Callable[[Any], type[BaseHTTPRequestHandler]]) -> Iterator[Callable[[Any], int]]:
    """start(fake) -> the port of an HTTPS server answering with ``handler(fake)`` under the certificate of a
    service-account directory (service_account); every server started is stopped on leaving."""
    with ExitStack() as servers:
        def start(fake: Any) -> int:
            url = servers.enter_context(listening(handler(fake), (account / "ca.crt", account / "key.pem")))
            return int(urlsplit(url).port or 0)

        yield start


@contextmanager
def serve(fake: Fake, tls: tuple[Path, Path] | None = None) -> Iterator[Fake]:
    with listening(_handler(fake), tls) as url:
        fake.url = url
        yield fake
