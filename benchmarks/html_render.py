"""What rendering costs when an HTML folder is read: pages on the fast path, ms per rendered page, memory.

    python benchmarks/html_render.py /usr/share/doc/python3.11/html [--render-all]

For each page (generated pages such as genindex excluded, as ingest excludes them): whether it takes
the fast path (nothing on it could hide text) or why it is rendered, and how long the render took
(Chromium laying it out plus ``visibility.js``). ``--render-all`` renders every page, fast path or
not: the cost for a site whose every page carries styling that could hide text. Then the whole folder is read by the HTML reader
once with ``html_visibility = render`` and once with ``css``, wall and CPU time, and the pages whose
text differs between the two. The browser's memory (proportional set size of all its processes) is sampled after
every 20th rendered page; the largest sample is reported. No model is loaded, nothing is embedded.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter
from pathlib import Path

from citedocs import config
from citedocs.ingest.readers import SourceFile
from citedocs.ingest.readers import render
from citedocs.ingest.readers.html import HTML, _parse, _text_holders, not_documentation


def pages(folder: Path) -> list[tuple[str, str]]:
    found = []
    for path in sorted(folder.rglob("*.html")):
        rel = path.relative_to(folder).as_posix()
        if not_documentation(rel) is None:
            found.append((rel, path.read_text(encoding="utf-8", errors="replace")))
    return found


def read_all(folder: Path, docs: list[tuple[str, str]], mode: str) -> tuple[float, float, dict[str, str]]:
    os.environ["CITEDOCS_HTML_VISIBILITY"] = mode
    started, cpu = time.monotonic(), time.process_time()
    texts = {}
    for rel, text in docs:
        page = HTML.read(SourceFile(rel, text, folder, "https://example.test/"))
        texts[rel] = "\n".join(b.text for s in page.sections for b in s.blocks)
    return time.monotonic() - started, time.process_time() - cpu, texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--render-all", action="store_true", help="render every page, as if none took the fast path")
    args = parser.parse_args()
    folder = args.folder.resolve()
    docs = pages(folder)
    binary = render.chromium_path(config.setting("chromium_path"))
    timeout = config.setting("html_render_timeout_s")
    reasons: Counter = Counter()
    rendered_ms: list[float] = []
    memory = 0
    render.shared_browser(binary)  # started once, outside the per-page figures
    for rel, text in docs:
        doc = _parse(text)
        sheets = render.stylesheets(doc, folder, rel)
        why = render.render_reason(doc, sheets, _text_holders(doc))
        reasons[why or "fast path"] += 1
        if why or args.render_all:
            started = time.monotonic()
            render.render_invisible(doc, sheets, binary, timeout)
            rendered_ms.append((time.monotonic() - started) * 1000)
            if len(rendered_ms) % 20 == 1:
                memory = max(memory, render.shared_browser(binary).memory_bytes())
    print(f"{len(docs)} pages; fast path: {reasons['fast path']}; rendered: {len(rendered_ms)}")
    for why, n in reasons.most_common():
        print(f"  {n:5d}  {why}")
    if rendered_ms:
        rendered_ms.sort()
        print(
            f"render per page: mean {sum(rendered_ms) / len(rendered_ms):.0f} ms, median {rendered_ms[len(rendered_ms) // 2]:.0f} ms, "
            f"p95 {rendered_ms[int(len(rendered_ms) * 0.95)]:.0f} ms, max {rendered_ms[-1]:.0f} ms; browser memory at most {memory / 2**20:.0f} MiB"
        )
    render.close_browser()
    texts = {}
    for mode in ("render", "css"):
        wall, cpu, texts[mode] = read_all(folder, docs, mode)
        print(f"read with html_visibility={mode}: {wall:.1f} s wall ({wall / len(docs) * 1000:.0f} ms/page), {cpu:.1f} s CPU in this process")
    differ = [rel for rel, _ in docs if texts["render"][rel] != texts["css"][rel]]
    print(f"pages whose text differs between render and css: {len(differ)} {differ[:10]}; load {os.getloadavg()}")
    render.close_browser()


if __name__ == "__main__":
    main()
