"""Generated translation pairs: dates written in many languages, and numbers in words.

No natural parallel corpus small enough ships in a package registry, so the
seq2seq chapters translate generated pairs (``(source, target)`` strings):

* :func:`make_date_pairs` — a date written by ``babel.dates.format_date`` in
  one of several locales and styles -> the ISO date, e.g.
  ``('domingo, 16 de junio de 1996', '1996-06-16')``.
* :func:`make_number_pairs` — a number in words in one language -> in
  another (``num2words``); English -> German swaps tens and units
  (``twenty-one`` -> ``einundzwanzig``), a clear picture of attention alignment.
* :func:`make_mixed_number_pairs` — chapter 1's split: numbers of one to six
  digits, so that source lengths span 3 to 72 characters, shuffled and split
  into training and held-out pairs.

Every source must be translatable, i.e. determine its target. So the date
generator drops formats that no model could read: numeric formats with the
month first (``6/7/96`` is June 7 in the US and 6 July elsewhere) and numeric
formats with a two-digit year first (``96/6/16``), and it keeps two-digit
years only when the dates span less than a century (default 1950-2049).
Sources are distinct within one call, so a split never leaks a source.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Sequence
from typing import Literal, cast

import torch

from attnbook._checks import an_int, int_at_least

DATE_LOCALES: tuple[str, ...] = ("en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "pt_BR", "nl_NL")
# Babel's four standard styles per locale, plus a few patterns every locale can write.
DATE_FORMATS: tuple[str, ...] = ("short", "medium", "long", "full", "d MMM y", "EEE, d MMM y", "dd.MM.y")
_STANDARD = ("short", "medium", "long", "full")
_Standard = Literal["short", "medium", "long", "full"]  # Babel's names for its standard formats
_NUMERIC = re.compile(r"d+|M+|L+|y+|'[^']*'")  # numeric fields and quoted text
# chapter 1's numbers: (low, high, how many) per range; 1,000 below 1,000, then 3,000 of 4, 5 and 6 digits
MIXED_NUMBER_RANGES: tuple[tuple[int, int, int], ...] = (
    (0, 999, 1_000), (1_000, 9_999, 3_000), (10_000, 99_999, 3_000), (100_000, 999_999, 3_000)
)
DIGITS = "digits"  # a pseudo-language for make_number_pairs: the number written with digits


def _check_n_seed(n: object, seed: object) -> None:
    int_at_least("n", an_int("n", n), 0)
    an_int("seed", seed)


def _fields(pattern: str) -> list[str]:
    """Day, month and year fields of a CLDR pattern in order, quoted text skipped.

    >>> _fields("EEEE, d 'de' MMMM 'de' y")
    ['d', 'MMMM', 'y']
    """
    unquoted = re.sub(r"'[^']*'", "", pattern)
    return re.findall(r"d+|M+|L+|y+", unquoted)


def is_translatable(pattern: str, two_digit_years: bool = True) -> bool:
    """Whether dates written with ``pattern`` can be read back without knowing the locale.

    Named months are always fine; numeric dates must be day-first, or
    year-first with a four-digit year; two-digit years only if allowed.

    >>> [is_translatable(p) for p in ["MMM d, y", "d/M/yy", "M/d/yy", "y-MM-dd", "yy/M/d"]]
    [True, True, False, True, False]
    >>> is_translatable("d/M/yy", two_digit_years=False)
    False
    """
    fields = _fields(pattern)
    kinds = [f[0].replace("L", "M") for f in fields]
    if sorted(kinds) != ["M", "d", "y"]:  # each of day, month and year exactly once
        return False
    year = fields[kinds.index("y")]
    if len(year) == 2 and not two_digit_years:
        return False
    if len(fields[kinds.index("M")]) >= 3:  # a month name: the order does not matter
        return True
    return kinds == ["d", "M", "y"] or (kinds == ["y", "M", "d"] and len(year) != 2)


def date_patterns(
    locales: Sequence[str] = DATE_LOCALES, formats: Sequence[str] = DATE_FORMATS, two_digit_years: bool = True
) -> list[tuple[str, str]]:
    """The translatable ``(locale, pattern)`` combinations, standard styles resolved per locale.

    >>> ("en_US", "M/d/yy") in date_patterns(["en_US"])  # US short dates are month-first
    False
    >>> ("en_GB", "dd/MM/y") in date_patterns(["en_GB"])
    True
    """
    from babel import Locale, UnknownLocaleError
    from babel.dates import get_date_format

    if isinstance(locales, str) or isinstance(formats, str):
        raise TypeError("locales and formats must be sequences of strings, not a single str")
    combos: list[tuple[str, str]] = []
    seen: set[object] = set()
    for name in locales:
        try:
            locale = Locale.parse(name)
        except (UnknownLocaleError, ValueError, TypeError) as err:
            raise ValueError(f"locales: unknown locale {name!r} ({err})") from None
        for fmt in formats:
            pattern = get_date_format(cast(_Standard, fmt), locale).pattern if fmt in _STANDARD else fmt
            if not is_translatable(pattern, two_digit_years):
                continue
            # an all-numeric pattern reads the same in every locale: keep it once
            numeric = not re.search(r"[A-Za-z]", _NUMERIC.sub("", pattern)) and all(
                len(f) <= 2 for f in _fields(pattern)
            )
            if (pattern if numeric else (name, pattern)) not in seen:
                seen.add(pattern if numeric else (name, pattern))
                combos.append((name, pattern))
    if not combos:
        raise ValueError(f"no translatable date format among formats={list(formats)!r} for locales={list(locales)!r}")
    return combos


def make_date_pairs(
    n: int,
    seed: int = 0,
    *,
    locales: Sequence[str] = DATE_LOCALES,
    formats: Sequence[str] = DATE_FORMATS,
    start: dt.date = dt.date(1950, 1, 1),
    end: dt.date = dt.date(2049, 12, 31),
) -> list[tuple[str, str]]:
    """``n`` distinct pairs (date in words or digits, ISO date), the same for the same seed.

    Each pair draws a date uniformly in [``start``, ``end``] and a translatable
    (locale, format) combination uniformly (see :func:`date_patterns`).

    >>> make_date_pairs(3, seed=0)
    [('15 feb 2019', '2019-02-15'), ('7 avr. 1957', '1957-04-07'), ('26 de setembro de 2041', '2041-09-26')]
    """
    from babel.dates import format_date

    _check_n_seed(n, seed)
    if not (isinstance(start, dt.date) and isinstance(end, dt.date)) or start > end:
        raise ValueError(f"start and end must be dates with start <= end, got start={start!r}, end={end!r}")
    # two-digit years name a unique year only inside a window shorter than a century
    combos = date_patterns(locales, formats, two_digit_years=end.year - start.year < 100)
    rng = random.Random(seed)
    span = end.toordinal() - start.toordinal() + 1
    pairs: dict[str, str] = {}
    attempts = 0
    while len(pairs) < n:
        attempts += 1
        if attempts > 20 * n + 1000:
            raise ValueError(
                f"could only make {len(pairs)} distinct date pairs of n={n}; widen start/end or add locales"
            )
        day = dt.date.fromordinal(start.toordinal() + rng.randrange(span))
        locale, pattern = combos[rng.randrange(len(combos))]
        pairs.setdefault(format_date(day, pattern, locale=locale), day.isoformat())
    return list(pairs.items())


def number_languages() -> list[str]:
    """Languages :func:`make_number_pairs` accepts: num2words' codes plus ``"digits"``."""
    from num2words import CONVERTER_CLASSES

    return sorted([*CONVERTER_CLASSES, DIGITS])


