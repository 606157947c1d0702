"""What the reStructuredText reader promises, checked on the real Flask docs (Sphinx, 76 pages).

Every citation must land on the section Sphinx publishes: the expected anchors below were read
from the HTML that ``sphinx-build -b dirhtml`` (Sphinx 9.0.4, docutils 0.22.4, Flask's own
conf.py) produced from this corpus. Sphinx-only markup must keep its text, code stays fenced,
docutils' own messages never reach a chunk or the terminal, and a broken page fails clearly.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from citedocs.ingest.chunker import ParsedDocument, chunk_document
from citedocs.ingest.document import DocumentError
from citedocs.ingest.pipeline import find_documents
from citedocs.ingest.readers import SourceFile, reader_named
from citedocs.ingest.readers.rst import RST
from citedocs.ingest.readers.rst_markup import role_text

from conftest import ROOT

FLASK_DOCS = ROOT / "evals" / "corpora" / "flask-docs" / "docs"
FLASK_DEV = ROOT / "evals" / "flask-dev.jsonl"
BASE = "https://flask.palletsprojects.com/en/stable/"


def read(rel: str, text: str, root: Path) -> ParsedDocument:
    return chunk_document(rel, text, BASE, RST, root)


@pytest.fixture(scope="module")
def corpus() -> dict[str, ParsedDocument]:
    """Every page of the Flask docs, chunked (a few seconds, no model needed)."""
    files = find_documents(FLASK_DOCS, RST)
    return {
        p.relative_to(FLASK_DOCS).as_posix(): read(p.relative_to(FLASK_DOCS).as_posix(), p.read_text(encoding="utf-8"), FLASK_DOCS)
        for p in files
    }


def all_chunks(corpus: dict[str, ParsedDocument]):
    return [c for doc in corpus.values() for c in doc.chunks]


def test_rst_reader_is_registered_by_name():
    assert reader_named("rst") is RST
    assert RST.label == "reStructuredText" and RST.suffixes == (".rst",)


def test_every_flask_page_parses_into_sections(corpus):
    assert len(corpus) == 76
    for rel, doc in corpus.items():
        assert doc.page.title, f"{rel} has no title"
        # the one page with no text of its own only includes a file from outside the docs folder
        assert doc.chunks or doc.page.notes, f"{rel} produced no chunks and no note saying why"
    assert not corpus["changes.rst"].chunks


# (page, heading as written, the anchor Sphinx publishes for it)
REAL_HEADINGS = [
    ("quickstart.rst", "A Minimal Application", "a-minimal-application"),
    ("quickstart.rst", "Unique URLs / Redirection Behavior", "unique-urls-redirection-behavior"),
    # a ``.. _url-building:`` label equal to the title's own id: docutils numbers the title id1
    ("quickstart.rst", "URL Building", "url-building"),
    ("quickstart.rst", "About Responses", "about-responses"),
    # labels that differ from the title: the label is the anchor the docs link to
    ("testing.rst", "Running Commands with the CLI Runner", "testing-cli"),
    ("web-security.rst", "Cross-Site Scripting (XSS)", "security-xss"),
    ("web-security.rst", "Set-Cookie options", "security-cookie"),
    ("config.rst", "Development / Production", "config-dev-prod"),
    ("gevent.rst", "Combining with async/await", "gevent-asyncio"),
    ("api.rst", "Signals", "core-signals-list"),
    ("api.rst", "URL Route Registrations", "url-route-registrations"),
    ("server.rst", "Address already in use", "address-already-in-use"),
    # punctuation, apostrophes, underscores
    ("design.rst", 'What does "micro" mean?', "what-does-micro-mean"),
    ("signals.rst", "Signals and Flask's Request Context", "signals-and-flask-s-request-context"),
    ("web-security.rst", "HTTP Strict Transport Security (HSTS)", "http-strict-transport-security-hsts"),
    ("deploying/mod_wsgi.rst", "mod_wsgi", "mod-wsgi"),
    ("tutorial/views.rst", "The First View: Register", "the-first-view-register"),
    ("patterns/appfactories.rst", "Factories & Extensions", "factories-extensions"),
]


@pytest.mark.parametrize("rel, heading, anchor", REAL_HEADINGS)
def test_section_anchor_is_the_one_sphinx_publishes(corpus, rel, heading, anchor):
    doc = corpus[rel]
    matches = [s for s in doc.page.sections if s.heading_path[-1:] == (heading,) or (heading == doc.page.title and s.anchor_path == (anchor,))]
    assert matches, f"{rel}: no section titled {heading!r}"
    assert matches[0].anchor == anchor
    chunk = next(c for c in doc.chunks if c.anchor == anchor)
    assert chunk.url == f"{doc.page.url}#{anchor}"


def test_repeated_and_code_titles_get_sphinx_ids(tmp_path):
    # ids checked against sphinx-build 9.0.4 dirhtml of this exact text
    text = """Mini Page
