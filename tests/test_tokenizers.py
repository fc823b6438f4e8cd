"""attnbook.tokenizers: the worked example, the fast trainer against the plain one,
round trips, parity with tiktoken, compression against Hugging Face tokenizers.

All corpora are generated here (no download): a Zipf-distributed lexicon of
pseudo-words with capitals, punctuation, contractions, numbers, newlines and
some non-ASCII words, so that every branch of the split patterns is exercised.
"""

from __future__ import annotations

import json
import random

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnbook.tokenizers import (
    GPT2_SPLIT_PATTERN,
    GPT4_SPLIT_PATTERN,
    BPETokenizer,
    CharTokenizer,
    best_pair,
    bytes_per_token,
    encode_chunk,
    get_stats,
    merge,
    split_text,
    train_bpe,
    train_bpe_reference,
)
from attnbook.tokenizers.bpe import _encode_chunk_heap

PATTERNS = [None, "gpt2", "gpt4"]
HYPOTHESIS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- generated corpora ---------------------------------------------------------

_SYLLABLES = ("th e an or in ing er ou st qu re ly al ee ch wh a o i u s t n d "
              "ar en ion ter pro ver for my be not").split()
_EXTRA = ["don't", "it's", "you'll", "I'VE", "we're", "café", "naïve", "Größe", "façade",
          "日本語", "東京", "привет", "мир", "😀", "👍🏽", "—", "“quoted”", "x²", "3.14", "1,000"]


def make_text(n_words: int, seed: int) -> str:
    """Pseudo-English: the lexicon is fixed, the seed draws the words."""
    lex_rng = random.Random(12345)
    lexicon = ["".join(lex_rng.choice(_SYLLABLES) for _ in range(lex_rng.randint(1, 4)))
               for _ in range(3000)] + _EXTRA
    lex_rng.shuffle(lexicon)
    weights = [1.0 / (k + 1) for k in range(len(lexicon))]  # Zipf's law
    rng = random.Random(seed)
    words = rng.choices(lexicon, weights, k=n_words)
    out: list[str] = []
    start = True
    for w in words:
        if rng.random() < 0.03:
            w = str(rng.randint(0, 10 ** rng.randint(1, 7)))
        if start:
            w = w[:1].upper() + w[1:]
        out.append(w)
        start = False
        r = rng.random()
        if r < 0.08:
            out.append(rng.choice([". ", "! ", "? ", ".\n", ".\n\n", ":\n  "]))
            start = True
        elif r < 0.14:
            out.append(rng.choice([", ", "; ", " - ", "  ", " (", ") "]))
        else:
            out.append(" ")
    return "".join(out)


TRICKY = [
    "Hello world!!!   \n\n  x",
    "don't DON'T you'll I'VE 's'S'll",
    "1234567 89 3.14159 1,000,000",
    "   leading and trailing   ",
    "\t tabs\r\nand\r\n\r\nCRLF lines\n\n\n",
    "naïve café — “quotes” … «guillemets»",
    "日本語のテキストと漢字",
    "emoji 😀👍🏽 and flags 🇫🇷 and ZWJ 👩‍👩‍👧",
    "mixed123abc abc123 ___ __init__",
    "e\u0301 combining accent, and \u00a0no-break space",
    "",
    " ",
    "a",
]


@pytest.fixture(scope="module")
def corpus() -> str:
    return make_text(12_000, seed=0)


@pytest.fixture(scope="module")
def held_out() -> str:
    return make_text(4_000, seed=1) + "\n".join(TRICKY)


@pytest.fixture(scope="module")
def trained(corpus):
    """One tokenizer per split pattern, trained on the same corpus."""
    return {p: BPETokenizer(p, special_tokens=["<|endoftext|>", "<|pad|>"]).train(corpus, 256 + 300 + 2)
            for p in PATTERNS}


# --- the seeds' example, by hand --------------------------------------------------

def spell(ids: list[int]) -> str:
    """Write byte ids as letters and the new ids as Z, Y, X (as in the seeds)."""
    names = {256: "Z", 257: "Y", 258: "X"}
    return "".join(names.get(i, chr(i)) for i in ids)


