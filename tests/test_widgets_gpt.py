"""sampling_explorer builds and redraws without a display or a kernel, with either tokenizer."""

import pytest
import torch

from attnbook.gpt import GPT, GPTConfig
from attnbook.tokenizers import BPETokenizer, CharTokenizer
from attnbook.widgets import sampling_explorer

PNG = b"\x89PNG"
TEXT = "to be, or not to be: that is the question.\n"


@pytest.fixture
def char_model():
    torch.manual_seed(0)
    tok = CharTokenizer.from_text(TEXT)
    model = GPT(GPTConfig.preset("gpt-nano", vocab_size=tok.vocab_size, block_size=16))
    return model, tok


def status(box):
    return box.children[2].value


def test_sampling_explorer_draws_and_samples(char_model):
    model, tok = char_model
    box = sampling_explorer(model, tok, "to be", max_new_tokens=12, top_n=8)
    assert set(box.controls) == {"prompt", "temperature", "top_k", "top_p", "seed"}
    assert bytes(box.image.value).startswith(PNG)
    assert len(box.output.value) == 12  # one character per token
    assert set(box.output.value) <= set(TEXT)
    assert f"of {tok.vocab_size} tokens can be drawn" in status(box)
    assert box.controls["top_k"].max == tok.vocab_size


def test_sampling_explorer_controls_change_the_picture_and_the_sample(char_model):
    model, tok = char_model
    box = sampling_explorer(model, tok, "to be", max_new_tokens=20)
    c = box.controls
    first_png, first_text = bytes(box.image.value), box.output.value

    c["top_k"].value = 1  # only the most likely token survives: the same as greedy
    assert bytes(box.image.value) != first_png
    assert "1 of" in status(box)
    top1 = box.output.value
    c["top_k"].value = 0
    c["temperature"].value = 0.0
    assert box.output.value == top1

    c["temperature"].value = 1.0
    c["top_p"].value = 0.5
    assert "tokens can be drawn" in status(box)
    c["top_p"].value = 1.0
    assert box.output.value == first_text  # same settings and seed: same sample
    c["seed"].value = 1
    assert box.output.value != first_text


def test_sampling_explorer_same_seed_same_text(char_model):
    model, tok = char_model
    a = sampling_explorer(model, tok, "the", max_new_tokens=15, seed=3)
    b = sampling_explorer(model, tok, "the", max_new_tokens=15, seed=3)
    assert a.output.value == b.output.value


def test_sampling_explorer_long_empty_and_unknown_prompts(char_model):
    model, tok = char_model
    box = sampling_explorer(model, tok, TEXT * 3, max_new_tokens=5)  # longer than block_size=16
    assert len(box.output.value) == 5
    box.controls["prompt"].value = ""
    assert "type a prompt" in status(box)
    box.controls["prompt"].value = "zebra"  # z is not in the alphabet
    assert "cannot encode" in status(box)
    box.controls["temperature"].value = 0.5  # no state: nothing to draw, no error
    box.controls["prompt"].value = "be"
    assert "tokens can be drawn" in status(box)


def test_sampling_explorer_with_bpe():
    tok = BPETokenizer("gpt2").train(TEXT * 5, 256 + 20)
    torch.manual_seed(0)
    model = GPT(GPTConfig.preset("gpt-nano", vocab_size=tok.vocab_size, block_size=16))
    box = sampling_explorer(model, tok, "to be or", max_new_tokens=6, top_n=40)
    assert bytes(box.image.value).startswith(PNG)
    assert isinstance(box.output.value, str)
    box.controls["top_k"].value = 3
    assert "3 of" in status(box)


def test_sampling_explorer_rejects_bad_input(char_model):
    model, tok = char_model
    with pytest.raises(TypeError, match="GPT"):
        sampling_explorer(torch.nn.Linear(2, 2), tok)
    with pytest.raises(TypeError, match="tokenizer"):
        sampling_explorer(model, object())
    with pytest.raises(ValueError, match="max_new_tokens"):
        sampling_explorer(model, tok, "to", max_new_tokens=-1)
    with pytest.raises(ValueError, match="top_n"):
        sampling_explorer(model, tok, "to", top_n=0)
