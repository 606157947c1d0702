"""What the Sphinx reader promises for MyST Markdown pages, on real pages of Click, attrs and pip.

A Sphinx project whose ``conf.py`` names ``myst_parser`` (or ``myst_nb``) has its ``.md`` pages
read as MyST by myst-parser, beside its ``.rst`` pages, and every citation lands on an id the real
Sphinx build put on that page: ``built-ids.json`` holds the ids of the HTML that Sphinx 9.0.4 and
myst-parser 5.2.0 built from the same sdists (see ``tests/data/myst/SOURCE.md``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citedocs.cli import app
from citedocs.ingest.boundary import walk_docs
from citedocs.ingest.chunker import ParsedDocument, chunk_document
from citedocs.ingest.detect import detect, plan_ingest
from citedocs.ingest.document import DocumentError, ParsedPage
from citedocs.ingest.pipeline import IngestError, find_documents
from citedocs.ingest.readers import MystOptions, SiteOptions, SourceFile, for_site
from citedocs.ingest.readers.rst import RST
from citedocs.ingest.sphinx_conf import myst_options

from conftest import ROOT

DATA = ROOT / "tests" / "data" / "myst"
DOCS = {"click": DATA / "click" / "docs", "attrs": DATA / "attrs" / "docs", "pip": DATA / "pip" / "docs" / "html"}
PAGE_URLS = {"click": "dir", "attrs": "html", "pip": "dir"}  # how each site is served (and was built)
BASE = "https://docs.example.org/"


def read_docs(docs: Path, page_urls: str | None = None) -> dict[str, ParsedDocument]:
    """Every page of a docs folder as ``citedocs ingest`` reads it: detected format and settings."""
    plan = plan_ingest(docs, None, BASE, None, BASE, page_urls)
    reader = for_site(RST, plan.site)
    files, _ = walk_docs(plan.docs_dir, reader.suffixes)
    return {
        rel: chunk_document(rel, path.read_text(encoding="utf-8"), BASE, reader, plan.docs_dir)
        for path in files
        for rel in [path.relative_to(plan.docs_dir).as_posix()]
    }


@pytest.fixture(scope="module")
def projects() -> dict[str, dict[str, ParsedDocument]]:
    return {name: read_docs(docs, PAGE_URLS[name]) for name, docs in DOCS.items()}


def section(page: ParsedPage, heading: str):
    return next(s for s in page.sections if s.heading_path[-1:] == (heading,))


def text_of(doc: ParsedDocument) -> str:
    return "\n".join(chunk.text for chunk in doc.chunks)


@pytest.mark.parametrize("project", sorted(DOCS))
def test_every_cited_anchor_is_an_id_of_the_page_sphinx_built(projects, project):
    built = json.loads((DOCS[project].parents[1 if project == "pip" else 0] / "built-ids.json").read_text())
    assert set(projects[project]) == set(built)
    for rel, doc in projects[project].items():
        anchors = {chunk.anchor for chunk in doc.chunks if chunk.anchor}
        assert anchors and anchors <= set(built[rel]), f"{rel}: {sorted(anchors - set(built[rel]))} not on the built page"


def test_myst_label_before_heading_is_the_anchor(projects):
    options = projects["click"]["options.md"].page
    assert section(options, "Multi Value Options as Tuples").anchor == "tuple-type"  # (tuple-type)=
    assert section(options, "Boolean").anchor == "option-boolean-flag"
    assert section(options, "Counting").anchor == "counting"  # no label: the title's id
    assert options.sections[1].anchor == "options"  # (options)= before the page title
    assert projects["attrs"]["how-does-it-work.md"].page.sections[1].anchor == "how"


def test_heading_anchor_slugs_are_extra_ids_and_the_section_id_is_cited(projects):
    """``myst_heading_anchors = 3`` gives headings down to level 3 a GitHub-style slug as one more
    id (the built page has it as a ``<span id>``); the section's own id is its permalink."""
    source = DOCS["click"] / "options.md"
    document, _, _ = for_site(RST, detect(DOCS["click"]).site).parse(SourceFile("options.md", source.read_text(), DOCS["click"], BASE))
    ids = {tuple(node["ids"]) for node in document.findall(lambda n: n.tagname == "section")}
    assert ("how-default-and-flag-value-interact", "how-default-and-flag_value-interact") in ids
    cited = section(projects["click"]["options.md"].page, "How default and flag_value interact")
    assert cited.anchor == "how-default-and-flag-value-interact"


