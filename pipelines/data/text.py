"""Synthetic text for context-extension studies: a small language and a passkey task.

Everything is a deterministic function of two seeds: the language's seed fixes its grammar,
the `random.Random` passed to each sampler fixes the samples. A sentence follows a sparse
first-order Markov chain from a uniformly drawn word to END; with probability `copy_prob` it
is instead an exact copy of an earlier sentence of the document (the long-range structure a
model predicts only by attending to the source). The passkey task (Mohtashami and Jaggi,
2023, in tokens) hides KEY d1 .. dn END inside a filler passage repeated over and over (a new
passage of digits and words for every example) and ends with QUERY KEY: a model that
retrieves the key completes it with the right digits. Token ids: BOS, END, KEY, QUERY, the
ten digits, then the words. See docs/text.md.
"""

from __future__ import annotations

import bisect
import itertools
import random
from dataclasses import dataclass

import torch

from axialrope.validation import is_int

BOS, END, KEY, QUERY = 0, 1, 2, 3
DIGIT0 = 4  # digits d are token ids DIGIT0 + d
FIRST_WORD = DIGIT0 + 10


def _check_rng(rng) -> None:
    if not isinstance(rng, random.Random):
        raise TypeError(f"rng must be a random.Random (seeded, for reproducible samples), got {type(rng).__name__}")


def _check_count(name: str, value, minimum: int) -> int:
    if not is_int(value):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


@dataclass(frozen=True)
class SyntheticLanguage:
    """A seeded Markov language with sentence copies (see the module docstring).

    Attributes:
        n_words: number of word tokens.
        branching: possible successors of each word (their probabilities are random).
        min_sentence, max_sentence: sentence length range in words (END not counted).
        copy_prob: chance that a sentence repeats an earlier one of its document.
        passage_length: (min, max) tokens of the passage that passkey fillers repeat.
        seed: fixes the grammar (each word's successors and their probabilities).
    """

    n_words: int = 64
    branching: int = 3
    min_sentence: int = 3
    max_sentence: int = 8
    copy_prob: float = 0.5
    passage_length: tuple[int, int] = (16, 32)
    seed: int = 0

    def __post_init__(self):
        _check_count("n_words", self.n_words, 2)
        _check_count("branching", self.branching, 1)
        if self.branching > self.n_words:
            raise ValueError(f"branching={self.branching} cannot exceed n_words={self.n_words}")
        _check_count("min_sentence", self.min_sentence, 1)
        _check_count("max_sentence", self.max_sentence, self.min_sentence)
        low, high = self.passage_length
        if not 1 <= low <= high:
            raise ValueError(f"passage_length must be (min, max) with 1 <= min <= max, got {self.passage_length}")
        if not 0 <= self.copy_prob < 1:
            raise ValueError(f"copy_prob must be in [0, 1), got {self.copy_prob}")
        grammar = random.Random(self.seed)
        words = range(FIRST_WORD, FIRST_WORD + self.n_words)
        successors, cumulative = [], []
        for _ in words:
            successors.append(grammar.sample(words, self.branching))
            # Dirichlet(1) weights: gamma(1) draws, normalised
            weights = [grammar.gammavariate(1.0, 1.0) for _ in range(self.branching)]
            cumulative.append(list(itertools.accumulate(w / sum(weights) for w in weights)))
        # frozen dataclass: the derived tables are set once, here
        object.__setattr__(self, "_successors", successors)
        object.__setattr__(self, "_cumulative", cumulative)

    @property
    def vocab_size(self) -> int:
        return FIRST_WORD + self.n_words

    def _sentence(self, rng: random.Random) -> list[int]:
        word = rng.randrange(FIRST_WORD, FIRST_WORD + self.n_words)
        sentence = [word]
        for _ in range(rng.randint(self.min_sentence, self.max_sentence) - 1):
            row = word - FIRST_WORD
            # min() guards against the last cumulative weight rounding to just below 1
            pick = min(bisect.bisect(self._cumulative[row], rng.random()), self.branching - 1)
            word = self._successors[row][pick]
            sentence.append(word)
        return sentence + [END]

    def document(self, length: int, rng: random.Random) -> list[int]:
        """`length` tokens of running text (the last sentence cut where the length ends)."""
        _check_count("length", length, 0)
        _check_rng(rng)
        tokens: list[int] = []
        sentences: list[list[int]] = []
        while len(tokens) < length:
            if sentences and rng.random() < self.copy_prob:
                sentence = rng.choice(sentences)
            else:
                sentence = self._sentence(rng)
            sentences.append(sentence)
            tokens.extend(sentence)
        return tokens[:length]

    def language_batch(self, batch: int, length: int, rng: random.Random) -> torch.Tensor:
        """(batch, length) int64: BOS then length - 1 tokens of a fresh document per row."""
        _check_count("batch", batch, 1)
        _check_count("length", length, 2)
        return torch.tensor([[BOS, *self.document(length - 1, rng)] for _ in range(batch)])

    def passkey_example(self, length: int, rng: random.Random, n_digits: int = 5) -> tuple[list[int], int]:
        """One passkey sequence of exactly `length` tokens and the position of its KEY token.

        Layout: BOS, filler[:i], KEY, d1 .. dn, END, filler[i:], QUERY, KEY, d1 .. dn with the
        insertion point i uniform over the filler, so the key's depth is uniform in the context.
        """
        _check_count("n_digits", n_digits, 1)
        overhead = 1 + (n_digits + 2) + (n_digits + 2)
        if not is_int(length) or length <= overhead:
            raise ValueError(f"length must be an int > {overhead} for n_digits={n_digits}, got {length!r}")
        # uniformly random digits and words: only retrieval (not bigram statistics) predicts the
        # repeats, and copying digits is practised on them, not only on the one key per row
        passage = [rng.randrange(DIGIT0, FIRST_WORD + self.n_words) for _ in range(rng.randint(*self.passage_length))]
        filler = (passage * (1 + (length - overhead) // len(passage)))[: length - overhead]
        digits = [DIGIT0 + rng.randrange(10) for _ in range(n_digits)]
        cut = rng.randint(0, len(filler))
        tokens = [BOS, *filler[:cut], KEY, *digits, END, *filler[cut:], QUERY, KEY, *digits]
        return tokens, 1 + cut

    def passkey_batch(self, batch: int, length: int, rng: random.Random, n_digits: int = 5) -> torch.Tensor:
        """(batch, length) int64 passkey sequences; the answer is the last n_digits columns."""
        _check_count("batch", batch, 1)
        return torch.tensor([self.passkey_example(length, rng, n_digits)[0] for _ in range(batch)])

    def training_batch(
        self, batch: int, length: int, rng: random.Random, passkey_fraction: float = 0.5, n_digits: int = 5
    ) -> torch.Tensor:
        """(batch, length) int64: a passkey_fraction share of passkey rows (rounded), the rest language."""
        if not 0 <= passkey_fraction <= 1:
            raise ValueError(f"passkey_fraction must be in [0, 1], got {passkey_fraction}")
        _check_count("batch", batch, 1)
        n_passkey = round(batch * passkey_fraction)
        rows = []
        if n_passkey:
            rows.append(self.passkey_batch(n_passkey, length, rng, n_digits))
        if batch - n_passkey:
            rows.append(self.language_batch(batch - n_passkey, length, rng))
        return torch.cat(rows)


__all__ = ["BOS", "DIGIT0", "END", "FIRST_WORD", "KEY", "QUERY", "SyntheticLanguage"]
