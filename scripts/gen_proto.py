"""Regenerate the wire contract's Python code: `python scripts/gen_proto.py [--check]`.

Compiles proto/moon/v1/*.proto with grpc_tools.protoc (messages and gRPC stubs)
and mypy-protobuf (typed .pyi stubs for both) into proto/moon/v1/, the only home
of generated code. `-I proto` keeps the descriptor names `moon/v1/xxx.proto`,
which server reflection serves; the generated imports of `moon.v1` are then
rewritten to `proto.moon.v1`, the package the files live in, because the
top-level `moon` is the game engine and holds no generated code.

With `--check` nothing is written: the exit status is 1 and the stale files are
named when the checked-in code differs from what the .proto files give (the
test suite runs this). The output depends on the grpcio-tools and mypy-protobuf
versions, so regenerate with the versions the dev extra installs.

Lint the .proto files with `npx @bufbuild/buf lint proto` (rules in
proto/buf.yaml); tests/test_proto.py checks the same rules without buf.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PACKAGE_DIR = Path("moon", "v1")  # relative to PROTO_ROOT: both the .proto and the output dir
GENERATED = ("*_pb2.py", "*_pb2.pyi", "*_pb2_grpc.py", "*_pb2_grpc.pyi")

# Generated code imports its siblings as `moon.v1`; they live in `proto.moon.v1`.
_REWRITES = (
    (re.compile(r"^from moon\.v1 import ", re.M), "from proto.moon.v1 import "),
    (re.compile(r"^import moon\.v1\.", re.M), "import proto.moon.v1."),
    (re.compile(r"(?<![\w./'])moon\.v1\.(\w+_pb2)\."), r"proto.moon.v1.\1."),
    # The module name the message classes report as their __module__.
    (re.compile(r"(BuildTopDescriptorsAndMessages\(DESCRIPTOR, )'moon\.v1\."),
     r"\1'proto.moon.v1."),
)


def proto_files(proto_root: Path = PROTO_ROOT) -> list[str]:
    """The .proto files of the package, relative to `proto_root`, sorted."""
    found = (proto_root / PACKAGE_DIR).glob("*.proto")
    return sorted(p.relative_to(proto_root).as_posix() for p in found)


def protoc(proto_root: Path, *args: str) -> None:
    """Run grpc_tools' bundled protoc over the package's files; raise on failure."""
    import grpc_tools
    from grpc_tools import protoc as _protoc

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    argv = ["protoc", f"-I{proto_root}", f"-I{well_known}", *args, *proto_files(proto_root)]
    if _protoc.main(argv) != 0:
        raise SystemExit(f"protoc failed: {' '.join(argv)}")


def _plugin(name: str) -> str:
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found: install the dev extra (pip install -e '.[dev]')")
    return f"--plugin={name}={found}"


def generate(proto_root: Path = PROTO_ROOT) -> dict[str, str]:
    """The generated files, by name, as they should be checked in."""
    with tempfile.TemporaryDirectory() as tmp:
        protoc(
            proto_root,
            _plugin("protoc-gen-mypy"),
            _plugin("protoc-gen-mypy_grpc"),
            f"--python_out={tmp}",
            f"--grpc_python_out={tmp}",
            f"--mypy_out=quiet:{tmp}",
            f"--mypy_grpc_out=quiet:{tmp}",
        )
        out = {}
        for path in sorted((Path(tmp) / PACKAGE_DIR).iterdir()):
            text = path.read_text(encoding="utf-8")
            for pattern, repl in _REWRITES:
                text = pattern.sub(repl, text)
            out[path.name] = text
        return out


def stale(proto_root: Path = PROTO_ROOT, want: dict[str, str] | None = None) -> list[str]:
    """Names of the checked-in generated files that differ, are missing or are extra."""
    want = generate(proto_root) if want is None else want
    out_dir = proto_root / PACKAGE_DIR
    have = {p.name for pattern in GENERATED for p in out_dir.glob(pattern)}
    differ = [n for n, text in want.items() if n not in have or _read(out_dir / n) != text]
    return sorted(differ + [n for n in have if n not in want])


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def write(proto_root: Path = PROTO_ROOT) -> list[str]:
    """Write the generated files, deleting stale extra ones; return the names changed."""
    want = generate(proto_root)
    changed = stale(proto_root, want)
    for name in changed:
        path = proto_root / PACKAGE_DIR / name
        if name in want:
            path.write_text(want[name], encoding="utf-8")
        else:
            path.unlink()
    return changed


def main(argv: list[str]) -> int:
    """Command line entry point."""
    if argv not in ([], ["--check"]):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    if argv:
        bad = stale()
        for name in bad:
            print(f"stale: proto/{PACKAGE_DIR.as_posix()}/{name}", file=sys.stderr)
        if bad:
            print("run: python scripts/gen_proto.py", file=sys.stderr)
        return 1 if bad else 0
    for name in write():
        print(f"wrote proto/{PACKAGE_DIR.as_posix()}/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