def test_md_in_sphinx_without_myst_extension_is_not_read_as_myst(tmp_path):
    docs = tmp_path / "html"
    shutil.copytree(DOCS["pip"], docs)
    conf = docs / "conf.py"
    conf.write_text(conf.read_text().replace('"myst_parser",', ""))
    detection = detect(docs)
    assert detection.site.myst is None
    assert "2 .md files not read: no literal extensions entry in conf.py names myst_parser or myst_nb" in detection.reason
    assert [p.name for p in find_documents(docs, for_site(RST, detection.site))] == ["pip_uninstall.rst"]
    (docs / "cli" / "pip_uninstall.rst").unlink()
    with pytest.raises(IngestError, match="2 Markdown files, which Sphinx reads .as MyST. only when the conf.py with the docs names myst_parser"):
        find_documents(docs, for_site(RST, detection.site))


def test_a_mixed_project_reads_its_rst_and_myst_pages(projects):
    """pip adds myst_parser inside ``if "man" not in tags:``; both kinds of page are read."""
    pip = projects["pip"]
    assert sorted(pip) == ["cli/pip_uninstall.rst", "index.md", "topics/configuration.md"]
    assert pip["cli/pip_uninstall.rst"].page.sections[1].anchor == "pip-uninstall"  # .. _`pip uninstall`: -> its id
    assert pip["topics/configuration.md"].page.url == f"{BASE}topics/configuration/"
    assert section(pip["topics/configuration.md"].page, "Configuration Files").anchor == "config-file"


def test_source_suffix_decides_which_files_are_myst_as_sphinx_merges_it(tmp_path):
    """attrs sets ``source_suffix = ".rst"``: myst_parser still registers ``.md`` (Sphinx's
    ``merge_source_suffix``); a suffix mapped to ``markdown`` is MyST too; notebooks are not text."""
    attrs, _ = myst_options(DOCS["attrs"] / "conf.py")
    assert attrs is not None and attrs.suffixes == (".md",)
    conf = tmp_path / "conf.py"
    conf.write_text("extensions = ['myst_nb']\nsource_suffix = {'.rst': 'restructuredtext', '.txt': 'markdown', '.md': 'restructuredtext'}\n")
    assert myst_options(conf)[0].suffixes == (".txt", ".md")
    conf.write_text("extensions = ['sphinx.ext.autodoc']\nsource_suffix = {'.md': 'markdown'}\n")
    assert myst_options(conf)[0] is None


def test_colon_fences_are_directives_only_where_conf_py_enables_them(tmp_path, projects):
    hashing = projects["attrs"]["hashing.md"]
    assert "Warning:\n> The overarching theme is to never set" in text_of(hashing)
    docs = tmp_path / "docs"
    shutil.copytree(DOCS["attrs"], docs)
    (docs / "conf.py").write_text((docs / "conf.py").read_text().replace('"colon_fence",', ""))
    plain = read_docs(docs)["hashing.md"]
    assert ":::{warning}" in text_of(plain) and "Warning:" not in text_of(plain)


def test_eval_rst_and_sphinx_directives_keep_their_text(projects):
    arguments = text_of(projects["click"]["arguments.md"])
    assert "```python\n@click.command()\n@click.argument('filename')" in arguments  # click:example in {eval-rst}
    assert "```python\ninvoke(touch, args=['foo.txt'])\n```" in arguments  # click:run
    assert "Note on Required Arguments:\n> It is possible to make an argument required" in arguments
    assert "```pycon\n>>> import inspect\n" in text_of(projects["attrs"]["how-does-it-work.md"])  # {doctest}
    index = projects["pip"]["index.md"]
    assert "hide-toc" not in text_of(index) and "getting-started" not in text_of(index)  # front matter, {toctree}


def test_roles_and_links_show_their_text(projects):
    arguments = text_of(projects["click"]["arguments.md"])
    assert "Similar to a limited version of options that can take" in arguments  # {ref}`options <options>`
    assert "A minimal `click.Argument` solely takes" in arguments  # {class}
    glossary = text_of(projects["attrs"]["glossary.md"])
    assert "`attrs.define()`, `attrs.mutable()`, and `attrs.frozen()`" in glossary  # [`x`](target) to another page
    configuration = text_of(projects["pip"]["topics/configuration.md"])
    assert r"`C:\ProgramData\pip\pip.ini`" in configuration  # {file} shows C:\\... as Sphinx does


