"""Citations constrained at decoding time: the schema, each server flavour's request shape, and the
reader that streams sentences out of partial JSON. No model needed; the real-model tests are in
test_local_llm.py."""

from __future__ import annotations

import json

import pytest

from citedocs.generate.structured import (
    DEFAULT_REASON,
    MAX_CITES,
    StructuredOutputError,
    StructuredReader,
    answer_schema,
    marker_text,
    request_fields,
)

IDS = ["guides/environment-variables#env-files/1", "reference/cli-reference#--port-number/1"]


def _cite_enum(schema: dict) -> list[str]:
    return schema["properties"]["sentences"]["items"]["properties"]["cite"]["items"]["enum"]


def test_citations_can_only_be_the_retrieved_ids():
    schema = answer_schema(IDS + IDS[:1])
    assert _cite_enum(schema) == IDS  # deduplicated, in retrieval order
    cite = schema["properties"]["sentences"]["items"]["properties"]["cite"]
    assert cite["minItems"] == 1  # a sentence without a citation cannot be written
    assert cite["maxItems"] == MAX_CITES  # nor one that repeats ids until max_tokens cuts the JSON


def test_the_model_decides_answerable_first_then_the_reason_then_the_sentences():
    schema = answer_schema(IDS)
    assert list(schema["properties"]) == ["answerable", "not_answerable_because", "sentences"]
    assert schema["properties"]["answerable"]["type"] == "boolean"
    assert schema["properties"]["not_answerable_because"]["type"] == ["string", "null"]


def test_schema_is_valid_for_openai_strict_mode():
    """Strict mode: every object lists all its properties as required and forbids others."""

    def objects(node):
        if isinstance(node, dict):
            if node.get("type") == "object":
                yield node
            for value in node.values():
                yield from objects(value)
        elif isinstance(node, list):
            for value in node:
                yield from objects(value)

    for obj in objects(answer_schema(IDS)):
        assert set(obj["required"]) == set(obj["properties"])
        assert obj["additionalProperties"] is False


def test_llamacpp_gets_the_schema_as_json_schema():
    schema = answer_schema(IDS)
    assert request_fields("llamacpp", schema) == {"json_schema": schema}


def test_openai_and_vllm_get_a_strict_response_format():
    schema = answer_schema(IDS)
    fields = request_fields("openai", schema)
    assert fields == {
        "response_format": {"type": "json_schema", "json_schema": {"name": "cited_answer", "strict": True, "schema": schema}}
    }


def test_ollama_gets_format_and_its_v1_layer_response_format():
    schema = answer_schema(IDS)
    fields = request_fields("ollama", schema)
    assert fields["format"] == schema
    assert fields["response_format"]["json_schema"]["schema"] == schema


def test_off_sends_no_schema_and_unknown_flavours_are_rejected():
    assert request_fields("off", answer_schema(IDS)) == {}
    with pytest.raises(ValueError, match="llamacpp, openai, ollama, off"):
        request_fields("tgi", answer_schema(IDS))


ANSWER = {
    "answerable": True,
    "not_answerable_because": None,
    "sentences": [
        {"text": "Add a mode name to the file, e.g. `.env.staging`.", "cite": [IDS[0]]},
        {"text": "Pass it with \"--mode staging\" {not a brace}.", "cite": [IDS[0], IDS[1]]},
    ],
}


@pytest.mark.parametrize("piece", [1, 3, 7, 1000])
def test_each_sentence_is_released_when_its_object_closes(piece):
    raw = json.dumps(ANSWER)
    reader = StructuredReader()
    released: list[tuple[int, str]] = []
    for start in range(0, len(raw), piece):
        for sentence in reader.feed(raw[start : start + piece]):
            released.append((start + piece, sentence))
    assert reader.finish() == ""
    assert [s.strip() for _, s in released] == [
        f"Add a mode name to the file, e.g. `.env.staging` [{IDS[0]}].",
        f'Pass it with "--mode staging" {{not a brace}} [{IDS[0]}] [{IDS[1]}].',
    ]
    first_closed = raw.index("}") + 1
    assert released[0][0] < len(raw) or piece >= len(raw)
    assert released[0][0] >= first_closed


def test_a_declined_answer_becomes_the_no_answer_protocol():
    reader = StructuredReader()
    declined = {"answerable": False, "not_answerable_because": "the docs do not cover MongoDB.", "sentences": []}
    assert reader.feed(json.dumps(declined)) == []
    assert reader.finish().strip() == "NO_ANSWER: the docs do not cover MongoDB."


def test_a_decline_without_a_reason_still_refuses_with_a_generic_reason():
    reader = StructuredReader()
    reader.feed(json.dumps({"answerable": False, "not_answerable_because": None, "sentences": []}))
    assert reader.declined() == DEFAULT_REASON
    assert reader.finish().strip() == f"NO_ANSWER: {DEFAULT_REASON}"


def test_an_answer_written_into_the_reason_field_does_not_refuse_an_answerable_question():
    """The v1 failure: the model explained in the reason field and answered after it. The decision
    is the boolean, so the sentences stand and the reason is ignored."""
    answer = ANSWER | {"not_answerable_because": "getSecret() is only available on the server."}
    reader = StructuredReader()
    released = reader.feed(json.dumps(answer))
    assert reader.declined() is None
    assert len(released) == 2 and reader.finish() == ""


@pytest.mark.parametrize(
    "broken",
    [
        '{"answerable": true, "not_answerable_because": null, "sentences": [{"text": "Run it',
        "<html>502</html>",
        "[]",
        '{"not_answerable_because": null, "sentences": []}',  # no decision
        '{"answerable": "yes", "not_answerable_because": null, "sentences": []}',
    ],
)
def test_broken_json_is_an_error_not_an_answer(broken):
    reader = StructuredReader()
    assert reader.feed(broken) == []
    with pytest.raises(StructuredOutputError):
        reader.finish()


def test_several_sentences_in_one_text_each_carry_the_citation():
    text = marker_text("Astro loads `.env` files. Use `--mode` to pick one.", [IDS[0]])
    assert text.splitlines() == [f"Astro loads `.env` files [{IDS[0]}].", f"Use `--mode` to pick one [{IDS[0]}]."]


def test_a_decline_is_known_as_soon_as_its_reason_closes():
    reader = StructuredReader()
    reader.feed('{"answerable": false, "not_answerable_because": "the docs do not cover \\"Mongo')
    assert reader.declined() is None  # the reason is still being written
    reader.feed('DB\\"", "sentences": [{"text": "ignored')
    assert reader.declined() == 'the docs do not cover "MongoDB"'
    assert StructuredReader(raw='{"answerable": false, "not_answerable_because": null').declined() == DEFAULT_REASON
    assert StructuredReader(raw='{"answerable": true, "not_answerable_because": "x", "sentences": [').declined() is None
