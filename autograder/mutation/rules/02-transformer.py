"""Rule mutants of chapter 2 (autograder/mutants.py): each breaks one rule a part's statement states.

``RULES[answer cell] = [(rule, old, new), ...]``: the solution cell with ``old`` (there exactly once)
replaced by ``new``. Each must be killed by the part's checks; tests/test_mutants.py grades them.
"""

RULES = {
    "masks_solution": [
        ("causal: True where s <= t (the diagonal included)",
         "torch.ones(T, T, dtype=torch.bool).tril()", "torch.ones(T, T, dtype=torch.bool).tril(-1)"),
        ("causal: True where s <= t, not s >= t",
         "torch.ones(T, T, dtype=torch.bool).tril()", "torch.ones(T, T, dtype=torch.bool).triu()"),
        ("padding: (B, 1, S), broadcasting over the queries",
         "(ids != pad_id).unsqueeze(1)", "(ids != pad_id).unsqueeze(-1)"),
        ("padding: False at pad_id, whatever pad_id is",
         "(ids != pad_id)", "(ids != 0)"),
    ],
}
