"""WordPiece: ids equal Hugging Face ``tokenizers``' WordPiece model given the same vocabulary,
on text the vocabulary was not trained on; greedy longest match worked by hand; training."""

from __future__ import annotations

import pytest

from attnbook.tokenizers import WordPieceTokenizer
from attnbook.tokenizers.wordpiece import SPECIAL_TOKENS, encode_word

tokenizers = pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def movie_sentences() -> list[str]:
    from attnbook.data import load_movie_reviews

    texts, _ = load_movie_reviews()
    return list(texts)


def hf_wordpiece(tok: WordPieceTokenizer):
    """The same vocabulary in Hugging Face's WordPiece model with BERT's normalizer and pre-tokenizer."""
    hf = tokenizers.Tokenizer(
        tokenizers.models.WordPiece(vocab=dict(tok.vocab), unk_token="[UNK]", max_input_chars_per_word=100)
    )
    hf.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=tok.lowercase)
    hf.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    return hf


@pytest.mark.parametrize("score", ["frequency", "likelihood"])
def test_ids_equal_tokenizers_wordpiece_on_held_out_text(movie_sentences, score) -> None:
    train, held_out = movie_sentences[:3000], movie_sentences[9000:10568]
    tok = WordPieceTokenizer().train(train, vocab_size=1500, score=score)
    assert tok.vocab_size == 1500
    hf = hf_wordpiece(tok)
    extra = [
        "Café déjà vu -- naïve résumé!",  # accents stripped when lowercasing
        "state-of-the-art, 1,000,000 $ (and 50%)...",  # punctuation split off one by one
        "under_score tab\there\nnewline " + "x" * 101,  # "_" is punctuation; a 101-char word is [UNK]
        "",
    ]
    n_unk = 0
    for text in held_out + extra:
        ours = tok.encode(text)
        assert ours == hf.encode(text, add_special_tokens=False).ids, text
        n_unk += ours.count(tok.unk_id)
    assert n_unk > 0  # the held-out text does reach the unknown path


def test_cased_vocabulary_matches_too(movie_sentences) -> None:
    tok = WordPieceTokenizer(lowercase=False).train(movie_sentences[:1000], vocab_size=800)
    hf = hf_wordpiece(tok)
    for text in movie_sentences[5000:5300] + ["Éclair NASA"]:
        assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids, text


def test_greedy_longest_match_by_hand() -> None:
    vocab = {"un", "una", "##ff", "##a", "##able", "##aff", "##f", "##ab", "##le", "a"}
    # longest first: "una" beats "un", then "##ff", then "##able" beats "##ab"
    assert encode_word("unaffable", vocab) == ["una", "##ff", "##able"]
    assert encode_word("a", vocab) == ["a"]
    assert encode_word("aff", vocab) == ["a", "##ff"]
    assert encode_word("ffa", vocab) == ["[UNK]"]  # no word-initial "f": the whole word is unknown
    assert encode_word("unaffablex", vocab) == ["[UNK]"]  # nothing for the last "x": unknown as a whole
    assert encode_word("a" * 5, {"a", "##a"}, max_chars=4) == ["[UNK]"]


def test_training_vocabulary_layout_and_round_trip() -> None:
    texts = ["the cat sat on the mat", "the cats sat", "a hat on a cat"] * 10
    tok = WordPieceTokenizer().train(texts, vocab_size=40)
    assert tuple(tok.id_to_token[:5]) == SPECIAL_TOKENS
    assert tok.special_ids == [0, 1, 2, 3, 4] and (tok.pad_id, tok.mask_id) == (0, 4)
    assert "the" in tok.vocab and "cat" in tok.vocab  # the most frequent words become whole tokens
    assert tok.decode(tok.encode("The cats sat on a mat")) == "the cats sat on a mat"
    ids, segments = tok.encode_pair("the cat", "a hat")
    assert tok.decode(ids) == "[CLS] the cat [SEP] a hat [SEP]"
    assert tok.decode(ids, skip_special_tokens=True) == "the cat a hat"
    assert segments == [0, 0, 0, 0, 1, 1, 1]
    assert tok.tokenize("dog") == ["[UNK]"]  # "g" never seen
    again = WordPieceTokenizer(tok.id_to_token)  # a tokenizer from a vocabulary list, as from vocab.txt
    assert again.encode("the cats") == tok.encode("the cats")
    big = WordPieceTokenizer().train(texts, vocab_size=10_000)  # stops when no pair is left
    assert big.vocab_size < 100 and all(w in big.vocab for w in ("the", "cats", "hat"))


def test_errors() -> None:
    tok = WordPieceTokenizer().train(["abc abd"], vocab_size=12)
    with pytest.raises(ValueError, match="vocab_size must be at least 9"):
        WordPieceTokenizer().train(["abc abd"], vocab_size=8)
    with pytest.raises(TypeError, match="iterable of strings"):
        WordPieceTokenizer().train("abc abd", vocab_size=20)
    with pytest.raises(ValueError, match="score"):
        WordPieceTokenizer().train(["abc"], vocab_size=20, score="bpe")
    with pytest.raises(ValueError, match="special tokens"):
        WordPieceTokenizer(["a", "##b"])
    with pytest.raises(ValueError, match="repeat"):
        WordPieceTokenizer([*SPECIAL_TOKENS, "a", "a"])
    with pytest.raises(TypeError, match="text must be a str"):
        tok.encode(["abc"])
    with pytest.raises(ValueError, match=r"ids must be ints in 0 .. 11"):
        tok.decode([12])
