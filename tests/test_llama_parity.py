"""Chapter 4's GPT with the modern block against Hugging Face's Llama, and the key/value cache.

``GPTConfig(norm="rmsnorm", mlp="swiglu", positions="rope", n_kv_head=...)`` is
Llama's decoder: the same weights (random, from a config: nothing downloaded)
give the same logits in float64, with the output layer untied from the token
embedding, as in every released Llama. Llama keeps ``q_proj``, ``k_proj`` and
``v_proj`` apart where this GPT stacks them in ``c_attn``, and its RMSNorm
computes in float32 whatever the input's dtype (a mixed-precision habit), which
alone leaves differences near 1e-7; the test runs it in the input's dtype, as
``torch.nn.RMSNorm`` does, and then asks for 1e-10. The cache is tested
against the model run without one, for both kinds of positions.
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from attnbook.gpt import GPT, GPTConfig, KVCache, generate  # noqa: E402

MODERN = dict(norm="rmsnorm", mlp="swiglu", positions="rope", bias=False, tie_word_embeddings=False)


def _llama_names(i: int) -> dict[str, str]:
    """Our parameter name in block ``i`` -> Llama's."""
    theirs = f"model.layers.{i}."
    return {f"h.{i}.ln_1.weight": theirs + "input_layernorm.weight",
            f"h.{i}.ln_2.weight": theirs + "post_attention_layernorm.weight",
            f"h.{i}.attn.c_proj.weight": theirs + "self_attn.o_proj.weight",
            f"h.{i}.mlp.w_gate.weight": theirs + "mlp.gate_proj.weight",
            f"h.{i}.mlp.w_up.weight": theirs + "mlp.up_proj.weight",
            f"h.{i}.mlp.c_proj.weight": theirs + "mlp.down_proj.weight"}


def build_pair(cfg: GPTConfig):
    torch.manual_seed(0)
    theirs = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=cfg.vocab_size, hidden_size=cfg.n_embd, intermediate_size=cfg.n_inner,
        num_hidden_layers=cfg.n_layer, num_attention_heads=cfg.n_head,
        num_key_value_heads=cfg.n_kv_head or cfg.n_head, max_position_embeddings=cfg.block_size,
        rms_norm_eps=1e-6, tie_word_embeddings=cfg.tie_word_embeddings, attention_bias=False, mlp_bias=False,
        bos_token_id=None, eos_token_id=None, pad_token_id=None,
    ), ).double().eval()
    theirs.config._attn_implementation = "sdpa"  # eager attention takes its softmax in float32
    with torch.no_grad():  # Llama starts its norms' gains at 1: perturb them so that the copy is tested
        for name, p in theirs.named_parameters():
            if name.endswith("norm.weight"):
                p.add_(0.1 * torch.randn_like(p))
    ours = GPT(cfg).double().eval()
    src = theirs.state_dict()
    names = {"wte.weight": "model.embed_tokens.weight", "ln_f.weight": "model.norm.weight"}
    if not cfg.tie_word_embeddings:
        names["lm_head.weight"] = "lm_head.weight"
    for i in range(cfg.n_layer):
        names |= _llama_names(i)
    with torch.no_grad():
        for name, p in ours.named_parameters():
            if name.endswith("attn.c_attn.weight"):
                attn = f"model.layers.{name.split('.')[1]}.self_attn."
                w = torch.cat([src[attn + "q_proj.weight"], src[attn + "k_proj.weight"], src[attn + "v_proj.weight"]])
            else:
                w = src[names.pop(name)]
            assert p.shape == w.shape, name
            p.copy_(w)
    assert not names  # every Llama weight was copied
    return ours, theirs


def _rms_norm_in_its_dtype(self, x):
    return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))


@pytest.mark.parametrize("n_kv_head", [4, 2, 1])
def test_the_modern_block_matches_llama(n_kv_head: int, monkeypatch) -> None:
    monkeypatch.setattr(transformers.models.llama.modeling_llama.LlamaRMSNorm, "forward", _rms_norm_in_its_dtype)
    cfg = GPTConfig(vocab_size=61, block_size=32, n_layer=2, n_head=4, n_kv_head=n_kv_head, n_embd=32,
                    n_inner=40, **MODERN)
    ours, theirs = build_pair(cfg)
    ids = torch.randint(0, cfg.vocab_size, (2, 19), generator=torch.Generator().manual_seed(n_kv_head))
    with torch.no_grad():
        mine, _ = ours(ids)
        want = theirs(ids).logits
    assert torch.allclose(mine, want, atol=1e-10, rtol=0), (mine - want).abs().max()
    assert ours.lm_head.weight is not ours.wte.weight and not torch.equal(ours.lm_head.weight, ours.wte.weight)
    assert ours.num_params() == sum(p.numel() for p in theirs.parameters())  # the untied head counted by both


