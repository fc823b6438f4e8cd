"""GPT: parity with PyTorch's own layers, causality, the loss, training, sampling, and errors."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnbook.attention import causal_mask
from attnbook.gpt import (
    GPT,
    GPT_PRESETS,
    IGNORE_INDEX,
    Block,
    CausalSelfAttention,
    GPTConfig,
    forward_flops,
    generate,
    next_token_loss,
    next_token_probs,
    perplexity,
    random_batch,
    stream_loss,
    train_lm,
)
from attnbook.runtime import seed_everything
from attnbook.train import fit

V = 11  # a vocabulary size that no width or length below shares


pytestmark = pytest.mark.usefixtures("one_thread")


def small(**overrides: object) -> GPT:
    torch.manual_seed(overrides.pop("seed", 0))  # type: ignore[arg-type]
    cfg = dict(vocab_size=V, block_size=16, n_layer=2, n_head=2, n_embd=16)
    return GPT(GPTConfig(**{**cfg, **overrides})).eval()  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- config and sizes


def test_presets_and_config_checks() -> None:
    assert {"gpt-nano", "cpu-fast", "gpu", "gpt2"} <= set(GPT_PRESETS)
    cfg = GPTConfig.preset("cpu-fast", vocab_size=84, n_layer=2)
    assert (cfg.vocab_size, cfg.n_layer, cfg.n_positions) == (84, 2, cfg.block_size)
    with pytest.raises(ValueError, match="unknown preset"):
        GPTConfig.preset("gpt-7")
    with pytest.raises(ValueError, match="vocab_size"):
        GPTConfig.preset("gpt-nano")
    with pytest.raises(ValueError, match="divisible"):
        GPTConfig(vocab_size=V, n_embd=10, n_head=3)
    with pytest.raises(ValueError, match="dropout"):
        GPTConfig(vocab_size=V, dropout=1.0)
    with pytest.raises(ValueError, match="block_size"):
        GPTConfig(vocab_size=V, block_size=0)
    with pytest.raises(TypeError, match="GPTConfig"):
        GPT({"vocab_size": V})  # type: ignore[arg-type]


def test_gpt2_preset_has_gpt2_small_parameter_count() -> None:
    with torch.device("meta"):  # sizes only: no memory, no time
        model = GPT(GPTConfig.preset("gpt2"))
    assert model.num_params() == 124_439_808  # Hugging Face's "gpt2", tied head counted once
    assert model.num_params(non_embedding=True) == 124_439_808 - 1024 * 768


def test_flops_per_token_counts_matmuls_and_attention() -> None:
    model = small(bias=False)
    C, L, T = 16, 2, 16
    linear = L * 12 * C * C + V * C  # c_attn 3C^2 + c_proj C^2 + MLP 8C^2 per block, plus the tied head
    assert model.estimate_flops_per_token() == 6 * linear + 12 * L * T * C
    assert model.estimate_flops_per_token(8) == 6 * linear + 12 * L * 8 * C


@pytest.mark.parametrize("overrides, T", [
    ({}, 16), ({}, 1), ({"n_kv_head": 1}, 9), ({"n_head": 4, "n_kv_head": 2, "n_inner": 24}, 5),
    ({"n_head": 4, "n_kv_head": 2, "norm": "rmsnorm", "mlp": "swiglu", "positions": "rope", "bias": False}, 12),
    ({"mlp": "swiglu", "n_inner": 20}, 7),
])
def test_forward_flops_are_what_pytorch_counts(overrides: dict, T: int) -> None:
    """forward_flops against torch's FlopCounterMode over a real forward pass (the explicit attention path, whose
    products the counter sees on the CPU), and against the forward third of estimate_flops_per_token."""
    from torch.utils.flop_counter import FlopCounterMode

    model = small(**overrides)
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model(torch.zeros(1, T, dtype=torch.long), need_weights=True)
    assert forward_flops(model.config, T) == counter.get_total_flops()
    assert 3 * forward_flops(model.config, T) == T * model.estimate_flops_per_token(T)


def test_forward_flops_of_the_fused_kernel_and_gpt2_small() -> None:
    """The fused kernel counts the same on the meta device (the page's measurement); GPT-2 small at 1,024 tokens
    costs 284.8 MFLOPs a token forward."""
    from torch.utils.flop_counter import FlopCounterMode

    config = GPTConfig(vocab_size=V, block_size=16, n_layer=2, n_head=4, n_embd=16, n_kv_head=2)
    with torch.device("meta"):
        model = GPT(config)
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        x = torch.empty(1, 10, 16, device="meta")  # (B, T, C): the embeddings are look-ups
        for block in model.h:
            x = block(x)
        model.lm_head(model.ln_f(x))
    assert forward_flops(config, 10) == counter.get_total_flops()
    assert forward_flops(GPTConfig.preset("gpt2"), 1024) == 1024 * 284_812_800
    with pytest.raises(ValueError, match="block_size"):
        forward_flops(config, 17)
    with pytest.raises(TypeError, match="GPTConfig"):
        forward_flops({"vocab_size": V}, 4)  # type: ignore[arg-type]


def test_optimizer_decays_matrices_only_and_lists_each_parameter_once() -> None:
    model = small()
    decay, no_decay = model.configure_optimizers(lr=1e-3).param_groups
    ids = lambda group: {id(p) for p in group["params"]}  # noqa: E731
    assert ids(decay).isdisjoint(ids(no_decay))
    assert ids(decay) | ids(no_decay) == {id(p) for p in model.parameters()}
    assert id(model.wte.weight) in ids(decay) and id(model.wpe.weight) in ids(no_decay)
    assert all(p.dim() == 2 for p in decay["params"]) and all(p.dim() == 1 for p in no_decay["params"][1:])


# ----------------------------------------------------------------------------- forward


def test_shapes_loss_and_weight_tying() -> None:
    model = small()
    idx = torch.randint(V, (3, 7))
    logits, loss = model(idx)
    assert logits.shape == (3, 7, V) and loss is None
    logits, loss = model(idx, torch.randint(V, (3, 7)))
    assert loss is not None and loss.dim() == 0 and torch.isfinite(loss)
    assert model.lm_head.weight is model.wte.weight
    assert model(idx[:, :1])[0].shape == (3, 1, V)  # a single token works
    assert model(torch.randint(V, (2, 16)))[0].shape == (2, 16, V)  # the full context works


def test_matches_torch_transformer_encoder_with_a_causal_mask() -> None:
    """A pre-norm GPT is nn.TransformerEncoder(norm_first=True) with a causal mask and a tied head."""
    model = small(n_layer=3, n_head=4, n_embd=32)
    with torch.no_grad():  # non-trivial norms and biases, so that a wrong copy or order shows
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.normal_(mean=1.0 if name.endswith("weight") else 0.0, std=0.3)
    layer = nn.TransformerEncoderLayer(
        32, 4, 128, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
    )
    ref = nn.TransformerEncoder(layer, num_layers=3, enable_nested_tensor=False).eval()
    with torch.no_grad():
        for mine, theirs in zip(model.h, ref.layers, strict=True):
            theirs.self_attn.in_proj_weight.copy_(mine.attn.c_attn.weight)  # (3C, C): W^Q, W^K, W^V stacked
            theirs.self_attn.in_proj_bias.copy_(mine.attn.c_attn.bias)
            theirs.self_attn.out_proj.weight.copy_(mine.attn.c_proj.weight)
            theirs.self_attn.out_proj.bias.copy_(mine.attn.c_proj.bias)
            for a, b in ((mine.mlp.c_fc, theirs.linear1), (mine.mlp.c_proj, theirs.linear2),
                         (mine.ln_1, theirs.norm1), (mine.ln_2, theirs.norm2)):
                b.weight.copy_(a.weight)
                b.bias.copy_(a.bias)
    idx = torch.randint(V, (2, 9))
    x = model.wte(idx) + model.wpe.weight[:9]  # (B, T, C)
    expected = model.ln_f(ref(x, mask=~causal_mask(9), is_causal=True)) @ model.wte.weight.T  # (B, T, V)
    torch.testing.assert_close(model(idx)[0], expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("need_weights", [False, True], ids=["fused", "explicit"])
def test_changing_a_future_token_never_changes_earlier_logits(need_weights: bool) -> None:
    model = small()
    idx = torch.randint(V, (4, 12))
    before = model(idx, need_weights=need_weights)[0]
    for t in (0, 5, 11):
        changed = idx.clone()
        shift = 1 + torch.randint(V - 1, changed[:, t:].shape)  # 1 .. V-1: every token differs
        changed[:, t:] = (changed[:, t:] + shift) % V
        after = model(changed, need_weights=need_weights)[0]
        torch.testing.assert_close(after[:, :t], before[:, :t], atol=1e-6, rtol=0)
        assert not torch.allclose(after[:, t], before[:, t])  # position t itself does see the change


def test_gradient_of_an_early_logit_is_zero_for_later_tokens() -> None:
    model = small()
    x = model.wte(torch.randint(V, (1, 10))).detach().requires_grad_(True)  # (1, T, C)
    h = model.wpe(x)
    for block in model.h:
        h = block(h)
    model.lm_head(model.ln_f(h))[0, 4].sum().backward()
    assert x.grad[0, 5:].abs().max() == 0 and x.grad[0, :5].abs().max() > 0


def test_attention_maps_are_causal_distributions() -> None:
    model = small()
    model(torch.randint(V, (2, 6)), need_weights=True)
    maps = model.attention_weights()
    assert len(maps) == 2
    for w in maps:
        assert w is not None and w.shape == (2, 2, 6, 6)
        torch.testing.assert_close(w.sum(-1), torch.ones(2, 2, 6))
        assert (w.triu(diagonal=1) == 0).all()
    model(torch.randint(V, (2, 6)))
    assert model.attention_weights() == [None, None]  # never a stale map


def test_loss_at_initialisation_is_about_ln_vocab() -> None:
    torch.manual_seed(0)
    model = GPT(GPTConfig.preset("cpu-fast", vocab_size=84)).eval()
    idx = torch.randint(84, (8, model.config.block_size + 1))
    loss = model(idx[:, :-1], idx[:, 1:])[1]
    assert abs(loss.item() - math.log(84)) < 0.05, loss.item()


def test_forward_targets_are_the_ids_shifted_by_one() -> None:
    model = small()
    ids = torch.randint(V, (3, 12))  # (B, T + 1)
    _, loss = model(ids[:, :-1], ids[:, 1:])
    logits, _ = model(ids)  # by causality, the first T positions are the same as above
    torch.testing.assert_close(next_token_loss(logits, ids), loss)
    by_hand = -torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None]).mean()
    torch.testing.assert_close(loss, by_hand)
    targets = ids[:, 1:].clone()
    targets[:, :5] = IGNORE_INDEX  # skipped positions
    _, partial = model(ids[:, :-1], targets)
    by_hand = -torch.log_softmax(logits[:, 5:-1], -1).gather(-1, ids[:, 6:, None]).mean()
    torch.testing.assert_close(partial, by_hand)


def test_overfits_a_tiny_batch() -> None:
    torch.manual_seed(0)
    model = GPT(GPTConfig.preset("gpt-nano", vocab_size=V, block_size=16))
    x, y = random_batch(torch.randint(V, (200,)), batch_size=4, block_size=16)
    history = fit(model, lambda m, b: m(*b)[1], [(x, y)], steps=100, lr=1e-2, device="cpu", progress=False)
    assert history.train_loss[0] > 2.0 and history.train_loss[-1] < 0.05, history.train_loss[-1]


def test_dropout_is_active_in_training_only() -> None:
    model = small(dropout=0.5)
    idx = torch.randint(V, (2, 8))
    torch.testing.assert_close(model(idx)[0], model(idx)[0])  # eval: deterministic
    model.train()
    assert not torch.allclose(model(idx)[0], model(idx)[0])


# ----------------------------------------------------------------------------- batches and evaluation


def test_random_batch_windows_are_shifted_and_reproducible() -> None:
    data = torch.arange(50) * 3
    x, y = random_batch(data, 8, 10, generator=torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (8, 10)
    assert torch.equal(y[:, :-1], x[:, 1:]) and torch.equal(y, x + 3)
    x2, _ = random_batch(data, 8, 10, generator=torch.Generator().manual_seed(0))
    assert torch.equal(x, x2)
    starts = torch.cat([random_batch(data, 64, 10)[0][:, 0] for _ in range(20)]) // 3
    assert starts.min() >= 0 and starts.max() == 50 - 11  # every start fits a window of 11
    with pytest.raises(ValueError, match="too few"):
        random_batch(torch.arange(5), 1, 5)


def test_stream_loss_predicts_every_token_once_and_perplexity_is_its_exp() -> None:
    model = small(block_size=8)
    data = torch.randint(V, (30,))  # windows [0, 8), [8, 16), [16, 24), then a short [24, 29)
    expected, count = 0.0, 0
    for s in range(0, 29, 8):
        x, y = data[s : min(s + 8, 29)], data[s + 1 : min(s + 9, 30)]
        expected += F.cross_entropy(model(x[None])[0][0], y, reduction="sum").item()
        count += len(y)
    assert count == 29
    assert stream_loss(model, data, batch_size=2) == pytest.approx(expected / count, rel=1e-5)
    assert perplexity(model, data) == pytest.approx(math.exp(expected / count), rel=1e-5)
    assert stream_loss(model, data, max_tokens=8) == pytest.approx(
        F.cross_entropy(model(data[None, :8])[0][0], data[1:9]).item(), rel=1e-5
    )
    model.train()
    stream_loss(model, data)
    assert model.training  # mode restored


# ----------------------------------------------------------------------------- sampling


def test_next_token_probs_temperature_top_k_and_top_p() -> None:
    torch.manual_seed(0)
    logits = torch.randn(5, 20) * 2
    entropies = []
    for t in (0.25, 0.5, 1.0, 2.0, 4.0):
        p = next_token_probs(logits, temperature=t)
        torch.testing.assert_close(p.sum(-1), torch.ones(5))
        entropies.append(-(p * p.clamp_min(1e-30).log()).sum(-1))
    for lower, higher in zip(entropies, entropies[1:], strict=False):
        assert (lower < higher).all()  # lower temperature concentrates the mass
    torch.testing.assert_close(next_token_probs(logits, 1.0), torch.softmax(logits, -1))
    torch.testing.assert_close(next_token_probs(logits, 1e-4), next_token_probs(logits, 0))
    assert torch.equal(next_token_probs(logits, 0).argmax(-1), logits.argmax(-1))

    p = next_token_probs(logits, top_k=3)
    top3 = logits.topk(3, -1).indices
    assert ((p > 0).sum(-1) == 3).all() and (p.gather(-1, top3) > 0).all()
    torch.testing.assert_close(p.gather(-1, top3), torch.softmax(logits.gather(-1, top3), -1))
    # k >= V keeps all
    torch.testing.assert_close(next_token_probs(logits, top_k=50), torch.softmax(logits, -1))

    p = next_token_probs(logits, top_p=0.9)
    full = torch.softmax(logits, -1)
    for row in range(5):  # the kept set is the shortest prefix of the sorted tokens with mass >= 0.9
        kept = (p[row] > 0).sum().item()
        sorted_full = full[row].sort(descending=True).values
        assert sorted_full[:kept].sum() >= 0.9 > sorted_full[: kept - 1].sum()


def prefixes_logits(model: GPT, out: torch.Tensor, prompt_len: int) -> torch.Tensor:
    """The logits the sampler saw before each new token, recomputed: (B, new, V)."""
    bs = model.config.block_size
    return torch.stack(
        [model(out[:, max(0, t - bs) : t])[0][:, -1] for t in range(prompt_len, out.shape[1])], dim=1
    )


def test_generate_never_samples_outside_the_top_k() -> None:
    model = small(block_size=8)
    prompt = torch.randint(V, (64, 5))
    for k in (1, 2, 4):
        gen = torch.Generator().manual_seed(k)
        out = generate(model, prompt, 10, temperature=10.0, top_k=k, generator=gen)
        logits = prefixes_logits(model, out, 5)  # context crossed block_size: cropping is checked too
        ranks = (logits > logits.gather(-1, out[:, 5:, None])).sum(-1)  # 0 = the best token
        assert ranks.max() < k
        if k > 1:
            assert (ranks > 0).any()  # a flat distribution does use the other k - 1 tokens


def test_generate_samples_from_the_tempered_distribution() -> None:
    model = small(block_size=8, seed=3)
    prompt = torch.randint(V, (1, 4)).repeat(4000, 1)
    logits = model(prompt[:1])[0][0, -1]
    top_share = {}
    for t in (0.5, 1.0, 2.0):
        first = generate(model, prompt, 1, temperature=t, generator=torch.Generator().manual_seed(0))[:, -1]
        freq = torch.bincount(first, minlength=V).float() / len(first)
        expected = next_token_probs(logits, t)
        assert (freq - expected).abs().max() < 0.03  # 4000 draws: standard error < 0.008
        top_share[t] = freq[logits.argmax()].item()
    assert top_share[0.5] > top_share[1.0] > top_share[2.0]


def test_zero_temperature_is_greedy() -> None:
    model = small(block_size=8)
    prompt = torch.randint(V, (3, 4))
    greedy = generate(model, prompt, 12, greedy=True)
    assert torch.equal(generate(model, prompt, 12, temperature=0), greedy)
    nearly_cold = generate(model, prompt, 12, temperature=1e-6, generator=torch.Generator().manual_seed(0))
    assert torch.equal(nearly_cold, greedy)
    logits = prefixes_logits(model, greedy, 4)
    assert torch.equal(logits.argmax(-1), greedy[:, 4:])


def test_generate_is_reproducible_crops_the_context_and_keeps_the_mode() -> None:
    model = small(block_size=8).train()
    prompt = torch.randint(V, (2, 20))  # longer than the context
    a = generate(model, prompt, 6, generator=torch.Generator().manual_seed(1))
    b = generate(model, prompt, 6, generator=torch.Generator().manual_seed(1))
    c = generate(model, prompt, 6, generator=torch.Generator().manual_seed(2))
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert a.shape == (2, 26) and torch.equal(a[:, :20], prompt)
    cropped = generate(model, prompt[:, -8:], 6, generator=torch.Generator().manual_seed(1))
    assert torch.equal(cropped[:, 8:], a[:, 20:])  # only the last block_size tokens matter
    assert model.training
    one = generate(model, prompt[0], 3)
    assert one.shape == (23,)
    assert torch.equal(generate(model, prompt, 0), prompt)


# ----------------------------------------------------------------------------- errors


def test_clear_errors_for_bad_ids_and_lengths() -> None:
    model = small(block_size=8)
    with pytest.raises(ValueError, match=r"outside the vocabulary 0 \.\. 10"):
        model(torch.tensor([[1, 2, V]]))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model(torch.tensor([[1, -1, 2]]))
    with pytest.raises(ValueError, match="block_size=8"):
        model(torch.randint(V, (1, 9)))
    with pytest.raises(TypeError, match="integer tensor"):
        model(torch.rand(1, 4))
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        model(torch.randint(V, (4,)))
    with pytest.raises(ValueError, match="shape of idx"):
        model(torch.randint(V, (2, 4)), torch.randint(V, (2, 3)))
    with pytest.raises(ValueError, match="targets holds ids"):
        model(torch.randint(V, (2, 4)), torch.full((2, 4), V))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        generate(model, torch.tensor([[0, V + 3]]), 2)
    with pytest.raises(ValueError, match="T >= 2"):
        next_token_loss(torch.zeros(1, 1, V), torch.zeros(1, 1, dtype=torch.long))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(temperature=-0.5), "temperature"),
        (dict(temperature=float("nan")), "temperature"),
        (dict(temperature="hot"), "temperature"),
        (dict(top_k=0), "top_k"),
        (dict(top_k=2.5), "top_k"),
        (dict(top_p=0.0), "top_p"),
        (dict(top_p=1.5), "top_p"),
        (dict(max_new_tokens=-1), "max_new_tokens"),
    ],
)
def test_clear_errors_for_bad_sampling_settings(kwargs: dict, match: str) -> None:
    model = small()
    args = {"max_new_tokens": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        generate(model, torch.tensor([[1, 2]]), **args)
    if "max_new_tokens" not in kwargs:
        with pytest.raises(ValueError, match=match):
            next_token_probs(torch.zeros(V), **kwargs)


def test_layers_check_their_sizes() -> None:
    with pytest.raises(ValueError, match="divisible"):
        CausalSelfAttention(10, 3)
    with pytest.raises(ValueError, match="dropout"):
        Block(8, 2, dropout=-0.1)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_bf16_autocast_forward_and_generate_on_cuda() -> None:
    from attnbook.runtime import autocast

    model = small().cuda()
    idx = torch.randint(V, (2, 8), device="cuda")
    with autocast("cuda"):
        logits, loss = model(idx, idx)
    assert logits.dtype == torch.bfloat16 and loss.dtype == torch.float32 and torch.isfinite(loss)
    out = generate(model, idx, 4, top_k=3, generator=torch.Generator("cuda").manual_seed(0))
    assert out.shape == (2, 12) and out.device.type == "cuda"


def test_train_lm_is_the_chapter_recipe_written_out():
    """The pages' numbers stay the same: train_lm draws exactly what the recipe it replaced drew."""
    ids = torch.randint(0, 12, (500,), generator=torch.Generator().manual_seed(3))
    model, history = train_lm(ids, 12, ids[:130], steps=4, preset="gpt-nano", batch_size=2, evals=2, seed=5)
    seed_everything(5)
    ref = GPT(GPTConfig.preset("gpt-nano", vocab_size=12))
    g = torch.Generator().manual_seed(5)
    ref_history = fit(ref, lambda m, batch: m(*batch)[1], lambda: random_batch(ids, 2, 64, generator=g), steps=4,
                      optimizer=ref.configure_optimizers(6e-3, weight_decay=0.1), schedule="cosine",
                      warmup_steps=30, device="cpu", progress=False,
                      eval_fn=lambda m: {"val_loss": stream_loss(m, ids[:130])}, eval_every=2)
    assert history.train_loss == ref_history.train_loss
    assert [e["step"] for e in history.evals] == [2, 4]
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), ref.state_dict().values(), strict=True))
    with pytest.raises(ValueError, match="outside the vocabulary 0 .. 9"):
        train_lm(ids, 10, steps=1)  # ids up to 11 do not fit a vocabulary of 10
