"""`make demo-self`: citedocs answering questions about itself, on its own docs site.

Builds the docs site (``mkdocs build --strict``) with the citedocs widget on every page pointed at
the local server, serves the built site on ``--site-port``, and runs ``citedocs up`` on it: the
built site is ingested as the corpus ``citedocs`` (its HTML, so the generated reference pages are
in it too; citations link into the local site), then the server starts with the site's origin
allowed to call it. Open the docs site and press Ctrl+K, or open the chat URL it prints. A second
run re-embeds only what changed. Ctrl+C stops both.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = "citedocs"


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the citedocs server's log is the one to read
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000, help="the citedocs server's port")
    parser.add_argument("--site-port", type=int, default=8001, help="the docs site's port")
    parser.add_argument("--site-dir", type=Path, default=REPO / "site", help="where the site is built")
    args = parser.parse_args()
    site_url = f"http://127.0.0.1:{args.site_port}/"
    try:  # bound first, so a port in use fails before the build and the ingest
        site = ThreadingHTTPServer(("127.0.0.1", args.site_port), functools.partial(QuietHandler, directory=str(args.site_dir)))
    except OSError as exc:
        print(f"error: cannot serve the docs site on port {args.site_port} ({exc.strerror}); pass --site-port with a free port", file=sys.stderr)
        return 2
    env = {**os.environ, "CITEDOCS_WIDGET_SERVER": f"http://127.0.0.1:{args.port}", "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    print(f"$ mkdocs build --strict --site-dir {args.site_dir}", flush=True)
    if subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(args.site_dir)], cwd=REPO, env=env).returncode:
        print("error: the docs site did not build; `make docs` shows why", file=sys.stderr)
        return 1
    threading.Thread(target=site.serve_forever, daemon=True).start()
    origins = ",".join(filter(None, [os.environ.get("CITEDOCS_CORS_ORIGINS"), site_url.rstrip("/")]))
    print(f"docs site with the widget: {site_url} (once the chat URL below is printed)", flush=True)
    up = [sys.executable, "-m", "citedocs.cli", "up", str(args.site_dir), "--corpus", CORPUS, "--format", "html"]
    server = subprocess.Popen(
        [*up, "--base-url", site_url, "--port", str(args.port)], env={**os.environ, "CITEDOCS_CORS_ORIGINS": origins}
    )
    signal.signal(signal.SIGTERM, lambda *_: server.terminate())  # stopping the demo stops its server too
    try:
        return server.wait()
    except KeyboardInterrupt:  # Ctrl+C reaches the server as well, which shuts down by itself
        return server.wait()
    finally:
        site.shutdown()


if __name__ == "__main__":
    sys.exit(main())
