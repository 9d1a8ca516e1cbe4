"""The synthetic language and the passkey task: deterministic, well-formed, with long-range copies."""

import random

import pytest
import torch

from axialrope.pipelines.data.text import BOS, DIGIT0, END, FIRST_WORD, KEY, QUERY, SyntheticLanguage


def sentences(tokens: list[int]) -> list[tuple[int, ...]]:
    out, current = [], []
    for token in tokens:
        current.append(token)
        if token == END:
            out.append(tuple(current))
            current = []
    return out


def test_samples_are_a_function_of_the_two_seeds():
    language = SyntheticLanguage(seed=3)
    first = language.training_batch(4, 64, random.Random(7))
    assert torch.equal(first, SyntheticLanguage(seed=3).training_batch(4, 64, random.Random(7)))
    assert not torch.equal(first, language.training_batch(4, 64, random.Random(8)))
    assert not torch.equal(first, SyntheticLanguage(seed=4).training_batch(4, 64, random.Random(7)))


def test_documents_are_markov_sentences_over_the_word_tokens():
    language = SyntheticLanguage(n_words=20, branching=2, min_sentence=3, max_sentence=5, copy_prob=0.0)
    tokens = language.document(2000, random.Random(0))
    assert len(tokens) == 2000
    assert set(tokens) <= set(range(FIRST_WORD, FIRST_WORD + 20)) | {END}
    complete = sentences(tokens)
    assert all(3 <= len(s) - 1 <= 5 for s in complete)
    # each word is followed by at most `branching` distinct words inside a sentence
    followers: dict[int, set[int]] = {}
    for s in complete:
        for a, b in zip(s[:-2], s[1:-1], strict=True):
            followers.setdefault(a, set()).add(b)
    assert max(len(f) for f in followers.values()) == 2


def test_copies_repeat_earlier_sentences_from_far_back():
    language = SyntheticLanguage(copy_prob=0.3)
    complete = sentences(language.document(4000, random.Random(0)))
    distances = [i - max(j for j in range(i) if complete[j] == s) for i, s in enumerate(complete) if s in complete[:i]]
    # ~30% of sentences are copies (a few more coincide by chance), some from > 100 sentences back
    assert 0.25 < len(distances) / len(complete) < 0.4
    assert max(distances) > 100
    no_copies = sentences(SyntheticLanguage(copy_prob=0.0).document(4000, random.Random(0)))
    assert sum(s in no_copies[:i] for i, s in enumerate(no_copies)) / len(no_copies) < 0.1


@pytest.mark.parametrize("length", [64, 128, 1024])
def test_passkey_sequences_hide_the_key_and_end_with_it(length):
    language = SyntheticLanguage()
    rng = random.Random(length)
    depths = []
    for _ in range(50):
        tokens, key_at = language.passkey_example(length, rng, n_digits=5)
        assert len(tokens) == length and tokens[0] == BOS
        assert tokens[key_at] == KEY and tokens[key_at + 6] == END
        digits = tokens[key_at + 1 : key_at + 6]
        assert all(DIGIT0 <= d < DIGIT0 + 10 for d in digits)
        assert tokens[-7:] == [QUERY, KEY, *digits]
        assert tokens.count(KEY) == 2 and tokens.count(QUERY) == 1
        # the filler around the key repeats one passage of 16 to 32 tokens
        filler = tokens[1:key_at] + tokens[key_at + 7 : -7]
        periods = [p for p in range(16, 33) if filler[p:] == filler[:-p]]
        assert periods and set(filler) <= set(range(DIGIT0, language.vocab_size))
        depths.append(key_at / length)
    assert min(depths) < 0.2 and max(depths) > 0.6  # spread over the context


def test_training_batches_mix_passkey_and_language_rows():
    batch = SyntheticLanguage().training_batch(8, 64, random.Random(0), passkey_fraction=0.25)
    assert batch.shape == (8, 64) and batch.dtype == torch.int64
    has_key = (batch == QUERY).any(dim=1)
    assert has_key.tolist() == [True, True] + [False] * 6
    assert int(batch.max()) < SyntheticLanguage().vocab_size


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda lang: lang.document(10, 0), TypeError, "random.Random"),
        (lambda lang: lang.document(-1, random.Random(0)), ValueError, "length must be at least 0"),
        (lambda lang: lang.passkey_example(15, random.Random(0)), ValueError, "length must be an int > 15"),
        (lambda lang: lang.language_batch(0, 10, random.Random(0)), ValueError, "batch must be at least 1"),
        (lambda lang: lang.training_batch(2, 64, random.Random(0), passkey_fraction=2), ValueError, "passkey_fraction"),
    ],
)
def test_bad_arguments_are_rejected_with_a_clear_error(call, error, match):
    with pytest.raises(error, match=match):
        call(SyntheticLanguage())


@pytest.mark.parametrize(
    "fields, match",
    [
        (dict(branching=100), "branching=100 cannot exceed n_words=64"),
        (dict(min_sentence=5, max_sentence=4), "max_sentence must be at least 5"),
        (dict(copy_prob=1.0), r"copy_prob must be in \[0, 1\)"),
    ],
)
def test_bad_languages_are_rejected(fields, match):
    with pytest.raises(ValueError, match=match):
        SyntheticLanguage(**fields)
