"""A reverse proxy on 127.0.0.1 for the identity cases: it forwards every connection to the
dashboard and adds raw header lines to every request head *after* the client's own headers,
as an authenticating proxy configured to append (not replace) its header would. The lines
are bytes, so a UTF-8 display name travels exactly as such a proxy sends it.

Request bodies are forwarded by ``Content-Length``; after a websocket upgrade both directions
are piped unchanged."""

from __future__ import annotations

import socket
import threading

_END = b"\r\n\r\n"


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (source, target):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


class HeaderProxy:
    """``with HeaderProxy(upstream_port, b"X-User: alice@corp\\r\\n") as url:`` serves the
    dashboard at ``url`` with those lines added to each request."""

    def __init__(self, upstream_port: int, added: bytes) -> None:
        self.upstream_port = upstream_port
        self.added = added
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self._closed = False

    def __enter__(self) -> str:
        threading.Thread(target=self._accept, daemon=True).start()
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        self._closed = True
        self.server.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()
            threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket) -> None:
        buf = b""
        try:
            while True:
                while _END not in buf:
                    chunk = client.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                cut = buf.index(_END) + 2  # keep the head's last CRLF, add the lines, then the blank line
                head, buf = buf[:cut], buf[cut + 2 :]
                upstream.sendall(head + self.added + b"\r\n")
                body = _content_length(head)
                while len(buf) < body:
                    chunk = client.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                upstream.sendall(buf[:body])
                buf = buf[body:]
                if b"\r\nupgrade: websocket" in head.lower():
                    if buf:
                        upstream.sendall(buf)
                    _pipe(client, upstream)
                    return
        except OSError:
            return
        finally:
            try:
                upstream.shutdown(socket.SHUT_WR)
            except OSError:
                pass
