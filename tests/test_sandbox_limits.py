"""An event's limits on hosted bots' sandboxes (pure): bounds with one clear error each,
the tightest of a host's and its games' events, and every spec that carries them reads
back as it was written (and as it was before they existed)."""

from __future__ import annotations

import pytest

from moon import Rules
from store.arena import ArenaSpec
from store.changes import ChangeTestSpec
from store.errors import InvalidArgument
from store.hosted import Limits
from store.records import MatchSpec, SandboxLimits, TournamentSpec


@pytest.mark.parametrize(("fields", "error"), [
    ({"memory_mb": 63}, "sandbox.memory_mb must be an integer from 64 to 16384 (MB), got 63"),
    ({"memory_mb": 16385}, "sandbox.memory_mb must be an integer from 64 to 16384"),
    ({"pids": 3}, "sandbox.pids must be an integer from 4 to 4096 (processes), got 3"),
    ({"cpu_s": 0}, "sandbox.cpu_s must be an integer from 1 to 86400 (CPU seconds), got 0"),
    ({"cpu_cores": 0.05}, "sandbox.cpu_cores must be a number from 0.1 to 64 (cores)"),
    ({"cpu_cores": float("nan")}, "sandbox.cpu_cores must be a number"),
    ({"scratch_mb": 2048}, "sandbox.scratch_mb must be an integer from 1 to 1024 (MB)"),
    ({"memory_mb": True}, "sandbox.memory_mb must be an integer"),
    ({"pids": 8.5}, "sandbox.pids must be an integer"),
])
def test_each_limit_out_of_bounds_is_one_clear_error(fields: dict[str, float],
                                                     error: str) -> None:
    with pytest.raises(InvalidArgument, match=error.replace("(", r"\(").replace(")", r"\)")):
        SandboxLimits(**fields)  # type: ignore[arg-type]


def test_parsed_from_a_command_line_and_from_stored_json() -> None:
    assert SandboxLimits.parse(["memory_mb=128", " pids=16", "cpu_cores=0.5"]) == \
        SandboxLimits(memory_mb=128, pids=16, cpu_cores=0.5)
    assert SandboxLimits.parse([]) is None
    for bad, error in ((["memory=128"], "not NAME=VALUE"), (["pids"], "not NAME=VALUE"),
                       (["pids=many"], "pids must be an integer"),
                       (["cpu_cores=inf"], "cpu_cores must be a number")):
        with pytest.raises(InvalidArgument, match=error):
            SandboxLimits.parse(bad)
    assert SandboxLimits.from_dict({}) is None and SandboxLimits.from_dict(None) is None
    with pytest.raises(InvalidArgument, match=r"sandbox\.swap_mb: not a sandbox limit"):
        SandboxLimits.from_dict({"swap_mb": 1})
    assert not SandboxLimits() and SandboxLimits(pids=8)


def test_a_sandbox_runs_under_the_tightest_of_its_host_and_its_games_events() -> None:
    host = Limits(memory_mb=512, pids=64, cpu_s=3600, cpu_cores=1.0, scratch_mb=16)
    tournament = SandboxLimits(memory_mb=128, cpu_cores=2.0)  # more cores than the host's
    arena = SandboxLimits(memory_mb=256, pids=32)
    both = host.under(tournament, arena, None)
    assert both == Limits(memory_mb=128, pids=32, cpu_s=3600, cpu_cores=1.0, scratch_mb=16)
    assert host.under() == host and host.under(None) == host
    assert host.under(arena).under(tournament) == both  # in any order
    assert both.describe() == ("memory 128 MB, 32 processes, 3600 CPU s, 1 core, "
                               "scratch 16 MB")
    with pytest.raises(InvalidArgument, match=r"limits\.memory_mb must be an integer from 64"):
        Limits(memory_mb=32)


def test_every_spec_carries_its_limits_and_reads_back_without_them() -> None:
    limits = SandboxLimits(memory_mb=128, pids=16)
    match = MatchSpec.build("m-1", 3, ["b-1", "b-2", "b-3"], ["a", "b", "c"], seed=7,
                            sandbox=limits)
    assert MatchSpec.from_json(match.to_json()).sandbox == limits
    plain = MatchSpec.build("m-2", 3, ["b-1", "b-2", "b-3"], ["a", "b", "c"], seed=7,
                            sandbox=SandboxLimits())  # nothing set: none
    assert plain.sandbox is None and "sandbox" not in plain.to_json()
    assert MatchSpec.from_json(plain.to_json()).sandbox is None

    arena = ArenaSpec.build("3p", seed=1, sandbox=limits)
    assert ArenaSpec.from_json(arena.to_json()).sandbox == limits
    assert ArenaSpec.from_json(ArenaSpec.build("3p", seed=1).to_json()).sandbox is None

    t = TournamentSpec("t-1", "cup", 3, "round_robin", ("b-1", "b-2", "b-3"), ("a", "b", "c"),
                       Rules.make(3, {}), 5, sandbox=limits)
    assert TournamentSpec.from_json(t.to_json()).sandbox == limits
    test = ChangeTestSpec("c-1abc", "a vs b", "{}", Rules.make(3, {}),
                          match.clock, match.faults, (), sandbox=limits)
    assert ChangeTestSpec.from_json(test.to_json()).sandbox == limits


def test_pages_say_an_events_limits_in_words() -> None:
    from clients.web.views import sandbox_text
    from proto.moon.v1 import game_pb2

    assert sandbox_text(game_pb2.SandboxLimits()) == ""  # none set: the hosts' own apply
    assert sandbox_text(game_pb2.SandboxLimits(memory_mb=128, pids=48, cpu_cores=0.5)) == \
        "128 MB, 48 processes, 0.5 cores"
    assert sandbox_text(game_pb2.SandboxLimits(pids=1, cpu_cores=1, cpu_s=600,
                                               scratch_mb=16)) == \
        "1 process, 1 core, 600 CPU s, 16 MB scratch"
