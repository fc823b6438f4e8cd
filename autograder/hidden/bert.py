"""The hidden cases of chapter 3 (``solutions/03-bert``): instructor-only, never in the student's package.

``HIDDEN[part name]`` is the part's hidden cases, which
:func:`attnbook.grading.hidden_cases.find` reads at grading time; the case makers
come from the part modules in :mod:`attnbook.grading.bert`, the parameters only from here.
"""

import torch

from attnbook.grading import reasoning
from attnbook.grading.bert import classifier, embeddings, freezing, loss, masking, nsp, predict, wordpiece
from attnbook.grading.engine import Case

HIDDEN = {
    "check_cls_classifier": (
        Case("three labels", classifier._case(501, 2, 7, 12, 3), weight=2.0),
        Case("batch of one", classifier._case(502, 1, 4, 8, 2)),
        Case("one label", classifier._case(503, 4, 3, 6, 1)),
        Case("float64", classifier._case(504, 2, 6, 16, 5, torch.float64)),
        Case("non-contiguous hidden states", classifier._case(505, 3, 5, 8, 2, strided=True)),
        # the default dropout and its place at other sizes; a visible case shows the rules (issue 37)
        Case("built without a dropout rate (training mode)", classifier._case(506, 4, 3, 16, 16, train=True)),
    ),
    "check_bert_embeddings": (
        Case("one sentence", embeddings._input([5, 6], None)),
        Case("other special ids", embeddings._input([1, 2, 3, 4], [9], cls_id=101, sep_id=102)),
        Case("one-token sentences", embeddings._input([4], [4])),
        Case("batch of one, one token", embeddings._embed(2, 1, 1, 11, 8, 8)),
        Case("a third segment type", embeddings._embed(3, 3, 7, 30, 12, 10, S=3), weight=2.0),
        Case("float64", embeddings._embed(4, 2, 6, 17, 16, 12, dtype=torch.float64)),
        Case("all positions of the table", embeddings._embed(5, 2, 12, 9, 8, 12)),
        Case("non-contiguous ids", embeddings._embed(6, 3, 5, 13, 8, 9, strided=True)),
        # the defaults type_vocab_size=2 and dropout=0.1, and the dropout after the LayerNorm, at other sizes: the
        # visible cases show these rules, and [CLS], [SEP], a b of one token and LayerNorm's eps (issue 37)
        Case("built without type_vocab_size", embeddings._embed(7, 2, 6, 15, 8, 8, S=None)),
        Case("built without a dropout rate (training mode)", embeddings._embed(8, 3, 6, 14, 16, 8, S=None, train=True)),
    ),
    "check_freeze_all_but_top": (
        Case("k = 0: only the head trains", freezing._case("BertForSequenceClassification", 2, 0), weight=2.0),
        Case("k = all layers", freezing._case("BertForSequenceClassification", 2, 2)),
        Case("four layers, k = 2", freezing._case("BertForSequenceClassification", 4, 2), weight=2.0),
        Case("the pretraining model", freezing._case("BertForPreTraining", 3, 1)),
        # a model frozen before the call, at another size (a visible case shows the rule, issue 37)
        Case("whatever their state before", freezing._case("BertForSequenceClassification", 3, 1, frozen=True)),
    ),
    "check_mlm_loss": (
        Case("batch of one", loss._case(401, 1, 13, 7)),
        Case("a single chosen position", loss._case(402, 2, 6, 9, rate=0.0)),
        Case("float64 logits", loss._case(403, 3, 8, 12, torch.float64)),
        Case("large vocabulary", loss._case(404, 4, 10, 300, rate=0.15), weight=2.0),
        Case("the gradient reaches the logits", loss._case(405, 2, 7, 6, grad=True), weight=2.0),
        Case("non-contiguous logits and labels", loss._case(406, 3, 6, 9, strided=True)),
    ),
    # Equivalent mutants (attnbook-course mutants): & -> * between boolean masks (their product is their and);
    # < -> <= against a uniform draw (equality has probability 0); u > 0.9 or u >= 0.9 for u < 0.9, which
    # takes the random 10 % from [0.9, 1) and keeps [0.8, 0.9): the same shares, which is all the statement
    # asks.
    "check_mask_tokens": (
        Case("mlm_probability 0.3", masking._case(301, 300, 400, 50, masking.SPECIAL, 4, p=0.3), weight=2.0),
        Case("other special ids and [MASK] id", masking._case(302, 250, 400, 40, (5, 6, 7, 9), 9, p=0.2), weight=2.0),
        Case("a batch of one", masking._case(303, 1, 150_000, 70, masking.SPECIAL, 4)),
        Case("length-one sequences", masking._case(304, 120_000, 1, 30, masking.SPECIAL, 4, p=0.5)),
        Case("non-contiguous ids", masking._case(305, 300, 400, 45, masking.SPECIAL, 4, mode="strided")),
        Case("a seeded generator repeats the draw",
             masking._case(306, 8, 64, 30, masking.SPECIAL, 4, mode="repeat"), weight=2.0),
        # mlm_probability left out, mask_id special in special_ids or not: other sizes and seeds of what the
        # visible cases show (issue 37), as are mlm_probability 0.3 and the seeded generator above
        Case("mlm_probability left out", masking._case(307, 300, 400, 50, masking.SPECIAL, 4, p=None)),
        Case("[MASK] not in special_ids, among the ids", masking._case(308, 300, 400, 30, (0, 2, 3, 1), 4)),
        Case("[MASK] tokens among the ids", masking._case(309, 300, 400, 50, masking.SPECIAL, 4, masked_share=0.05)),
    ),
    # Equivalent mutants (attnbook-course mutants): the coin turned round (> 0.5, >= 0.5, not < 0.5, <= 0.5 for
    # < 0.5) is still a fair coin, which is all the statement asks.
    "check_nsp_pairs": (
        Case("balance over 2000 pairs", nsp._case(2001, 501), weight=2.0),
        Case("a few lines", nsp._case(4, 502)),
        Case("a few lines", nsp._case(5, 503)),
        # 300 lines: a redraw of a random line that hit the next one, which the visible 40 lines never make,
        # must use the generator too (the catalogue's bert_edge_mistakes)
        Case("a seeded generator repeats the pairs", nsp._case(300, 504, "repeat"), weight=2.0),
        # killed randint(n >> 1), randint(n - 2), j == i + 1, j is i + 1, j >= i | 1 and j >= i ^ 1
        # (attnbook-course mutants): each random line of a short text, counted over many calls
        Case("the random line is uniform over the others", nsp._case(4, 505, "uniform")),
    ),
    # Equivalent mutants (attnbook-course mutants): start <= 0 for start == 0 (start is never negative);
    # start != len(word) and start is not len(word) for start < len(word) (start goes up to len(word) and
    # stops there; small ints are one object each).
    "check_wordpiece_encode": (
        Case("longest match first", wordpiece._case(["unaff", "plain", "playings", "sing", "affable"], ("##able",))),
        Case("unknown words", wordpiece._case(["unaffablex", "xyz", "pla", "playz"]), weight=2.0),
        Case("greedy, no backtracking", wordpiece._case(["abcd", "abc"], ("abc", "ab", "##cd")), weight=2.0),
        Case("another unk_token", wordpiece._case(["q", "playing", "unq"], unk="<unk>")),
        Case("a word that is one token", wordpiece._case(["play", "una", "s"])),
    ),
    # Other vocabularies and shares than the visible three: an answer written to the visible numbers (a table of
    # them) fails here; one the size of a multilingual vocabulary, the edge of a single id (ln 1 = 0) and every
    # position chosen. Equivalent mutants (attnbook-course mutants): the default mlm_probability=0.15 changed (to
    # 1.15, -0.85): the loss does not depend on the share chosen, which is what the part asks the student to see.
    "check_initial_mlm_loss": (
        Case("GPT-2's vocabulary", predict._case(50257), weight=2.0),
        Case("a multilingual vocabulary, another share", predict._case(119547, 0.25)),
        Case("a small vocabulary, every position chosen", predict._case(11, 1.0)),
        Case("a vocabulary of one id", predict._case(1, 0.6)),
        Case("a few chosen", predict._case(997, 0.05)),
    ),
    # The keys of Part 9 (reasoning.choices): one case per question, a sentence for every option.
    "check_masking_reasons": (
        Case("always [MASK]", reasoning.key(
            "mask_only", "d",
            a="No: the labels keep the original token at every chosen position whatever the input shows, so the "
              "loss is computed just the same.",
            b="No: with every chosen token masked the answer is never in the input; copying the input is the "
              "risk of leaving the chosen tokens unchanged, not of masking them all.",
            c="No: the random and unchanged tokens cost nothing; they exist because fine-tuning never shows "
              "[MASK], and the chapter measured what leaving them out costs on visible words.",
            d="Right: the model only ever has to predict at [MASK], so it has no reason to make a good output "
              "for a word it can see, and fine-tuning shows it only words it can see, never [MASK]. The chapter "
              "measured it: the 100 % [MASK] model does no better on a visible word than on a hidden one.")),
        Case("the 10 % random tokens", reasoning.key(
            "random_tokens", "a",
            a="Right: any visible word may be a random one (1.5 % of all tokens), so the model cannot copy what "
              "it sees; it must judge every token against its context, and that is the vector fine-tuning uses.",
            b="No: that is ELECTRA's task (replaced-token detection); BERT's loss asks for the original token "
              "at the chosen positions, never which ones were replaced.",
            c="No: every word of the vocabulary occurs in the text anyway; a random token is a wrong word in a "
              "wrong place, useful only because the model cannot tell it from a right one.")),
        Case("next-sentence pairs half and half", reasoning.key(
            "nsp_balance", "c",
            a="No: a linear layer on [CLS] can give any mix of labels; the split concerns the training pairs, "
              "not the head.",
            b="No: the MLM loss needs no pairs; it is taken at the chosen positions of each input, whatever "
              "sentence B is.",
            c="Right: with 90 % consecutive pairs, always answering 'is next' already scores 90 % without "
              "reading the pair; at 50/50 no answer that ignores the sentences beats chance, so the loss "
              "rewards only reading them.")),
    ),
    # The keys of Part 10: what the ablation's figure shows. Every seed shows it (tests/test_grading_bert.py):
    # without positions the changes are float32 rounding (below 1e-5), with them above 0.05.
    "check_positions_ablation": (
        Case("each word's output, positions zeroed", reasoning.key(
            "words", "b",
            a="No: the curves of the zeroed model lie about six powers of ten below the others, at float32 "
              "rounding: the words' outputs did not change.",
            b="Right: without positions the encoder is permutation-equivariant. Each word's input vector is its "
              "word and segment embedding wherever it stands, and attention mixes a set of keys in any order, so "
              "shuffling the words shuffles their outputs alike.",
            c="No: the figure follows each word to its new place and compares it with its own output before the "
              "shuffle; the words' outputs still differ from one another, as their embeddings do.")),
        Case("the [CLS] output", reasoning.key(
            "cls", "a",
            a="Right: [CLS] keeps its place, but with positions the words it attends to carry other position "
              "embeddings after the shuffle; without them it attends to the same set of vectors, and a weighted "
              "sum over a set does not depend on its order.",
            b="No: [CLS] keeps its place, but with positions the words it reads carry other position embeddings "
              "after the shuffle: its curve with positions lies far above rounding.",
            c="No: without positions the [CLS] curve lies at float32 rounding: [CLS] attends to the same set of "
              "word vectors, only in another order, and a weighted sum does not depend on the order.")),
        Case("what a BERT without positions tells apart", reasoning.key(
            "tell_apart", "c",
            a="No: sentences with other words have other word embeddings and other outputs; only the order is "
              "lost.",
            b="No: it is the other way round. Without positions every order of the same words gives the same "
              "outputs, moved, while other words give other outputs.",
            c="Right: it reads a bag (a multiset) of words. 'dog bites man' and 'man bites dog' get the same [CLS] "
              "vector and the same word outputs, moved; a classifier on top cannot tell them apart.")),
    ),
}