=========

Intro.

Examples
--------

First.

Details
~~~~~~~

.. _examples:

Examples
--------

Second, labelled with the same slug.

Examples
--------

Third.

Details
~~~~~~~

Again.

``app.run()`` & friends: C++/CLI!
---------------------------------

Punctuation.

.. _my_custom_label:

Labelled Title
--------------

Text.
"""
    doc = read("mini.rst", text, tmp_path)
    anchors = [s.anchor for s in doc.page.sections if s.anchor]
    assert anchors == ["mini-page", "examples", "details", "id1", "id3", "id4", "app-run-friends-c-cli", "my-custom-label"]
    nested = next(s for s in doc.page.sections if s.anchor == "id4")
    assert nested.heading_path == ("Examples", "Details") and nested.anchor_path == ("mini-page", "id3", "id4")


def test_page_urls_follow_sphinx_dirhtml(corpus):
    assert corpus["index.rst"].page.url == BASE
    assert corpus["tutorial/index.rst"].page.url == BASE + "tutorial/"
    assert corpus["deploying/gunicorn.rst"].page.url == BASE + "deploying/gunicorn/"
    assert corpus["quickstart.rst"].page.title == "Quickstart"


def test_every_eval_anchor_exists_among_its_pages_chunk_anchors(corpus):
    missing = []
    for line in FLASK_DEV.read_text(encoding="utf-8").splitlines():
        for source in json.loads(line)["expected_sources"]:
            path, _, anchor = source.partition("#")
            assert path in corpus, f"{source}: no such page"
            anchors = {a for c in corpus[path].chunks for a in c.anchor_path}
            if anchor and anchor not in anchors:
                missing.append(source)
    assert not missing


def test_roles_render_as_their_text(corpus):
    assert role_text("func", "flask.Flask.run") == "flask.Flask.run"
    assert role_text("ref", "Title <some_label>") == "Title"
    assert role_text("meth", "~flask.Flask.route") == "flask.Flask.route"
    assert role_text("class", ".Request") == "Request"
    assert role_text("file", ".env") == ".env"
    leftover = re.compile(r":(func|meth|class|attr|data|exc|mod|ref|doc|file|gh|envvar|mimetype|pep):`")
    assert not [c.id for c in all_chunks(corpus) if leftover.search(c.text)]
    quick = "\n".join(c.text for c in corpus["cli.rst"].chunks)
    assert "It replaces the `Flask.run` method" in quick
    # a :ref: with an explicit title shows the title only
    deploy = "\n".join(c.text for c in corpus["tutorial/deploy.rst"].chunks)
    assert "set up a new virtualenv, then install" in deploy and "install-create-env" not in deploy


def test_code_blocks_are_fenced_with_their_language_and_never_split(corpus):
    debug = next(c for c in corpus["cli.rst"].chunks if c.anchor == "debug-mode")
    assert "```console\n$ flask --app hello run --debug\n" in debug.text
    # a ``::`` literal block is code too
    basics = next(c for c in corpus["config.rst"].chunks if c.anchor == "configuration-basics")
    assert "```\napp = Flask(__name__)\napp.config['TESTING'] = True\n```" in basics.text
    for chunk in all_chunks(corpus):
        fences = re.findall(r"^```", chunk.text, re.M)
        assert len(fences) % 2 == 0, f"{chunk.id} cuts a code block"


def test_sphinx_directives_keep_their_text(corpus):
    api = corpus["api.rst"]
    text = "\n".join(c.text for c in api.chunks)
    assert "(added in version 0.8)" in text  # versionadded
    assert "(changed in version 0.10) Bound to the application context" in text  # versionchanged
    assert "`request`\n\nA proxy to the request data" in text  # .. data:: signature, then its text
    assert any("Note:\n> " in c.text or "Warning:\n> " in c.text for c in all_chunks(corpus))
    tabs = next(c for c in corpus["cli.rst"].chunks if c.anchor == "setting-command-options")
    assert "Fish:\n\n```text\n$ set -x FLASK_RUN_PORT 8000" in tabs.text  # a tab's label stays with its code
    index = "\n".join(c.text for c in corpus["index.rst"].chunks)
    assert "maxdepth" not in index and "installation quickstart" not in index  # toctree adds nothing


def test_autodoc_contributes_its_name_and_is_reported(corpus):
    api = corpus["api.rst"]
    app_object = next(c for c in api.chunks if c.anchor == "flask.Flask")
    assert app_object.text == "`Flask`" and app_object.anchor_path == ("api", "application-object", "flask.Flask")
    assert any("autoclass Flask" in note and "outside the docs folder" in note for note in api.page.notes)


def test_no_docutils_message_reaches_chunks_or_stderr(corpus, capfd, tmp_path):
    leaks = re.compile(r"System Message|\((INFO|WARNING|ERROR|SEVERE)/\d\)|Unknown (directive|interpreted text role)")
    assert not [c.id for c in all_chunks(corpus) if leaks.search(c.text)]
    # a page with a docutils warning (an unindented line after a list) still parses, quietly
    doc = read("warn.rst", "Title\n=====\n\n* item\ncontinued badly\n\n.. frobnicate:: x\n\n   body text\n", tmp_path)
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""
    assert any("docutils warning" in n for n in doc.page.notes)
    assert any("unknown directive 'frobnicate'" in n for n in doc.page.notes)
    assert "body text" in doc.chunks[-1].text and not leaks.search(doc.chunks[-1].text)


def test_broken_rst_file_raises_a_clear_document_error(tmp_path):
    broken = "Title\n=====\n\nSection\n-------\n\nOther\n=====\n\nSub\n~~~\n\nText.\n"
    with pytest.raises(DocumentError, match=r"broken reStructuredText at line 10: Inconsistent title style"):
        read("broken.rst", broken, tmp_path)
    indented_title = "Title\n=====\n\nText.\n\n   Indented\n   ========\n"
    with pytest.raises(DocumentError, match=r"Unexpected section title"):
        read("broken.rst", indented_title, tmp_path)


def test_include_inside_the_root_is_read_and_a_missing_one_is_reported(tmp_path):
    (tmp_path / "part.rst").write_text("Included paragraph about widgets.\n", encoding="utf-8")
    text = "Page\n====\n\n.. include:: part.rst\n\n.. include:: gone.rst\n\nAfter.\n"
    doc = read("page.rst", text, tmp_path)
    body = "\n".join(c.text for c in doc.chunks)
    assert "Included paragraph about widgets." in body and "After." in body
    assert any("include 'gone.rst' not found" in n for n in doc.page.notes)


def test_include_outside_the_root_is_never_read(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n", encoding="utf-8")
    os.symlink(secret, root / "link.rst")  # a link inside the root pointing out of it
    text = "Page\n====\n\n.. include:: ../secret.txt\n\n.. include:: link.rst\n\n.. literalinclude:: /../secret.txt\n"
    doc = read("page.rst", text, root)
    assert "TOP SECRET" not in "\n".join(c.text for c in doc.chunks)
    assert sum("outside the docs folder" in n for n in doc.page.notes) == 3


def test_python_objects_are_cited_by_the_ids_sphinx_gives_them(corpus):
    config = corpus["config.rst"]
    lifetime = next(c for c in config.chunks if c.anchor == "PERMANENT_SESSION_LIFETIME")
    assert lifetime.heading_path == ("Builtin Configuration Values", "PERMANENT_SESSION_LIFETIME")
    assert lifetime.anchor_path == ("configuration-handling", "builtin-configuration-values", "PERMANENT_SESSION_LIFETIME")
    assert lifetime.text.startswith("`PERMANENT_SESSION_LIFETIME`\n\nIf `session.permanent` is true")
    # ``.. module:: flask`` prefixes later objects; ``autoclass:: flask.Response`` names its own module
    api_anchors = {c.anchor for c in corpus["api.rst"].chunks}
    assert {"flask.request", "flask.Response", "flask.json.jsonify", "flask.sessions.SessionInterface"} <= api_anchors
    # ``:noindex:`` entries have no anchor on the site, so their text stays in the section
    templating = corpus["templating.rst"]
    assert "config" not in {c.anchor for c in templating.chunks}
    assert any(c.anchor == "standard-context" and "`config`" in c.text for c in templating.chunks)


def test_text_after_an_object_continues_its_section_with_unique_ids(corpus):
    config = corpus["config.rst"]
    tail = [c for c in config.chunks if c.anchor == "builtin-configuration-values"]
    assert len(tail) >= 2 and any("(added in version 0.4)" in c.text for c in tail[1:])
    for doc in corpus.values():
        ids = [c.id for c in doc.chunks]
        assert len(ids) == len(set(ids)), doc.doc_path


def _sections(tmp_path: Path, text: str) -> dict[str, list[str]]:
    """Each section anchor of one page, with its blocks' text (a page read on its own)."""
    (tmp_path / "index.rst").write_text(text, encoding="utf-8")
    page = RST.read(SourceFile("index.rst", text, tmp_path, BASE))
    found: dict[str, list[str]] = {}
    for section in page.sections:
        found.setdefault(section.anchor, []).extend(b.text for b in section.blocks)
    return found


