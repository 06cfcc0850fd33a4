"""A hosted version's package: a folder packed as a deterministic tar.gz, checked before
the stack keeps it, and extracted safely where a sandbox reads it.

Pure: no Redis, no gRPC. The server checks every package it receives (`check`), the
CLI packs a folder (`pack`), a host extracts one (`extract`). The same folder always
packs to the same bytes (sorted names, mtime 0, owner 0, modes 0644 or 0755 by the
executable bit, gzip without a name or time), so its SHA-256 is the version's content
id and the archive keeps one copy of identical submissions.

A package holds regular files and folders only, none outside its root, at most
`MAX_FILES` entries and `MAX_UNPACKED` bytes unpacked, `MAX_PACKED` packed, and at its
root a manifest, `moonshot.toml`:

    runtime = "python3.11"          # one of RUNTIMES
    command = ["python", "bot.py"]  # 1 to 16 strings: how the sandbox starts the bot

A command's program is a program of the runtime (`python`, `node`) or a file of the
package named by a relative path (`./mybot`, executable for the `static` runtime).
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import tomllib
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = [
    "MANIFEST",
    "MAX_FILES",
    "MAX_PACKED",
    "MAX_UNPACKED",
    "RUNTIMES",
    "Manifest",
    "PackageError",
    "check",
    "extract",
    "pack",
    "parse_manifest",
]

MAX_PACKED = 8 << 20  # bytes of the tar.gz
MAX_UNPACKED = 64 << 20  # bytes of every file together
MAX_FILES = 4000  # files and folders
MAX_COMMAND = 16  # strings in the manifest's command
MAX_ARG = 256  # characters of each
MAX_MANIFEST = 64 << 10
MAX_PATH = 1024  # characters of a path in the package
RUNTIMES = ("python3.11", "node", "static")
MANIFEST = "moonshot.toml"
SKIPPED = frozenset({"__pycache__", ".git"})  # never packed (caches, history)
# The tar stream of MAX_FILES entries of MAX_UNPACKED bytes: a header and padding each,
# long-name headers, the end blocks. Decompression stops past it (a gzip bomb).
_MAX_TAR = MAX_UNPACKED + MAX_FILES * 4 * 512 + 20 * 512


class PackageError(ValueError):
    """A package (or a folder to pack) the stack refuses, with why."""


@dataclass(frozen=True, slots=True)
class Manifest:
    """How the sandbox starts a version: its runtime and its command."""

    runtime: str
    command: tuple[str, ...]


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} bytes"


# ------------------------------------------------------------------ manifest


def parse_manifest(text: bytes, files: dict[str, bool] | None = None) -> Manifest:
    """The manifest `text` says; PackageError naming what is wrong. With `files` (path ->
    executable) a command that names a file of the package must name one that is there."""
    try:
        data = tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PackageError(f"{MANIFEST}: not valid TOML ({exc})") from None
    unknown = sorted(set(data) - {"runtime", "command"})
    if unknown:
        raise PackageError(f"{MANIFEST}: unknown key {unknown[0]!r} (a manifest has "
                           "runtime and command)")
    runtime = data.get("runtime")
    if not isinstance(runtime, str):
        raise PackageError(f'{MANIFEST}: runtime: required, a string (runtime = '
                           f'"python3.11"); the stack offers {", ".join(RUNTIMES)}')
    if runtime not in RUNTIMES:
        raise PackageError(f"{MANIFEST}: runtime {runtime[:50]!r} is not one this stack "
                           f"offers: {', '.join(RUNTIMES)}")
    command = data.get("command")
    if (not isinstance(command, list) or not 1 <= len(command) <= MAX_COMMAND
            or not all(isinstance(c, str) for c in command)):
        raise PackageError(f'{MANIFEST}: command: required, a list of 1 to {MAX_COMMAND} '
                           'strings (command = ["python", "bot.py"])')
    for i, arg in enumerate(command):
        if not arg or len(arg) > MAX_ARG or "\0" in arg:
            raise PackageError(f"{MANIFEST}: command[{i}]: each string has 1 to {MAX_ARG} "
                               "characters and no NUL")
    _check_program(runtime, command[0], files)
    return Manifest(runtime, tuple(command))


def _check_program(runtime: str, program: str, files: dict[str, bool] | None) -> None:
    """The command's program is the runtime's or a file of the package."""
    if program.startswith("/"):
        raise PackageError(f"{MANIFEST}: command[0]: {program[:80]!r} is an absolute path: "
                           "name a program of the runtime (python, node) or a file of the "
                           "package (./mybot)")
    in_package = "/" in program
    if runtime == "static" and not in_package:
        raise PackageError(f"{MANIFEST}: command[0]: a static bot's program is a file of the "
                           f"package, named as ./{program[:80]}")
    if not in_package or files is None:
        return
    path = _clean(program)
    if path not in files:
        raise PackageError(f"{MANIFEST}: command[0]: {program[:80]!r} is not a file of the "
                           "package")
    if runtime == "static" and not files[path]:
        raise PackageError(f"{MANIFEST}: command[0]: {program[:80]!r} is not executable "
                           "(chmod +x it before packing)")


def _clean(name: str) -> str:
    """A member's path, normalised (`./a//b` -> `a/b`); PackageError for one that leaves
    the package's root."""
    if not name or len(name) > MAX_PATH or "\0" in name or "\\" in name:
        raise PackageError(f"path {name[:80]!r}: empty, over {MAX_PATH} characters, or "
                           "with a NUL or a backslash")
    if name.startswith("/"):
        raise PackageError(f"path {name[:80]!r} is absolute: a package holds relative "
                           "paths only")
    parts = [p for p in PurePosixPath(name).parts if p != "."]
    if ".." in parts:
        raise PackageError(f"path {name[:80]!r} escapes the package (..)")
    return "/".join(parts)


