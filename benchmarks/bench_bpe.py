"""How fast is attnbook's byte-level BPE? Training and encoding against trusted references.

    python benchmarks/bench_bpe.py               # about 2 minutes on a 2-core CPU
    python benchmarks/bench_bpe.py --quick       # smaller reference slice, 1 repeat

Measures, on ``attnbook.data.load_shakespeare()`` with the GPT-2 split pattern
and a vocabulary of 256 + 4096 tokens:

1. Training time of ``BPETokenizer.train`` against Hugging Face ``tokenizers``'
   ``BpeTrainer`` on the first 1,000,000 characters and on the whole text
   (target: at most 3x). HF is configured like ours (see
   ``tests/test_tokenizers.py::train_hf_bpe``) and is fed the text in blocks
   of about 64 kB cut at line breaks between two non-space characters, which
   lets it use both cores and does not change a single pre-split chunk.
2. Training time against the plain rescanning trainer
   (``train_bpe_reference``) on a slice small enough for it to finish
   (target: at least 100x faster). Both learn the same merges (checked).
3. Encoding the whole text with a fresh tokenizer (empty chunk cache)
   against ``tiktoken`` loaded with the same ranks (target: within 5x); the
   ids are checked to be identical.

Times are wall-clock medians over ``--repeats`` runs, alternating ours and
the reference so that both see the same machine load.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable

import regex

from attnbook.data import load_shakespeare
from attnbook.measure import machine_header
from attnbook.tokenizers import BPETokenizer, train_bpe, train_bpe_reference

VOCAB_SIZE = 256 + 4096
PATTERN = "gpt2"


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def median_pair(ours: Callable[[], object], ref: Callable[[], object], repeats: int):
    """Alternate the two callables; return (median ours, median ref, last results)."""
    t_ours, t_ref = [], []
    for _ in range(repeats):
        t, r_ours = timed(ours)
        t_ours.append(t)
        t, r_ref = timed(ref)
        t_ref.append(t)
    return statistics.median(t_ours), statistics.median(t_ref), r_ours, r_ref


def hf_blocks(text: str, size: int = 1 << 16) -> list[str]:
    """Cut ``text`` into blocks of about ``size`` characters at a newline that has
    a non-space character on both sides: the GPT-2 pattern makes that newline a
    chunk of its own either way, so the pre-split chunks are unchanged."""
    cuts = [0]
    for m in regex.finditer(r"(?<=\S\n)(?=\S)", text):
        if m.start() - cuts[-1] >= size:
            cuts.append(m.start())
    cuts.append(len(text))
    return [text[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def train_hf(blocks: list[str], vocab_size: int):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=0, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(blocks, trainer=trainer)
    return tok


ROWS: list[tuple[str, str, str, str, str, str]] = []


def row(what: str, ours: float, ref: float, ref_name: str, ratio: float, target: str, ok: bool) -> None:
    ROWS.append((what, f"{ours:.3f} s", f"{ref:.3f} s ({ref_name})", f"{ratio:.2f}x", target,
                 "ok" if ok else "MISSED"))
    print(f"  {what}: ours {ours:.3f} s, {ref_name} {ref:.3f} s, ratio {ratio:.2f}x "
          f"(target {target}) {'ok' if ok else 'MISSED'}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="repeats for the medians (default 3)")
    parser.add_argument("--ref-chars", type=int, default=30_000,
                        help="slice for the plain reference trainer (default 30,000 characters, ~50 s)")
    parser.add_argument("--quick", action="store_true", help="1 repeat, 10,000-character reference slice")
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.ref_chars = 1, 10_000

    import tiktoken
    import tokenizers

    text = load_shakespeare()
    print(machine_header())
    print(f"Python {platform.python_version()}, tokenizers {tokenizers.__version__}, "
          f"tiktoken {tiktoken.__version__}; Shakespeare: {len(text):,} characters; "
          f"vocab {VOCAB_SIZE} = 256 + {VOCAB_SIZE - 256}, pattern {PATTERN}; medians of {args.repeats}\n")

    print("1. training: ours vs Hugging Face tokenizers (BpeTrainer)")
    for label, part in (("first 1,000,000 chars", text[:1_000_000]), ("all of Shakespeare", text)):
        blocks = hf_blocks(part)
        t_ours, t_hf, ours, hf = median_pair(lambda part=part: BPETokenizer(PATTERN).train(part, VOCAB_SIZE),
                                             lambda blocks=blocks: train_hf(blocks, VOCAB_SIZE), args.repeats)
        assert ours.vocab_size == hf.get_vocab_size() == VOCAB_SIZE
        sample = part[:200_000]
        tpb_ours = len(ours.encode(sample)) / len(sample.encode())
        tpb_hf = len(hf.encode(sample).ids) / len(sample.encode())
        print(f"  {label}: tokens per byte on its first 200k chars: ours {tpb_ours:.4f}, HF {tpb_hf:.4f}")
        row(f"train {label}", t_ours, t_hf, "HF", t_ours / t_hf, "<= 3x", t_ours <= 3 * t_hf)

    print(f"\n2. training: ours vs the plain rescanning trainer on the first {args.ref_chars:,} chars")
    part = text[: args.ref_chars]
    t_fast = statistics.median(timed(lambda: train_bpe(part, VOCAB_SIZE, PATTERN))[0] for _ in range(args.repeats))
    t_ref, ref_merges = timed(lambda: train_bpe_reference(part, VOCAB_SIZE, PATTERN))
    fast_merges = train_bpe(part, VOCAB_SIZE, PATTERN)
    assert fast_merges == ref_merges, "the fast trainer must learn the reference's merges"
    print(f"  both learned the same {len(ref_merges)} merges (fewer than {VOCAB_SIZE - 256} means the slice "
          "ran out of pairs)")
    row(f"train first {args.ref_chars:,} chars", t_fast, t_ref, "plain", t_ref / t_fast, ">= 100x faster",
        t_ref >= 100 * t_fast)

    print("\n3. encoding all of Shakespeare: ours (fresh cache) vs tiktoken with the same ranks")
    trained = BPETokenizer(PATTERN).train(text, VOCAB_SIZE)
    enc = trained.to_tiktoken()
    t_ours, t_tik, ids_ours, ids_tik = median_pair(
        lambda: BPETokenizer.from_merges(trained.merges, PATTERN).encode(text),
        lambda: enc.encode_ordinary(text), args.repeats)
    assert ids_ours == ids_tik, "ids differ from tiktoken's"
    trained.encode(text)  # fill the cache
    t_warm, _ = timed(lambda: trained.encode(text))
    print(f"  {len(ids_ours):,} tokens, identical to tiktoken's; {len(text.encode()) / len(ids_ours):.2f} bytes/token; "
          f"ours with a warm cache: {t_warm:.3f} s")
    row("encode all of Shakespeare", t_ours, t_tik, "tiktoken", t_ours / t_tik, "<= 5x", t_ours <= 5 * t_tik)

    head = ("figure", "ours", "reference", "ratio", "target", "")
    widths = [max(len(r[k]) for r in [head, *ROWS]) for k in range(len(head))]
    print()
    for r in [head, tuple("-" * w for w in widths), *ROWS]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return 0 if all(r[-1] == "ok" for r in ROWS) else 1


if __name__ == "__main__":
    sys.exit(main())
