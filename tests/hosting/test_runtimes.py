"""Each runtime runs under the seccomp filter: Python with grpc and numpy, Node.js."""

from __future__ import annotations

from pathlib import Path

from stack import Stack

from hosting.sandbox import Sandbox, SandboxSpec
from store.hosted import Limits

PY = """
import os, grpc, numpy, google.protobuf, clients.sdk
a = numpy.random.default_rng(1).random((200, 200))
print("numpy", round(float(numpy.linalg.det(a @ a.T) > 0)))
with grpc.insecure_channel(os.environ["MOONSHOT_REFEREE"]) as ch:
    grpc.channel_ready_future(ch).result(timeout=10)
    print("grpc ready over", os.environ["MOONSHOT_REFEREE"])
"""

JS = """
const net = require('net');
const s = net.createConnection('/run/moonshot/referee.sock', () => {
  console.log('node', process.version, 'connected to the relay');
  s.end();
});
s.on('error', (e) => { console.log('error', e.code); process.exit(1); });
"""


def _run(tmp: Path, runtime: str, files: dict[str, str], command: tuple[str, ...],
         referee: str) -> Sandbox:
    version = tmp / f"v-{runtime}"
    version.mkdir(mode=0o755)
    for name, text in files.items():
        (version / name).write_text(text)
    sb = Sandbox.start(SandboxSpec(f"rt-{runtime}", version, runtime, command, {},
                                   Limits(memory_mb=256), tmp / f"w-{runtime}"), referee)
    sb.wait(60)
    return sb


def test_python_with_grpc_and_numpy(stack: Stack, tmp_path: Path) -> None:
    sb = _run(tmp_path, "python3.11", {"bot.py": PY}, ("python", "bot.py"), stack.address)
    out = sb.stderr_tail()
    assert sb.end_reason() == "exited with status 0", out
    assert "numpy 1" in out and "grpc ready over unix:///run/moonshot/referee.sock" in out


def test_node(stack: Stack, tmp_path: Path) -> None:
    sb = _run(tmp_path, "node", {"bot.js": JS}, ("node", "bot.js"), stack.address)
    out = sb.stderr_tail()
    assert sb.end_reason() == "exited with status 0", out
    assert "connected to the relay" in out