def test_the_llama_preset_unties_the_output_layer() -> None:
    """No released Llama ties its output layer to the token embedding; the preset follows them."""
    llama = GPT(GPTConfig.preset("llama-nano", vocab_size=11))
    gpt = GPT(GPTConfig.preset("gpt-nano", vocab_size=11))
    assert llama.lm_head.weight is not llama.wte.weight and gpt.lm_head.weight is gpt.wte.weight
    assert llama.num_params() - GPT(llama.config.replace(tie_word_embeddings=True)).num_params() == 11 * 48


def test_grouped_query_attention_shrinks_the_keys_and_values() -> None:
    full = GPT(GPTConfig(vocab_size=11, n_layer=1, n_head=4, n_embd=16, **MODERN))
    grouped = GPT(GPTConfig(vocab_size=11, n_layer=1, n_head=4, n_kv_head=1, n_embd=16, **MODERN))
    assert full.h[0].attn.c_attn.weight.shape == (48, 16) and grouped.h[0].attn.c_attn.weight.shape == (24, 16)
    caches = []
    for model in (full, grouped):
        cache = KVCache(1)
        model(torch.zeros(3, 10, dtype=torch.long), cache=cache)
        caches.append(cache.nbytes)
    assert caches == [2 * 3 * 4 * 10 * 4 * 4, 2 * 3 * 1 * 10 * 4 * 4]  # 2 (K, V) x B x nkv x T x hs x 4 bytes


@pytest.mark.parametrize("modern", [False, True])
def test_cached_logits_equal_the_whole_sequence(modern: bool) -> None:
    """A prompt of 5 tokens, then 3, then 1 at a time: each call's logits are those of the full run."""
    torch.manual_seed(1)
    cfg = GPTConfig.preset("llama-nano" if modern else "gpt-nano", vocab_size=23, block_size=16)
    model = GPT(cfg).double().eval()
    ids = torch.randint(0, 23, (2, 12))
    with torch.no_grad():
        whole, _ = model(ids)
        cache, pieces, start = KVCache(cfg.n_layer), [], 0
        for size in (5, 3, 1, 1, 1, 1):
            logits, _ = model(ids[:, start:start + size], cache=cache)
            pieces.append(logits)
            start += size
    assert len(cache) == 12 and torch.allclose(torch.cat(pieces, dim=1), whole, atol=1e-12)
    with pytest.raises(ValueError, match="after 12 cached"):
        model(ids[:, :5], cache=cache)  # 17 tokens: beyond the context


@pytest.mark.parametrize("preset", ["gpt-nano", "llama-nano"])
def test_generate_with_a_cache_draws_the_same_tokens(preset: str) -> None:
    """Greedy and seeded sampling, past the end of the context (block_size 8, 14 tokens in all)."""
    torch.manual_seed(2)
    model = GPT(GPTConfig.preset(preset, vocab_size=19, block_size=8)).double()
    prompt = torch.randint(0, 19, (3, 4))
    for kwargs in (dict(greedy=True), dict(temperature=0.8, top_k=5)):
        runs = [generate(model, prompt, 10, generator=torch.Generator().manual_seed(3), use_cache=c, **kwargs)
                for c in (False, True)]
        assert torch.equal(*runs), kwargs


def test_bad_modern_options_are_refused() -> None:
    for kwargs, words in [(dict(norm="batchnorm"), "norm must be one of"), (dict(mlp="relu"), "mlp must be one of"),
                          (dict(positions="alibi"), "positions must be one of"),
                          (dict(n_kv_head=3), "multiple of n_kv_head"),
                          (dict(positions="rope", n_head=4, n_embd=12), "must be even")]:
        with pytest.raises(ValueError, match=words):
            GPTConfig(vocab_size=5, **{"n_head": 4, "n_embd": 16, **kwargs})


def test_cached_attention_step_by_step_is_causal_attention() -> None:
    """attnbook.gpt.cached_attention, the graded part's reference: a prompt of 3, then 4 single steps,
    gives causal attention over all 7 tokens, and the keys and values in order."""
    from attnbook.attention import causal_mask, scaled_dot_product_attention
    from attnbook.gpt import cached_attention

    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(2, 3, 7, 4, generator=g, dtype=torch.float64) for _ in range(3))
    whole, _ = scaled_dot_product_attention(q, k, v, causal_mask(7))
    keys, values, outs = k[:, :, :0], v[:, :, :0], []
    for a, b in [(0, 3), (3, 4), (4, 5), (5, 6), (6, 7)]:
        out, keys, values = cached_attention(q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], keys, values)
        outs.append(out)
    assert torch.allclose(torch.cat(outs, dim=2), whole, atol=1e-12)
    assert torch.equal(keys, k) and torch.equal(values, v)
