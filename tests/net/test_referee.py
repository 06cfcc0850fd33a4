"""The referee process itself: health, reflection, its port, and a graceful stop."""

from __future__ import annotations

import signal
import socket
import subprocess
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)
from stack import Stack, env, moonshot

from clients.redisproc import RedisServer
from clients.sdk import register
from proto.moon.v1 import match_pb2, match_pb2_grpc

SERVICES = ("moon.v1.BotService", "moon.v1.MatchService", "moon.v1.TournamentService",
            "moon.v1.RatingService")


def test_health_and_reflection_describe_every_service(stack: Stack) -> None:
    with grpc.insecure_channel(stack.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", *SERVICES):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING, service
        db = ProtoReflectionDescriptorDatabase(channel)
        listed = set(db.get_services())
        assert set(SERVICES) <= listed
        assert "grpc.health.v1.Health" in listed
        # A client with no generated code can learn a method's shape from the server.
        proto = db.FindFileContainingSymbol("moon.v1.BotService")
        assert "Play" in [m.name for s in proto.service for m in s.method]


def test_a_second_referee_on_a_busy_port_fails_clearly(fresh_stack: Stack) -> None:
    first, address = fresh_stack.referee()
    second = fresh_stack.start("referee-2", moonshot("referee", "--listen", address,
                                                     "--redis", fresh_stack.redis_url))
    assert second.popen.wait(30) != 0
    assert "cannot listen on" in second.text()
    assert "Traceback" not in second.text()
    assert first.alive()
    with grpc.insecure_channel(address) as channel:  # the first one still serves alone
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(),
                                                          timeout=10)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_sigterm_stops_the_referee_gracefully_and_ends_bot_streams(
    fresh_stack: Stack, name: str
) -> None:
    ref, address = fresh_stack.referee()
    _, token = register(address, f"{name}-stop")
    bot = fresh_stack.bot("random", address, token)
    assert ref.stop(signal.SIGTERM, timeout=20) == 0
    assert "referee stopped" in ref.text()
    assert "Traceback" not in ref.text()
    # The bot sees its stream end and goes on trying to reconnect, as the SDK promises.
    bot.wait_for(r"(?i)reconnect", timeout=20)
    assert bot.alive()


def test_commands_say_what_to_do_when_no_referee_answers(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = subprocess.run(moonshot("bot", "register", "nobody", "--server", f"127.0.0.1:{port}"),
                         env=env(), capture_output=True, text=True, timeout=60, check=False,
                         cwd=tmp_path)
    assert res.returncode == 1
    assert res.stderr.startswith(f"moonshot: no referee at 127.0.0.1:{port} (connection "
                                 "refused)") and "moonshot up" in res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def _is_organiser(address: str, token: str) -> bool:
    """Does the referee take `token` as the admin token? (A bad request gets past the check.)"""
    with grpc.insecure_channel(address) as channel:
        try:
            match_pb2_grpc.MatchServiceStub(channel).CreateMatch(
                match_pb2.CreateMatchRequest(players=5),
                metadata=(("authorization", f"Bearer {token}"),), timeout=10)
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:  # type: ignore[attr-defined]
                return True
            assert exc.code() == grpc.StatusCode.UNAUTHENTICATED, exc  # type: ignore[attr-defined]
            return False
    raise AssertionError("CreateMatch took players=5")


def test_a_referee_with_another_admin_token_changes_nothing(tmp_path: Path) -> None:
    """A typo in one referee's token must not lock every organiser out of the cluster."""
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        st = Stack(tmp_path, srv.url, admin_token="adm.the-real-one")
        try:
            _, address = st.referee()
            for listen in ("127.0.0.1:0", address):  # a free port, and a port in use
                typo = st.start("referee-typo", moonshot(
                    "referee", "--listen", listen, "--redis", srv.url,
                    "--admin-token", "adm.a-typo"))
                assert typo.popen.wait(30) != 0
                assert "Traceback" not in typo.text()
            assert "different admin token" in st.procs[-2].text()
            assert "cannot listen on" in st.procs[-1].text()
            assert _is_organiser(address, "adm.the-real-one")
            assert not _is_organiser(address, "adm.a-typo")
            replaced = st.start("referee-rotate", moonshot(
                "referee", "--listen", "127.0.0.1:0", "--redis", srv.url,
                "--admin-token", "adm.rotated", "--replace-admin-token"))
            replaced.wait_for(r"referee listening on")
            assert _is_organiser(address, "adm.rotated")  # every referee takes the new one
            assert not _is_organiser(address, "adm.the-real-one")
        finally:
            st.stop_all()


def test_commands_take_a_grpc_target_with_a_scheme(stack: Stack, name: str,
                                                   tmp_path: Path) -> None:
    """dns:///host:port is how a client names load-balanced referees."""
    res = subprocess.run(moonshot("bot", "register", f"{name}-dns", "--server",
                                  f"dns:///{stack.address}"),
                         env=env(), capture_output=True, text=True, timeout=60, check=False,
                         cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "bot id:  b-" in res.stdout and "token:" in res.stdout
