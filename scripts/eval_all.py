"""`make eval`: every dev corpus ingested with its detected format, both evals run, floors enforced.

The corpora are the ``gates/corpus-<name>.toml`` files: each names its docs folder and dev set
(``[corpus]``, paths relative to the repo root), a base URL for folders whose generator config
names none, the command that builds the folder first when it is a built site (citedocs's own docs),
and its measured floors. Each folder is ingested with ``citedocs ingest`` (format
detected), then ``citedocs eval-retrieval`` (hybrid+rerank, gated by ``[retrieval.min]``) and
``citedocs eval`` (extractive backend, gated by ``[min]``/``[max]``; Astro's are CI's
``gates/ci-extractive.toml``) run on it. A corpus whose reader this build lacks, or whose folder is
missing, is skipped with the reason. Exit status 1 if any step failed or any floor broke.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from citedocs.ingest.detect import DetectionError, detect
from citedocs.ingest.readers import available_readers

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class DevCorpus:
    """One ``gates/corpus-<name>.toml``: where the corpus and its dev set are, and its floors."""

    name: str
    docs: Path
    cases: Path
    base_url: str | None  # for folders whose generator config does not name one
    gate: Path
    build: list[str] | None = None  # run from the repo root first: it writes the docs folder (a built site)
    question_languages: str = ""  # the languages its questions are asked in besides the docs' (setting question_languages)


def dev_corpora() -> list[DevCorpus]:
    out = []
    for gate in sorted((REPO / "gates").glob("corpus-*.toml")):
        spec = tomllib.loads(gate.read_text(encoding="utf-8"))["corpus"]
        name = gate.stem.removeprefix("corpus-")
        build = [sys.executable if arg == "python" else arg for arg in shlex.split(spec.get("build", ""))] or None
        out.append(
            DevCorpus(name, REPO / spec["docs"], REPO / spec["cases"], spec.get("base_url"), gate, build, spec.get("question_languages", ""))
        )
    return out


def citedocs(*args: str, question_languages: str = "") -> bool:
    setting = {"CITEDOCS_QUESTION_LANGUAGES": question_languages} if question_languages else {}
    print("$ " + "".join(f"{k}={v} " for k, v in setting.items()) + "citedocs " + " ".join(args), flush=True)
    return subprocess.run([sys.executable, "-m", "citedocs.cli", *args], env={**os.environ, **setting}).returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("eval-out"), help="one folder per corpus is written here")
    parser.add_argument("--only", nargs="*", help="corpus names to run (default: all)")
    args = parser.parse_args()
    failed = []
    for corpus in dev_corpora():
        if args.only and corpus.name not in args.only:
            continue
        if corpus.build:
            print("$ " + shlex.join(corpus.build), flush=True)
            if subprocess.run(corpus.build, cwd=REPO).returncode:
                failed.append(f"{corpus.name}: build")
                continue
        if not corpus.docs.is_dir() or not corpus.cases.is_file():
            print(f"skip {corpus.name}: {corpus.docs} or {corpus.cases} not found", flush=True)
            continue
        try:
            found = detect(corpus.docs)
        except DetectionError as exc:
            print(f"skip {corpus.name}: {exc}", flush=True)
            continue
        if found.format not in available_readers():
            print(f"skip {corpus.name}: detected format {found.format!r} ({found.reason}) has no reader in this build", flush=True)
            continue
        base_url = ["--base-url", corpus.base_url] if corpus.base_url and not found.base_url else []
        out = args.out / corpus.name
        out.mkdir(parents=True, exist_ok=True)
        # Astro's answer floors are the CI gate's (gates/ci-extractive.toml); the others' are in their own file
        answer_gate = REPO / "gates" / "ci-extractive.toml" if corpus.name == "astro" else corpus.gate
        cases = str(corpus.cases)
        steps = [
            ["ingest", str(corpus.docs), "--corpus", corpus.name, *base_url],
            ["eval-retrieval", cases, "--corpus", corpus.name, "--modes", "hybrid+rerank",
             "--json-out", str(out / "retrieval.json"), "--gate", str(corpus.gate)],
            ["eval", cases, "--corpus", corpus.name, "--backend", "extractive", "--out", str(out), "--gate", str(answer_gate)],
        ]
        for step in steps:
            if not citedocs(*step, question_languages=corpus.question_languages):
                failed.append(f"{corpus.name}: {step[0]}")
                break
    for failure in failed:
        print(f"FAILED {failure}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
