"""The top-k BM25 scorer (``index/bm25.py``) is FTS5's ``bm25()`` made fast, not a different ranking:
on real indexes it returns FTS5's chunks, in FTS5's order, with FTS5's scores to the last bit, and a
re-ingest is searched at its new version, never from a stale cache. On PostgreSQL, the index one
process built is stored for the others, which load it instead of building it again."""

from __future__ import annotations

import pytest

from citedocs.eval.cases import load_cases
from citedocs.index.bm25 import BM25Index
from citedocs.retrieve.rewrite import standalone_query_fallback
from citedocs.service import Services
from citedocs.text import query_terms

from conftest import ASTRO_BASE_URL, ASTRO_CORPUS, DEV_CASES, copy_astro_pages, open_services

SMALL = "small"


def dev_queries() -> list[list[str]]:
    return [query_terms(standalone_query_fallback(c.question, c.history)) for c in load_cases(DEV_CASES)]


def test_top_k_scorer_returns_fts5s_own_ranking_for_every_dev_question(astro_sqlite_services):
    store = astro_sqlite_services.store
    for terms in dev_queries():
        for match_all in (False, True):
            fast = store.lexical_search(ASTRO_CORPUS, terms, 50, match_all=match_all)
            assert fast == store.fts5_search(ASTRO_CORPUS, terms, 50, match_all=match_all), (terms, match_all)
    assert store.lexical_search(ASTRO_CORPUS, ["image", "images"], 50)  # two phrases of one stem, as FTS5 scores them
    assert store.lexical_search(ASTRO_CORPUS, ["image", "images"], 50) == store.fts5_search(
        ASTRO_CORPUS, ["image", "images"], 50
    )


def test_phrases_of_several_tokens_keep_fts5_adjacency(astro_sqlite_services):
    store = astro_sqlite_services.store
    for terms in (["astro's"], ["content collections"], ["collections content"], ["astro's", "config"]):
        for match_all in (False, True):
            assert store.lexical_search(ASTRO_CORPUS, terms, 200, match_all) == store.fts5_search(
                ASTRO_CORPUS, terms, 200, match_all
            )
    adjacent = {c for c, _ in store.lexical_search(ASTRO_CORPUS, ["content collections"], 10_000)}
    either_order = {c for c, _ in store.lexical_search(ASTRO_CORPUS, ["content", "collections"], 10_000, True)}
    assert adjacent < either_order  # a phrase is words side by side, not merely both present


@pytest.fixture
def small_docs(tmp_path):
    """Two short real Astro pages: enough for document frequencies to move on a re-ingest."""
    return copy_astro_pages(tmp_path / "docs", ("guides/deploy/heroku.mdx", "recipes/add-yaml-support.mdx"))


@pytest.fixture
def small_services(tmp_path, small_docs):
    services = Services.open(tmp_path / "home" / "citedocs.sqlite3")
    services.ingest(small_docs, SMALL, ASTRO_BASE_URL)
    yield services
    services.store.close()


def test_reingest_is_searched_at_the_new_version_not_from_the_cache(small_services, small_docs):
    store = small_services.store
    assert store.lexical_search(SMALL, ["quokkaplatform"], 8) == []
    assert store.lexical_search("no-such-corpus", ["heroku"], 8) == []
    before = store.lexical_search(SMALL, ["heroku", "deploy"], 8)
    assert before and before == store.fts5_search(SMALL, ["heroku", "deploy"], 8)

    page = small_docs / "recipes" / "add-yaml-support.mdx"
    page.write_text(page.read_text(encoding="utf-8") + "\n\n## Quokka\n\nDeploy to QuokkaPlatform with one command.\n")
    small_services.ingest(small_docs, SMALL, ASTRO_BASE_URL)
    found = store.lexical_search(SMALL, ["quokkaplatform"], 8)
    assert [c for c, _ in found] == [c for c, _ in store.fts5_search(SMALL, ["quokkaplatform"], 8)]
    assert found and found[0][0].startswith("recipes/add-yaml-support#quokka")
    # every document frequency and length moved with the new chunk: still FTS5's scores exactly
    assert store.lexical_search(SMALL, ["heroku", "deploy"], 8) == store.fts5_search(SMALL, ["heroku", "deploy"], 8)

    page.unlink()
    small_services.ingest(small_docs, SMALL, ASTRO_BASE_URL)
    assert store.lexical_search(SMALL, ["quokkaplatform"], 8) == []


