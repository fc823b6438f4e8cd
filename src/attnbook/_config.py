"""What every model config shares: named presets, validated copies and a plain dict.

A config is a dataclass that subclasses :class:`PresetConfig` and sets
``presets``, a dict from a preset's name to the fields it sets. Validation
stays in each config's ``__post_init__``, so presets and copies are checked too.

>>> from dataclasses import dataclass
>>> @dataclass
... class Toy(PresetConfig):
...     vocab_size: int
...     width: int = 8
>>> Toy.presets = {"wide": dict(width=64)}
>>> Toy.preset("wide", vocab_size=10)
Toy(vocab_size=10, width=64)
>>> Toy.preset("wide", vocab_size=10).replace(width=4).to_dict()
{'vocab_size': 10, 'width': 4}
>>> Toy.preset("wide")
Traceback (most recent call last):
...
ValueError: preset 'wide' needs vocab_size=...; it sets only width
"""

from __future__ import annotations

from dataclasses import MISSING, Field, asdict, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

_C = TypeVar("_C", bound="PresetConfig")  # typing.Self needs Python 3.11; the package supports 3.10


class PresetConfig:
    """``preset(name, **overrides)``, ``replace(**changes)`` and ``to_dict()`` for a dataclass config."""

    presets: ClassVar[dict[str, dict[str, object]]] = {}
    if TYPE_CHECKING:  # every subclass is a dataclass: this tells mypy, which reads the mixin alone
        __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @classmethod
    def preset(cls: type[_C], name: str, **overrides: object) -> _C:
        """A config from ``cls.presets[name]`` with any field overridden; fields without a default must be given."""
        if name not in cls.presets:
            raise ValueError(f"unknown preset {name!r}; choose one of {sorted(cls.presets)}")
        given = {**cls.presets[name], **overrides}
        required = [f.name for f in fields(cls)
                    if f.default is MISSING and f.default_factory is MISSING and f.name not in given]
        if required:
            sets = ", ".join(cls.presets[name]) or "no field"
            raise ValueError(f"preset {name!r} needs {'=..., '.join(required)}=...; it sets only {sets}")
        return cls(**given)

    def replace(self: _C, **changes: object) -> _C:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, object]:
        """The fields as a plain dict (for JSON, or a checkpoint's metadata)."""
        return asdict(self)
