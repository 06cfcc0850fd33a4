"""Metrics and structured logs, for real: a referee and a worker started with
--metrics-listen and JSON logs, real bots playing real matches (one of them a bot that
answers illegally), /metrics scraped over HTTP and parsed, every stderr line read back."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families
from stack import Proc, Stack, env, moonshot
from support import finished, transcript_of, wait_until

from clients.admin import Admin
from clients.redisproc import RedisServer
from clients.sdk import register
from moon.transcript import actions_of
from proto.moon.v1 import arena_pb2, arena_pb2_grpc, rating_pb2, tournament_pb2

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@dataclass
class Split:
    """A process whose stdout and stderr go to files of their own."""

    out: Proc  # stdout: the "listening" lines
    err: Proc  # stderr: the logs (the same process)


def _start(st: Stack, name: str, argv: list[str], **extra_env: str) -> Split:
    out_log, err_log = st.workdir / f"{name}.out", st.workdir / f"{name}.err"
    with open(out_log, "wb") as out, open(err_log, "wb") as err:
        popen = subprocess.Popen(argv, stdout=out, stderr=err, cwd=st.workdir,
                                 env=env(MOONSHOT_ADMIN_TOKEN=st.admin_token, **extra_env))
    split = Split(Proc(name, popen, out_log), Proc(name, popen, err_log))
    st.procs.append(split.out)
    return split


def scrape(port: int) -> Samples:
    """Every sample of http://127.0.0.1:PORT/metrics, by (name, labels)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        assert resp.status == 200
        text = resp.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    """One sample's value; KeyError naming it (and what there is) when absent."""
    key = (name, frozenset(labels.items()))
    if key not in samples:
        near = sorted(f"{n}{dict(ls)}" for n, ls in samples if n.startswith(name))
        raise KeyError(f"no sample {name}{labels}; have {near}")
    return samples[key]


def json_lines(proc: Proc) -> list[dict[str, Any]]:
    """Every stderr line of the process, each of which must be one JSON object."""
    lines = [line for line in proc.text().splitlines() if line.strip()]
    assert lines, f"{proc.name} logged nothing"
    out = []
    for line in lines:
        try:
            obj = json.loads(line)
        except ValueError:
            raise AssertionError(f"{proc.name}: not a JSON line: {line!r}") from None
        assert isinstance(obj, dict) and {"ts", "level", "logger", "msg"} <= set(obj), line
        out.append(obj)
    return out


@pytest.fixture
def cluster(tmp_path: Path, admin_token: str) -> Iterator[tuple[Stack, Split, Split, str]]:
    """Its own Redis, referee and worker, so that every count is this test's alone."""
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        st = Stack(tmp_path, srv.url, admin_token=admin_token)
        try:
            ref = _start(st, "referee", moonshot(
                "referee", "--listen", "127.0.0.1:0", "--redis", srv.url,
                "--auth-free-failures", "1000", "--metrics-listen", "127.0.0.1:0",
                "--log-json"))
            port = ref.out.wait_for(r"referee listening on 127\.0\.0\.1:(\d+)").group(1)
            # The worker takes JSON logs from the environment, the referee from its flag.
            worker = _start(st, "worker", moonshot(
                "worker", "--redis", srv.url, "--metrics-listen", "127.0.0.1:0"),
                MOONSHOT_LOG_JSON="1")
            worker.err.wait_for(r"Listening on", timeout=30)
            yield st, ref, worker, f"127.0.0.1:{port}"
        finally:
            st.stop_all()