def test_an_ingest_that_dies_mid_write_leaves_lexical_search_as_it_was(small_services, small_docs, monkeypatch):
    store = small_services.store
    before = store.lexical_search(SMALL, ["heroku", "deploy", "yaml"], 8)
    page = small_docs / "recipes" / "add-yaml-support.mdx"
    page.write_text(page.read_text(encoding="utf-8") + "\n\n## Quokka\n\nDeploy to QuokkaPlatform with one command.\n")

    def dies(*args):  # fault injection: the write fails inside the ingest transaction
        raise OSError("disk full (injected)")

    monkeypatch.setattr(store, "_insert_chunk", dies)
    with pytest.raises(OSError, match="injected"):
        small_services.ingest(small_docs, SMALL, ASTRO_BASE_URL)
    monkeypatch.undo()
    assert store.lexical_search(SMALL, ["heroku", "deploy", "yaml"], 8) == before
    assert store.lexical_search(SMALL, ["quokkaplatform"], 8) == []


def test_an_index_dumped_and_loaded_ranks_exactly_as_the_one_built(astro_sqlite_services):
    built = astro_sqlite_services.store.bm25_index(ASTRO_CORPUS)
    loaded = BM25Index.load(built.dump())
    assert loaded.chunk_ids == built.chunk_ids and loaded.avgdl == built.avgdl
    for terms in dev_queries()[:20]:
        phrases = [[t] for t in terms]
        assert loaded.top_k(phrases, 50) == built.top_k(phrases, 50)
    with pytest.raises(ValueError, match="not a BM25 snapshot"):
        BM25Index.load(bytearray(b"\x05\x00\x00\x00\x00\x00\x00\x00junk!"))


def test_another_process_loads_the_index_the_first_built_and_a_new_version_is_built_again(request, tmp_path, small_docs, monkeypatch):
    from citedocs.index.postgres import PostgresStore

    first = open_services(request, "postgres", tmp_path, "bm25_snapshot")
    first.ingest(small_docs, SMALL, ASTRO_BASE_URL)
    built = first.store.lexical_search(SMALL, ["heroku", "deploy"], 8)
    url = first.store.url
    first.store.close()  # waits for the snapshot's write

    def never(*args):  # fault injection: a process that loads the snapshot never reads the postings
        raise AssertionError("the postings were read")

    second = PostgresStore(url)
    monkeypatch.setattr(second, "_read_postings", never)
    assert second.lexical_search(SMALL, ["heroku", "deploy"], 8) == built
    monkeypatch.undo()

    page = small_docs / "recipes" / "add-yaml-support.mdx"
    page.write_text(page.read_text(encoding="utf-8") + "\n\n## Quokka\n\nDeploy to QuokkaPlatform with one command.\n")
    Services(store=second).ingest(small_docs, SMALL, ASTRO_BASE_URL)
    found = second.lexical_search(SMALL, ["quokkaplatform"], 8)  # the new version, not the old snapshot
    assert found and found[0][0].startswith("recipes/add-yaml-support#quokka")
    second.close()


def test_an_unreadable_stored_index_is_built_again_and_replaced(request, tmp_path, small_docs, monkeypatch):
    import psycopg

    from citedocs.index.postgres import PostgresStore

    services = open_services(request, "postgres", tmp_path, "bm25_snapshot_bad")
    services.ingest(small_docs, SMALL, ASTRO_BASE_URL)
    built = services.store.lexical_search(SMALL, ["heroku", "deploy"], 8)
    url = services.store.url
    services.store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("UPDATE bm25_snapshots SET data = %s WHERE corpus = %s", (b"\x00" * 64, SMALL)).rowcount == 1

    rebuilt = PostgresStore(url)
    assert rebuilt.lexical_search(SMALL, ["heroku", "deploy"], 8) == built
    rebuilt.close()
    loaded = PostgresStore(url)
    monkeypatch.setattr(loaded, "_read_postings", lambda *args: pytest.fail("the rewritten snapshot was not read"))
    assert loaded.lexical_search(SMALL, ["heroku", "deploy"], 8) == built
    loaded.close()