def test_seeds_example_by_hand():
    ids = list(b"aaabdaaabac")
    assert ids == [97, 97, 97, 98, 100, 97, 97, 97, 98, 97, 99]
    # aa occurs 4 times (overlapping: twice in each aaa), more than any other pair
    stats = get_stats(ids)
    assert stats[(97, 97)] == 4 and max(stats.values()) == 4
    ids = merge(ids, (97, 97), 256)
    assert spell(ids) == "ZabdZabac"
    # now Za and ab both occur twice: the tie goes to the smaller pair, (97, 98) = ab
    stats = get_stats(ids)
    assert stats[(256, 97)] == stats[(97, 98)] == 2
    assert best_pair(stats) == (97, 98)
    ids = merge(ids, (97, 98), 257)
    assert spell(ids) == "ZYdZYac"
    assert best_pair(get_stats(ids)) == (256, 257)
    ids = merge(ids, (256, 257), 258)
    assert spell(ids) == "XdXac"
    assert ids == [258, 100, 258, 97, 99]  # 11 bytes -> 5 tokens


@pytest.mark.parametrize("trainer", [train_bpe_reference, train_bpe])
def test_seeds_example_trainers(trainer):
    merges = trainer("aaabdaaabac", 256 + 3)
    assert merges == {(97, 97): 256, (97, 98): 257, (256, 257): 258}
    tok = BPETokenizer.from_merges(merges)
    assert tok.encode("aaabdaaabac") == [258, 100, 258, 97, 99]
    assert [tok.vocab[i] for i in (256, 257, 258)] == [b"aa", b"ab", b"aaab"]


# --- get_stats and merge -----------------------------------------------------------

def test_get_stats_examples():
    assert get_stats([1, 2, 3, 1, 2]) == {(1, 2): 2, (2, 3): 1, (3, 1): 1}
    assert get_stats([97, 97, 97]) == {(97, 97): 2}  # overlapping pairs count
    assert get_stats([]) == {} and get_stats([5]) == {}
    counts = {(1, 2): 10}
    assert get_stats([1, 2], counts) is counts and counts == {(1, 2): 11}


@pytest.mark.parametrize("ids, pair, idx, expected", [
    ([1, 2, 3, 1, 2], (1, 2), 4, [4, 3, 4]),
    ([97, 97, 97], (97, 97), 256, [256, 97]),  # left to right, no overlap
    ([97, 97, 97, 97], (97, 97), 256, [256, 256]),
    ([97, 97, 97, 97, 97], (97, 97), 256, [256, 256, 97]),
    ([1, 2, 1, 2, 1], (2, 1), 9, [1, 9, 9]),
    ([1, 2, 3], (3, 1), 9, [1, 2, 3]),  # absent pair: unchanged
    ([], (1, 2), 9, []),
    ([1], (1, 2), 9, [1]),
])
def test_merge_examples(ids, pair, idx, expected):
    before = list(ids)
    assert merge(ids, pair, idx) == expected
    assert ids == before  # the input is not modified


# --- the fast trainer reproduces the reference -----------------------------------

SMALL_CORPORA = {
    "generated": make_text(600, seed=7),
    "generated-2": make_text(900, seed=8),
    "runs": "aaaa bbbb aaaaaaa ab ab abab ababab aaabbb " * 5 + "a" * 40,
    "unicode": "naïve café 日本語 日本 語 😀😀😀 привет мир мир " * 4,
    "lines": "to be, or not to be:\nthat is the question.\n" * 6,
}


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("name", sorted(SMALL_CORPORA))
def test_fast_trainer_matches_reference(name, pattern):
    text = SMALL_CORPORA[name]
    for vocab_size in (256, 256 + 1, 256 + 150):
        assert train_bpe(text, vocab_size, pattern) == train_bpe_reference(text, vocab_size, pattern)


@HYPOTHESIS
@given(text=st.text(alphabet="ab cab\n'é1", max_size=120), extra=st.integers(0, 40),
       pattern=st.sampled_from(PATTERNS))
def test_fast_trainer_matches_reference_random(text, extra, pattern):
    assert train_bpe(text, 256 + extra, pattern) == train_bpe_reference(text, 256 + extra, pattern)


def test_training_stops_when_no_pair_is_left():
    merges = train_bpe("ab ab", 256 + 100, "gpt2")
    assert merges == train_bpe_reference("ab ab", 256 + 100, "gpt2")
    assert len(merges) == 2  # ab, then " " + ab; then every chunk is one token
    assert train_bpe("", 300) == {} and train_bpe("x", 300) == {}