def test_glossary_terms_keep_their_definitions(projects):
    glossary = text_of(projects["attrs"]["glossary.md"])
    assert 'dunder methods\n  "Dunder" is a contraction of "double underscore".' in glossary
    assert "dict classes\n  A regular class whose attributes are stored" in glossary


def test_include_reads_files_inside_the_docs_folder_only(tmp_path, projects):
    overview = projects["attrs"]["overview.md"]
    assert overview.page.notes == ("line 5: include '../README.md' lies outside the docs folder; not read",)
    docs = tmp_path / "docs"
    shutil.copytree(DOCS["attrs"], docs)
    (docs / "guide").mkdir()
    (docs / "overview.md").rename(docs / "guide" / "overview.md")
    shutil.copy(DATA / "attrs" / "README.md", docs / "README.md")  # now ../README.md is inside
    included = read_docs(docs)["guide/overview.md"]
    assert not included.page.notes
    assert ">>> @define\n... class SomeClass:" in text_of(included)
    assert "Hate Type Annotations" not in text_of(included)  # :end-before: is honoured


def test_a_broken_myst_page_is_reported_and_loses_nothing(projects):
    source = (DOCS["attrs"] / "hashing.md").read_text()
    broken = "---\ntitle: [unclosed\n---\n\n" + source.replace(":::{warning}\nThe overarching", ":::{warning}\n:bad option: x\nThe overarching", 1)
    docs = read_page("hashing.md", broken, DOCS["attrs"])
    assert [note.split(": ", 1)[1] for note in docs.page.notes] == [
        "docutils warning: Malformed YAML [myst.topmatter]",
        "docutils warning: 'warning': Unknown option key: 'bad option' (allowed: ['class', 'name']) [myst.directive_option]",
    ]
    assert text_of(docs) == text_of(projects["attrs"]["hashing.md"])


def test_a_page_myst_cannot_build_is_refused_naming_the_line(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS["attrs"], docs)
    shutil.copy(DATA / "attrs" / "README.md", docs / "README.md")
    text = (DOCS["attrs"] / "overview.md").read_text().replace("'code-begin -->'", "'no such marker'")
    with pytest.raises(DocumentError, match=r"broken MyST Markdown at line 5: .*text not found"):
        read_page("overview.md", text.replace("../README.md", "README.md"), docs)


def read_page(rel: str, text: str, docs: Path) -> ParsedDocument:
    return chunk_document(rel, text, BASE, for_site(RST, detect(docs).site), docs)


def test_only_sites_with_myst_pages_get_a_new_index_version():
    """A Sphinx site without MyST keeps the reader version it had (no rebuild); MyST settings are
    part of the version, so changing them rebuilds."""
    assert for_site(RST, SiteOptions(directory_urls=False)).version == "3.html.bee164e8"
    plain = for_site(RST, SiteOptions(myst=MystOptions()))
    anchored = for_site(RST, SiteOptions(myst=MystOptions(settings=(("myst_heading_anchors", "3"),))))
    assert len({RST.version, plain.version, anchored.version}) == 3


def test_cli_ingests_a_myst_site_and_keeps_a_broken_pages_last_good_version(tmp_home, tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS["attrs"], docs)
    shutil.copy(DATA / "attrs" / "README.md", docs / "README.md")
    overview = docs / "overview.md"
    overview.write_text(overview.read_text().replace("../README.md", "README.md"))
    args = ["ingest", str(docs), "--corpus", "attrs", "--base-url", "https://www.attrs.org/en/stable/", "--page-urls", "html"]
    first = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert first.exit_code == 0, first.output
    assert "MyST Markdown (.md) via myst_parser" in " ".join(first.output.split())
    overview.write_text(overview.read_text().replace("'code-begin -->'", "'no such marker'"))
    second = CliRunner().invoke(app, args[:4], env={"COLUMNS": "300"})
    assert second.exit_code == 0, second.output
    output = " ".join(second.output.split())
    assert "overview.md" in output and "broken MyST Markdown at line 5" in output, output
    from citedocs.service import Services

    store = Services.open().store
    chunks = store.get_chunks("attrs", list(store.chunk_hashes("attrs")))
    assert any("class SomeClass" in chunk.text for chunk in chunks)  # the last good version, README included
    assert "https://www.attrs.org/en/stable/how-does-it-work.html#how-frozen" in {chunk.url for chunk in chunks}
