"""A stand-in for jupyter-server-proxy in tests: serves a server under a path, stripping it from each
request before passing it on (its `absolute_url: False`), every header kept (Host and Origin too, as
it does). HTTP only; enough for pages, their modules and their fetches."""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class PrefixProxy:
    def __init__(self, prefix: str, port: int):
        self.prefix, self.port = prefix, port
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self._forward()

            do_POST = do_DELETE = do_PUT = do_GET

            def _forward(self):
                if not self.path.startswith(proxy.prefix + "/"):
                    self.send_error(404, f"not under {proxy.prefix}/")
                    return
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                upstream = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                upstream.request(self.command, self.path[len(proxy.prefix):], body=body or None, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in HOP_BY_HOP | {"content-length"}:
                        self.send_header(key, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                upstream.close()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{prefix}"

    def __enter__(self) -> "PrefixProxy":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