def _say(number: int, lang: str) -> str:
    from num2words import num2words

    return str(number) if lang == DIGITS else num2words(number, lang=lang)


def make_number_pairs(
    n: int, src: str = "en", tgt: str = "de", seed: int = 0, *, low: int = 0, high: int = 9999
) -> list[tuple[str, str]]:
    """``n`` pairs (number in ``src`` words, same number in ``tgt`` words) for distinct numbers.

    Numbers are drawn without repetition from ``low..high`` (inclusive) with
    ``seed``. Languages are ``num2words`` codes (``"en"``, ``"de"``, ``"fr"``,
    ``"es"``, ...) or ``"digits"`` for the number itself.

    >>> make_number_pairs(3, "en", "de", seed=0, low=20, high=22)
    [('twenty-one', 'einundzwanzig'), ('twenty-two', 'zweiundzwanzig'), ('twenty', 'zwanzig')]
    >>> make_number_pairs(1, "digits", "fr", seed=0, low=80, high=80)
    [('80', 'quatre-vingts')]
    """
    _check_n_seed(n, seed)
    supported = number_languages()
    for arg, lang in (("src", src), ("tgt", tgt)):
        if not isinstance(lang, str):
            raise TypeError(f"{arg} must be a language code str, got {type(lang).__name__} {lang!r}")
        if lang not in supported:
            raise ValueError(f"{arg}={lang!r} is not a supported language; expected one of {supported}")
    for arg, value in (("low", low), ("high", high)):
        int_at_least(arg, value, 0)
    if high < low:
        raise ValueError(f"high must be >= low, got low={low}, high={high}")
    if n > high - low + 1:
        raise ValueError(f"n={n} is more than the {high - low + 1} distinct numbers in {low}..{high}; raise high")
    numbers = random.Random(seed).sample(range(low, high + 1), n)
    return [(_say(x, src), _say(x, tgt)) for x in numbers]


def make_mixed_number_pairs(
    n_test: int = 1_000,
    ranges: Sequence[tuple[int, int, int]] = MIXED_NUMBER_RANGES,
    src: str = "en",
    tgt: str = "de",
    seed: int = 0,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(train, test)`` pairs from numbers of several ranges, shuffled, the first ``n_test`` held out.

    Range ``i``, ``(low, high, n)``, gives ``make_number_pairs(n, src, tgt,
    seed=seed + i, low=low, high=high)``; all pairs are then shuffled with
    ``seed``. Disjoint ranges give distinct numbers, so no held-out number is
    seen in training. The default ranges are chapter 1's (9,000 + 1,000
    pairs, sources of 3 to 72 characters).

    >>> train, test = make_mixed_number_pairs(2, ranges=[(1, 9, 3), (20, 29, 2)])
    >>> len(train), test
    (3, [('twenty-one', 'einundzwanzig'), ('seven', 'sieben')])
    """
    n_test = int_at_least("n_test", n_test, 0)
    pairs: list[tuple[str, str]] = []
    for i, (low, high, n) in enumerate(ranges):  # distinct numbers when the ranges are disjoint
        pairs += make_number_pairs(n, src, tgt, seed=seed + i, low=low, high=high)
    if n_test > len(pairs):
        raise ValueError(f"n_test={n_test} is more than the {len(pairs)} pairs the ranges give")
    order = torch.randperm(len(pairs), generator=torch.Generator().manual_seed(seed)).tolist()
    pairs = [pairs[i] for i in order]
    return pairs[n_test:], pairs[:n_test]
