"""Extractive answers follow the docs' structure (generate/units.py): an announced example comes with
its code, an API entry with its signature, a definition with its term, a numbered procedure whole or
not at all, and no answer ends on an announcement. Real pages of the Python 3.11 docs read by the
HTML reader and chunked as ingest chunks them, a real bi-encoder, and the real validator, which
still checks every quoted unit against the chunk it cites."""

from __future__ import annotations

import re

import pytest

from citedocs.generate.extractive import ExtractiveGenerator
from citedocs.generate.units import MAX_CODE_LINES, MAX_ITEMS, read_pieces, unit_of
from citedocs.models.encoders import bi_encoder
from citedocs.sentences import CODE_CUT_MARK, CUT_MARK, Unit, split_units
from citedocs.types import Chunk, ChunkId
from citedocs.validate.support import SupportChecker
from citedocs.validate.thresholds import load_thresholds
from citedocs.validate.validator import CitationValidator
from pydocs import python_docs_chunks


@pytest.fixture(scope="module")
def chunks() -> dict[str, Chunk]:
    return python_docs_chunks("library/gzip.html", "library/collections.html", "glossary.html", "tutorial/venv.html")


@pytest.fixture(scope="module")
def generator() -> ExtractiveGenerator:
    return ExtractiveGenerator(bi_encoder(), min_sentence_score=0.3)


@pytest.fixture(scope="module")
def validator() -> CitationValidator:
    return CitationValidator(SupportChecker(bi_encoder(), load_thresholds()))


def made_chunk(anchor: str, text: str, heading: str = "Deploying") -> Chunk:
    return Chunk(
        id=ChunkId(f"guide#{anchor}/1"),
        doc_path="guide.md",
        title="Guide",
        heading_path=(heading,),
        anchor=anchor,
        anchor_path=(anchor,),
        url=f"https://example.org/guide/#{anchor}",
        text=text,
        token_count=len(text.split()),
    )


def last_unit(answer: str) -> Unit:
    return [u for u in split_units(answer) if re.sub(r"\[[^\[\]]+\]", "", u.text).strip()][-1]


def test_an_api_entry_is_quoted_with_its_signature_first_and_cited_to_its_anchor(chunks, generator, validator):
    # a question phrased without the API's name; the entry ranks first
    retrieved = [chunks["library/gzip#gzip.open/1"], chunks["library/gzip#module-gzip/1"]]
    raw = generator.generate("How do I read a gzip-compressed log file line by line?", retrieved, []).text
    result = validator.validate(raw, retrieved)
    first = result.sentences[0]
    assert first.text == "```\ngzip.open(filename, mode='rb', compresslevel=9, encoding=None, errors=None, newline=None)\n```"
    assert first.ids == ["library/gzip#gzip.open/1"]
    assert result.sentences[1].text.startswith("Open a gzip-compressed file")  # then its description
    assert result.answer.count("gzip.open(filename") == 1  # the signature is not quoted again as prose


def test_an_entrys_later_chunk_still_leads_with_the_signature_from_its_heading(chunks, generator, validator):
    retrieved = [chunks["library/gzip#gzip.open/2"]]
    raw = generator.generate("Which mode strings can I pass to open a gzip file in text mode?", retrieved, []).text
    result = validator.validate(raw, retrieved)
    assert result.sentences[0].text.startswith("```\ngzip.open(")
    code = next(d for d in result.decisions if d.sentence.startswith("```"))
    assert code.action != "dropped" and code.final_ids == ["library/gzip#gzip.open/2"]  # found in its heading


def test_an_entry_quoted_from_two_of_its_chunks_shows_its_signature_once(chunks, generator, validator):
    retrieved = [chunks["library/gzip#gzip.open/1"], chunks["library/gzip#gzip.open/2"]]
    question = "How do I open a gzip-compressed file in text mode, and which mode strings does that take?"
    result = validator.validate(generator.generate(question, retrieved, []).text, retrieved)
    cited = {i for s in result.sentences for i in s.ids}
    assert cited >= {"library/gzip#gzip.open/1", "library/gzip#gzip.open/2"}  # both chunks quoted
    assert result.answer.count("gzip.open(filename") == 1
    assert result.sentences[0].text.startswith("```\ngzip.open(")