# ------------------------------------------------------------------ pack


def _entries(folder: Path) -> Iterator[tuple[str, Path, bool]]:
    """(path in the package, file on disk or folder, is a folder), sorted, links to files
    inside the folder followed; PackageError for anything else."""
    root = folder.resolve()
    stack = [(root, "")]
    while stack:
        here, prefix = stack.pop()
        children = sorted(os.scandir(here), key=lambda e: e.name, reverse=True)
        for entry in children:
            if entry.name in SKIPPED:
                continue
            rel = f"{prefix}{entry.name}"
            path = Path(entry.path)
            if entry.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(root):
                    raise PackageError(f"{rel}: a link to {target}, outside the folder")
                if not target.is_file():
                    raise PackageError(f"{rel}: a link to a folder or to nothing: copy it "
                                       "into the folder instead")
                yield rel, target, False
            elif entry.is_dir(follow_symlinks=False):
                yield rel, path, True
                stack.append((path, f"{rel}/"))
            elif entry.is_file(follow_symlinks=False):
                yield rel, path, False
            else:
                raise PackageError(f"{rel}: not a regular file or a folder (a device, a "
                                   "pipe or a socket)")


def pack(folder: Path) -> bytes:
    """The folder as a deterministic tar.gz (module doc); PackageError for a folder that
    is not one, has no manifest, breaks a limit or holds what a package may not."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PackageError(f"{folder}: no such folder")
    if not (folder / MANIFEST).is_file():
        raise PackageError(f"{folder}: no {MANIFEST} in it (runtime = \"python3.11\", "
                           "command = [\"python\", \"bot.py\"])")
    entries = sorted(_entries(folder))
    if len(entries) > MAX_FILES:
        raise PackageError(f"{folder}: {len(entries)} files and folders; a package holds at "
                           f"most {MAX_FILES}")
    total = sum(p.stat().st_size for _, p, is_dir in entries if not is_dir)
    if total > MAX_UNPACKED:
        raise PackageError(f"{folder}: {_mib(total)} of files; a package holds at most "
                           f"{_mib(MAX_UNPACKED)} unpacked")
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel, path, is_dir in entries:
            info = tarfile.TarInfo(rel)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if is_dir:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                continue
            mode = path.stat().st_mode
            info.mode = 0o755 if mode & stat.S_IXUSR else 0o644
            data = path.read_bytes()
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    packed = out.getvalue()
    if len(packed) > MAX_PACKED:
        raise PackageError(f"{folder}: packs to {_mib(len(packed))}; a package is at most "
                           f"{_mib(MAX_PACKED)} packed")
    check(packed)  # what the server will say, said before uploading
    return packed


# ------------------------------------------------------------------ check, extract


def _tar_bytes(data: bytes) -> bytes:
    """The tar inside the gzip, decompressed no further than a package may be."""
    if len(data) > MAX_PACKED:
        raise PackageError(f"the package is {_mib(len(data))}; at most {_mib(MAX_PACKED)} "
                           "packed")
    if data[:2] != b"\x1f\x8b":
        raise PackageError("the package is not a tar.gz (no gzip header)")
    inflate = zlib.decompressobj(wbits=31)
    try:
        tar = inflate.decompress(data, _MAX_TAR + 1)
    except zlib.error as exc:
        raise PackageError(f"the package is not a well-formed tar.gz ({exc})") from None
    if len(tar) > _MAX_TAR:
        raise PackageError(f"the package unpacks to more than {_mib(MAX_UNPACKED)}")
    if not inflate.eof:
        raise PackageError("the package is not a well-formed tar.gz (the gzip stream is cut "
                           "short)")
    if inflate.unused_data:
        raise PackageError("the package is not a well-formed tar.gz (bytes after the end of "
                           "its gzip stream)")
    return tar


def _members(tar: tarfile.TarFile) -> dict[str, tarfile.TarInfo]:
    """The checked members by their clean path."""
    seen: dict[str, tarfile.TarInfo] = {}
    total = 0
    try:
        for m in tar:
            name = _clean(m.name)
            if not (m.isreg() or m.isdir()):
                kind = ("a symbolic link" if m.issym() else "a hard link" if m.islnk() else
                        "a pipe" if m.isfifo() else "a device" if m.isdev() else
                        "not a regular file or a folder")
                raise PackageError(f"{name[:80]}: {kind}; a package holds regular files and "
                                   "folders only")
            if not name:
                continue  # the root itself (`.`)
            if name in seen:
                raise PackageError(f"{name[:80]}: in the package twice")
            seen[name] = m
            if len(seen) > MAX_FILES:
                raise PackageError(f"more than {MAX_FILES} files and folders; a package holds "
                                   f"at most {MAX_FILES}")
            total += m.size if m.isreg() else 0
            if total > MAX_UNPACKED:
                raise PackageError(f"the files hold more than {_mib(MAX_UNPACKED)}; a "
                                   f"package holds at most {_mib(MAX_UNPACKED)} unpacked")
    except tarfile.TarError as exc:
        raise PackageError(f"the package is not a well-formed tar.gz ({exc})") from None
    for name in seen:  # a file's folders are folders
        parent = name.rpartition("/")[0]
        while parent:
            if parent in seen and not seen[parent].isdir():
                raise PackageError(f"{name[:80]}: inside {parent[:80]}, which is a file")
            parent = parent.rpartition("/")[0]
    return seen


def _open(tar: bytes) -> tarfile.TarFile:
    try:
        return tarfile.open(fileobj=io.BytesIO(tar), mode="r:")
    except tarfile.TarError as exc:
        raise PackageError(f"the package is not a well-formed tar.gz ({exc})") from None


def _check(tar_data: bytes) -> Manifest:
    with _open(tar_data) as tar:
        members = _members(tar)
        man = members.get(MANIFEST)
        if man is None or not man.isreg():
            raise PackageError(f"no {MANIFEST} at the package's root (runtime = "
                               "\"python3.11\", command = [\"python\", \"bot.py\"])")
        if man.size > MAX_MANIFEST:
            raise PackageError(f"{MANIFEST}: over {MAX_MANIFEST} bytes")
        f = tar.extractfile(man)
        assert f is not None  # a regular file
        files = {n: bool(m.mode & 0o100) for n, m in members.items() if m.isreg()}
        return parse_manifest(f.read(), files)


def check(data: bytes) -> Manifest:
    """The package's manifest, once every rule of a package holds (module doc);
    PackageError naming the first that does not."""
    return _check(_tar_bytes(data))


def extract(data: bytes, dest: Path) -> Manifest:
    """Check the package, unpack it into `dest` (made if need be; it must be empty) and
    make it read-only; its manifest. tarfile's `data` filter guards the unpacking too."""
    tar_data = _tar_bytes(data)
    manifest = _check(tar_data)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise PackageError(f"{dest}: not empty")
    with _open(tar_data) as tar:
        try:
            tar.extractall(dest, filter="data")
        except (tarfile.TarError, OSError) as exc:
            raise PackageError(f"cannot unpack the package: {exc}") from None
    for here, dirs, files in os.walk(dest, topdown=False):
        for name in files:
            path = Path(here, name)
            path.chmod(0o555 if path.stat().st_mode & stat.S_IXUSR else 0o444)
        for name in dirs:
            Path(here, name).chmod(0o555)
    dest.chmod(0o555)
    return manifest
