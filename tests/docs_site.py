"""A real published docs site on loopback, for the widget tests: Debian's `python3.11-doc` HTML,
served as is, with the widget's one tag injected before `</body>` of every HTML page (unless the
query string holds `plain`, which serves the untouched page for comparison)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")  # apt-get install python3.11-doc


class _InjectingHandler(SimpleHTTPRequestHandler):
    def __init__(self, *args, tag: str, **kwargs) -> None:
        self.tag = tag.encode()
        super().__init__(*args, **kwargs)

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        path = Path(self.translate_path(unquote(url.path)))
        if path.is_dir():
            path = path / "index.html"
        if path.suffix != ".html" or not path.is_file() or "plain" in url.query:
            super().do_GET()
            return
        body = path.read_bytes().replace(b"</body>", self.tag + b"\n</body>", 1)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def serving_docs(port: int, tag: str, root: Path = PYTHON_DOCS) -> Iterator[str]:
    """Serve ``root`` on 127.0.0.1:``port`` with ``tag`` injected; yields the base URL."""
    handler = partial(_InjectingHandler, tag=tag, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()
