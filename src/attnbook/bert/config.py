"""``BertConfig``: the sizes of a BERT, with Hugging Face's field names and named presets.

The defaults are BERT-base's (Devlin et al., *BERT: Pre-training of Deep
Bidirectional Transformers for Language Understanding*, 2018,
https://arxiv.org/abs/1810.04805, section 3): 12 layers, width 768, 12 heads,
a 30,522-token WordPiece vocabulary and 512 positions. ``"cpu-tiny"`` is
Google's BERT-Tiny (Turc et al., *Well-Read Students Learn Better*, 2019,
https://arxiv.org/abs/1908.08962): 2 layers of width 128 with 2 heads.

>>> cfg = BertConfig.preset("cpu-tiny", vocab_size=1000)
>>> cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.head_size
(2, 128, 2, 64)
"""

from __future__ import annotations

from dataclasses import dataclass

from attnbook._checks import dropout_rate, int_in_range, positive_int, positive_number
from attnbook._config import PresetConfig

__all__ = ["BertConfig", "BERT_PRESETS"]


BERT_PRESETS: dict[str, dict[str, object]] = {
    # BERT-base: 110M parameters (110,106,428 with the pretraining heads; 109,482,240 in BertModel)
    "bert-base": dict(),
    # BERT-large: "340M" in the paper (336,226,108 with the pretraining heads; 335,141,888 in BertModel)
    "bert-large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
    # BERT-Tiny (Turc et al. 2019) with 128 positions: the chapter's model on a 2-core CPU;
    # pass the vocabulary of your tokenizer as vocab_size
    "cpu-tiny": dict(
        hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512, max_position_embeddings=128
    ),
}


@dataclass
class BertConfig(PresetConfig):
    """Sizes and switches of a BERT; ``BertConfig.preset(name, **overrides)`` gives named sizes.

    >>> BertConfig.preset("bert-large").num_hidden_layers
    24
    >>> BertConfig(hidden_size=10, num_attention_heads=3)
    Traceback (most recent call last):
    ...
    ValueError: hidden_size must be divisible by num_attention_heads, got 10 and 3
    """

    presets = BERT_PRESETS  # the named sizes that preset(name) reads

    vocab_size: int = 30522  # token ids are 0 .. vocab_size - 1 (BERT's uncased WordPiece: 30,522)
    hidden_size: int = 768  # width C of every token vector in the residual stream
    num_hidden_layers: int = 12  # encoder blocks
    num_attention_heads: int = 12  # heads per block; hidden_size must be divisible by it
    intermediate_size: int = 3072  # hidden width of each feed-forward network (4 * hidden_size)
    hidden_act: str = "gelu"  # activation of the feed-forward network and of the MLM head (exact GELU)
    hidden_dropout_prob: float = 0.1  # on embeddings, sublayer outputs and the classifier's input
    attention_probs_dropout_prob: float = 0.1  # on the attention weights
    max_position_embeddings: int = 512  # longest input, [CLS] and [SEP] included (size of the position table)
    type_vocab_size: int = 2  # segment ids: 0 for sentence A, 1 for sentence B
    layer_norm_eps: float = 1e-12  # epsilon of every LayerNorm (BERT's, not PyTorch's 1e-5)
    pad_token_id: int = 0  # id of [PAD]; its embedding row starts at zero
    initializer_range: float = 0.02  # standard deviation of the normal initialisation of weights

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        ):
            positive_int(name, getattr(self, name))
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(
                "hidden_size must be divisible by num_attention_heads, got "
                f"{self.hidden_size} and {self.num_attention_heads}"
            )
        if self.hidden_act != "gelu":
            raise ValueError(f"hidden_act must be 'gelu' (BERT's activation), got {self.hidden_act!r}")
        dropout_rate(self.hidden_dropout_prob)
        dropout_rate(self.attention_probs_dropout_prob)
        int_in_range("pad_token_id", self.pad_token_id, 0, self.vocab_size - 1, " (an id of the vocabulary)")
        for name in ("layer_norm_eps", "initializer_range"):
            positive_number(name, getattr(self, name))

    @property
    def head_size(self) -> int:
        """Width ``hs = hidden_size / num_attention_heads`` of one head."""
        return self.hidden_size // self.num_attention_heads
