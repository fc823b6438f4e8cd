"""Checks for chapter 4's exercises (``solutions/04-gpt-bpe``): BPE, the language-model loss, sampling.

One module per graded part, in the notebook's order: counting and merging
pairs (:mod:`.pairs`, ``check_pairs``), training BPE (:mod:`.training`,
``check_train_bpe``), encoding and decoding (:mod:`.codec`,
``check_encode_decode``), the shifted next-token loss (:mod:`.loss`,
``check_next_token_loss``), sampling with a temperature and top-k
(:mod:`.sampling`, ``check_sample_next``), perplexity (:mod:`.perplexity`,
``check_perplexity``), then three reasoning parts: the parameter count of a
GPT (:mod:`.params`, ``check_gpt_params``), questions on decoding and the
causal mask (:mod:`.decoding`, ``check_decoding_reason``) and the reading of
an ablation of the vocabulary size (:mod:`.vocab_ablation`,
``check_vocab_reading``), one decoding step with a key/value cache
(:mod:`.cached_step`, ``check_cached_attention_step``), special tokens
recognised only when allowed (:mod:`.special`, ``check_encode_special``) and
last the FLOPs of a forward pass (:mod:`.flops`, ``check_forward_flops``), a
count like Part 7's. The first six compare the student's function with a private
copy of the reference in :mod:`attnbook.tokenizers` or :mod:`attnbook.gpt`
(:mod:`._common`) and name the mistakes students make most (a merge that
takes overlapping pairs in ``aaa`` or works on joined strings, merges applied
in the wrong order, targets that are not shifted, a temperature applied after
the softmax, a generator ignored, ...).

>>> def merge(ids, pair, idx):  # misses an occurrence right after another one (`a b a b`)
...     text = " " + " ".join(map(str, ids)) + " "
...     return [int(i) for i in text.replace(f" {pair[0]} {pair[1]} ", f" {idx} ").split()]
>>> def get_stats(ids):
...     counts = {}
...     for pair in zip(ids, ids[1:]):
...         counts[pair] = counts.get(pair, 0) + 1
...     return counts
>>> check_pairs(get_stats, merge)  # no visible case has two occurrences back to back: hidden ones do
All 5 visible checks passed.
"""

from ..fixtures import perplexity_test_model
from .cached_step import check_cached_attention_step
from .codec import check_encode_decode
from .decoding import check_decoding_reason
from .flops import check_forward_flops
from .loss import check_next_token_loss
from .pairs import check_pairs
from .params import check_gpt_params
from .perplexity import check_perplexity
from .sampling import check_sample_next
from .special import check_encode_special
from .training import check_train_bpe
from .vocab_ablation import check_vocab_reading

__all__ = [
    "check_pairs",
    "check_train_bpe",
    "check_encode_decode",
    "check_next_token_loss",
    "check_sample_next",
    "check_perplexity",
    "check_gpt_params",
    "check_decoding_reason",
    "check_vocab_reading",
    "check_cached_attention_step",
    "check_encode_special",
    "check_forward_flops",
    "perplexity_test_model",
]
