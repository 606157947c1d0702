"""The reader's training data keeps its promises: never a held-out corpus, never an eval question.

The data files under data/reader/ are what a retrain reads without the LLM; a training row from a
corpus the held-out sets ask about, or a training question that is an eval question, would make
every held-out figure measured with them a lie.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "reader"
HELD_OUT_CORPORA = {"click", "jinja", "starlette", "python-html", "python", "citedocs"}


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines()]


def eval_questions() -> set[str]:
    return {json.loads(line)["question"].strip().lower() for path in (REPO / "evals").glob("*.jsonl")
            for line in path.read_text(encoding="utf-8").splitlines()}


def test_generated_questions_never_come_from_a_held_out_corpus():
    generated = rows("questions.jsonl")
    assert generated
    assert not {r["corpus"] for r in generated} & HELD_OUT_CORPORA


def test_every_generated_question_names_a_unit_of_its_passage_and_its_provenance():
    for record in rows("questions.jsonl"):
        assert record["question"].strip() and record["answer_unit"].strip()
        assert record["generator"] and record["chunk_hash"] and record["url"].startswith("http")


def test_training_rows_are_neither_held_out_corpora_nor_eval_questions():
    asked = eval_questions()
    for name in ("examples-generated.jsonl", "examples-structure.jsonl"):
        for row in rows(name):
            assert row["split"] == "train"
            assert row["corpus"] not in HELD_OUT_CORPORA
            assert row["question"].strip().lower() not in asked, row["question"]
    for row in rows("units-generated.jsonl"):  # the sentence scorer's rows: one per generated question
        assert row["corpus"] not in HELD_OUT_CORPORA
        assert row["question"].strip().lower() not in asked, row["question"]
        assert len(row["features"]) == len(row["label"]) == len(row["today"]) and any(row["label"])


def test_held_out_rows_are_never_training_rows():
    heldout = rows("examples-heldout.jsonl")
    assert heldout and {r["split"] for r in heldout} == {"heldout"}
    assert {r["corpus"] for r in heldout} <= HELD_OUT_CORPORA


def test_the_generator_refuses_a_held_out_corpus():
    run = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "reader" / "generate_questions.py"), "--corpus", "flask",
         "--corpus", "click", "--out", str(DATA / "never-written.jsonl")],
        capture_output=True, text=True, cwd=REPO,
    )
    assert run.returncode == 2
    assert "held-out corpora cannot be a source of training questions: ['click']" in run.stderr
    assert not (DATA / "never-written.jsonl").exists()
