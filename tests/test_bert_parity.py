"""attnbook.bert against Hugging Face's BERT: same weights in, same outputs out (float64, 1e-6).

The Hugging Face models are built from a config with random weights (never
downloaded); their weights are copied into ours by name, the mapping written
out below, which is also a map of where each of BERT's matrices lives here.
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from attnbook.bert import BertConfig, BertForPreTraining, BertModel  # noqa: E402

TOL = dict(rtol=0, atol=1e-6)
CFG = BertConfig(
    vocab_size=37,
    hidden_size=24,
    num_hidden_layers=3,
    num_attention_heads=4,
    intermediate_size=40,
    max_position_embeddings=16,
    type_vocab_size=3,
    hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1,
)


def hf_config(cfg: BertConfig):
    return transformers.BertConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.hidden_size,
        num_hidden_layers=cfg.num_hidden_layers,
        num_attention_heads=cfg.num_attention_heads,
        intermediate_size=cfg.intermediate_size,
        hidden_act=cfg.hidden_act,
        hidden_dropout_prob=cfg.hidden_dropout_prob,
        attention_probs_dropout_prob=cfg.attention_probs_dropout_prob,
        max_position_embeddings=cfg.max_position_embeddings,
        type_vocab_size=cfg.type_vocab_size,
        layer_norm_eps=cfg.layer_norm_eps,
        pad_token_id=cfg.pad_token_id,
    )


def encoder_names(n_layers: int) -> dict[str, str]:
    """Our parameter name -> Hugging Face's, for a BertModel."""
    names = {
        f"embeddings.{e}.weight": f"embeddings.{e}.weight"
        for e in ("word_embeddings", "position_embeddings", "token_type_embeddings")
    }
    layer = {
        "self_attn.q_proj": "attention.self.query",
        "self_attn.k_proj": "attention.self.key",
        "self_attn.v_proj": "attention.self.value",
        "self_attn.out_proj": "attention.output.dense",
        "norm1": "attention.output.LayerNorm",  # post-norm after attention
        "ffn.fc1": "intermediate.dense",
        "ffn.fc2": "output.dense",
        "norm2": "output.LayerNorm",  # post-norm after the feed-forward network
    }
    for kind in ("weight", "bias"):
        names[f"embeddings.LayerNorm.{kind}"] = f"embeddings.LayerNorm.{kind}"
        names[f"pooler.dense.{kind}"] = f"pooler.dense.{kind}"
        for i in range(n_layers):
            for ours, theirs in layer.items():
                names[f"encoder.layer.{i}.{ours}.{kind}"] = f"encoder.layer.{i}.{theirs}.{kind}"
    return names


def copy_weights(ours: torch.nn.Module, theirs: torch.nn.Module, names: dict[str, str]) -> None:
    src = theirs.state_dict()
    dst = dict(ours.named_parameters())
    assert set(dst) == set(names), "every parameter of ours is mapped exactly once"
    with torch.no_grad():
        for mine, hf in names.items():
            assert dst[mine].shape == src[hf].shape, mine
            dst[mine].copy_(src[hf])