def test_training_is_deterministic(corpus):
    assert train_bpe(corpus, 256 + 200, "gpt2") == train_bpe(corpus, 256 + 200, "gpt2")


# --- encoding ---------------------------------------------------------------------

_MERGES_FOR_ENCODER = train_bpe(make_text(800, seed=3) + "aaaaaaaa abababab", 256 + 200)


@HYPOTHESIS
@given(data=st.one_of(st.binary(max_size=80), st.text(alphabet="ab e", max_size=80).map(str.encode)))
def test_heap_encoder_matches_simple_encoder(data):
    """The fast chunk encoder (linked list + heap) equals the teaching loop."""
    merges = _MERGES_FOR_ENCODER
    assert _encode_chunk_heap(list(data), merges) == encode_chunk(list(data), merges)


def test_encode_applies_merges_by_rank():
    # ab has the lower rank, so "aab" is a|ab even though aa comes first in the text
    tok = BPETokenizer.from_merges({(97, 98): 256, (97, 97): 257})
    assert tok.encode("aab") == [97, 256]
    assert tok.encode("aaab") == [257, 256]


def test_encode_matches_training_state(corpus):
    """Encoding the training chunks by rank gives exactly what training left."""
    merges = train_bpe_reference(corpus[:3000], 256 + 100, "gpt2")
    tok = BPETokenizer.from_merges(merges, "gpt2")
    chunks = [list(c.encode()) for c in split_text(corpus[:3000], "gpt2")]
    for pair, idx in merges.items():
        chunks = [merge(c, pair, idx) for c in chunks]
    assert tok.encode(corpus[:3000]) == [t for c in chunks for t in c]


def test_encode_compresses(trained, held_out):
    for tok in trained.values():
        assert len(tok.encode(held_out)) < 0.6 * len(held_out.encode())


def test_encode_when_the_cache_is_full(trained, held_out, monkeypatch):
    import attnbook.tokenizers.bpe as bpe

    tok = trained["gpt2"]
    expected = tok.encode(held_out)
    fresh = BPETokenizer.from_merges(tok.merges, "gpt2")
    monkeypatch.setattr(bpe, "_CACHE_LIMIT", 10)
    assert fresh.encode(held_out) == expected
    assert len(fresh._cache) <= 10


def test_decode_accepts_tensors(trained):
    torch = pytest.importorskip("torch")
    tok = trained["gpt4"]
    ids = tok.encode("tensors too")
    assert tok.decode(torch.tensor(ids)) == "tensors too"


# --- round trips ------------------------------------------------------------------

@pytest.mark.parametrize("pattern", PATTERNS)
@HYPOTHESIS
@given(text=st.text(max_size=200))
def test_round_trip_arbitrary_unicode(trained, pattern, text):
    tok = trained[pattern]
    ids = tok.encode(text)
    assert all(0 <= i < tok.vocab_size for i in ids)
    assert tok.decode(ids) == text


@pytest.mark.parametrize("pattern", PATTERNS)
def test_round_trip_held_out(trained, held_out, pattern):
    tok = trained[pattern]
    assert tok.decode(tok.encode(held_out)) == held_out
    for s in TRICKY:
        assert tok.decode(tok.encode(s)) == s


def test_char_tokenizer_round_trip(corpus):
    tok = CharTokenizer.from_text(corpus)
    assert tok.vocab_size == len(set(corpus))
    assert tok.itos == sorted(set(corpus))
    ids = tok.encode(corpus[:500])
    assert len(ids) == 500 and tok.decode(ids) == corpus[:500]


# --- special tokens ----------------------------------------------------------------

def test_special_tokens(trained):
    tok = trained["gpt2"]
    eot, pad = tok.special_tokens["<|endoftext|>"], tok.special_tokens["<|pad|>"]
    assert (eot, pad) == (256 + len(tok.merges), 256 + len(tok.merges) + 1)
    assert tok.vocab_size == 256 + 300 + 2
    text = "one<|endoftext|>two<|pad|>"
    ids = tok.encode(text, allowed_special="all")
    assert ids.count(eot) == 1 and ids[-1] == pad
    assert tok.decode(ids) == text
    assert eot not in tok.encode(text)  # by default they are ordinary text
    assert tok.decode(tok.encode(text)) == text
    only = tok.encode(text, allowed_special={"<|pad|>"})
    assert eot not in only and only[-1] == pad
    with pytest.raises(ValueError, match="not special tokens"):
        tok.encode(text, allowed_special={"<|nope|>"})
    with pytest.raises(ValueError, match="a collection of special tokens"):
        tok.encode(text, allowed_special="<|pad|>")


