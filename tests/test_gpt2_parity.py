"""Chapter 4's GPT against Hugging Face's GPT-2: the same weights give the same logits (float64).

Hugging Face's GPT-2 stores its projections as ``Conv1D`` layers whose weight
is (in, out) -- the transpose of ``nn.Linear``'s (out, in) -- so those four
matrices per block are transposed on the way in. Its GELU is set to the exact
one that :class:`attnbook.gpt.MLP` uses (GPT-2 itself used the tanh form).
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from attnbook.gpt import GPT, GPTConfig  # noqa: E402

CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def build_pair(cfg: GPTConfig):
    torch.manual_seed(0)
    theirs = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(
            vocab_size=cfg.vocab_size,
            n_positions=cfg.block_size,
            n_embd=cfg.n_embd,
            n_layer=cfg.n_layer,
            n_head=cfg.n_head,
            activation_function="gelu",  # exact GELU, as attnbook.gpt.MLP
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            bos_token_id=None,  # GPT-2's 50256 lies outside this small vocabulary
            eos_token_id=None,
        )
    ).double().eval()
    with torch.no_grad():  # Hugging Face starts biases at 0 and LayerNorms at 1: perturb so the copy is tested
        for p in theirs.parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    ours = GPT(cfg).double().eval()
    src = theirs.state_dict()
    with torch.no_grad():
        for name, p in ours.named_parameters():  # lm_head is tied to wte: listed once, as wte
            w = src[f"transformer.{name}"]
            if name.endswith(CONV1D):
                w = w.t()  # Conv1D (in, out) -> Linear (out, in)
            assert p.shape == w.shape, name
            p.copy_(w)
    return ours, theirs


@pytest.mark.parametrize("n_layer", [1, 3])
def test_gpt_logits_match_gpt2(n_layer: int) -> None:
    cfg = GPTConfig(vocab_size=53, block_size=24, n_layer=n_layer, n_head=4, n_embd=32)
    ours, theirs = build_pair(cfg)
    ids = torch.randint(0, cfg.vocab_size, (2, 17), generator=torch.Generator().manual_seed(n_layer))
    with torch.no_grad():
        logits, _ = ours(ids)
        ref = theirs(input_ids=ids).logits
    assert theirs.lm_head.weight.data_ptr() == theirs.transformer.wte.weight.data_ptr()  # both tie
    torch.testing.assert_close(logits, ref, rtol=0, atol=1e-6)


def test_gpt2_preset_has_gpt2_small_parameter_count() -> None:
    with torch.device("meta"):
        ours = GPT(GPTConfig.preset("gpt2"))
        theirs = transformers.GPT2LMHeadModel(transformers.GPT2Config())
    assert ours.num_params() == sum(p.numel() for p in theirs.parameters()) == 124_439_808
