"""The hidden cases of chapter 4 (``solutions/04-gpt-bpe``): instructor-only, never in the student's package.

``HIDDEN[part name]`` is the part's hidden cases, which
:func:`attnbook.grading.hidden_cases.find` reads at grading time; the case makers
come from the part modules in :mod:`attnbook.grading.gpt`, the parameters only from here.
"""

import torch

from attnbook.grading import reasoning
from attnbook.grading.engine import Case
from attnbook.grading.gpt import (
    cached_step,
    codec,
    flops,
    loss,
    pairs,
    params,
    perplexity,
    sampling,
    special,
    training,
)

EOT, PROMPT = special.EOT, special.PROMPT
# Part 11: a chat log that quotes the special strings, so that other merges cross them than the visible ones
CHAT = (f"user: hi!{EOT}bot: hello, how are you?{EOT}user: fine.{PROMPT}bot: good.{EOT}"
        f"user: bye!{EOT}bot: café? déjà vu.{PROMPT}") * 2

HIDDEN = {
    # Part 7: other sizes than the visible ones, so that counts pasted from the visible cases fail; the
    # smallest GPT (every size 1), a context longer than the vocabulary, GPT-2's vocabulary
    "check_gpt_params": (
        Case("other sizes", params._case(300, 20, 12, 5), weight=2.0),
        Case("other sizes", params._case(4096, 256, 128, 6), weight=2.0),
        Case("the smallest GPT: every size 1", params._case(2, 1, 1, 1)),
        Case("a context longer than the vocabulary", params._case(7, 512, 24, 4)),
        Case("a large vocabulary, a small width", params._case(50257, 128, 32, 2)),
        # an odd width: `4 * C * C | C` (and `^ C`) for `+ C` equals it whenever C's bits miss those of 4 C^2,
        # as they do for every visible width (4, 16, 48); with C = 7 they share a bit
        Case("an odd width", params._case(97, 10, 7, 3)),
    ),
    # Part 8: the key of each question, and for every option the sentence the feedback prints
    "check_decoding_reason": (
        Case("greedy", reasoning.key(
            "greedy", "c",
            a="temperature 1 with every token kept draws from softmax(logits) itself: any token of positive "
              "probability can come out, not only the argmax",
            b="a high temperature flattens the distribution: the argmax becomes less likely, never certain",
            c="top_k=1 keeps only the largest logit, and the softmax of one finite logit among -inf puts all "
              "the probability on it: the draw is the argmax whatever the temperature and the generator",
            d="top_k of V or more keeps every token (the statement of Part 5 says so): that is plain sampling",
        )),
        Case("hot", reasoning.key(
            "hot", "b",
            a="that is the other limit, a temperature going to 0: dividing by a small tau pulls the logits "
              "apart, and the largest takes all the probability",
            b="z / tau goes to 0 for every token, and the softmax of equal logits is uniform: each token gets "
              "1/V, whatever the model learned",
            c="the softmax ignores a constant added to every logit, not a division: dividing by tau scales the "
              "gaps between the logits, and the gaps are what the softmax reads")),
        Case("no_mask", reasoning.key(
            "no_mask", "b",
            a="the earlier positions' outputs do change, but only the last position's is read, and in one block "
              "it depends only on the keys and values up to it, the same with or without the mask (with more "
              "blocks the earlier outputs would feed the last one, and it would change)",
            b="the mask hides from a query only the keys after it, and the last position has none after it: in "
              "one block its output, and so the distribution of the next token, is exactly what it was",
            c="the last row of the scores never had a -inf entry (no key comes after the last query), so its "
              "softmax is the one the model was trained with")),
    ),
    # Part 9: what the ablation's figure shows (large for every seed: tests/test_grading_gpt.py)
    "check_vocab_reading": (
        Case("english", reasoning.key(
            "english", "c",
            a="the English curve leaves 1 at the first merges: the numbers share their words (hundred, "
              "thousand, twenty), so merges learned on some numbers shorten the others",
            b="a larger vocabulary gives more ids to choose from, but each merge replaces two tokens by one: "
              "texts get fewer tokens, never more",
            c="every merge makes a frequent pair of tokens one token: with 64 merges the held-out English takes "
              "more than four bytes per token, a sequence four times shorter")),
        Case("context", reasoning.key(
            "context", "d",
            a="T counts tokens, not bytes: at more than four bytes per token, 64 tokens hold more than four "
              "times the text",
            b="the window does hold more text, but every new token needs its own row of C numbers in the token "
              "embedding (tied with the output layer): 64 more tokens, 64 C more parameters",
            c="a longer token covers more bytes, so a window of 64 tokens holds more text, not less",
            d="64 tokens at more than four bytes each hold four to five times the text; the price is a row of C "
              "parameters per new token in the tied embedding and output layer, and a wider softmax")),
        Case("german", reasoning.key(
            "german", "a",
            a="BPE merges the frequent pairs of its training text; a tokenizer trained on English compresses "
              "German poorly (zwanzig shares little with twenty), which is why a model's tokenizer is trained "
              "on text like the text it will read",
            b="longer words leave more room for merges, not less: the German words lack the merges, not the "
              "length",
            c="BPE works on bytes, whatever the characters: the two bytes of an ü merge like any pair (Part 2 "
              "merged the bytes of é); the German curve is flat because the English merges rarely occur in it")),
    ),
    "check_encode_decode": (
        Case("encode: merges applied by rank", lambda: ("encode", "aaab", {(97, 98): 256, (97, 97): 257})),
        Case("encode: merges applied by rank",
             codec._encode("that bat ate the mat, then sat", codec.CORPUS * 3, codec.N_BYTES + 40),
             weight=2.0),
        Case("encode: merges applied by rank",
             lambda: ("encode", "acbcba", {(98, 99): 256, (99, 98): 257, (97, 99): 258}),
             weight=2.0),
        Case("encode: merges applied by rank", lambda: ("encode", "aaaa b aaaa", {(97, 97): 256, (256, 97): 257,
                                                                                  (256, 256): 258})),
        Case("encode: non-ASCII text",
             codec._encode("café au lait, 北京 🙂", training.UNICODE, codec.N_BYTES + 15), weight=2.0),
        Case("encode: edges", lambda: ("encode", "", codec._merges(codec.CORPUS, codec.N_BYTES + 10))),
        Case("encode: edges", lambda: ("encode", "x", codec._merges(codec.CORPUS, codec.N_BYTES + 10))),
        Case("encode: edges", lambda: ("encode", "the cat", {})),
        # `he` becomes 256, and `8 ` is the pair (56, 32): its digits stand inside `256 32`; `abab`: back to back
        Case("encode: ids are not text", lambda: ("encode", "he 8 he 8 8 ", {(104, 101): 256, (56, 32): 257})),
        Case("encode: ids are not text", lambda: ("encode", "abab cdcd", {(97, 98): 256, (99, 100): 257})),
        Case("decode: non-ASCII text",
             codec._decode("déjà vu 北京 🙂", training.UNICODE, codec.N_BYTES + 15), weight=2.0),
        Case("decode: a character cut in two", codec._decode("café 🙂", training.UNICODE, codec.N_BYTES + 3, cut=1)),
        Case("decode: edges", lambda: ("decode", [], codec._merges(codec.CORPUS, codec.N_BYTES + 10))),
        Case("decode", codec._decode(codec.CORPUS, codec.CORPUS * 3, codec.N_BYTES + 40)),
        # the mutants `while len(ids) > 2` and `>= 3` left two tokens that have a merge unmerged
        Case("encode: two bytes, one merge", lambda: ("encode", "ab", {(97, 98): 256})),
        Case("encode: two bytes, one merge", lambda: ("encode", "abab", {(97, 98): 256, (256, 256): 257})),
        # ids below 256 are bytes([i]), 255 too (not valid UTF-8 alone: the replacement character);
        # the mutant `range(255)` had no bytes for it
        Case("decode: every byte id", lambda: ("decode", list(range(256)), {})),
    ),
    "check_next_token_loss": (
        Case("batch of one", loss._case(501, 1, 9, 11)),
        Case("two tokens: one prediction", loss._case(502, 3, 2, 5)),
        Case("batch of one", loss._case(506, 1, 2, 4)),  # one sequence of two tokens: a single prediction
        Case("float64 logits", loss._case(503, 2, 6, 13, torch.float64)),
        Case("large vocabulary", loss._case(504, 4, 8, 300), weight=2.0),
        Case("the gradient reaches the logits", loss._case(505, 2, 7, 6, grad=True), weight=2.0),
        Case("non-contiguous logits and ids", loss._case(507, 3, 6, 9, strided=True)),
        Case("non-contiguous logits and ids", loss._case(508, 2, 5, 7, torch.float64, strided=True, grad=True)),
    ),
    "check_pairs": (
        Case("get_stats, runs of one token", pairs._stats(lambda: [97, 97, 97])),
        Case("get_stats, runs of one token", pairs._stats(pairs._runs_case(401, 20, 4, True)), weight=2.0),
        Case("get_stats, edges", pairs._stats(lambda: [5])),
        Case("get_stats, edges", pairs._stats(lambda: [])),
        Case("get_stats", pairs._stats(pairs._runs_case(402, 30, 5, False))),
        Case("merge, runs of one token", pairs._merge([4, 4, 4, 2, 4, 4, 4], (4, 4), 9)),  # the visible `aaa`, twice
        Case("merge, runs of one token", pairs._merge([97, 97, 97, 97, 97, 98], (97, 97), 256)),
        Case("merge, runs of one token", pairs._merge_case(pairs._runs_case(401, 20, 4, True)), weight=2.0),
        Case("merge, edges", pairs._merge([3, 1, 2], (1, 2), 9)),
        Case("merge, edges", pairs._merge([1, 2, 3], (1, 2), 9)),
        Case("merge, edges", pairs._merge([4], (4, 4), 9)),
        Case("merge, edges", pairs._merge([], (4, 4), 9)),
        Case("merge", pairs._merge_case(pairs._runs_case(402, 30, 5, False), pick=1)),
        Case("merge", pairs._merge(pairs._SEEDS, (97, 98), 257)),
        # ids whose digits hold the pair's (11 2, 1 21, 2 12) and occurrences back to back (1 2 1 2)
        Case("merge, ids as text", pairs._merge([11, 2, 1, 21, 1, 2, 5], (1, 2), 300)),
        Case("merge, ids as text", pairs._merge([6, 5, 6, 5, 6, 5, 7], (5, 6), 300)),
        Case("merge, ids as text", pairs._merge([262, 32, 62, 32, 262, 320], (62, 32), 263)),
        # more than 256 ids: `i is not len(ids)` compares objects, and ints above 256 are never the same
        # object, so the mutants `while i is not len(ids)` and `i + 1 is not len(ids)` ran past the end.
        # Equivalent: `while i != len(ids)` and `i + 1 != len(ids)`, as i grows by 1, or by 2 only when
        # i + 1 < len(ids), so i never passes len(ids) (nor i + 1 len(ids) + 1 before the loop ends).
        Case("merge, a long list", pairs._merge_case(pairs._runs_case(403, 300, 5, False))),
    ),
    "check_perplexity": (
        Case("a last, shorter window", perplexity._case(701, 8 * 4 + 4), weight=2.0),
        Case("a stream shorter than the context", perplexity._case(702, 6)),
        Case("two tokens: one prediction", perplexity._case(703, 2)),
        Case("another context length", perplexity._case(704, 5 * 9 + 3, block_size=5, vocab_size=20), weight=2.0),
        Case("another context length", perplexity._case(705, 3 * 6 + 2, block_size=3, vocab_size=10)),
        Case("a context of one token", perplexity._case(706, 9, block_size=1)),
        Case("a non-contiguous stream", perplexity._case(707, 8 * 3 + 5, strided=True)),
        # 4 windows, the last of 7 targets: the mutant `range(0, len(data) ^ 1, T)` (len + 1 for an even
        # length) added a window of no tokens, and the model refuses an empty input
        Case("a stream of whole windows, one token short", perplexity._case(708, 8 * 4)),
        # Equivalent: `logits[-1]` for `logits[0]`, as model(x[None]) returns a batch of one, (1, t, V).
    ),
    "check_sample_next": (
        Case("temperature 2", sampling._case(601, 2, 12, 2.0, None)),
        Case("temperature and top-k together", sampling._case(602, 2, 12, 0.7, 5), weight=2.0),
        Case("top-k, one row", sampling._case(603, 1, 16, 1.3, 4)),
        Case("top_k = 1 is greedy", sampling._case(604, 3, 9, 1.0, 1)),
        Case("top_k >= vocabulary keeps every token", sampling._case(605, 1, 6, 1.0, 6)),
        Case("top_k >= vocabulary keeps every token", sampling._case(608, 2, 6, 1.7, 10)),
        Case("a seeded generator repeats the draw", sampling._case(606, 2, 8, 0.8, 4, "repeat"), weight=2.0),
        Case("the draws follow the generator", sampling._case(609, 1, 8, 1.0, None, "seeds")),
        Case("a batch of one", sampling._case(610, 1, 7, 0.9, 3, "one")),
        Case("float64 and non-contiguous logits", sampling._case(611, 2, 9, 1.2, None, "strided", dtype=torch.float64)),
        # sample_next(logits) alone: the statement gives the signature with its defaults, temperature=1.0 and
        # top_k=None; the mutants `temperature=2.0` and `temperature=0.0` changed them
        Case("the defaults: temperature 1, every token", sampling._case(612, 2, 9, 1.0, None, "defaults"),
             weight=2.0),
        # Equivalent under the statement, which fixes logits as (B, V) and the grading as statistical:
        # - `logits.shape[1]`, `shape[+1]`, `dim=1`, `dim=+1` for the last axis (-1): the same axis of a 2-D input;
        # - `top_k <= V` for `top_k < V`: top_k = V keeps every logit (none is below the smallest), as None does;
        # - `[:, -1]` for `[:, 0]` of one sample: the same column;
        # - `num_samples=2`, then `[:, 0]`: the first draw without replacement follows probs itself (torch
        #   fills a second draw from zero-probability tokens when fewer than two are left, top_k=1 included).
    ),
    "check_train_bpe": (
        Case("ties between pairs", lambda: ("cdcdabab", training.N_BYTES + 3)),
        Case("a longer text", lambda: (training.CORPUS * 3, training.N_BYTES + 40), weight=2.0),
        Case("non-ASCII text (UTF-8 bytes)", lambda: (training.UNICODE, training.N_BYTES + 15), weight=2.0),
        Case("no merges: vocab_size 256", lambda: ("hello", training.N_BYTES)),
        Case("stops when no pair is left", lambda: ("aaaa", training.N_BYTES + 10)),
        # Equivalent: `~stats[p]` (-stats[p] - 1) for `-stats[p]`, the same order; `continue` for `break`
        # once no pair is left, since every later round finds no pair either and learns nothing.
    ),
    # Part 11: other merges and texts than the visible ones; the edges (a special string at the start, at the end,
    # twice in a row, alone, cut short; empty text), "none" and a tuple given, an empty collection, non-ASCII
    # text and a third special token of non-ASCII characters
    "check_encode_special": (
        Case("by default a typed special string is text",
             special._case(CHAT, 45, f"user: hi!{EOT}bot: fine.{PROMPT}user: bye!{EOT}"), weight=2.0),
        Case("allowed_special='all': each special string its id, the text around it apart",
             special._case(CHAT, 45, f"bot: hi, how are you?{EOT}user: good.{PROMPT}bot:{EOT}user", "all"),
             weight=2.0),
        # "none" and "all" as the judge's worker receives them, equal strings but not the literals' objects: the
        # mutants `allowed_special is "all"` and `is "none"` passed the interned literals of the other cases
        Case("allowed_special='none' given", special._case(CHAT, 25, f"bye!{EOT}{PROMPT}hello", "".join("none"))),
        Case("allowed_special='all' given", special._case(CHAT, 25, f"hi!{PROMPT}you?", "".join("all"))),
        Case("a tuple names the one recognised", special._case(CHAT, 25, f"fine.{EOT}good.{PROMPT}bye.", (PROMPT,))),
        Case("an empty collection recognises none", special._case(CHAT, 25, f"you?{EOT}bot: hi", []), weight=2.0),
        Case("special strings at the start, at the end, twice in a row",
             special._case(CHAT, 45, f"{EOT}{PROMPT}user: hi!{EOT}{EOT}", "all"), weight=2.0),
        Case("the text is one special string", special._case(CHAT, 25, PROMPT, "all")),
        Case("empty text", special._case(CHAT, 25, "", "all")),
        Case("a special string cut short is text", special._case(CHAT, 45, f"bye.<|endoftext {EOT[:-1]}", "all")),
        Case("non-ASCII text, three special tokens, two recognised",
             special._case(CHAT, 60, f"bot: café?<|fin|>déjà vu.{PROMPT}{EOT}", ["<|fin|>", EOT],
                           specials=(EOT, PROMPT, "<|fin|>")), weight=2.0),
    ),
    # Part 12: other sizes than the visible ones, so that counts pasted from the visible cases fail; one token,
    # the smallest GPT, a window far longer than the width, one key/value head, GPT-2 small's sizes
    "check_forward_flops": (
        Case("other sizes", flops._case(300, 24, 5, 6, 2, 40), weight=2.0),
        Case("other sizes", flops._case(1000, 64, 4, 8, 8, 100), weight=2.0),
        Case("one token", flops._case(37, 12, 2, 3, 1, 1)),
        Case("the smallest GPT: every size 1", flops._case(2, 1, 1, 1, 1, 1)),
        Case("a window far longer than the width", flops._case(97, 8, 3, 4, 2, 200)),
        Case("multi-query attention: one key/value head", flops._case(128, 32, 2, 8, 1, 16)),
        Case("GPT-2 small's sizes", flops._case(50257, 768, 12, 12, 12, 1024), weight=2.0),
        Case("an odd width", flops._case(90, 15, 2, 5, 5, 7)),
        # Equivalent: `n_embd / n_head` for `n_embd // n_head`, as n_head divides n_embd (GPTConfig requires it):
        # the count is then a float of a whole value, exact below 2**53, which the check takes as the int.
    ),
    "check_cached_attention_step": (
        Case("a long cache, four heads", cached_step._case(101, 3, 4, 17, 8), weight=2.0),
        # .squeeze() on the query drops the batch and head axes too when they are one
        Case("a batch of one, one head", cached_step._case(102, 1, 1, 6, 16), weight=2.0),
        Case("an empty cache in float64", cached_step._case(103, 3, 2, 0, 6, torch.float64)),
        Case("a cache that is a transposed view", cached_step._case(104, 2, 2, 9, 4, strided=True)),
        Case("head size one", cached_step._case(105, 2, 3, 4, 1)),
        Case("one cached token", cached_step._case(106, 4, 2, 1, 12)),
        # Equivalent: `keys.transpose(2, -1)` and `transpose(+2, -1)` for `transpose(-2, -1)`: on the
        # statement's 4-D keys, axis 2 is axis -2.
    ),
}