def test_metrics_count_a_real_match_and_its_faults_and_every_log_line_is_json(
        cluster: tuple[Stack, Split, Split, str], admin_token: str, name: str) -> None:
    st, ref, worker, address = cluster
    ref_port = int(ref.out.wait_for(r"referee metrics listening on 127\.0\.0\.1:(\d+)"
                                    ).group(1))
    work_port = int(worker.out.wait_for(r"worker metrics listening on 127\.0\.0\.1:(\d+)"
                                        ).group(1))
    before_ref, before_work = scrape(ref_port), scrape(work_port)
    assert value(before_ref, "moonshot_referee_decisions_total") == 0
    assert value(before_work, "moonshot_worker_matches_live") == 0
    for queue in ("moonshot-control", "moonshot-resume", "moonshot-matches"):
        assert value(before_work, "moonshot_queue_depth", queue=queue) == 0
        assert value(before_work, "moonshot_queue_registry_jobs", queue=queue,
                     registry="started") == 0
    assert value(before_work, "moonshot_backlog_up") == 1
    assert value(before_work, "moonshot_scheduler_backlog") == 0
    assert value(before_work, "moonshot_fit_requested", pool="3p") == 0
    for gauge in ("moonshot_archive_pending", "moonshot_archive_parked",
                  "moonshot_archive_events_waiting"):
        assert value(before_work, gauge) == 0
    assert value(before_work, "moonshot_worker_tournament_steps_total", outcome="done") == 0
    assert value(before_work, "moonshot_worker_tournament_step_seconds_count") == 0
    assert ("process_cpu_seconds_total", frozenset()) in before_work  # process collectors

    kinds = {"slow": "netbots:SlowGreedyBot", "greedy": "greedy", "random": "random",
             "illegal": "netbots:IllegalBot"}
    bots = {kind: register(address, f"{name}-{kind}") for kind in kinds}
    st.bots([(spec, bots[kind][1]) for kind, spec in kinds.items()], address)
    wait_until("four Play streams", lambda: value(
        scrape(ref_port), "moonshot_referee_play_streams") == 4)
    admin = Admin(address, admin_token)
    intruder = Admin(address, "adm.not-the-token")
    try:
        # The referee counts refused credentials and bodies that do not parse, by kind.
        with pytest.raises(grpc.RpcError) as denied:
            intruder.create_match(3, [bots[k][0] for k in ("slow", "greedy", "random")])
        assert denied.value.code() in (grpc.StatusCode.UNAUTHENTICATED,
                                       grpc.StatusCode.PERMISSION_DENIED)
        with grpc.insecure_channel(address) as ch, pytest.raises(grpc.RpcError) as bad:
            ch.unary_unary("/moon.v1.BotService/GetBot")(b"\xff\xff\xff", timeout=10)
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT

        fair = admin.create_match(3, [bots[k][0] for k in ("slow", "greedy", "random")],
                                  seed=5, rules={"max_hands": "2"}).match_id
        seen_live = wait_until("the match hosted", lambda: value(
            scrape(work_port), "moonshot_worker_matches_live") == 1, timeout=30, every=0.02)
        assert seen_live
        m_fair = finished(admin, fair)
        foul = admin.create_match(3, [bots[k][0] for k in ("greedy", "random", "illegal")],
                                  seed=6, max_strikes=3).match_id
        m_foul = finished(admin, foul)
    finally:
        admin.close()
        intruder.close()
    fair_record, foul_record = transcript_of(m_fair), transcript_of(m_foul)
    assert foul_record["end"] == "forfeit" and foul_record["forfeit"]["seat"] == 2
    n_fair, n_foul = len(actions_of(fair_record)), len(actions_of(foul_record))
    decisions = n_fair + n_foul

    wait_until("the worker done with both", lambda: value(
        scrape(work_port), "moonshot_worker_matches_live") == 0)
    ref_m, work_m = scrape(ref_port), scrape(work_port)
    # The referee accepted every answer (illegal ones too: the match judges them) and timed
    # each round trip.
    assert value(ref_m, "moonshot_referee_decisions_total") == decisions
    assert value(ref_m, "moonshot_referee_decision_seconds_count") == decisions
    assert value(ref_m, "moonshot_referee_decision_seconds_bucket", le="+Inf") == decisions
    assert 0 < value(ref_m, "moonshot_referee_decision_seconds_sum") < decisions * 2.0
    assert value(ref_m, "moonshot_referee_play_streams") == 4
    assert value(ref_m, "moonshot_referee_watch_streams") == 0
    assert value(ref_m, "moonshot_referee_rejected_total", kind="undecodable") == 1
    assert value(ref_m, "moonshot_referee_rejected_total", kind="not_yours") == 0
    assert sum(value(ref_m, "moonshot_referee_auth_failures_total", kind=k)
               for k in ("unauthenticated", "permission_denied")) == 1
    assert value(ref_m, "moonshot_referee_redis_errors_total", where="call") == 0

    # The worker settled the same decisions: all by the bots but the three illegal ones.
    assert value(work_m, "moonshot_worker_decisions_total", by="bot") == decisions - 3
    assert value(work_m, "moonshot_worker_decisions_total", by="illegal") == 3
    assert value(work_m, "moonshot_worker_decisions_total", by="late") == 0
    assert value(work_m, "moonshot_worker_decision_seconds_count") == decisions
    assert value(work_m, "moonshot_worker_faults_total", kind="illegal") == 3
    assert value(work_m, "moonshot_worker_faults_total", kind="forfeit") == 1
    assert value(work_m, "moonshot_worker_faults_total", kind="late") == 0
    assert value(work_m, "moonshot_worker_faults_total", kind="resumed") == 0
    assert value(work_m, "moonshot_worker_matches_finished_total", end="forfeit") == 1
    assert value(work_m, "moonshot_worker_matches_finished_total",
                 end=fair_record["end"]) == 1
    assert value(work_m, "moonshot_worker_match_decisions_count") == 2
    assert value(work_m, "moonshot_worker_match_decisions_sum") == decisions
    assert value(work_m, "moonshot_worker_matches_live") == 0
    # Each finished single match asked for a rating fit, which the worker ran.
    wait_until("the fits run", lambda: value(
        scrape(work_port), "moonshot_worker_fits_total", pool="3p") >= 1, timeout=60)
    work_m = scrape(work_port)
    assert value(work_m, "moonshot_worker_fit_seconds_count", pool="3p") == value(
        work_m, "moonshot_worker_fits_total", pool="3p")
    assert value(work_m, "moonshot_matches_open") == 0
    assert value(work_m, "moonshot_queue_depth", queue="moonshot-matches") == 0

    for split in (ref, worker):  # stopped: their last lines are read too
        code = split.out.stop()  # -9: it did not end within 10 s of SIGTERM
        assert code == 0, f"exit {code}: {split.err.text()[-3000:]}"
    ref_lines, work_lines = json_lines(ref.err), json_lines(worker.err)
    # The referee's lines about a bot carry its id.
    for bot_id, _ in bots.values():
        mine = [x for x in ref_lines if x.get("bot_id") == bot_id]
        assert any("connected" in x["msg"] for x in mine), bot_id
    # The worker's lines about a match carry its id and its bots' ids, RQ's own lines too.
    for m, record in ((m_fair, fair_record), (m_foul, foul_record)):
        about = [x for x in work_lines if x.get("match_id") == m.match_id]
        assert about, m.match_id
        assert all(x["bot_ids"] == list(m.bot_ids) for x in about
                   if x["logger"].startswith("moonshot")), about
        msgs = [x["msg"] for x in about]
        assert f"hosting match {m.match_id}" in msgs
        assert f"match {m.match_id} ended: {record['end']}" in msgs
        assert any(x["logger"].startswith("rq.") for x in about), about
    strikes = [x for x in work_lines if x.get("match_id") == foul and "replaced by" in x["msg"]]
    assert len(strikes) == 3


