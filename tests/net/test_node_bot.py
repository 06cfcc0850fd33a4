"""The Node.js example bot (examples/node_bot) on the real stack: `node bot.js`, a real
process written from the .proto files alone, plays a whole 3p match against house bots
with legal moves only, over a `unix://` target; a wrong token ends it at once, non-zero,
saying why. Its copies of the .proto files are the project's.

It needs Node.js and the bot's packages: `npm ci --omit=dev` in examples/node_bot (with
`apt-get install nodejs npm`); without them the test fails saying so.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

from stack import ROOT, Proc, Stack
from support import finished, transcript_of, wait_until

from clients.admin import Admin
from clients.sdk import register
from proto.moon.v1 import match_pb2

NODE_BOT = ROOT / "examples" / "node_bot"
SHORT = {"max_hands": "3"}
INSTALL = ("run `npm ci --omit=dev` in examples/node_bot (Node.js and npm: "
           "`apt-get install nodejs npm`)")


def _node() -> str:
    node = shutil.which("node")
    assert node, f"this test needs Node.js: {INSTALL}"
    for package in ("@grpc/grpc-js", "@grpc/proto-loader"):
        assert (NODE_BOT / "node_modules" / package / "package.json").is_file(), (
            f"examples/node_bot lacks {package}: {INSTALL}")
    return node


def _env(**extra: str) -> dict[str, str]:
    """The test's environment without any MOONSHOT_ setting of its own, and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOONSHOT_")}
    env.update(extra)
    return env


class UnixProxy:
    """Forwards a unix socket to a TCP referee, so the bot is reached by a `unix://` target;
    `cut` drops every connection and refuses new ones until `resume`."""

    def __init__(self, path: Path, target: str) -> None:
        host, _, port = target.rpartition(":")
        self.target = (host, int(port))
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen()
        self.sockets: list[socket.socket] = []
        self.open = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.open:
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def cut(self) -> None:
        """Drop every connection; refuse new ones until `resume`."""
        self.open = False
        for s in self.sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        self.sockets = []

    def resume(self) -> None:
        """Forward new connections again."""
        self.open = True

    def close(self) -> None:
        """Stop forwarding and close every connection."""
        self.cut()
        self.listener.close()


def test_the_node_bots_protos_are_the_projects() -> None:
    """examples/node_bot carries its own copy of proto/moon/v1/*.proto (its folder is all a
    hosted bot gets): the very same files."""
    ours = {p.name: p.read_bytes() for p in (ROOT / "proto/moon/v1").glob("*.proto")}
    copies = {p.name: p.read_bytes() for p in (NODE_BOT / "proto/moon/v1").glob("*.proto")}
    stale = sorted(n for n in ours.keys() | copies.keys() if ours.get(n) != copies.get(n))
    assert not stale, (f"examples/node_bot/proto/moon/v1 differs from proto/moon/v1 in {stale}: "
                       "cp proto/moon/v1/*.proto examples/node_bot/proto/moon/v1/")


def _played_legally(admin: Admin, match_id: str, seat: int, seat_name: str) -> None:
    """The match finished with the bot in `seat` never faulting: no strike, no forfeit."""
    record = transcript_of(finished(admin, match_id, timeout=120))
    assert record["seats"][seat] == seat_name
    assert record["end"] != "forfeit", record.get("forfeit")
    assert not [f for f in record["faults"] if f["seat"] == seat], record["faults"]


def test_the_node_bot_plays_matches_with_legal_moves_and_resumes(
        stack: Stack, admin: Admin, name: str) -> None:
    """`node bot.js` with MOONSHOT_REFEREE (a unix:// target) and MOONSHOT_TOKEN connects,
    plays its seat of a 3p match against house:random and house:greedy to the end (every
    answer accepted: no strike, no forfeit) and answers pings. Its connection dropped, it
    reconnects naming the last event it handled, so the MatchStarted of a match created
    while it was away is replayed to it, and it plays that match too."""
    node = _node()
    seat_name = f"{name}-node"
    bot_id, token = register(stack.address, seat_name)
    short = Path(tempfile.mkdtemp(prefix="nodebot"))  # a socket's path has ~100 bytes at most
    sock = short / "referee.sock"
    proxy = UnixProxy(sock, stack.address)
    log = short / "node-bot.log"
    with open(log, "wb") as fh:
        popen = subprocess.Popen(
            [node, "bot.js"], cwd=NODE_BOT, stdout=fh, stderr=subprocess.STDOUT,
            env=_env(MOONSHOT_REFEREE=f"unix://{sock}", MOONSHOT_TOKEN=token,
                     MOONSHOT_LOG="debug"))
    bot = Proc("node-bot", popen, log)
    try:
        bot.wait_for(rf"connected to unix://\S+ as {seat_name} \({bot_id}\)", timeout=30)
        first = admin.create_match(3, [bot_id, "house:random", "house:greedy"], seed=27,
                                   rules=SHORT).match_id
        _played_legally(admin, first, 0, seat_name)
        bot.wait_for(rf"match {first} ended: ", timeout=30)
        bot.wait_for(r"answered ping \d+", timeout=30)  # the referee pings every 2 s

        proxy.cut()
        bot.wait_for(r"disconnected \(", timeout=30)
        second = admin.create_match(3, ["house:greedy", bot_id, "house:random"], seed=28,
                                    rules=SHORT).match_id
        wait_until("the second match under way", lambda: admin.get_match(second).status
                   == match_pb2.MATCH_STATUS_RUNNING, timeout=30)
        proxy.resume()
        bot.wait_for(r"opening the Play stream after event \S+", timeout=30)
        _played_legally(admin, second, 1, seat_name)
        bot.wait_for(rf"match {second} started: seat 1 ", timeout=30)  # replayed
        bot.wait_for(rf"match {second} ended: ", timeout=30)

        text = bot.text()
        assert text.count(f"match {first} ended: ") == 1, text  # not replayed again
        assert "rejected" not in text, text
        for match_id in (first, second):
            answered = len(re.findall(rf"{match_id} seat \d: ", text))
            accepted = len(re.findall(rf"decision {match_id}/\S+ accepted", text))
            assert 0 < answered <= accepted, (match_id, text)
        assert bot.alive(), text
    finally:
        code = bot.stop()
        said = bot.text()
        proxy.close()
        shutil.rmtree(short, ignore_errors=True)
    assert code == 0, said
    assert "SIGTERM: leaving now" in said, said


def test_the_node_bot_exits_non_zero_on_a_wrong_token(stack: Stack) -> None:
    """A token the referee does not know: the process ends at once with status 2 and one
    line saying the referee refused it."""
    node = _node()
    res = subprocess.run([node, "bot.js"], cwd=NODE_BOT, capture_output=True, text=True,
                         timeout=60, check=False,
                         env=_env(MOONSHOT_REFEREE=stack.address, MOONSHOT_TOKEN="not-a-token"))
    assert res.returncode == 2, res.stderr
    assert "referee refused the token" in res.stderr, res.stderr
