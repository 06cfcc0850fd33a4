"""The .proto files are enough for another language: Go code is generated from them with
no flags but the output folder, and it compiles.

protoc-gen-go is built here from the Go protobuf sources Debian ships
(golang-google-protobuf-dev, with golang-go), so nothing is fetched from the
internet; `scripts/test.sh` installs both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grpc_tools

ROOT = Path(__file__).resolve().parent.parent
GO_SOURCES = Path("/usr/share/gocode")
PLUGIN_SOURCE = GO_SOURCES / "src/google.golang.org/protobuf/cmd/protoc-gen-go"


def _need_go() -> str:
    go = shutil.which("go")
    assert go and PLUGIN_SOURCE.is_dir(), (
        "this test needs Go and Debian's Go protobuf sources: run scripts/test.sh as root "
        "(apt-get install golang-go golang-google-protobuf-dev)")
    return go


def test_go_code_generates_from_the_protos_alone_and_compiles(tmp_path: Path) -> None:
    go = _need_go()
    env = {**os.environ, "GO111MODULE": "off", "GOFLAGS": "",
           "GOCACHE": str(tmp_path / "cache"), "GOPATH": f"{tmp_path}:{GO_SOURCES}"}
    bin_dir = tmp_path / "bin"
    subprocess.run([go, "build", "-o", str(bin_dir / "protoc-gen-go"),
                    "google.golang.org/protobuf/cmd/protoc-gen-go"],
                   env=env, check=True, capture_output=True, timeout=300)
    protos = sorted(str(p.relative_to(ROOT / "proto")) for p in (ROOT / "proto").rglob("*.proto"))
    out = tmp_path / "src"
    out.mkdir()
    include = Path(grpc_tools.__file__).parent / "_proto"
    gen = subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I", str(ROOT / "proto"), "-I",
         str(include), f"--plugin=protoc-gen-go={bin_dir / 'protoc-gen-go'}",
         f"--go_out={out}", *protos],
        env=env, capture_output=True, text=True, timeout=120, check=False)
    assert gen.returncode == 0, gen.stderr
    package = out / "moonshot/gen/go/moon/v1"  # where go_package puts it, no flags needed
    files = sorted(p.name for p in package.glob("*.pb.go"))
    assert files == sorted(Path(p).stem + ".pb.go" for p in protos)
    for f in package.glob("*.pb.go"):
        assert "\npackage moonv1\n" in f.read_text()
    build = subprocess.run([go, "vet", "moonshot/gen/go/moon/v1"], env=env,
                           capture_output=True, text=True, timeout=300, check=False)
    assert build.returncode == 0, build.stderr


def test_every_proto_names_its_package_for_go_java_and_csharp() -> None:
    for path in sorted((ROOT / "proto").rglob("*.proto")):
        text = path.read_text()
        for option in ('option go_package = "moonshot/gen/go/moon/v1;moonv1";',
                       'option java_package = "dev.moonshot.moon.v1";',
                       'option java_multiple_files = true;',
                       'option csharp_namespace = "Moonshot.Moon.V1";'):
            assert option in text, f"{path.name} lacks {option}"