# modelled on Sphinx's own docs (usage/configuration.rst, man pages, usage/domains/*.rst); every
# id below is one ``sphinx-build -b html`` (Sphinx 9.0.4) published for this exact text
OBJECTS_PAGE = """Settings
========

.. confval:: display_short_literal_types
   :type: ``bool``

   Shows literals short.

   Examples
   ~~~~~~~~

   Some examples.

.. envvar:: MY_HOME

   Where files go.

.. program:: my-tool

.. option:: -b NAME, --builder=NAME

   Picks a builder.

.. rst:directive:: .. toctree::

   Lists pages.

.. rst:role:: c:expr

   An expression.

.. cpp:type:: std::vector<int> CustomList

   A list.

.. default-domain:: js

.. function:: fetch(url)

   Fetches.
"""


def test_std_and_rst_domain_objects_get_the_ids_sphinx_publishes(tmp_path):
    found = _sections(tmp_path, OBJECTS_PAGE)
    assert found["confval-display_short_literal_types"][0].startswith("`display_short_literal_types`\n\nShows literals short.")
    assert found["envvar-MY_HOME"] == ["`MY_HOME`\n\nWhere files go."]
    assert found["cmdoption-my-tool-b"] == ["`-b NAME, --builder=NAME`\n\nPicks a builder."]
    assert "directive-toctree" in found and "role-c-expr" in found