def test_a_second_api_entry_among_the_top_chunks_is_quoted_with_its_signature(generator, validator):
    # the question is about insort, but bisect_left's sentence scores best: both entries are named
    pages = python_docs_chunks("library/bisect.html")
    retrieved = [pages["library/bisect#bisect.bisect_left/1"], pages["library/bisect#bisect.insort/1"]]
    question = "How do I put a new item into a list that is already sorted so that it stays sorted?"
    result = validator.validate(generator.generate(question, retrieved, []).text, retrieved)
    signatures = [s.text for s in result.sentences if s.text.startswith("```")]
    assert signatures == [
        "```\nbisect.bisect_left(a, x, lo=0, hi=len(a), *, key=None)\n```",
        "```\nbisect.insort(a, x, lo=0, hi=len(a), *, key=None)\n```",
    ]
    assert any(s.ids == ["library/bisect#bisect.insort/1"] and not s.text.startswith("```") for s in result.sentences)


def test_an_api_question_leads_with_its_entry_even_below_a_guide_section(chunks, generator, validator):
    # retrieval ranked an API entry first, so the question is about an entry: the entry that answers
    # it leads (signature, then description), ahead of a guide section ranked above that entry
    guide = made_chunk(
        "counting-words",
        "Counting the words of a text and finding the most frequent words with their counts is a classic exercise.",
        heading="Counting words",
    )
    retrieved = [chunks["library/gzip#gzip.open/1"], guide, chunks["library/collections#collections.Counter.most_common/1"]]
    question = "How do I get the three most frequent words of a text with their counts?"
    result = validator.validate(generator.generate(question, retrieved, []).text, retrieved)
    assert any(s.ids == ["guide#counting-words/1"] for s in result.sentences)  # the guide is quoted, after it
    assert result.sentences[0].text == "```\nclass collections.Counter([iterable-or-mapping])\nmost_common([n])\n```"
    assert result.sentences[1].ids == ["library/collections#collections.Counter.most_common/1"]


def test_a_methods_signature_is_qualified_by_its_class_entry(chunks, generator, validator):
    retrieved = [chunks["library/collections#collections.Counter.most_common/1"]]
    raw = generator.generate("How do I get the three most frequent words with their counts?", retrieved, []).text
    result = validator.validate(raw, retrieved)
    assert result.sentences[0].text == "```\nclass collections.Counter([iterable-or-mapping])\nmost_common([n])\n```"
    assert result.sentences[0].ids == ["library/collections#collections.Counter.most_common/1"]  # copied from its headings
    assert "most_common([n]) [" not in result.answer  # the entry's own heading line is not quoted again as prose


def test_an_announced_example_comes_with_its_code(chunks, generator, validator):
    retrieved = [chunks["library/gzip#examples-of-usage/1"]]
    raw = generator.generate("How do I read a compressed file?", retrieved, []).text
    result = validator.validate(raw, retrieved)
    announcement = next(i for i, s in enumerate(result.sentences) if s.text == "Example of how to read a compressed file:")
    assert result.sentences[announcement + 1].text.startswith("```")
    assert "gzip.open('/home/joe/file.txt.gz', 'rb')" in result.sentences[announcement + 1].text
    # the validator keeps code as written, indentation included
    assert "    file_content = f.read()" in result.answer


def test_an_announcement_whose_chunk_ends_before_what_it_announces_is_never_quoted(chunks, generator):
    cut = chunks["tutorial/venv#creating-virtual-environments/3"]
    assert cut.text.rstrip().endswith("For example:")  # the chunker closed the chunk before the sample
    raw = generator.generate("What does activating a virtual environment change in my shell?", [cut], []).text
    assert "For example" not in raw
    assert not last_unit(raw).text.rstrip().endswith(":")


def test_a_definition_is_quoted_with_its_term(chunks, generator, validator):
    retrieved = [chunks["glossary#term-bytes-like-object/1"]]
    raw = generator.generate("What kind of object supports the buffer protocol and exports a C-contiguous buffer?", retrieved, []).text
    result = validator.validate(raw, retrieved)
    texts = [s.text for s in result.sentences]
    definition = texts.index("An object that supports the Buffer Protocol and can export a C-contiguous buffer.")
    assert texts[definition - 1] == "bytes-like object"


def test_a_long_code_sample_is_cut_after_its_bound_and_the_cut_is_marked(generator, validator):
    code = "\n".join(f"step_{n} = build({n})" for n in range(30))
    chunk = made_chunk("build-script", f"To build every target of the release, run the build script like so:\n\n```python\n{code}\n```")
    raw = generator.generate("How do I build every target of the release?", [chunk], []).text
    result = validator.validate(raw, [chunk])
    block = next(s for s in result.sentences if s.text.startswith("```"))
    lines = block.text.split("\n")
    assert lines[1 : MAX_CODE_LINES + 1] == code.split("\n")[:MAX_CODE_LINES]
    assert lines[-2] == CODE_CUT_MARK and len(lines) == MAX_CODE_LINES + 3
    assert block.ids == [chunk.id]  # copied verbatim up to the cut: the validator keeps it


