"""Production libraries as test oracles, importable on the course's CPU build of torch.

``timm`` imports ``torchvision`` at import time (for data transforms and a
frozen batch norm that its Vision Transformer never uses), and no torchvision
wheel on PyPI runs beside the pinned CPU build of torch. :func:`import_timm`
puts inert placeholder modules in torchvision's place first, so that the
model code the tests compare against imports and runs; anything that would
really use torchvision fails loudly on the placeholders.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types


class _Placeholder(type):
    """A class whose every attribute is another placeholder (enough for module-level tables)."""

    def __getattr__(cls, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder(name, (), {})

    def __call__(cls, *args, **kwargs):
        raise RuntimeError(f"torchvision is not installed: {cls.__name__} is a placeholder")


class _Module(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder(name, (), {})


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname == "torchvision" or fullname.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return _Module(spec.name)

    def exec_module(self, module):
        pass


def import_timm():
    """``timm``, imported with placeholders for torchvision when it is missing.

    >>> timm = import_timm()
    >>> vit = timm.models.vision_transformer.VisionTransformer(
    ...     img_size=8, patch_size=4, in_chans=1, num_classes=3, embed_dim=8, depth=1, num_heads=2)
    >>> sum(p.numel() for p in vit.parameters()) > 0
    True
    """
    try:
        importlib.import_module("torchvision")
    except Exception:
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
        if not any(isinstance(f, _Finder) for f in sys.meta_path):
            sys.meta_path.insert(0, _Finder())
    return importlib.import_module("timm")