def test_a_section_inside_an_object_description_is_read_as_sphinx_allows(tmp_path):
    # docutils alone refuses a title inside a directive ("Unexpected section title"), which refused
    # the whole page; Sphinx parses object descriptions with titles, each published with its id
    found = _sections(tmp_path, OBJECTS_PAGE)
    assert found["examples"] == ["Some examples."]


def test_objects_of_other_domains_keep_the_enclosing_anchor(tmp_path):
    # C++ and JavaScript ids are not Python names: ``cpp:type:: std::vector<int> CustomList`` was
    # cited as ``#std``, which the page lacks; their text stays in the section that holds them
    found = _sections(tmp_path, OBJECTS_PAGE)
    assert "std" not in found and "fetch" not in found
    assert "`std::vector<int> CustomList`\n\nA list." in found["settings"]
    assert "`fetch(url)`\n\nFetches." in found["settings"]


def test_sections_inside_only_are_read(tmp_path):
    text = "Changelog\n=========\n\n.. only:: not is_release\n\n   Draft\n   -----\n\n   Unreleased.\n\nAfter\n-----\n\nDone.\n"
    found = _sections(tmp_path, text)
    assert found["draft"] == ["Unreleased."] and found["after"] == ["Done."]


def test_only_and_ifconfig_content_that_an_html_build_leaves_out_is_not_text(tmp_path):
    (tmp_path / "conf.py").write_text(
        'extensions = ["sphinx.ext.ifconfig"]\nrelease = "2.1"\nlevel = "beta"\ntags.add("cloud")\n'
        "import os\nedition = os.environ['EDITION']\n",
        encoding="utf-8",
    )
    text = (
        "Install\n=======\n\n"
        ".. only:: html\n\n   Shown in HTML.\n\n"
        ".. only:: latex\n\n   SECRET only in the PDF.\n\n"
        ".. only:: cloud and not onprem\n\n   Shown for a tag conf.py adds.\n\n"
        ".. only:: onprem\n\n   SECRET only with -t onprem.\n\n"
        ".. ifconfig:: level in ('alpha', 'beta')\n\n   Shown in a beta release.\n\n"
        ".. ifconfig:: release == '3.0'\n\n   SECRET for another release.\n\n"
        ".. ifconfig:: edition == 'pro'\n\n   SECRET decided at build time.\n\n"
        ".. ifconfig:: __import__('os').system('true')\n\n   SECRET never run.\n"
    )
    (tmp_path / "index.rst").write_text(text, encoding="utf-8")
    page = RST.read(SourceFile("index.rst", text, tmp_path, BASE))
    body = "\n".join(b.text for s in page.sections for b in s.blocks)
    assert "SECRET" not in body, body
    for shown in ("Shown in HTML.", "Shown for a tag conf.py adds.", "Shown in a beta release."):
        assert shown in body
    notes = "\n".join(page.notes)
    assert "only:: latex: not in an HTML build" in notes
    assert "ifconfig:: edition == 'pro': cannot be decided here (edition is computed at build time)" in notes
    assert "ifconfig:: __import__('os').system('true'): cannot be decided here" in notes


def test_autodoc_member_with_its_own_module_path_ignores_the_current_module(tmp_path):
    # autodoc imports ``mypkg.mod.Thing.run`` from its own path: Sphinx publishes
    # ``#mypkg.mod.Thing.run``, where a written ``py:method`` would be ``#mypkg.mypkg.mod.Thing.run``
    text = "API\n===\n\n.. currentmodule:: mypkg\n\n.. automethod:: mypkg.mod.Thing.run\n\n.. automethod:: Thing.stop\n"
    found = _sections(tmp_path, text)
    assert "mypkg.mod.Thing.run" in found and "mypkg.Thing.stop" in found
