"""The shared telemetry pieces: the JSON log formatter and its context, and serving a
registry of our own over HTTP."""

from __future__ import annotations

import argparse
import json
import logging
import threading
import urllib.request

import pytest
from prometheus_client import Counter
from prometheus_client.parser import text_string_to_metric_families

from clients.flags import listen_address
from telemetry import export, logs


def _record(msg: str, *args: object, **extra: object) -> logging.LogRecord:
    logger = logging.getLogger("moonshot.test")
    return logger.makeRecord(logger.name, logging.WARNING, __file__, 1, msg, args, None,
                             extra=extra or None)


def test_a_record_is_one_json_line_with_the_context_and_its_extra_fields() -> None:
    fmt = logs.JsonFormatter()
    with logs.context(match_id="m-1", bot_ids=["b1", "b2"]):
        logs.bind(tournament_id="t-9")
        line = fmt.format(_record("two\nlines %s", "\x1b[32mgreen\x1b[39;49;00m",
                                  bot_id="b2", seat=1))
    assert "\n" not in line
    out = json.loads(line)
    assert out["level"] == "WARNING" and out["logger"] == "moonshot.test"
    assert out["msg"] == "two\nlines green"  # colour codes gone, the newline escaped
    assert out["ts"].endswith("Z") and out["ts"][10] == "T"
    assert (out["match_id"], out["bot_ids"], out["tournament_id"]) == ("m-1", ["b1", "b2"],
                                                                       "t-9")
    assert (out["bot_id"], out["seat"]) == ("b2", 1)
    # Leaving the block undoes both the context and what was bound inside it.
    after = json.loads(fmt.format(_record("plain")))
    assert not {"match_id", "bot_ids", "tournament_id", "bot_id"} & set(after)
    assert logs.current() == {}


def test_a_traceback_travels_inside_the_object() -> None:
    fmt = logs.JsonFormatter()
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        rec = logging.getLogger("x").makeRecord("x", logging.ERROR, __file__, 1, "failed",
                                                (), sys.exc_info())
    out = json.loads(fmt.format(rec))
    assert out["msg"] == "failed"
    assert "Traceback" in out["exc"] and "ValueError: boom" in out["exc"]


def test_each_thread_has_its_own_context() -> None:
    seen: dict[str, object] = {}
    ready = threading.Event()

    def other() -> None:
        with logs.context(match_id="in-thread"):
            ready.wait(5)
            seen["thread"] = logs.current().get("match_id")

    t = threading.Thread(target=other)
    t.start()
    with logs.context(match_id="main"):
        ready.set()
        t.join(5)
        seen["main"] = logs.current().get("match_id")
    assert seen == {"thread": "in-thread", "main": "main"}


def test_json_logs_are_asked_for_by_the_flag_or_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(logs.ENV, raising=False)
    assert logs.wanted(True) and not logs.wanted(False)
    monkeypatch.setenv(logs.ENV, "1")
    assert logs.wanted(False)
    monkeypatch.setenv(logs.ENV, "0")
    assert not logs.wanted(False)


def test_listen_addresses_take_port_zero_and_refuse_nonsense() -> None:
    assert export.parse_listen("127.0.0.1:0") == ("127.0.0.1", 0)
    assert export.parse_listen("[::1]:9100") == ("[::1]", 9100)
    assert listen_address("0.0.0.0:0") == "0.0.0.0:0"
    for bad in ("9100", "host:", ":9100", "host:70000", "host:x"):
        with pytest.raises(ValueError, match="HOST:PORT"):
            export.parse_listen(bad)
        with pytest.raises(argparse.ArgumentTypeError, match="HOST:PORT"):
            listen_address(bad)


def test_a_registry_of_our_own_is_served_over_http() -> None:
    reg = export.registry()
    hits = Counter("moonshot_test_hits", "Hits.", registry=reg)
    hits.inc(3)
    host, port = export.serve(reg, "127.0.0.1:0")
    assert host == "127.0.0.1" and port > 0
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["moonshot_test_hits"].samples[0].value == 3
    assert "process_cpu_seconds" in families  # the process collector is in it too
    assert "python_info" in families
    with pytest.raises(OSError, match=r"cannot serve metrics on 127\.0\.0\.1"):
        export.serve(reg, f"127.0.0.1:{port}")  # taken now