# --- parity with tiktoken -------------------------------------------------------

@pytest.mark.parametrize("pattern", ["gpt2", "gpt4"])
def test_same_ids_as_tiktoken(trained, held_out, pattern):
    tok = trained[pattern]
    enc = tiktoken.Encoding(
        name=f"attnbook-test-{pattern}",
        pat_str=GPT2_SPLIT_PATTERN if pattern == "gpt2" else GPT4_SPLIT_PATTERN,
        mergeable_ranks={tok.vocab[i]: i for i in range(256 + len(tok.merges))},
        special_tokens={},
    )
    assert enc.encode_ordinary(held_out) == tok.encode(held_out)
    for s in TRICKY:
        assert enc.encode_ordinary(s) == tok.encode(s), s


_PARITY_CHARS = st.sampled_from(list("abcdefghij ABC  \n\n\t'.,!?-0123456789")
                                + ["é", "日本", "😀", "ß", "\r\n", "'s", "'LL"])


@pytest.mark.parametrize("pattern", PATTERNS)
@HYPOTHESIS
@given(parts=st.lists(_PARITY_CHARS, max_size=60))
def test_same_ids_as_tiktoken_random(trained, pattern, parts):
    tok = trained[pattern]
    text = "".join(parts)
    assert tok.to_tiktoken().encode_ordinary(text) == tok.encode(text)


def test_to_tiktoken_special_tokens(trained):
    tok = trained["gpt4"]
    enc = tok.to_tiktoken()
    text = "x<|endoftext|> y <|pad|>"
    assert enc.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")
    assert enc.n_vocab == tok.vocab_size


def test_token_bytes_are_unique(trained):
    """No two merges make the same bytes, so tiktoken's {bytes: rank} loses nothing."""
    for tok in trained.values():
        ranks = tok.mergeable_ranks()
        assert len(ranks) == 256 + len(tok.merges)


# --- compression against Hugging Face tokenizers ----------------------------------

def train_hf_bpe(text: str, vocab_size: int):
    """Hugging Face's BpeTrainer configured like ours with the GPT-2 pattern.

    ByteLevel(use_regex=True) splits with GPT-2's regex and maps each byte to
    a printable character; all 256 of them form the initial alphabet, so
    ``vocab_size`` counts the same 256 bytes plus ``vocab_size - 256``
    merges. No prefix space, no special tokens, and min_frequency=0 so it
    never stops merging early (ours does not either).
    """
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=0, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[])
    tok.train_from_iterator([text], trainer=trainer)
    return tok


def test_compression_close_to_hf_tokenizers():
    train_text = make_text(60_000, seed=11)  # ~300 kB
    test_text = make_text(20_000, seed=12)
    vocab_size = 256 + 1024
    ours = BPETokenizer("gpt2").train(train_text, vocab_size)
    hf = train_hf_bpe(train_text, vocab_size)
    assert ours.vocab_size == hf.get_vocab_size() == vocab_size
    for text in (train_text, test_text):
        n_bytes = len(text.encode())
        ours_tpb = len(ours.encode(text)) / n_bytes
        hf_tpb = len(hf.encode(text).ids) / n_bytes
        assert abs(ours_tpb - hf_tpb) <= 0.03 * hf_tpb, (ours_tpb, hf_tpb)


# --- save and load ----------------------------------------------------------------

@pytest.mark.parametrize("pattern", PATTERNS)
def test_save_load_round_trip(trained, held_out, tmp_path, pattern):
    tok = trained[pattern]
    path = tmp_path / "tok.json"
    tok.save(path)
    data = json.loads(path.read_text(encoding="utf-8"))  # plain JSON
    assert data["format"] == "attnbook-bpe" and len(data["merges"]) == len(tok.merges)
    loaded = BPETokenizer.load(path)
    assert loaded.merges == tok.merges
    assert loaded.pattern == tok.pattern
    assert loaded.special_tokens == tok.special_tokens
    assert loaded.vocab == tok.vocab
    assert loaded.encode(held_out, allowed_special="all") == tok.encode(held_out, allowed_special="all")