def test_a_tournament_game_is_counted_when_its_board_is_released(
        cluster: tuple[Stack, Split, Split, str], name: str) -> None:
    """A 3p round robin of six bots on boards, one of them away: every round, the table
    without it finishes while the other waits for it, so no board is released. The worker's
    finish metrics must not move meanwhile (a scraper would time a hidden game); once the
    bot comes and the boards are released, every game is counted."""
    st, _, worker, address = cluster
    port = int(worker.out.wait_for(r"worker metrics listening on 127\.0\.0\.1:(\d+)").group(1))
    regs = [register(address, f"{name}-{i}") for i in range(6)]
    st.bots([("greedy", token) for _, token in regs[:5]], address)
    admin = Admin(address, st.admin_token)
    try:
        t = admin.create_tournament(name="counted at release", players=3,
                                    format="round_robin", bot_ids=[b for b, _ in regs],
                                    rules={"max_hands": "2"}, grace_ms=600_000)
        wait_until("a table of each round done", lambda: admin.get_tournament(
            t.tournament_id).matches_done >= 10, timeout=120)
        samples = scrape(port)
        finished_now = sum(v for (n, _), v in samples.items()
                           if n == "moonshot_worker_matches_finished_total")
        assert finished_now == 0
        assert value(samples, "moonshot_worker_match_decisions_count") == 0
        st.bot("greedy", address, regs[5][1])
        wait_until("the tournament to end", lambda: admin.get_tournament(
            t.tournament_id).status != tournament_pb2.TOURNAMENT_STATUS_RUNNING, timeout=180)
        samples = scrape(port)
        assert sum(v for (n, _), v in samples.items()
                   if n == "moonshot_worker_matches_finished_total") == 20
        assert value(samples, "moonshot_worker_match_decisions_count") == 20
    finally:
        admin.close()


