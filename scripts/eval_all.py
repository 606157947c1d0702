"""`make eval`: every shared corpus ingested with its detected format, then both evals on its dev set.

For each dev set in ../shared/evals/ (``<corpus>-dev.jsonl``), the corpus folder is ingested with
``citedocs ingest`` (format detected from the folder; a base URL passed only where the folder has
no generator config naming it), then ``citedocs eval-retrieval`` (hybrid+rerank) and
``citedocs eval`` (extractive backend) run on it. A corpus whose reader this build lacks, or whose
folder is missing, is skipped with the reason. Exit status 1 if any step failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from citedocs.ingest.detect import DetectionError, detect
from citedocs.ingest.readers import available_readers

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO / ".." / "shared"


def python_html_docs() -> Path | None:
    """Debian's python3.11-doc HTML folder, if the package is installed."""
    try:
        listing = subprocess.run(["dpkg", "-L", "python3.11-doc"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    index = next((line for line in listing.splitlines() if line.endswith("/html/index.html")), None)
    return Path(index).parent if index else None


# (corpus = dev-set name, folder, base URL for folders whose generator config does not name one)
CORPORA = [
    ("astro", SHARED / "corpora/astro-docs/docs", "https://docs.astro.build/en/"),
    ("mkdocs-material", SHARED / "corpora/mkdocs-material-docs", None),
    ("vitepress", SHARED / "corpora/vitepress-docs/docs", "https://vitepress.dev/"),
    ("flask", SHARED / "corpora/flask-docs", "https://flask.palletsprojects.com/en/stable/"),
    ("python-html", python_html_docs(), "https://docs.python.org/3.11/"),
]


def citedocs(*args: str) -> bool:
    print("$ citedocs " + " ".join(args), flush=True)
    return subprocess.run([sys.executable, "-m", "citedocs.cli", *args]).returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("eval-out"), help="one folder per corpus is written here")
    parser.add_argument("--only", nargs="*", help="corpus names to run (default: all)")
    args = parser.parse_args()
    failed = []
    for corpus, folder, base_url in CORPORA:
        if args.only and corpus not in args.only:
            continue
        cases = SHARED / "evals" / f"{corpus}-dev.jsonl"
        if folder is None or not folder.is_dir() or not cases.is_file():
            print(f"skip {corpus}: corpus folder or {cases.name} not found", flush=True)
            continue
        try:
            found = detect(folder)
        except DetectionError as exc:
            print(f"skip {corpus}: {exc}", flush=True)
            continue
        if found.format not in available_readers():
            print(f"skip {corpus}: detected format {found.format!r} ({found.reason}) has no reader in this build", flush=True)
            continue
        ingest = ["ingest", str(folder), "--corpus", corpus] + (["--base-url", base_url] if base_url and not found.base_url else [])
        out = args.out / corpus
        out.mkdir(parents=True, exist_ok=True)
        gate = ["--gate", str(REPO / "gates/targets.toml")] if corpus == "astro" else []
        steps = [
            ingest,
            ["eval-retrieval", str(cases), "--corpus", corpus, "--modes", "hybrid+rerank", "--json-out", str(out / "retrieval.json")],
            ["eval", str(cases), "--corpus", corpus, "--backend", "extractive", "--out", str(out), *gate],
        ]
        for step in steps:
            if not citedocs(*step):
                failed.append(f"{corpus}: {step[0]}")
                break
    for failure in failed:
        print(f"FAILED {failure}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
