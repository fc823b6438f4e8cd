"""Rule mutants of chapter 1 (attnbook-course mutants): each breaks one rule a part's statement states.

``RULES[answer cell] = [(rule, old, new), ...]``: the solution cell with ``old`` (there exactly once)
replaced by ``new``. Each must be killed by the part's checks; tests/test_mutants.py grades them.

"-inf where mask is False" is broken with -10.0, not -1e9: the checks accept any masked score at most
-1e4 (``attnbook.grading.rnn._common.NEG``), whose weight after the softmax is 0 all the same, so
``masked_fill(~mask, -1e9)`` is an equivalent mutant by design.
"""

RULES = {
    "additive_solution": [
        ("W has no bias (U's bias is b)",
         "nn.Linear(query_size, attn_size, bias=False)", "nn.Linear(query_size, attn_size, bias=True)"),
        ("U's bias is b", "nn.Linear(key_size, attn_size)", "nn.Linear(key_size, attn_size, bias=False)"),
        ("v has no bias", "nn.Linear(attn_size, 1, bias=False)", "nn.Linear(attn_size, 1, bias=True)"),
        ("give W(query) a key axis, so that each sequence's state meets its own keys",
         "self.W(query).unsqueeze(1)", "self.W(query).unsqueeze(0)"),
        ("-inf where mask is False", 'e.masked_fill(~mask, float("-inf"))', "e.masked_fill(~mask, -10.0)"),
        ("mask is True at real tokens", "e.masked_fill(~mask,", "e.masked_fill(mask,"),
        ("mask may be None", "if mask is not None:", "if True:"),
        ("keep the input dtype", "e = self.v(hidden).squeeze(-1)", "e = self.v(hidden).squeeze(-1).float()"),
    ],
    "luong_solution": [
        ("W given: the general score s^T W z", "if W is not None:", "if False:"),
        ("W is (query_size, key_size)", "keys = keys @ W.T", "keys = keys @ W"),
        ("no scaling", "e = (keys @ query.unsqueeze(-1)).squeeze(-1)",
         "e = (keys @ query.unsqueeze(-1)).squeeze(-1) / keys.shape[-1] ** 0.5"),
        ("-inf where mask is False", 'e.masked_fill(~mask, float("-inf"))', "e.masked_fill(~mask, -10.0)"),
        ("mask is True at real tokens", "e.masked_fill(~mask,", "e.masked_fill(mask,"),
        ("mask may be None", "if mask is not None:", "if True:"),
    ],
    "soft_solution": [
        ("a softmax over the source positions S", "torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=0)"),
        ("a score of -inf gets weight exactly 0", "torch.softmax(scores, dim=-1)",
         "torch.softmax(scores.clamp(min=-10.0), dim=-1)"),
        ("the context is the weighted sum of the values", "(weights.unsqueeze(1) @ values).squeeze(1)",
         "values.mean(1)"),
        ("returns (context, weights)", "return context, weights", "return weights, context"),
    ],
    "decoder_solution": [
        ("the mask goes to the attention", "self.attention(hidden, memory, mask=mask)",
         "self.attention(hidden, memory, mask=None)"),
        ("the cell reads [E y; c], in that order", "torch.cat([e, context], dim=-1)",
         "torch.cat([context, e], dim=-1)"),
        ("the output reads [s; c; E y], in that order", "torch.cat([hidden, context, e], dim=-1)",
         "torch.cat([hidden, e, context], dim=-1)"),
        ("the logits read the new state s_t",
         "hidden = self.cell(torch.cat([e, context], dim=-1), hidden)\n"
         "        logits = self.out(torch.cat([hidden, context, e], dim=-1))",
         "new = self.cell(torch.cat([e, context], dim=-1), hidden)\n"
         "        logits = self.out(torch.cat([hidden, context, e], dim=-1))\n        hidden = new"),
        ("the query is the previous state s_{t-1}", "self.attention(hidden, memory, mask=mask)",
         "self.attention(torch.zeros_like(hidden), memory, mask=mask)"),
        ("returns (logits, hidden, weights)", "return logits, hidden, weights", "return logits, weights, hidden"),
    ],
    "sample_solution": [
        ("probabilities softmax(e)", "torch.softmax(scores, dim=-1)", "torch.softmax(scores / 2, dim=-1)"),
        ("a -inf score is never drawn", "torch.softmax(scores, dim=-1)",
         "torch.softmax(scores.clamp(min=-3.0), dim=-1)"),
        ("pass generator on", "torch.multinomial(weights, 1, generator=generator)", "torch.multinomial(weights, 1)"),
        ("every row gets its own draw", "torch.multinomial(weights, 1, generator=generator)",
         "torch.multinomial(weights[:1], 1, generator=generator).expand(weights.shape[0], 1)"),
        ("context[b] = values[b, index[b]]", "values[torch.arange(values.shape[0]), index]", "values[0, index]"),
        ("index is (B,)", ".squeeze(1)", ""),
    ],
    "estimator_solution": [
        ("N - 1, not N", "/ (num_samples - 1)", "/ num_samples"),
        ("the baseline: the mean loss of the draws", "advantage = losses - losses.mean(dim=0)",
         "advantage = losses"),
        ("the mean over the draws (axis 0)", "losses.mean(dim=0)", "losses.mean(dim=1, keepdim=True)"),
        ("N = num_samples draws", "for _ in range(num_samples):", "for _ in range(2):"),
        ("draw with the generator given", "sample_hard_attention(scores, values, generator)",
         "sample_hard_attention(scores, values)"),
    ],
    "params_solution": [
        ("W has no bias", "W = query_size * attn_size", "W = query_size * attn_size + attn_size"),
        ("W is query_size x attn_size", "W = query_size * attn_size", "W = query_size * query_size"),
        ("U's bias is b", "U = key_size * attn_size + attn_size", "U = key_size * attn_size"),
        ("v has no bias", "v = attn_size  #", "v = attn_size + 1  #"),
        ("v is counted: attn_size weights", "return W + U + v", "return W + U"),
        ("general: W_a has no bias", "return query_size * key_size  #", "return query_size * key_size + query_size  #"),
        ("general: W_a is (query_size, key_size), attn_size plays no part", "return query_size * key_size  #",
         "return query_size * attn_size  #"),
        ("dot: nothing to learn", "return 0  #", "return query_size * key_size  #"),
    ],
}
