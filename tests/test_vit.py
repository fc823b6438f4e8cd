"""attnbook.vit: patches, the patch embedding as a convolution, the model, maps and rollout, MAE, errors."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnbook.vit import (
    MAE,
    VIT_PRESETS,
    PatchEmbedding,
    ViT,
    ViTConfig,
    attention_maps,
    attention_rollout,
    class_token_share,
    class_token_shift,
    mae_loss,
    patchify,
    random_masking,
    unpatchify,
    vit_tokens,
)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models: a second thread only adds synchronisation on a busy 2-core machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny(**overrides: object) -> ViT:
    torch.manual_seed(0)
    return ViT(ViTConfig.preset("cpu-digits", embed_dim=16, depth=2, num_heads=2, **overrides)).eval()


# ----------------------------------------------------------------------------- patches


@pytest.mark.parametrize("B,C,H,W,P", [(2, 3, 8, 12, 4), (1, 1, 6, 6, 1), (3, 2, 4, 4, 4)])
def test_patchify_and_unpatchify_are_inverse(B, C, H, W, P) -> None:
    x = torch.randn(B, C, H, W, dtype=torch.float64)
    patches = patchify(x, P)
    assert patches.shape == (B, H * W // P**2, P * P * C)
    assert torch.equal(unpatchify(patches, P, (H, W), in_chans=C), x)
    assert torch.equal(patchify(unpatchify(patches, P, (H, W), C), P), patches)


def test_patch_layout_is_row_major_with_channels_last() -> None:
    x = torch.randn(1, 3, 8, 8)
    patches = patchify(x, 4)  # (1, 4, 48)
    n = 1  # second patch: top row, right half
    block = x[0, :, 0:4, 4:8]  # (C, P, P)
    assert torch.equal(patches[0, n], block.permute(1, 2, 0).reshape(-1))  # flattened as (P, P, C)
    assert torch.equal(patches[0, 2], x[0, :, 4:8, 0:4].permute(1, 2, 0).reshape(-1))  # bottom-left third


def test_patchify_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="not divisible by patch_size=3"):
        patchify(torch.randn(1, 1, 8, 8), 3)
    with pytest.raises(ValueError, match=r"\(B, C, H, W\)"):
        patchify(torch.randn(8, 8), 4)
    with pytest.raises(TypeError, match="floating-point"):
        patchify(torch.zeros(1, 1, 8, 8, dtype=torch.long), 4)
    with pytest.raises(ValueError, match="patches must have shape"):
        unpatchify(torch.randn(1, 5, 16), 4, 8)


def test_patch_embedding_equals_strided_convolution() -> None:
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 20, kernel_size=4, stride=4).double()
    embed = PatchEmbedding(12, 4, 3, 20).double().from_conv(conv)
    x = torch.randn(2, 3, 12, 12, dtype=torch.float64)
    expected = conv(x).flatten(2).transpose(1, 2)  # (B, D, h, w) -> (B, N, D)
    torch.testing.assert_close(embed(x), expected, atol=1e-6, rtol=0)
    round_trip = embed.to_conv()
    torch.testing.assert_close(round_trip.weight, conv.weight, atol=0, rtol=0)


def test_patch_embedding_rejects_wrong_channels_and_sizes() -> None:
    embed = PatchEmbedding(8, 4, 1, 8)
    with pytest.raises(ValueError, match="in_chans=1 channels"):
        embed(torch.randn(2, 3, 8, 8))
    with pytest.raises(ValueError, match="must be 8x8"):
        embed(torch.randn(2, 1, 12, 12))
    with pytest.raises(ValueError, match="not divisible"):
        PatchEmbedding(10, 4, 1, 8)
    with pytest.raises(ValueError, match="Conv2d"):
        embed.from_conv(nn.Conv2d(1, 8, 4, stride=2))


# ----------------------------------------------------------------------------- config and model


def test_presets_and_config_errors() -> None:
    assert {"vit-base", "vit-large", "vit-huge", "cpu-digits", "cpu-mnist"} <= set(VIT_PRESETS)
    assert ViTConfig.preset("cpu-mnist").num_patches == 16
    with pytest.raises(ValueError, match="unknown preset"):
        ViTConfig.preset("vit-giant")
    with pytest.raises(ValueError, match="divisible by patch_size"):
        ViTConfig(img_size=30, patch_size=7)
    with pytest.raises(ValueError, match="divisible by num_heads"):
        ViTConfig(embed_dim=10, num_heads=4)
    with pytest.raises(TypeError, match="ViTConfig"):
        ViT({"img_size": 8})


def test_parameter_counts_of_the_paper() -> None:
    with torch.device("meta"):
        counts = {name: ViT(ViTConfig.preset(name)).num_params() for name in ("vit-base", "vit-large", "vit-huge")}
    assert round(counts["vit-base"] / 1e6, 1) == 86.6  # Table 1: 86M, 307M, 632M (Large is 304M counted exactly)
    assert round(counts["vit-large"] / 1e6) == 304
    assert round(counts["vit-huge"] / 1e6) == 632


def test_class_token_is_prepended_and_positions_cover_it() -> None:
    model = tiny()
    x = torch.randn(2, 1, 8, 8)
    tokens = model.embed(x)  # (B, 1 + N, D)
    torch.testing.assert_close(tokens[:, 0], (model.cls_token[0, 0] + model.pos_embed[0, 0]).expand(2, -1))
    torch.testing.assert_close(tokens[:, 1:], model.patch_embed(x) + model.pos_embed[:, 1:])
    feats = model.forward_features(x)
    assert feats.shape == (2, 5, 16)
    torch.testing.assert_close(model(x), model.head(feats[:, 0]))


def test_registers_sit_between_the_class_token_and_the_patches() -> None:
    model = tiny(reg_tokens=3)
    x = torch.randn(2, 1, 8, 8)
    tokens = model.embed(x)  # (B, 1 + R + N, D)
    assert model.config.num_prefix_tokens == 4 and tokens.shape == (2, 8, 16)
    torch.testing.assert_close(tokens[:, 1:4], (model.reg_token + model.pos_embed[:, 1:4]).expand(2, -1, -1))
    torch.testing.assert_close(tokens[:, 4:], model.patch_embed(x) + model.pos_embed[:, 4:])
    torch.testing.assert_close(model(x), model.head(model.forward_features(x)[:, 0]))  # no output reads them
    assert tiny().reg_token is None and tiny().config.num_prefix_tokens == 1
    with pytest.raises(ValueError, match="reg_tokens"):
        ViTConfig.preset("cpu-digits", reg_tokens=-1)
    with pytest.raises(ValueError, match="registers"):
        MAE(ViTConfig.preset("cpu-digits", reg_tokens=2))


def test_blocks_are_pre_norm() -> None:
    model = tiny()
    block = model.blocks[0]
    x = torch.randn(2, 5, 16)
    h = x + block.self_attn(block.norm1(x))[0]
    expected = h + block.ffn(block.norm2(h))
    torch.testing.assert_close(block(x), expected)


@pytest.mark.parametrize("preset", ["cpu-digits", "cpu-mnist"])
def test_every_model_runs_forward_and_backward_without_nans(preset: str) -> None:
    torch.manual_seed(0)
    cfg = ViTConfig.preset(preset, depth=2, drop_rate=0.1)
    x = torch.rand(4, 1, cfg.img_size, cfg.img_size)
    for model in (ViT(cfg).train(), MAE(cfg).train()):
        out = model(x)
        loss = out.logsumexp(-1).mean() if isinstance(out, torch.Tensor) else out[0]
        loss.backward()
        assert torch.isfinite(loss)
        grads = [p.grad for p in model.parameters() if p.requires_grad]
        assert all(g is not None and torch.isfinite(g).all() for g in grads)


def test_model_rejects_wrong_channels() -> None:
    with pytest.raises(ValueError, match="in_chans=1"):
        tiny()(torch.randn(1, 3, 8, 8))
    with pytest.raises(ValueError, match="not divisible"):
        tiny()(torch.randn(1, 1, 9, 9))


# ----------------------------------------------------------------------------- maps and rollout


def test_attention_maps_are_per_layer_and_rows_sum_to_one() -> None:
    model = tiny()
    maps = attention_maps(model, torch.randn(3, 1, 8, 8))
    assert len(maps) == 2 and all(m.shape == (3, 2, 5, 5) for m in maps)
    torch.testing.assert_close(maps[0].sum(-1), torch.ones(3, 2, 5))
    assert all(block.attn_weights is None for block in model.blocks)  # not kept in the model
    with pytest.raises(TypeError, match="ViT"):
        attention_maps(nn.Linear(2, 2), torch.randn(1, 1, 8, 8))


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
@pytest.mark.parametrize("residual", [True, False])
def test_rollout_rows_sum_to_one(fusion: str, residual: bool) -> None:
    torch.manual_seed(0)
    maps = [torch.rand(2, 3, 6, 6).softmax(-1) for _ in range(4)]
    rollout = attention_rollout(maps, head_fusion=fusion, add_residual=residual)
    assert rollout.shape == (2, 6, 6)
    torch.testing.assert_close(rollout.sum(-1), torch.ones(2, 6))


def test_rollout_by_hand() -> None:
    torch.manual_seed(0)
    maps = [torch.rand(1, 2, 3, 3).softmax(-1) for _ in range(2)]
    eye = torch.eye(3)
    fused = [(m.mean(1) + eye) / (m.mean(1) + eye).sum(-1, keepdim=True) for m in maps]
    torch.testing.assert_close(attention_rollout(maps), fused[1] @ fused[0])
    with pytest.raises(ValueError, match="head_fusion"):
        attention_rollout(maps, head_fusion="sum")
    with pytest.raises(ValueError, match="maps\\[1\\]"):
        attention_rollout([maps[0], torch.rand(1, 2, 4, 4)])


def test_class_token_share_against_a_loop_and_its_bounds() -> None:
    torch.manual_seed(0)
    rolled = attention_rollout([torch.rand(3, 2, 5, 5).softmax(-1) for _ in range(2)])  # (3, 5, 5)
    selected = torch.tensor([[True, False, False, True], [False] * 4, [True] * 4])  # (3, N=4)
    by_loop = [sum(rolled[b, 0, 1 + n] for n in range(4) if selected[b, n]) / rolled[b, 0, 1:].sum()
               for b in range(3)]
    torch.testing.assert_close(class_token_share(rolled, selected), torch.stack(by_loop))
    assert class_token_share(rolled, selected)[1] == 0 and class_token_share(rolled, selected)[2] == 1
    uniform = torch.full((1, 5, 5), 0.2)  # a map that ignores the image: the share is the patches' share
    assert class_token_share(uniform, selected[:1]).item() == pytest.approx(0.5)
    with pytest.raises(ValueError, match="bool"):
        class_token_share(rolled, selected.float())
    with pytest.raises(ValueError, match=r"\(B, T, T\)"):
        class_token_share(rolled[:, 0], selected)
    with pytest.raises(ValueError, match="1 <= N < T"):
        class_token_share(rolled, torch.ones(3, 5, dtype=torch.bool))
    # tokens 1 and 2 are registers, 3 and 4 the patches: the registers' mass is left out, like the class token's
    by_hand = rolled[:, 0, 3] / rolled[:, 0, 3:].sum(-1)
    torch.testing.assert_close(class_token_share(rolled, torch.tensor([[True, False]] * 3)), by_hand)


def test_decay_groups_leave_biases_norms_positions_class_and_register_tokens_undecayed() -> None:
    from attnbook.train import decay_groups

    model = tiny()
    decayed, undecayed = decay_groups(model, 0.05)
    names = {id(p): n for n, p in model.named_parameters()}
    assert decayed["weight_decay"] == 0.05 and undecayed["weight_decay"] == 0.0
    assert {names[id(p)] for p in undecayed["params"]} >= {"pos_embed", "cls_token", "norm.weight", "head.bias"}
    assert all(p.dim() == 2 for p in decayed["params"])  # weight matrices only
    assert len(decayed["params"]) + len(undecayed["params"]) == len(list(model.parameters()))
    with_registers = tiny(reg_tokens=2)
    assert any(p is with_registers.reg_token for p in decay_groups(with_registers, 0.05)[1]["params"])


def test_label_smoothing_changes_the_loss_the_recipe_minimises() -> None:
    from attnbook.vit.classify import train_classifier

    x, y = torch.rand(32, 1, 8, 8), torch.arange(32) % 10
    losses = []
    for smoothing in (0.0, 0.3):
        torch.manual_seed(0)
        history = train_classifier(tiny().train(), (x, y), (x, y), steps=3, label_smoothing=smoothing)
        losses.append(history.train_loss[0])
    assert losses[1] != pytest.approx(losses[0], abs=1e-3)  # same model and batch, another loss
    with pytest.raises(ValueError, match="label_smoothing"):
        train_classifier(tiny(), (x, y), (x, y), steps=1, label_smoothing=1.0)


# ----------------------------------------------------------------------------- MAE


@pytest.mark.parametrize("N,ratio", [(16, 0.75), (10, 0.5), (7, 0.3), (1, 0.0)])
def test_random_masking_keeps_the_asked_share_and_restores_order(N: int, ratio: float) -> None:
    B, D = 5, 3
    x = torch.randn(B, N, D, dtype=torch.float64)
    kept, mask, ids_restore = random_masking(x, ratio, torch.Generator().manual_seed(1))
    n_keep = int(N * (1 - ratio))
    assert kept.shape == (B, n_keep, D) and mask.shape == (B, N)
    assert (mask.sum(1) == N - n_keep).all()
    removed = torch.stack([x[b, mask[b] == 1] for b in range(B)])  # (B, N - n_keep, D)
    shuffled = torch.cat([kept, removed[:, torch.randperm(N - n_keep)]], dim=1)
    # ids_restore puts the kept tokens back where the mask says 0
    restored = shuffled.gather(1, ids_restore.unsqueeze(-1).expand(-1, -1, D))
    assert torch.equal(restored[mask == 0], x[mask == 0])
    assert all(sorted(r.tolist()) == list(range(N)) for r in ids_restore)


def test_random_masking_is_uniform_and_seeded() -> None:
    x = torch.zeros(4000, 8, 1)
    _, mask, _ = random_masking(x, 0.75, torch.Generator().manual_seed(0))
    assert (mask.mean(0) - 0.75).abs().max() < 0.03  # every position is hidden 75 % of the time
    a = random_masking(x[:3], 0.5, torch.Generator().manual_seed(7))
    b = random_masking(x[:3], 0.5, torch.Generator().manual_seed(7))
    assert torch.equal(a[2], b[2])
    with pytest.raises(ValueError, match="mask_ratio"):
        random_masking(x, 1.0)
    with pytest.raises(ValueError, match="keeps no token"):
        random_masking(torch.zeros(1, 3, 1), 0.9)


def test_mae_loss_counts_hidden_patches_only() -> None:
    torch.manual_seed(0)
    pred, target = torch.randn(2, 4, 6), torch.randn(2, 4, 6)
    mask = torch.tensor([[1.0, 0, 0, 1], [0, 1, 0, 0]])
    expected = ((pred - target) ** 2).mean(-1)[mask == 1].mean()
    torch.testing.assert_close(mae_loss(pred, target, mask), expected)
    normed = (target - target.mean(-1, keepdim=True)) / (target.var(-1, keepdim=True) + 1e-6).sqrt()
    torch.testing.assert_close(mae_loss(pred, target, mask, norm_pix_loss=True),
                               ((pred - normed) ** 2).mean(-1)[mask == 1].mean())


def test_mae_encoder_sees_only_visible_patches() -> None:
    torch.manual_seed(0)
    mae = MAE(ViTConfig.preset("cpu-mnist", embed_dim=16, depth=1, num_heads=2)).eval()
    images = torch.rand(2, 1, 28, 28)
    latent, mask, ids_restore = mae.forward_encoder(images, 0.75, torch.Generator().manual_seed(0))
    assert latent.shape == (2, 1 + 4, 16)  # the class token and 4 of 16 patches
    # Changing a hidden patch's pixels changes nothing the encoder computes.
    hidden = int((mask[0] == 1).nonzero()[0])
    r, c = divmod(hidden, 4)
    changed = images.clone()
    changed[0, :, r * 7:(r + 1) * 7, c * 7:(c + 1) * 7] += 1.0
    latent2, _, _ = mae.forward_encoder(changed, 0.75, torch.Generator().manual_seed(0))
    torch.testing.assert_close(latent, latent2)
    loss, pred, mask = mae(images, generator=torch.Generator().manual_seed(0))
    assert pred.shape == (2, 16, 49) and loss.ndim == 0
    assert isinstance(mae.encoder, ViT) and isinstance(mae.encoder.head, nn.Identity)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_bf16_autocast_forward_backward_and_matching_on_cuda() -> None:
    from attnbook.runtime import autocast
    from attnbook.vit import hungarian_match

    model = tiny().cuda().train()
    x = torch.rand(4, 1, 8, 8, device="cuda")
    with autocast("cuda"):
        logits = model(x)
    assert logits.dtype == torch.bfloat16
    loss = logits.float().logsumexp(-1).mean()
    loss.backward()
    assert torch.isfinite(loss) and all(torch.isfinite(p.grad).all() for p in model.parameters())
    maps = attention_maps(model.eval(), x)
    assert maps[0].device.type == "cuda"
    torch.testing.assert_close(attention_rollout(maps).sum(-1), torch.ones(4, 5, device="cuda"), atol=1e-2, rtol=0)
    _, mask, _ = random_masking(torch.zeros(3, 16, 2, device="cuda"), 0.75, torch.Generator("cuda").manual_seed(0))
    assert mask.device.type == "cuda" and (mask.sum(1) == 12).all()
    rows, cols = hungarian_match(torch.rand(5, 3, device="cuda"))
    assert rows.device.type == "cuda" and len(cols) == 3


# ----------------------------------------------------------------------------- vit_tokens, class_token_shift


@pytest.mark.parametrize("img_size, patch_size", [(8, 4), (28, 7), (12, 2), (6, 6)])
def test_vit_tokens_counts_what_a_real_vit_reads(img_size, patch_size):
    """T is the sequence a ViT's blocks read and T^2 the scores of one head's map, measured on a real model."""
    torch.manual_seed(0)
    model = ViT(ViTConfig(img_size=img_size, patch_size=patch_size, in_chans=1, num_classes=0, embed_dim=8,
                          depth=1, num_heads=2)).eval()
    with torch.no_grad():
        features = model.forward_features(torch.zeros(2, 1, img_size, img_size), need_weights=True)
    assert vit_tokens(img_size, img_size, patch_size) == (features.shape[1], model.blocks[0].attn_weights[0, 0].numel())


@pytest.mark.parametrize("H, W, P", [(8, 12, 4), (6, 2, 2), (3, 9, 3)])
def test_vit_tokens_of_a_non_square_image_counts_its_patches(H, W, P):
    T, scores = vit_tokens(H, W, P)
    assert T == 1 + patchify(torch.zeros(1, 1, H, W), P).shape[1] and scores == T * T


@pytest.mark.parametrize("H, W, P, side", [(9, 8, 4, "height=9"), (8, 6, 4, "width=6"), (2, 2, 4, "height=2")])
def test_vit_tokens_refuses_patches_that_do_not_tile(H, W, P, side):
    with pytest.raises(ValueError, match=f"{side} is not a multiple of patch_size={P}"):
        vit_tokens(H, W, P)
    with pytest.raises(ValueError, match="patch_size must be a positive int"):
        vit_tokens(8, 8, 0)


def test_class_token_shift_is_rounding_without_positions_and_not_with_them():
    """A ViT without positions is permutation-equivariant, its class token invariant to a shuffle of the patches."""
    model, images = tiny(), torch.rand(3, 1, 8, 8)
    order = torch.tensor([1, 0, 3, 2])
    with_positions = class_token_shift(model, images, order)
    without = class_token_shift(model, images, order, positions=False)
    assert with_positions.shape == without.shape == (2,)
    assert without.max() < 1e-5 < 1e-3 < with_positions.min()
    assert model.pos_embed.abs().sum() > 0  # the model measured without positions was a copy
    assert class_token_shift(model, images, torch.arange(4)).max() == 0  # no shuffle, no shift
    with pytest.raises(ValueError, match="a permutation of the 4 patches"):
        class_token_shift(model, images, torch.tensor([0, 0, 1, 2]))