def test_the_arena_counts_its_tables_steps_and_waiting_bots(
        cluster: tuple[Stack, Split, Split, str]) -> None:
    """An arena of six house anchors (it needs no remote bot: two tables a board) plays by
    itself; the worker's metrics count the tables its steps formed and time each step, and
    the cluster gauges show the bots online and waiting as the latest step saw them. Its
    games count as finished only once their board is released."""
    st, _, worker, address = cluster
    port = int(worker.out.wait_for(r"worker metrics listening on 127\.0\.0\.1:(\d+)").group(1))
    before = scrape(port)
    assert value(before, "moonshot_worker_arena_tables_total", pool="3p") == 0
    assert value(before, "moonshot_worker_arena_step_seconds_count", pool="3p") == 0
    anchors = ["house:random", "house:greedy",
               *(f"house:pimc?samples={n}&solve=0" for n in range(1, 5))]
    admin = Admin(address, st.admin_token)
    stub = arena_pb2_grpc.ArenaServiceStub(admin.channel)
    try:
        stub.StartArena(arena_pb2.StartArenaRequest(
            pool=rating_pb2.RATING_POOL_THREE_PLAYER, settings=arena_pb2.ArenaSettings(
                rules={"max_hands": "1"}, anchors=anchors, concurrency=1, max_wait_ms=0)),
            metadata=admin.metadata, timeout=10)
        wait_until("three boards released", lambda: stub.GetArena(arena_pb2.GetArenaRequest(
            pool=rating_pb2.RATING_POOL_THREE_PLAYER), timeout=10).arena.released >= 6 or None,
            timeout=120)
        samples = scrape(port)
        tables = value(samples, "moonshot_worker_arena_tables_total", pool="3p")
        assert tables >= 6 and tables % 2 == 0, tables  # boards of two tables of three
        steps = value(samples, "moonshot_worker_arena_step_seconds_count", pool="3p")
        assert steps >= 3
        assert value(samples, "moonshot_worker_arena_steps_total", outcome="done") >= steps
        assert 0 < value(samples, "moonshot_worker_arena_step_seconds_sum", pool="3p") < steps
        assert value(samples, "moonshot_arena_bots_online", pool="3p") == 6
        waiting = value(samples, "moonshot_arena_bots_waiting", pool="3p")
        playing = value(samples, "moonshot_arena_games_playing", pool="3p")
        assert 0 <= waiting <= 6 and 0 <= playing <= 2
        assert ("moonshot_arena_bots_online", frozenset({("pool", "2v2")})) not in samples
        # Finished games counted are released ones: whole boards, never a hidden table.
        finished_now = sum(v for (n, _), v in samples.items()
                           if n == "moonshot_worker_matches_finished_total")
        assert finished_now >= 6, finished_now
        stub.StopArena(arena_pb2.StopArenaRequest(pool=rating_pb2.RATING_POOL_THREE_PLAYER),
                       metadata=admin.metadata, timeout=10)
    finally:
        admin.close()