def test_a_numbered_procedure_is_quoted_whole_or_not_at_all(generator, validator):
    steps = [
        "1. Build the static site with the production configuration enabled.",
        "2. Upload the generated output folder to the storage bucket of the server.",
        "3. Invalidate the content delivery network cache so visitors receive the new pages.",
    ]
    whole = made_chunk("deploy", "To deploy a new release of the site:\n\n" + "\n\n".join(steps))
    raw = generator.generate("How do I make visitors receive the new pages after uploading the output folder?", [whole], []).text
    result = validator.validate(raw, [whole])
    texts = [s.text for s in result.sentences]
    assert texts == ["To deploy a new release of the site:", *(s.split(". ", 1)[1] for s in steps)]
    # the chunk holds only steps 2 and 3 of a procedure: no step of it is quoted
    part = made_chunk("deploy-rest", "The release goes on.\n\n" + "\n\n".join(steps[1:]))
    pieces = read_pieces(part.text)
    assert [unit_of(pieces, i) for i, p in enumerate(pieces) if p.kind == "step"] == [None, None]


def test_an_announced_option_list_is_carried_up_to_its_bound_and_the_cut_is_marked(generator, validator):
    items = [f"- `option_{n}`: sets how the server handles feature number {n} of the build." for n in range(12)]
    chunk = made_chunk("options", "The server command accepts the following options:\n\n" + "\n".join(items), heading="Options")
    raw = generator.generate("Which options does the server command accept?", [chunk], []).text
    result = validator.validate(raw, [chunk])
    texts = [s.text for s in result.sentences]
    start = texts.index("The server command accepts the following options:")
    assert texts[start + 1 : start + 1 + MAX_ITEMS] == [i[2:] for i in items[:MAX_ITEMS]]
    assert texts[start + 1 + MAX_ITEMS] == CUT_MARK and result.sentences[start + 1 + MAX_ITEMS].ids == [chunk.id]


def test_a_cut_mark_stands_only_after_a_unit_the_validator_kept(validator):
    chunk = made_chunk("options", "The server accepts a port option and a host option for binding.")
    result = validator.validate(f"The moon is made of green cheese and ham [{chunk.id}].\n{CUT_MARK} [{chunk.id}]", [chunk])
    assert result.sentences == [] and result.refusal is not None


def test_an_announcement_the_chunker_cut_from_its_code_brings_the_code_from_the_sections_next_chunk(generator, validator):
    first = made_chunk("schema", "Register each variable of the schema with the envField helper and give it a context and an access level like so:")
    second = Chunk(**{**first.__dict__, "id": ChunkId("guide#schema/2"), "text": '```js\nAPI_SECRET: envField.string({ context: "server", access: "secret" })\n```'})
    question = "Which helper registers a schema variable, and how do I give it a server context and secret access?"
    raw = generator.generate(question, [first, second], []).text
    result = validator.validate(raw, [first, second])
    texts = [s.text for s in result.sentences]
    announcement = texts.index(first.text)
    assert "envField.string" in texts[announcement + 1] and result.sentences[announcement + 1].ids == ["guide#schema/2"]
    # without the next chunk the announcement is not quoted at all
    assert "like so" not in generator.generate(question, [first], []).text


def test_a_sentence_that_refers_back_brings_the_sentence_it_refers_to(generator, validator):
    chunk = made_chunk(
        "components",
        "Register the component globally in the theme's enhance hook. Make sure its name either contains a hyphen or is "
        "in PascalCase. Otherwise, it will be treated as an inline element and wrapped inside a paragraph, which leads "
        "to hydration mismatch errors in the browser.",
        heading="Registering components globally",
    )
    raw = generator.generate("Why does my globally registered component cause hydration mismatch errors?", [chunk], []).text
    texts = [s.text for s in validator.validate(raw, [chunk]).sentences]
    otherwise = next(i for i, t in enumerate(texts) if t.startswith("Otherwise,"))
    assert texts[otherwise - 1] == "Make sure its name either contains a hyphen or is in PascalCase."


def test_the_quote_answer_style_quotes_the_same_units(chunks, generator):
    from citedocs.generate.openai_compat import EndpointConfig, OpenAICompatibleGenerator
    from citedocs.generate.quote import QuotingGenerator

    # the LLM only grades and rewrites in this style; answering never calls it (nothing listens here)
    llm = OpenAICompatibleGenerator(EndpointConfig(base_url="http://127.0.0.1:9/v1", model="unused"))
    quoting = QuotingGenerator(llm, generator)
    retrieved = [chunks["library/gzip#gzip.open/1"], chunks["library/gzip#examples-of-usage/1"]]
    question = "How do I read a gzip-compressed log file line by line?"
    try:
        assert quoting.generate(question, retrieved, []).text == generator.generate(question, retrieved, []).text
    finally:
        quoting.close()


