"""hosting.package: a folder packs to the same bytes every time; `check` and `extract`
refuse every bad package with a message that names what is wrong; a round trip keeps
every file, its bytes and its executable bit, read-only."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import stat
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hosting import package
from hosting.package import Manifest, PackageError, check, extract, pack

MANIFEST = 'runtime = "python3.11"\ncommand = ["python", "bot.py"]\n'


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A small bot folder: a manifest, a program, a module in a subfolder, a tool."""
    d = tmp_path / "bot"
    (d / "lib").mkdir(parents=True)
    (d / "moonshot.toml").write_text(MANIFEST)
    (d / "bot.py").write_text("print('hello')\n")
    (d / "lib" / "util.py").write_text("X = 1\n")
    (d / "run.sh").write_text("#!/bin/sh\n")
    (d / "run.sh").chmod(0o700)
    return d


@pytest.fixture(autouse=True)
def writable(tmp_path: Path) -> Iterator[None]:
    """Extracted folders are read-only: make them removable again."""
    yield
    for here, dirs, _ in os.walk(tmp_path):
        for name in dirs:
            os.chmod(Path(here, name), 0o755)
    os.chmod(tmp_path, 0o755)


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]], *, gz: bool = True) -> bytes:
    """A tar.gz of hand-made members (for what `pack` would never write)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return gzip.compress(raw.getvalue()) if gz else raw.getvalue()


def _file(name: str, data: bytes, mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.mode = mode
    return info, data


def _kind(name: str, kind: bytes, **extra: object) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    for k, v in extra.items():
        setattr(info, k, v)
    return info, None


def _manifest(text: str = MANIFEST) -> tuple[tarfile.TarInfo, bytes]:
    return _file("moonshot.toml", text.encode())


# ------------------------------------------------------------------ pack


def test_pack_is_deterministic_whatever_the_times_owners_and_caches(
        folder: Path, tmp_path: Path) -> None:
    first = pack(folder)
    os.utime(folder / "bot.py", (1e9, 1e9))
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "bot.cpython-311.pyc").write_bytes(b"cache")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "bot.py").chmod(0o600)  # no executable bit either way: same mode packed
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    assert pack(folder) == first
    assert pack(copy) == first
    assert hashlib.sha256(pack(copy)).hexdigest() == hashlib.sha256(first).hexdigest()
    with tarfile.open(fileobj=io.BytesIO(first), mode="r:gz") as tar:
        infos = tar.getmembers()
    assert [m.name for m in infos] == ["bot.py", "lib", "lib/util.py", "moonshot.toml",
                                       "run.sh"]
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in infos} == {(0, 0, 0, "", "")}
    modes = {m.name: m.mode for m in infos}
    assert modes == {"bot.py": 0o644, "lib": 0o755, "lib/util.py": 0o644,
                     "moonshot.toml": 0o644, "run.sh": 0o755}
    (folder / "bot.py").write_text("print('changed')\n")
    assert pack(folder) != first


def test_pack_follows_a_link_to_a_file_inside_and_refuses_others(
        folder: Path, tmp_path: Path) -> None:
    (folder / "alias.py").symlink_to("bot.py")
    with tarfile.open(fileobj=io.BytesIO(pack(folder)), mode="r:gz") as tar:
        alias = tar.getmember("alias.py")
        assert alias.isreg() and tar.extractfile(alias).read() == b"print('hello')\n"  # type: ignore[union-attr]
    (folder / "alias.py").unlink()
    secret = tmp_path / "secret"
    secret.write_text("s")
    (folder / "out").symlink_to(secret)
    with pytest.raises(PackageError, match=r"out: a link to .*, outside the folder"):
        pack(folder)
    (folder / "out").unlink()
    (folder / "dir").symlink_to("lib")
    with pytest.raises(PackageError, match="dir: a link to a folder"):
        pack(folder)


def test_pack_refuses_a_missing_folder_no_manifest_a_fifo_and_the_limits(
        folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PackageError, match="no such folder"):
        pack(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PackageError, match=r"no moonshot\.toml in it"):
        pack(empty)
    os.mkfifo(folder / "pipe")
    with pytest.raises(PackageError, match="pipe: not a regular file or a folder"):
        pack(folder)
    (folder / "pipe").unlink()
    monkeypatch.setattr(package, "MAX_FILES", 3)
    with pytest.raises(PackageError, match="5 files and folders; a package holds at most 3"):
        pack(folder)
    monkeypatch.setattr(package, "MAX_FILES", 4000)
    monkeypatch.setattr(package, "MAX_UNPACKED", 20)
    with pytest.raises(PackageError, match="at most 20 bytes unpacked"):
        pack(folder)
    monkeypatch.setattr(package, "MAX_UNPACKED", 64 << 20)
    (folder / "noise").write_bytes(os.urandom(3000))
    monkeypatch.setattr(package, "MAX_PACKED", 2000)
    with pytest.raises(PackageError, match=r"packs to 3... bytes; a package is at most 2000"):
        pack(folder)


# ------------------------------------------------------------------ round trip


def test_a_package_round_trips_read_only_with_its_executable_bits(
        folder: Path, tmp_path: Path) -> None:
    data = pack(folder)
    assert check(data) == Manifest("python3.11", ("python", "bot.py"))
    dest = tmp_path / "out"
    assert extract(data, dest) == Manifest("python3.11", ("python", "bot.py"))
    for rel in ("moonshot.toml", "bot.py", "lib/util.py", "run.sh"):
        assert (dest / rel).read_bytes() == (folder / rel).read_bytes()
    assert stat.S_IMODE((dest / "bot.py").stat().st_mode) == 0o444
    assert stat.S_IMODE((dest / "run.sh").stat().st_mode) == 0o555
    assert stat.S_IMODE((dest / "lib").stat().st_mode) == 0o555
    assert stat.S_IMODE(dest.stat().st_mode) == 0o555
    again = tmp_path / "again"
    again.mkdir()
    (again / "left").write_text("x")
    with pytest.raises(PackageError, match="not empty"):
        extract(data, again)


def test_a_static_bot_names_an_executable_file_of_the_package(tmp_path: Path) -> None:
    exe = _file("mybot", b"\x7fELF", 0o755)
    good = _tar([_manifest('runtime = "static"\ncommand = ["./mybot", "--fast"]\n'), exe])
    assert check(good) == Manifest("static", ("./mybot", "--fast"))
    for text, members, said in (
        ('runtime = "static"\ncommand = ["mybot"]\n', [exe], "a file of the package, named "
                                                             "as ./mybot"),
        ('runtime = "static"\ncommand = ["./other"]\n', [exe], "'./other' is not a file of "
                                                               "the package"),
        ('runtime = "static"\ncommand = ["./mybot"]\n', [_file("mybot", b"x", 0o644)],
         "'./mybot' is not executable"),
        ('runtime = "node"\ncommand = ["/usr/bin/node", "x.js"]\n', [], "is an absolute path"),
    ):
        with pytest.raises(PackageError, match=said):
            check(_tar([_manifest(text), *members]))


# ------------------------------------------------------------------ refusals

BAD_MANIFESTS = [
    ("runtime = 'python3.11'\ncommand = [\"python\"", "not valid TOML"),
    ('command = ["python", "bot.py"]\n', "runtime: required"),
    ('runtime = "java"\ncommand = ["java", "Bot"]\n',
     "runtime 'java' is not one this stack offers: python3.11, node, static"),
    ('runtime = "python3.11"\n', "command: required, a list of 1 to 16 strings"),
    ('runtime = "python3.11"\ncommand = []\n', "command: required, a list of 1 to 16"),
    ('runtime = "python3.11"\ncommand = "python bot.py"\n', "command: required, a list"),
    ('runtime = "python3.11"\ncommand = ["python", 3]\n', "command: required, a list"),
    ('runtime = "python3.11"\ncommand = [' + ", ".join(['"a"'] * 17) + "]\n",
     "a list of 1 to 16"),
    ('runtime = "python3.11"\ncommand = ["python", "' + "a" * 257 + '"]\n',
     r"command\[1\]: each string has 1 to 256 characters and no NUL"),
    ('runtime = "python3.11"\ncommand = ["python", "a\\u0000b"]\n', r"command\[1\]: .* no NUL"),
    ('runtime = "python3.11"\ncommand = ["python", ""]\n', r"command\[1\]: each string"),
    ('runtime = "python3.11"\ncommand = ["python"]\nmemory = 9000\n', "unknown key 'memory'"),
]


@pytest.mark.parametrize(("text", "said"), BAD_MANIFESTS)
def test_a_bad_manifest_is_refused_saying_why(text: str, said: str) -> None:
    with pytest.raises(PackageError, match=said):
        check(_tar([_manifest(text)]))


BAD: list[tuple[str, Callable[[], bytes], str]] = [
    ("garbage", lambda: b"this is not a package at all", "not a tar.gz"),
    ("gzip of garbage", lambda: gzip.compress(b"x" * 1000), "not a well-formed tar.gz"),
    ("a plain tar", lambda: _tar([_manifest()], gz=False), "not a tar.gz"),
    ("cut short", lambda: _tar([_manifest(), _file("bot.py", os.urandom(5000))])[:-30],
     "not a well-formed tar.gz"),
    ("bytes after it", lambda: _tar([_manifest()]) + b"trailing",
     "bytes after the end of its gzip stream"),
    ("absolute path", lambda: _tar([_manifest(), _file("/etc/cron.d/x", b"x")]),
     "'/etc/cron.d/x' is absolute"),
    ("dot-dot", lambda: _tar([_manifest(), _file("lib/../../x", b"x")]), r"escapes the package"),
    ("symlink", lambda: _tar([_manifest(), _kind("link", tarfile.SYMTYPE,
                                                 linkname="/etc/shadow")]),
     "link: a symbolic link; a package holds regular files and folders only"),
    ("hard link", lambda: _tar([_manifest(), _kind("hard", tarfile.LNKTYPE,
                                                   linkname="moonshot.toml")]),
     "hard: a hard link"),
    ("device", lambda: _tar([_manifest(), _kind("null", tarfile.CHRTYPE, devmajor=1,
                                                devminor=3)]), "null: a device"),
    ("fifo", lambda: _tar([_manifest(), _kind("fifo", tarfile.FIFOTYPE)]),
     "fifo: a pipe; a package holds regular files and folders only"),
    ("twice", lambda: _tar([_manifest(), _file("a", b"1"), _file("./a", b"2")]),
     "a: in the package twice"),
    ("file as folder", lambda: _tar([_manifest(), _file("a", b"1"), _file("a/b", b"2")]),
     "a/b: inside a, which is a file"),
    ("no manifest", lambda: _tar([_file("bot.py", b"x")]), "no moonshot.toml at the package"),
    ("manifest in a folder", lambda: _tar([_file("sub/moonshot.toml", MANIFEST.encode())]),
     "no moonshot.toml at the package's root"),
    ("manifest a folder", lambda: _tar([_kind("moonshot.toml", tarfile.DIRTYPE)]),
     "no moonshot.toml"),
]


@pytest.mark.parametrize(("make", "said"), [(m, s) for _, m, s in BAD],
                         ids=[n for n, _, _ in BAD])
def test_a_bad_package_is_refused_by_check_and_extract_saying_why(
        make: Callable[[], bytes], said: str, tmp_path: Path) -> None:
    data = make()
    with pytest.raises(PackageError, match=said):
        check(data)
    dest = tmp_path / "out"
    with pytest.raises(PackageError, match=said):
        extract(data, dest)
    assert not dest.exists(), "extract wrote something of a package it refused"


def test_too_many_files_too_many_bytes_and_a_gzip_bomb_are_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    many = _tar([_manifest(), *(_file(f"f{i}", b"") for i in range(package.MAX_FILES))])
    with pytest.raises(PackageError, match="more than 4000 files and folders"):
        check(many)
    big = _tar([_manifest(), _file("a", bytes(40 << 20)), _file("b", bytes(30 << 20))])
    assert len(big) < 1 << 20  # zeros pack small: only the unpacked size refuses it
    with pytest.raises(PackageError, match=r"more than 64.0 MiB; a package holds at most"):
        check(big)
    bomb = gzip.compress(bytes(200 << 20))  # 200 MiB of zeros in 200 KB
    with pytest.raises(PackageError, match=r"unpacks to more than 64\.0 MiB"):
        check(bomb)
    with pytest.raises(PackageError, match=r"at most 8\.0 MiB packed"):
        check(b"\x1f\x8b" + bytes(8 << 20))
