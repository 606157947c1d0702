"""What a question asks, read the way the question gate and the extractive backend read it: the
sentences that ask (not the user's story), and each separate thing an asking sentence asks."""

from __future__ import annotations

from citedocs.sentences import asked_clauses, asked_sentences, question_sentences


def test_a_sentence_ends_before_a_capital_and_never_inside_backticks():
    question = "I call `os.rmdir(p). Then` it fails. What now? i.e. which function?"
    assert question_sentences(question) == ["I call `os.rmdir(p). Then` it fails.", "What now? i.e. which function?"]


def test_the_users_story_is_not_what_they_ask():
    question = "My CLI has --json and --csv output flags. How do I make argparse reject both?"
    assert asked_sentences(question) == ["How do I make argparse reject both?"]


def test_a_question_with_no_question_mark_asks_all_of_it():
    assert asked_sentences("Explain view transitions.") == ["Explain view transitions."]


def test_each_thing_a_sentence_asks_is_its_own_clause():
    question = (
        "What command do I run to set up a virtual environment for my project, "
        "and is there a conventional name for that folder?"
    )
    assert asked_clauses(question) == [
        "What command do I run to set up a virtual environment for my project",
        "is there a conventional name for that folder?",
    ]


def test_two_asking_sentences_are_two_clauses_and_the_story_none():
    question = (
        "I publish several versions of my docs with mike. Which template block do I override? "
        "What do I put in mkdocs.yml so the theme picks up my override files?"
    )
    assert asked_clauses(question) == [
        "Which template block do I override?",
        "What do I put in mkdocs.yml so the theme picks up my override files?",
    ]


def test_a_clause_too_short_to_ask_anything_stays_with_the_one_before():
    question = "Can prefetching be turned on for every link on the site, or not?"
    assert asked_clauses(question) == [question]


def test_commas_and_semicolons_inside_code_do_not_split():
    question = "Does `sorted(data, key=f, reverse=True); print(x)` keep equal items in order?"
    assert asked_clauses(question) == [question]
