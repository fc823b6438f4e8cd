"""A character vocabulary for the seq2seq tasks, with padding, begin, end and unknown tokens.

The translators of chapters 1 and 2 read and write characters. A
:class:`CharVocab` maps characters to ids after four special tokens
(``<pad>`` = 0, ``<bos>`` = 1, ``<eos>`` = 2, ``<unk>`` = 3), and
:func:`pad_batch` turns a list of id lists into one (B, T) tensor. The
GPT's ``tokenizers.CharTokenizer`` differs: it has no special tokens, because
a language model reads one endless stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from attnbook._checks import distinct_characters

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)


def pad_batch(
    seqs: Sequence[Sequence[int]], pad_id: int = 0, *, device: torch.device | str | None = None
) -> torch.Tensor:
    """Stack id sequences into a (B, T) int64 tensor, right-padded with ``pad_id`` to the longest.

    >>> pad_batch([[5, 6, 7], [8]])
    tensor([[5, 6, 7],
            [8, 0, 0]])
    """
    if isinstance(seqs, (str, bytes)) or not isinstance(seqs, Sequence):
        raise TypeError(f"seqs must be a sequence of id sequences, got {type(seqs).__name__}")
    if len(seqs) == 0:
        raise ValueError("seqs must hold at least one sequence, got an empty batch")
    T = max(len(s) for s in seqs)
    out = torch.full((len(seqs), T), pad_id, dtype=torch.long)  # (B, T)
    for b, s in enumerate(seqs):
        if len(s):
            out[b, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
    return out.to(device) if device is not None else out


class CharVocab:
    """Characters <-> ids, after the specials ``<pad>, <bos>, <eos>, <unk>`` (ids 0..3).

    Build it from the training texts; characters never seen map to ``<unk>``.

    >>> v = CharVocab.from_texts(["21", "twenty-one"])
    >>> len(v), v.encode("one", bos=True, eos=True)
    (13, [1, 9, 8, 7, 2])
    >>> v.decode([1, 9, 8, 7, 2, 0, 0])
    'one'
    >>> v.decode(v.encode("one!"))  # '!' was never seen
    'one\ufffd'
    """

    pad_id, bos_id, eos_id, unk_id = 0, 1, 2, 3
    unk_char = "\ufffd"  # how decode shows <unk>

    def __init__(self, chars: Iterable[str]):
        chars = distinct_characters("chars", chars)
        self.itos: list[str] = [*SPECIALS, *chars]  # id -> token
        self.stoi: dict[str, int] = {c: i for i, c in enumerate(chars, start=len(SPECIALS))}

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> CharVocab:
        """A vocabulary of every character in ``texts``, in sorted order."""
        if isinstance(texts, str):
            raise TypeError("texts must be an iterable of strings, got a single str (wrap it in a list)")
        seen: set[str] = set()
        for t in texts:
            if not isinstance(t, str):
                raise TypeError(f"texts must hold strings, got {type(t).__name__}")
            seen.update(t)
        return cls(sorted(seen))

    def __len__(self) -> int:
        return len(self.itos)

    def __repr__(self) -> str:
        return f"CharVocab(size={len(self)}, chars={''.join(self.itos[len(SPECIALS):])!r})"

    def encode(self, text: str, *, bos: bool = False, eos: bool = False) -> list[int]:
        """Ids of the characters of ``text``, optionally wrapped in ``<bos>`` ... ``<eos>``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        ids = [self.stoi.get(c, self.unk_id) for c in text]
        return ([self.bos_id] if bos else []) + ids + ([self.eos_id] if eos else [])

    def decode(self, ids: Iterable[int] | torch.Tensor) -> str:
        """Text of ``ids``: stops at the first ``<eos>``, skips ``<pad>``/``<bos>``, shows ``<unk>`` as U+FFFD."""
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1:
                raise ValueError(f"ids must be 1-D, got shape {tuple(ids.shape)} (use decode_batch for (B, T))")
            ids = ids.tolist()
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.itos):
                raise ValueError(f"id {i} is outside the vocabulary of size {len(self)}")
            if i == self.eos_id:
                break
            if i in (self.pad_id, self.bos_id):
                continue
            out.append(self.unk_char if i == self.unk_id else self.itos[i])
        return "".join(out)

    def encode_batch(
        self,
        texts: Sequence[str],
        *,
        bos: bool = False,
        eos: bool = False,
        device: torch.device | str | None = None,
    ) -> torch.Tensor:
        """Encode and right-pad ``texts`` into a (B, T) int64 tensor.

        >>> CharVocab("ab").encode_batch(["ab", "b"], eos=True)
        tensor([[4, 5, 2],
                [5, 2, 0]])
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, got a single str (wrap it in a list)")
        return pad_batch([self.encode(t, bos=bos, eos=eos) for t in texts], self.pad_id, device=device)

    def decode_batch(self, ids: torch.Tensor) -> list[str]:
        """Decode each row of a (B, T) tensor of ids."""
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
            raise ValueError(f"ids must be a (B, T) tensor, got {getattr(ids, 'shape', type(ids).__name__)}")
        return [self.decode(row) for row in ids]
