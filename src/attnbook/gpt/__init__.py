"""GPT: a decoder-only Transformer that predicts the next token, and how to sample from it.

Modules, small to large:

- :mod:`.layers` -- :class:`CausalSelfAttention`, :class:`MLP` and the pre-norm
  :class:`Block`, with Llama's options (:class:`SwiGLU`, RMSNorm, grouped-query
  attention) and the :class:`KVCache` that generation keeps; :mod:`.rope`, the
  rotary positions.
- :mod:`.model` -- :class:`GPTConfig` and its presets, :class:`GPT`, and
  :func:`forward_flops`, the FLOPs of one forward pass.
- :mod:`.lm` -- :func:`random_batch` (training windows), :func:`next_token_loss`
  (the shifted loss written out), :func:`stream_loss`, :func:`perplexity` and
  :func:`train_lm` (chapter 4's training recipe).
- :mod:`.sampling` -- :func:`next_token_probs` and :func:`generate`.

**What it adds over** :mod:`attnbook.transformer`: there is no encoder and no
cross-attention. A GPT is the decoder alone -- a stack of pre-norm blocks whose
self-attention is *causal* (position ``t`` sees tokens ``0..t`` only) -- trained
on one long stream of text to model ``p(t_1..t_N) = prod_n p(t_n | t_<n)``.
Token and *learned* position embeddings go in, a final LayerNorm and a linear
head whose weight is the token embedding (*weight tying*) come out.

**The targets convention** (the same as nanoGPT's). ``GPT.forward(idx,
targets)`` takes targets that are *already shifted*: ``targets[:, t]`` is the
token that follows ``idx[:, t]``. Cut both from one stream ``s`` as
``idx = s[i : i+T]`` and ``targets = s[i+1 : i+T+1]`` (:func:`random_batch`
does this). The loss is the mean cross-entropy over all ``B * T`` positions
(positions whose target is ``-100`` are skipped), so every window trains ``T``
predictions at once. :func:`next_token_loss` is the other way round: it takes
logits and the *unshifted* ids and does the shift itself.

**Attention** runs PyTorch's fused kernel
(:func:`attnbook.attention.fused_attention` with ``is_causal=True``) unless
``need_weights=True`` asks for the maps; then the explicit
:func:`attnbook.attention.scaled_dot_product_attention` computes them and
``GPT.attention_weights()`` returns one (B, nh, T, T) tensor per block.

Names follow Hugging Face's GPT-2 (``wte``, ``wpe``, ``h``, ``ln_1``,
``attn.c_attn``, ``attn.c_proj``, ``ln_2``, ``mlp.c_fc``, ``mlp.c_proj``,
``ln_f``, ``lm_head``; config ``vocab_size``, ``n_layer``, ``n_head``,
``n_embd``), so its code and this one read side by side; the ``gpt2`` preset
has exactly GPT-2 small's 124,439,808 parameters.

Shape legend: ``B`` batch, ``T`` sequence length, ``C = n_embd``, ``nh``
heads, ``hs = C / nh`` head size, ``V`` vocabulary size.

References: Radford et al., *Improving Language Understanding by Generative
Pre-Training* (GPT, 2018) and *Language Models are Unsupervised Multitask
Learners* (GPT-2, 2019); Press & Wolf, *Using the Output Embedding to Improve
Language Models* (weight tying, 2017); Holtzman et al., *The Curious Case of
Neural Text Degeneration* (top-p, 2020); karpathy/nanoGPT and minGPT.
"""


from .layers import MLP, Block, CausalSelfAttention, KVCache, SwiGLU, cached_attention
from .lm import next_token_loss, perplexity, random_batch, stream_loss, train_lm
from .model import GPT, GPT_PRESETS, IGNORE_INDEX, GPTConfig, forward_flops
from .sampling import generate, next_token_probs

__all__ = [
    "CausalSelfAttention",
    "MLP",
    "SwiGLU",
    "Block",
    "KVCache",
    "cached_attention",
    "GPTConfig",
    "GPT_PRESETS",
    "GPT",
    "IGNORE_INDEX",
    "forward_flops",
    "random_batch",
    "next_token_loss",
    "stream_loss",
    "perplexity",
    "train_lm",
    "next_token_probs",
    "generate",
]
