"""Bus messages: every one round-trips, readers refuse what a writer got wrong, the
schema file matches the classes."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store import messages
from store.messages import Message, MessageError

ROOT = Path(__file__).resolve().parent.parent

_KIND_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "int": st.integers(0, 2**53),
    "float": st.floats(allow_nan=False, allow_infinity=False, width=32),
    "str": st.text(max_size=20),
    "bool": st.booleans(),
    "list": st.lists(st.integers(0, 100), max_size=5),
    "dict": st.dictionaries(st.text(max_size=5), st.integers(0, 9), max_size=3),
    "NoneType": st.none(),
}
# Fields whose values are checked beyond their JSON type.
_ENUMS = {("decision_rejected", "reason"): messages.DecisionRejected.REASONS,
          ("connection", "kind"): messages.ConnectionEntry.KINDS}

ALL = [(fam, cls) for fam, classes in messages.families().items() for cls in classes]


def _value(cls: type[Message], name: str, kinds: tuple[str, ...]) -> st.SearchStrategy[Any]:
    enum = _ENUMS.get((cls.TYPE, name))
    if enum is not None:
        return st.sampled_from(enum)
    return st.one_of(*(_KIND_VALUES[k] for k in kinds))


def message_of(cls: type[Message]) -> st.SearchStrategy[Message]:
    """Any valid message of a class."""
    fields = {name: _value(cls, name, kinds) for name, kinds, _ in messages.schema_of(cls)}
    return st.builds(cls, **fields)


@pytest.mark.parametrize(("family", "cls"), ALL, ids=[f"{f}.{c.TYPE}" for f, c in ALL])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_every_message_round_trips(family: str, cls: type[Message], data: st.DataObject) -> None:
    msg = data.draw(message_of(cls))
    text = messages.encode(msg)
    assert json.loads(text)["v"] == messages.VERSION
    assert messages.decode(text, family) == msg
    assert messages.decode(text.encode(), family, cls) == msg


@pytest.mark.parametrize(("family", "cls"), ALL, ids=[f"{f}.{c.TYPE}" for f, c in ALL])
def test_a_reader_refuses_what_its_writer_got_wrong(family: str, cls: type[Message]) -> None:
    """A field the reader does not know, one it misses, or one of the wrong type fails at
    once, naming the field: a writer and a reader that disagree cannot pass silently."""
    good = messages.to_dict(_example(cls))
    with pytest.raises(MessageError, match=r"unknown field.*surprise"):
        messages.from_dict({**good, "surprise": 1}, family)
    for name, kinds, required in messages.schema_of(cls):
        if required:
            with pytest.raises(MessageError, match=f"missing field '{name}'"):
                messages.from_dict({k: v for k, v in good.items() if k != name}, family)
        wrong: Any = [] if "list" not in kinds else "text"
        with pytest.raises(MessageError, match=f"{cls.TYPE}.{name}"):
            messages.from_dict({**good, name: wrong}, family)


def test_a_newer_writer_is_read_and_its_new_fields_ignored() -> None:
    good = messages.to_dict(_example(messages.Reply))
    newer = {**good, "v": messages.VERSION + 1, "added_later": True}
    assert messages.from_dict(newer, messages.REPLY) == _example(messages.Reply)


def test_log_entries_written_before_types_still_read() -> None:
    old_action = '{"seq":3,"seat":1,"action":95,"by":"late","ms":2001,"bank":0,"note":"x","us":1.5}'
    old_forfeit = '{"forfeit":2,"reason":"3 strikes","seq":9}'
    assert messages.decode(old_action, messages.LOG) == messages.ActionEntry(
        3, 1, 95, "late", 2001, 0, "x", 1.5)
    assert messages.decode(old_forfeit, messages.LOG) == messages.ForfeitEntry(2, "3 strikes", 9)


def test_enumerated_fields_refuse_other_values() -> None:
    with pytest.raises(MessageError, match="reason"):
        messages.DecisionRejected("m-1/0", "m-1", "bored", "?")
    with pytest.raises(MessageError, match="kind"):
        messages.ConnectionEntry(0, "asleep", 3, 0)


def test_unknown_types_and_garbage_are_refused() -> None:
    with pytest.raises(MessageError, match="not a bot event"):
        messages.decode('{"type":"gossip"}', messages.BOT)
    with pytest.raises(MessageError, match="not JSON"):
        messages.decode(b"\xff{", messages.BOT)
    with pytest.raises(MessageError, match="expected 'reply'"):
        messages.decode_as(messages.encode(_example(messages.Pong)), messages.BOT,
                           messages.Reply)  # type: ignore[arg-type]


def test_a_paused_request_resumes_with_the_time_it_had_left() -> None:
    req = dataclasses.replace(_example(messages.DecisionRequest), time_limit_ms=1000,
                              time_bank_ms=5000, paused_ms=1500)
    now = req.resumed(10_000)
    assert (now.time_limit_ms, now.time_bank_ms, now.paused_ms) == (0, 4500, None)
    assert now.deadline_unix_ms == 10_000 + 4500
    fresh = dataclasses.replace(req, paused_ms=None)
    assert fresh.resumed(10_000) is fresh


def test_the_schema_file_matches_the_classes() -> None:
    res = subprocess.run([sys.executable, "scripts/bus_schema.py", "--check"], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr


def _example(cls: type[Message]) -> Any:
    """A fixed valid message of a class."""
    fill = {"int": 1, "float": 1.5, "str": "x", "bool": True, "list": [1], "dict": {"a": 1},
            "NoneType": None}
    kwargs = {}
    for name, kinds, _ in messages.schema_of(cls):
        enum = _ENUMS.get((cls.TYPE, name))
        kwargs[name] = enum[0] if enum else fill[kinds[0]]
    return cls(**kwargs)