def test_an_entry_whose_signature_opens_with_its_kind_is_an_api_entry():
    # "classmethod datetime.fromisoformat(date_string)" under #datetime.datetime.fromisoformat
    from citedocs.generate.units import entry_signature

    chunk = python_docs_chunks("library/datetime.html")["library/datetime#datetime.datetime.fromisoformat/2"]
    assert entry_signature(chunk) == "classmethod datetime.fromisoformat(date_string)"


def test_a_changelog_version_heading_is_not_an_api_entry():
    from citedocs.generate.units import entry_signature

    version = made_chunk("9.5.9", "Fixed navigation pruning with tabs and sections enabled", heading="9.5.9 February 10, 2024")
    assert entry_signature(version) is None


def test_a_table_row_is_quoted_under_its_header_row(generator, validator):
    table = (
        "The server reads these settings at start:\n\n"
        "Setting | Default | Meaning\n"
        "bind_port | 8000 | The port the server listens on for requests.\n"
        "worker_count | 4 | How many worker processes answer requests at once."
    )
    chunk = made_chunk("settings", table, heading="Settings")
    pieces = read_pieces(chunk.text)
    row = next(i for i, p in enumerate(pieces) if p.text.startswith("worker_count"))
    assert [pieces[i].text for i in unit_of(pieces, row).indices] == ["Setting | Default | Meaning", pieces[row].text]
    raw = generator.generate("How many worker processes answer requests at once by default?", [chunk], []).text
    texts = [s.text for s in validator.validate(raw, [chunk]).sentences]
    assert "Setting | Default | Meaning" in texts  # verbatim from the chunk: the validator keeps it
    assert texts.index("Setting | Default | Meaning") < next(i for i, t in enumerate(texts) if t.startswith("worker_count"))


def test_an_option_item_is_quoted_with_its_default_never_beside_another_options_default(generator, validator):
    chunk = made_chunk(
        "compression",
        "The compression middleware takes these arguments:\n\n"
        "- `minimum_size` - Do not compress responses that are smaller than this minimum size in bytes. Defaults to `500`.\n"
        "- `thread_minimum_size` - The smallest body chunk compressed in a worker thread. Defaults to `131072` (128 KiB).\n",
        heading="Compression middleware",
    )
    pieces = read_pieces(chunk.text)
    first = next(i for i, p in enumerate(pieces) if p.text.startswith("`minimum_size`"))
    assert [pieces[i].text for i in unit_of(pieces, first).indices] == [pieces[first].text, "Defaults to `500`."]
    raw = generator.generate("What is the default size below which responses are not compressed, and which argument sets it?", [chunk], []).text
    texts = [s.text for s in validator.validate(raw, [chunk]).sentences]
    assert texts[texts.index(pieces[first].text) + 1] == "Defaults to `500`."
    # an item of more sentences than an item unit holds is quoted sentence by sentence, as prose is
    long_item = made_chunk("long", "- " + " ".join(f"Sentence number {n} says something." for n in range(5)))
    long_pieces = read_pieces(long_item.text)
    assert unit_of(long_pieces, 2).indices == (2,)


def test_a_definitions_later_sentence_is_quoted_with_its_term_and_first_sentence(generator, validator):
    chunk = made_chunk(
        "policies",
        "`json.dumps_function`:\n\nIf this is set, the tojson filter dumps with this function instead of the default one.\n\n"
        "`json.dumps_kwargs`:\n\nKeyword arguments to be passed to the dump function. The default is `{'sort_keys': True}`.",
        heading="Policies",
    )
    pieces = read_pieces(chunk.text)
    default = next(i for i, p in enumerate(pieces) if p.text.startswith("The default is"))
    assert [pieces[i].text for i in unit_of(pieces, default).indices] == [
        "`json.dumps_kwargs`:", "Keyword arguments to be passed to the dump function.", pieces[default].text,
    ]
    raw = generator.generate("How do I stop tojson from sorting the keys, what is the default of its keyword arguments?", [chunk], []).text
    texts = [s.text for s in validator.validate(raw, [chunk]).sentences]
    assert "`json.dumps_kwargs`:" in texts and texts.index("`json.dumps_kwargs`:") < texts.index(pieces[default].text)
