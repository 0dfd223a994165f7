"""A hostile HTTP server for the client's tests: a real socket server on 127.0.0.1 (a thread a
connection) whose answer is set while it runs, written byte for byte on the socket, so it can do
what no framework lets a server do: send a byte a second, declare 10 GB and stream zeros, answer
200 with a login page, redirect elsewhere, or accept a connection and say nothing.

Usage::

    with HostileServer() as server:
        server.answer = deployment_answer(threshold=0.41)    # a valid deployment, with its ETag
        client = evalcore.Client(server.url, "evk_test", max_age=0)
        ...
        server.answer = drip(deployment_answer(), every=1.0)  # the same answer, a byte a second
        server.requests                                        # every request it read, in order
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: an answer: what the handler does with the connection once it has read the request
Behaviour = Callable[[socket.socket, "Request"], None]


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]


def deployment_json(**changes: Any) -> dict[str, Any]:
    """A deployment as the API answers it (``Deployment.to_json``), with ``changes``."""
    found: dict[str, Any] = {
        "name": "production",
        "decision_id": "1a2b3c4d5e6f",
        "threshold": 0.41,
        "run_id": "20261204-101500-3fa2c1",
        "configuration": "E/dense",
        "claim": {"max_bluff_rate": 0.05},
        "decided_by": "ana@example.org",
        "decided_at": "2026-12-04T10:15:00Z",
        "deployed_by": "key:ci",
        "deployed_at": "2026-12-04T10:16:00Z",
        "version": 1,
    }
    found.update(changes)
    return found


def response(status: int, body: bytes, headers: dict[str, str] | None = None) -> bytes:
    """The bytes of a whole HTTP/1.1 answer (``Content-Length`` from the body unless given)."""
    head = {"Content-Length": str(len(body)), "Connection": "close", **(headers or {})}
    lines = [f"HTTP/1.1 {status} {'OK' if status < 400 else 'Error'}"] + [f"{k}: {v}" for k, v in head.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def raw(data: bytes) -> Behaviour:
    """Send ``data`` as it is, then close."""

    def send(sock: socket.socket, request: Request) -> None:
        sock.sendall(data)

    return send


def deployment_answer(etag: str = '"v1-1a2b3c4d5e6f"', **changes: Any) -> Behaviour:
    """A valid deployment with its ETag; 304 to ``If-None-Match`` of that ETag."""
    body = json.dumps(deployment_json(**changes)).encode()

    def send(sock: socket.socket, request: Request) -> None:
        if request.headers.get("if-none-match") == etag:
            sock.sendall(response(304, b"", {"ETag": etag, "Content-Length": "0"}))
        else:
            sock.sendall(response(200, body, {"Content-Type": "application/json", "ETag": etag}))

    return send


def answer(status: int, body: bytes | str, content_type: str = "application/json", **headers: str) -> Behaviour:
    """One answer of ``status`` with ``body``."""
    data = body.encode() if isinstance(body, str) else body
    return raw(response(status, data, {"Content-Type": content_type, **headers}))


def drip(inner: Behaviour, every: float = 1.0) -> Behaviour:
    """What ``inner`` sends, a byte every ``every`` seconds (the status line included)."""

    def send(sock: socket.socket, request: Request) -> None:
        captured = _Capture()
        inner(captured, request)  # type: ignore[arg-type]
        for i in range(len(captured.data)):
            sock.sendall(captured.data[i : i + 1])
            time.sleep(every)

    return send


def slow_body(every: float = 1.0) -> Behaviour:
    """Headers at once (a JSON deployment of 200 bytes declared), then its body a byte every ``every`` s."""
    body = json.dumps(deployment_json()).encode()

    def send(sock: socket.socket, request: Request) -> None:
        whole = response(200, body, {"Content-Type": "application/json"})
        head = len(whole) - len(body)
        sock.sendall(whole[:head])
        for i in range(len(body)):
            sock.sendall(body[i : i + 1])
            time.sleep(every)

    return send


def zeros(declared: int | None = 10 * 1024**3) -> Behaviour:
    """200 JSON declaring ``declared`` bytes (None: chunked, no length), then zeros as fast as
    the client reads, until it closes the connection."""
    block = b"0" * 65536

    def send(sock: socket.socket, request: Request) -> None:
        if declared is None:
            head = {"Content-Type": "application/json", "Transfer-Encoding": "chunked", "Connection": "close"}
            lines = ["HTTP/1.1 200 OK"] + [f"{k}: {v}" for k, v in head.items()]
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
            chunk = f"{len(block):x}\r\n".encode() + block + b"\r\n"
            while True:
                sock.sendall(chunk)
        head = {"Content-Type": "application/json", "Content-Length": str(declared), "Connection": "close"}
        lines = ["HTTP/1.1 200 OK"] + [f"{k}: {v}" for k, v in head.items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        sent = 0
        while sent < declared:
            sock.sendall(block)
            sent += len(block)

    return send


def silent(hold: float = 60.0) -> Behaviour:
    """Read the request, answer nothing for ``hold`` seconds."""

    def send(sock: socket.socket, request: Request) -> None:
        time.sleep(hold)

    return send


def redirect(location: str, status: int = 302) -> Behaviour:
    return raw(response(status, b"", {"Location": location}))


class _Capture:
    """A stand-in socket that keeps what is sent to it (to replay it slowly)."""

    def __init__(self) -> None:
        self.data = b""

    def sendall(self, data: bytes) -> None:
        self.data += data


@dataclass
class HostileServer:
    """The server (start it with ``with``); ``answer`` may be set at any time, ``by_path`` answers
    a path with its own behaviour."""

    answer: Behaviour = field(default_factory=deployment_answer)
    by_path: dict[str, Behaviour] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    url: str = ""
    _server: socketserver.ThreadingTCPServer | None = None

    def __enter__(self) -> HostileServer:
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                sock: socket.socket = self.request
                sock.settimeout(30)
                try:  # one request a connection (every answer says Connection: close)
                    request = _read_request(sock)
                    if request is None:
                        return
                    owner.requests.append(request)
                    behaviour = owner.by_path.get(request.path.split("?", 1)[0], owner.answer)
                    behaviour(sock, request)
                except OSError:  # the client closed the connection (it cut the answer)
                    return

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])


def _read_request(sock: socket.socket) -> Request | None:
    """The request line and headers (a body, if any, is read by its Content-Length and dropped)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    left = int(headers.get("content-length", "0") or 0) - len(rest)
    while left > 0:
        chunk = sock.recv(min(left, 65536))
        if not chunk:
            break
        left -= len(chunk)
    return Request(method, path, headers)


def full_backlog() -> tuple[socket.socket, list[socket.socket]]:
    """A listening socket on 127.0.0.1 that never accepts, its queue filled: a connect to it
    waits (the kernel drops the SYN) as one to a host that does not answer would."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fill = []
    for _ in range(4):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fill.append(s)
    time.sleep(0.2)
    return listener, fill
