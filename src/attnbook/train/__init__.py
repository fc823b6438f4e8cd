"""Training: one small loop that every chapter shares, with evaluation and a history.

:func:`fit` takes any ``model`` and a ``loss_fn(model, batch) -> scalar loss``,
so the same loop trains the RNN of chapter 1 and the ViT of chapter 6. It runs
AdamW (or an optimizer you pass) for ``steps`` steps, or for ``max_seconds``
seconds, optionally with warmup and a cosine learning-rate schedule, clips
gradients, evaluates every ``eval_every`` steps and at the end, and returns a
:class:`History`. With ``steps`` the schedule follows the step count (and
``max_seconds``, if given, only cuts the run short); with ``steps=None`` it
follows the elapsed fraction of ``max_seconds``, so that a run with a time
budget warms up and decays however many steps fit into it. Its AdamW decays
the weight matrices only (:func:`decay_groups`: not biases, norms, positions
or special tokens).
:class:`Snapshots` is an ``eval_fn`` that keeps copies of the weights during
training, to score them afterwards.

The loop is device-agnostic: it moves the model and every tensor in a batch to
``device`` (:func:`attnbook.runtime.get_device` by default) and runs the forward
pass under :func:`attnbook.runtime.autocast` (bf16 on CUDA, fp32 on CPU).

Why the progress bar writes to stdout: nbgrader gives zero points to a test
cell that writes anything to stderr, and plain ``tqdm`` writes to stderr. The bar
comes from ``tqdm.auto``: in Jupyter it is a widget (no stream at all); in a
terminal, a script or a test it is text, written to ``sys.stdout`` unless
``progress_file`` says otherwise.

Modules: :mod:`.loop` (:func:`fit`), :mod:`.decay` (:func:`decay_groups`), :mod:`.schedule` (:func:`lr_factor`,
and the paper's :func:`noam_lr`), :mod:`.adam` (:func:`adam_update_rms`, :func:`noise_update_rms`: the size of
Adam's first updates, the reason for a warmup), :mod:`.batches` (:func:`to_device`), :mod:`.history`
(:class:`History`, :class:`Snapshots`), :mod:`.evaluation` (:func:`evaluate`, :func:`accuracy`).
Sibling modules: :mod:`attnbook.plots` draws a :class:`History` with
``training_curves``; :mod:`attnbook.runtime` picks devices and seeds.
References: Loshchilov & Hutter, *Decoupled Weight Decay Regularization*
(AdamW, 2019); the warmup + cosine schedule follows karpathy/nanoGPT.
"""

from .adam import adam_update_rms, noise_update_rms
from .batches import to_device
from .decay import decay_groups
from .evaluation import accuracy, evaluate
from .history import History, Snapshot, Snapshots
from .loop import fit
from .schedule import lr_factor, noam_lr

__all__ = ["History", "fit", "evaluate", "accuracy", "to_device", "lr_factor", "Snapshot", "Snapshots",
           "decay_groups", "noam_lr", "adam_update_rms", "noise_update_rms"]
