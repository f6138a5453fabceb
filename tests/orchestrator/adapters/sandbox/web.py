"""A small HTTP server on 127.0.0.1 for the proxy's tests: it says hello, with the path and
the ``Host`` header it was given."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello {self.path} (Host: {self.headers['Host']})\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def hello_server() -> Iterator[int]:
    """Serve on a free port of 127.0.0.1 for the block; the port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
