"""Rule mutants of chapter 3 (attnbook-course mutants): each breaks one rule a part's statement states.

``RULES[answer cell] = [(rule, old, new), ...]``: the solution cell with ``old`` (there exactly once)
replaced by ``new``. Each must be killed by the part's checks; tests/test_mutants.py grades them.

The reasoning parts answered by letter (``reason_solution``, Part 9, and ``ablation_solution``, Part 10) have
none: their statements state no rule for the answer to follow, only questions, and a key is not a rule (the
visible check tells the form only, so no wrong letter could fail a visible check). Their form (a dict of the
questions' keys, a letter each) is held by tests/test_reasoning.py and the catalogue's form mistakes.
"""

RULES = {
    "embeddings_solution": [
        ("[CLS] is cls_id", "ids = [cls_id, *a, sep_id]", "ids = [2, *a, sep_id]"),
        ("each sentence ends with [SEP], sep_id", "ids += [*b, sep_id]", "ids += [*b, 3]"),
        ("segment 1 for sentence B and the last [SEP]", "[1] * (len(b) + 1)", "[1] * len(b) + [0]"),
        ("segment 0 for [CLS], sentence A and its [SEP]", "segments = [0] * len(ids)",
         "segments = [1] + [0] * (len(ids) - 1)"),
        ("b = None: a single sentence", "if b is not None:", "if b is not None and len(b) > 1:"),
        ("the segment embeddings of token_type_ids", "self.token_type_embeddings(token_type_ids)",
         "self.token_type_embeddings(torch.zeros_like(token_type_ids))"),
        ("positions t = 0, ..., T - 1", "torch.arange(input_ids.shape[1], device=input_ids.device)",
         "torch.arange(1, input_ids.shape[1] + 1, device=input_ids.device)"),
        ("LayerNorm with eps 1e-12", "nn.LayerNorm(hidden_size, eps=1e-12)", "nn.LayerNorm(hidden_size)"),
        ("type_vocab_size defaults to 2", "type_vocab_size=2,", "type_vocab_size=3,"),
        ("dropout defaults to 0.1", "dropout=0.1,", "dropout=0.0,"),
        ("dropout after the LayerNorm", "return self.dropout(self.LayerNorm(x))",
         "return self.LayerNorm(self.dropout(x))"),
    ],
    "mask_solution": [
        ("mask_id is special, in special_ids or not", "special = set(special_ids) | {mask_id}",
         "special = set(special_ids)"),
        ("chosen with probability mlm_probability", "< mlm_probability", "< 0.15"),
        ("mlm_probability defaults to 0.15", "mlm_probability=0.15,", "mlm_probability=0.2,"),
        ("80 % of the chosen become [MASK]", "inputs[chosen & (u < 0.8)] = mask_id",
         "inputs[chosen & (u < 0.7)] = mask_id"),
        ("10 % become a random token", "swap = chosen & (u >= 0.8) & (u < 0.9)",
         "swap = chosen & (u >= 0.8) & (u < 0.85)"),
        ("random tokens are non-special", "ordinary = torch.tensor([i for i in range(vocab_size) if i not in special])",
         "ordinary = torch.arange(vocab_size)"),
        ("random tokens drawn uniformly", "torch.randint(len(ordinary), ids.shape, generator=generator)",
         "torch.randint(len(ordinary) // 2, ids.shape, generator=generator)"),
        ("labels -100 where not chosen", "torch.full_like(ids, -100)", "torch.full_like(ids, 0)"),
        ("labels hold the original token", "torch.where(chosen, ids,", "torch.where(chosen, inputs,"),
        ("do not modify ids in place", "inputs = ids.clone()", "inputs = ids"),
        ("draw every random number with generator", "torch.rand(ids.shape, generator=generator) < mlm_probability",
         "torch.rand(ids.shape) < mlm_probability"),
    ],
    "loss_solution": [
        ("only the positions whose label is not -100", "labels.reshape(-1), ignore_index=-100",
         "labels.reshape(-1).clamp(min=0), ignore_index=-100"),
        ("the mean over the chosen positions", "ignore_index=-100", "ignore_index=-100, reduction='sum'"),
        ("a 0-dim tensor that loss.backward() goes through", "ignore_index=-100\n    )",
         "ignore_index=-100\n    ).detach()"),
    ],
    "nsp_solution": [
        ("half of the pairs are consecutive", "torch.rand((), generator=generator) < 0.5",
         "torch.rand((), generator=generator) < 0.7"),
        ("a random b is never lines[i + 1]", "if j >= i + 1:", "if j > i + 1:"),
        ("the random line is uniform over the others", "torch.randint(n - 1, ()", "torch.randint(n - 2, ()"),
        ("one pair per i from 0 to len(lines) - 2", "for i in range(n - 1):", "for i in range(n - 2):"),
        ("all with generator", "torch.rand((), generator=generator) < 0.5", "torch.rand(()) < 0.5"),
        ("is_next is True for the true next line", "lines[i + 1], True))", "lines[i + 1], 1))"),
    ],
    "classifier_solution": [
        ("the [CLS] vector, position 0", "hidden_states[:, 0]", "hidden_states[:, -1]"),
        ("the pooler has a tanh", "torch.tanh(self.pooler(", "torch.relu(self.pooler("),
        ("dropout defaults to 0.1", "dropout=0.1):", "dropout=0.0):"),
        ("dropout on the pooled vector, before the classifier", "return self.classifier(self.dropout(pooled))",
         "return self.dropout(self.classifier(pooled))"),
        ("classifier(dropout(pooled))", "return self.classifier(self.dropout(pooled))",
         "return self.classifier(self.dropout(self.pooler(hidden_states[:, 0])))"),
    ],
    "freeze_solution": [
        ("the embeddings are frozen", "[model.bert.embeddings, *layers[: len(layers) - k]]",
         "[*layers[: len(layers) - k]]"),
        ("the pooler and the head stay trainable", "[model.bert.embeddings, *layers[: len(layers) - k]]",
         "[model.bert.embeddings, *[m for m in [model.bert.pooler] if m is not None], *layers[: len(layers) - k]]"),
        ("the top k layers train, the others are frozen", "layers[: len(layers) - k]]", "layers[k:]]"),
        ("whatever their state before", "    for p in model.parameters():\n        p.requires_grad = True\n", ""),
        ("the number of values, p.numel()", "sum(p.numel() for", "sum(1 for"),
    ],
    "wordpiece_solution": [
        ("## prefix for a piece that continues a word", '"##" + word[start:end]', "word[start:end]"),
        ("the longest piece first", "range(len(word), start, -1)", "range(start + 1, len(word) + 1)"),
        ("unknown: [unk_token]", "return [unk_token]", 'return ["[UNK]"]'),
        ("unknown: the whole word, a single piece", "return [unk_token]", "return pieces + [unk_token]"),
    ],
    "predict_solution": [
        ("in nats: the natural log", "return math.log(vocab_size)", "return math.log2(vocab_size)"),
        ("a chosen position costs -ln p, minus the log of the probability", "return math.log(vocab_size)",
         "return math.log(1 / vocab_size)"),
        ("the mean over the chosen positions: their share does not change it", "return math.log(vocab_size)",
         "return math.log(vocab_size) * mlm_probability / 0.15"),
        ("V ids, special ids included", "return math.log(vocab_size)", "return math.log(vocab_size - 1)"),
    ],
}