def inputs(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    B, T = 3, 11
    ids = torch.randint(1, CFG.vocab_size, (B, T), generator=g)
    mask = torch.ones(B, T, dtype=torch.long)
    mask[1, 7:] = 0  # padding at the end of the second sequence
    mask[2, 4:] = 0  # and more at the end of the third
    ids[mask == 0] = CFG.pad_token_id
    seg = torch.zeros(B, T, dtype=torch.long)
    seg[:, 5:] = 1
    seg[0, 9:] = 2  # a third segment type: the config has type_vocab_size=3
    return ids, seg, mask


def pair(cls_ours, cls_theirs, names):
    torch.manual_seed(0)
    theirs = cls_theirs(hf_config(CFG)).double().eval()
    with torch.no_grad():  # Hugging Face starts LayerNorms at (1, 0): perturb them so the copy is tested
        for n, p in theirs.named_parameters():
            if "LayerNorm" in n or n.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    ours = cls_ours(CFG).double().eval()
    copy_weights(ours, theirs, names)
    return ours, theirs


def test_bert_model_matches_transformers_with_padding_and_segments() -> None:
    ours, theirs = pair(BertModel, transformers.BertModel, encoder_names(CFG.num_hidden_layers))
    ids, seg, mask = inputs()
    with torch.no_grad():
        seq, pooled = ours(ids, seg, mask)
        ref = theirs(input_ids=ids, token_type_ids=seg, attention_mask=mask)
    real = mask.bool()
    torch.testing.assert_close(seq[real], ref.last_hidden_state[real], **TOL)
    torch.testing.assert_close(seq, ref.last_hidden_state, **TOL)  # padded positions too
    torch.testing.assert_close(pooled, ref.pooler_output, **TOL)
    # a boolean mask means the same as a 0/1 one, and no mask the same as all ones
    torch.testing.assert_close(ours(ids, seg, mask.bool())[0], seq, rtol=0, atol=0)
    with torch.no_grad():
        full = theirs(input_ids=ids, token_type_ids=seg).last_hidden_state
    torch.testing.assert_close(ours(ids, seg)[0], full, **TOL)


def test_bert_model_attention_weights_match_transformers() -> None:
    ours, theirs = pair(BertModel, transformers.BertModel, encoder_names(CFG.num_hidden_layers))
    theirs.set_attn_implementation("eager")
    ids, seg, mask = inputs(1)
    with torch.no_grad():
        seq, _, att = ours(ids, seg, mask, return_attentions=True)
        ref = theirs(input_ids=ids, token_type_ids=seg, attention_mask=mask, output_attentions=True)
    assert len(att) == len(ref.attentions) == CFG.num_hidden_layers
    for a, r in zip(att, ref.attentions, strict=True):
        torch.testing.assert_close(a, r, **TOL)
    torch.testing.assert_close(seq, ref.last_hidden_state, **TOL)


def test_bert_for_pretraining_matches_transformers() -> None:
    names = {f"bert.{k}": f"bert.{v}" for k, v in encoder_names(CFG.num_hidden_layers).items()}
    for kind in ("weight", "bias"):
        names[f"cls.predictions.transform.dense.{kind}"] = f"cls.predictions.transform.dense.{kind}"
        names[f"cls.predictions.transform.LayerNorm.{kind}"] = f"cls.predictions.transform.LayerNorm.{kind}"
        names[f"cls.seq_relationship.{kind}"] = f"cls.seq_relationship.{kind}"
    names["cls.predictions.bias"] = "cls.predictions.bias"
    ours, theirs = pair(BertForPreTraining, transformers.BertForPreTraining, names)
    # Hugging Face ties the decoder to the word embeddings too; ours follows the copy by tying
    assert ours.cls.predictions.decoder.weight is ours.bert.embeddings.word_embeddings.weight
    torch.testing.assert_close(
        theirs.cls.predictions.decoder.weight, theirs.bert.embeddings.word_embeddings.weight, rtol=0, atol=0
    )
    ids, seg, mask = inputs(2)
    with torch.no_grad():
        mlm, nsp = ours(ids, seg, mask)
        ref = theirs(input_ids=ids, token_type_ids=seg, attention_mask=mask)
    torch.testing.assert_close(mlm, ref.prediction_logits, **TOL)
    torch.testing.assert_close(nsp, ref.seq_relationship_logits, **TOL)


def test_bert_base_parameter_count_matches_transformers() -> None:
    """The preset is BERT-base: the same parameters as Hugging Face's default BertConfig -- 110M
    with the pretraining heads, as the paper counts (built on the meta device: nothing allocated)."""
    with torch.device("meta"):
        ours = BertForPreTraining(BertConfig.preset("bert-base"))
        theirs = transformers.BertForPreTraining(transformers.BertConfig())
    n_ours = sum(p.numel() for p in ours.parameters())  # the tied decoder counted once
    assert n_ours == sum(p.numel() for p in theirs.parameters()) == 110_106_428
    assert round(n_ours / 1e6) == 110
    assert ours.bert.num_params() == sum(p.numel() for p in theirs.bert.parameters()) == 109_482_240
