"""masking_explorer builds and redraws without a display; its counts are those of mask_tokens."""

import pytest
import torch
from matplotlib.figure import Figure

from attnbook.bert import mask_tokens
from attnbook.bert.training import CLS, MASK, SEP, WordVocab
from attnbook.widgets.bert import draw_masking, masking_explorer, masking_outcomes

PNG = b"\x89PNG"
TEXT = "the film is a joy to watch , a pleasure to hear and a triumph of craft from start to finish"


@pytest.fixture
def vocab():
    return WordVocab.build([TEXT])


def counts_from_mask_tokens(vocab, text, seed, p=0.15):
    ids = torch.tensor([[CLS, *vocab.encode(text), SEP]])
    inputs, labels = mask_tokens(ids, range(5), len(vocab), generator=torch.Generator().manual_seed(seed),
                                 mlm_probability=p, mask_id=MASK)
    outcomes = masking_outcomes(ids[0], inputs[0], labels[0], range(5), MASK)
    return {k: outcomes.count(k) for k in ("[MASK]", "random", "unchanged")}


def test_explorer_draws_and_reports_the_masking_of_its_seed(vocab):
    box = masking_explorer(vocab, TEXT, seed=3)
    assert set(box.controls) == {"text", "seed", "probability"}
    assert bytes(box.image.value).startswith(PNG)
    c = counts_from_mask_tokens(vocab, TEXT, 3)
    n_words = len(vocab.encode(TEXT))
    assert box.status.value.startswith(f"{sum(c.values())} of {n_words} tokens chosen")
    assert f"{c['[MASK]']} [MASK], {c['random']} random, {c['unchanged']} unchanged" in box.status.value


def test_explorer_resamples_with_the_seed_and_probability(vocab):
    box = masking_explorer(vocab, TEXT, seed=0)
    first_png, first_status = bytes(box.image.value), box.status.value
    pictures = set()
    for seed in range(1, 6):
        box.controls["seed"].value = seed
        pictures.add(bytes(box.image.value))
    assert len(pictures) >= 4  # other seeds, other maskings
    box.controls["seed"].value = 0
    assert bytes(box.image.value) == first_png and box.status.value == first_status  # same seed, same draw
    box.controls["probability"].value = 0.5
    assert box.status.value.split()[0] == str(sum(counts_from_mask_tokens(vocab, TEXT, 0, 0.5).values()))
    box.controls["text"].value = "a joy"
    assert "of 2 tokens chosen" in box.status.value


def test_outcomes_and_drawing_of_one_row():
    ids = torch.tensor([2, 7, 8, 9, 10, 3, 0])
    inputs = torch.tensor([2, 4, 5, 9, 10, 3, 0])
    labels = torch.tensor([-100, 7, 8, 9, -100, -100, -100])
    expected = ["special", "[MASK]", "random", "unchanged", "not chosen", "special", "special"]
    assert masking_outcomes(ids, inputs, labels, range(5), 4) == expected
    ax = Figure().subplots()
    names = [f"w{i}" for i in range(11)]
    assert draw_masking(ax, ids, inputs, labels, names, special_ids=range(5), mask_id=4) == expected
    assert len(ax.patches) == 7
    shown = [t.get_text() for t in ax.texts]
    assert shown[:3] == ["w2", "w4", "w7"]  # [CLS] box, then the [MASK] box with its original above


def test_explorer_rejects_what_is_not_a_tokenizer(vocab):
    with pytest.raises(TypeError, match="tokenizer"):
        masking_explorer(object(), TEXT)
    with pytest.raises(TypeError, match="text"):
        masking_explorer(vocab, 3)


def test_explorer_works_with_wordpiece():
    from attnbook.tokenizers import WordPieceTokenizer

    tok = WordPieceTokenizer().train([TEXT] * 3, vocab_size=60)
    box = masking_explorer(tok, "a joyful triumph", special_ids=tok.special_ids, cls_id=tok.cls_id,
                           sep_id=tok.sep_id, mask_id=tok.mask_id, mlm_probability=0.5)
    n_pieces = len(tok.encode("a joyful triumph"))
    assert f"of {n_pieces} tokens chosen" in box.status.value
    assert bytes(box.image.value).startswith(PNG)
