"""``python -m attnbook.pretrained list | build NAME... | verify [NAME...]``: the registry's commands.

``build all`` rebuilds every checkpoint into the package's ``files/`` (CPU
hours; ``--device cuda`` on a GPU); ``--smoke`` trains for a few steps into
``--out`` (default ``_build/checkpoints-smoke``) to test a recipe end to end.
``verify`` checks each file's sha256 and re-measures its metrics.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attnbook.pretrained import PretrainedError, info, load, names, recipe
from attnbook.pretrained._store import FOLDER
from attnbook.runtime import get_device


def verify(name: str, folder: Path) -> list[str]:
    """Problems with ``name``'s checkpoint (empty when it loads and reproduces its metrics)."""
    try:
        side = info(name, folder)
        model = load(name, folder=folder)
    except PretrainedError as err:
        return [str(err)]
    found = recipe(name)
    got = found.evaluate(model, side["config"], get_device("cpu"))
    return [f"{name}: {k} is {got[k]:.4f}, its sidecar says {side['metrics'][k]:.4f} (tolerance {tol})"
            for k, tol in found.tolerance.items() if abs(got[k] - side["metrics"][k]) > tol]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m attnbook.pretrained", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="each checkpoint, its size and metrics")
    b = sub.add_parser("build", help="train and write checkpoints")
    b.add_argument("names", nargs="+", help=f"'all' or some of: {', '.join(names())}")
    b.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    b.add_argument("--smoke", action="store_true", help="a few steps, into --out")
    b.add_argument("--out", type=Path, default=None)
    b.add_argument("--seed", type=int, default=0)
    v = sub.add_parser("verify", help="check sha256 and re-measure metrics")
    v.add_argument("names", nargs="*")
    args = p.parse_args(argv)
    if args.command == "list":
        for name in names():
            try:
                side = info(name)
                print(f"{name:14} {side['bytes'] / 1e6:5.2f} MB  {side['metrics']}")
            except PretrainedError:
                print(f"{name:14} not built")
        return 0
    if args.command == "verify":
        problems = [line for name in (args.names or names()) for line in verify(name, FOLDER)]
        print("\n".join(problems) or f"{len(args.names or names())} checkpoints verified")
        return 1 if problems else 0
    from attnbook.pretrained._build import build

    chosen = names() if args.names == ["all"] else args.names
    for name in chosen:
        recipe(name)  # an unknown name fails before any training
    folder = args.out or (Path("_build/checkpoints-smoke") if args.smoke else FOLDER)
    for name in chosen:
        side = build(name, folder, get_device(args.device), smoke=args.smoke, seed=args.seed)
        print(f"{name}: {side['metrics']} in {side['wall_seconds']:.0f} s -> {folder / name}.safetensors",
              flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except PretrainedError as err:
        sys.exit(f"error: {err}")