def test_save_load_untrained(tmp_path):
    path = tmp_path / "empty.json"
    BPETokenizer("gpt4").save(path)
    loaded = BPETokenizer.load(path)
    assert loaded.merges == {} and loaded.pattern == GPT4_SPLIT_PATTERN
    assert loaded.encode("hé") == list("hé".encode())


def test_load_rejects_other_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something-else"}')
    with pytest.raises(ValueError, match="not an attnbook-bpe file"):
        BPETokenizer.load(bad)
    bad.write_text("not json")
    with pytest.raises(ValueError, match="invalid JSON"):
        BPETokenizer.load(bad)
    bad.write_text('{"format": "attnbook-bpe", "version": 1, "pattern": null, "merges": [[1, 300]]}')
    with pytest.raises(ValueError, match="must join two ids below"):
        BPETokenizer.load(bad)


# --- clear errors ---------------------------------------------------------------------

@pytest.mark.parametrize("trainer", [train_bpe, train_bpe_reference])
def test_training_errors(trainer):
    with pytest.raises(ValueError, match="at least 256"):
        trainer("abc", 255)
    with pytest.raises(TypeError, match="text must be a str"):
        trainer(b"abc", 300)
    with pytest.raises(TypeError, match="vocab_size must be an int"):
        trainer("abc", 300.0)
    with pytest.raises(ValueError, match="surrogate"):
        trainer("a\ud800b", 300)


def test_tokenizer_errors(trained):
    tok = trained["gpt2"]
    with pytest.raises(ValueError, match="at least 256 bytes \\+ 2 special"):
        BPETokenizer(special_tokens=["<a>", "<b>"]).train("abc", 257)
    with pytest.raises(TypeError, match="text must be a str"):
        tok.encode(123)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([1, tok.vocab_size])
    with pytest.raises(ValueError, match="id -1 is outside the vocabulary"):
        tok.decode([5, -1])
    with pytest.raises(TypeError, match="ints"):
        tok.decode([1.5])
    with pytest.raises(ValueError, match="neither a known name"):
        BPETokenizer(pattern="gpt5(")
    with pytest.raises(ValueError, match="distinct"):
        BPETokenizer(special_tokens=["<a>", "<a>"])
    with pytest.raises(ValueError, match="must create id 256"):
        BPETokenizer.from_merges({(1, 2): 300})


def test_char_tokenizer_errors():
    tok = CharTokenizer.from_text("abc")
    with pytest.raises(ValueError, match="'z' is not in the vocabulary"):
        tok.encode("abz")
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([0, 3])
    with pytest.raises(ValueError, match="single character"):
        CharTokenizer(["ab"])
    with pytest.raises(ValueError, match="repeat"):
        CharTokenizer("aa")


def test_bytes_per_token_is_one_training_run_cut_to_each_size():
    train = "the cat sat on the mat. the cat ate the rat. " * 10
    texts = {"seen": "the rat sat on the cat.", "other": "le chat est assis sur le tapis.", "emoji": "🙂 ok"}
    sizes = [256, 260, 270, 290]
    curves = bytes_per_token(train, texts, sizes)
    for V, k in zip(sizes, range(len(sizes)), strict=True):  # the same as a tokenizer trained with V alone
        tok = BPETokenizer("gpt2").train(train, V)
        for name, text in texts.items():
            assert curves[name][k] == pytest.approx(len(text.encode("utf-8")) / len(tok.encode(text)))
    assert curves["seen"][0] == 1.0 and curves["seen"] == sorted(curves["seen"]) and curves["seen"][-1] > 2
    assert curves["other"][-1] < curves["seen"][-1]  # merges fit the text they were learned from
    assert bytes_per_token(train, {"x": "the cat"}, [300], pattern=None)["x"][0] > 1  # no split pattern


def test_bytes_per_token_errors():
    with pytest.raises(ValueError, match="at least 256"):
        bytes_per_token("abc", {"x": "abc"}, [255, 300])
    with pytest.raises(ValueError, match="at least 256"):
        bytes_per_token("abc", {"x": "abc"}, [])
    with pytest.raises(ValueError, match="empty"):
        bytes_per_token("abc", {"x": ""}, [256])
