"""A format owns its options: one declaration gives the checks, the stored JSON, the wire
message (through protobuf's JSON mapping) and the command-line flags; old stored specs
and old requests with the flat fields still read."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

import pytest
from google.protobuf import json_format

from clients import format_options
from clients.admin import options_to_pb
from clients.parser import Parser, UsageError
from moon import Rules
from proto.moon.v1 import tournament_pb2
from server import wire
from store.errors import InvalidArgument
from store.records import Clock, Faults, TournamentSpec
from tournaments import formats
from tournaments.options import option_fields
from tournaments.spec import make_spec

ONEOF = tournament_pb2.TournamentSpec.DESCRIPTOR.oneofs_by_name["format_options"]


@pytest.mark.parametrize("name", formats.names())
def test_every_format_has_its_enum_value_and_options_message(name: str) -> None:
    assert tournament_pb2.TournamentFormat.Value(f"TOURNAMENT_FORMAT_{name.upper()}")
    assert name in {f.name for f in ONEOF.fields}
    message = tournament_pb2.TournamentSpec.DESCRIPTOR.fields_by_name[name].message_type
    declared = [f.name for f in option_fields(formats.get(name).options_type)]
    assert sorted(declared) == sorted(message.fields_by_name)
    for field in option_fields(formats.get(name).options_type):
        assert field.metadata["help"], (name, field.name)  # every option says what it does


def _round_trip(name: str, data: dict[str, Any]) -> dict[str, Any]:
    spec = tournament_pb2.TournamentSpec()
    options_to_pb(spec, name, data)
    assert spec.WhichOneof("format_options") == name
    got: dict[str, Any] = json_format.MessageToDict(getattr(spec, name),
                                                    preserving_proto_field_name=True)
    return got


@pytest.mark.parametrize(("name", "data"), [
    ("round_robin", {"rounds": 3, "rotate_partners": True, "all_triples": False}),
    ("single_elimination", {"series_length": 5}),
    ("double_elimination", {"series_length": 1}),
    ("swiss", {"rounds": 4, "teams": [{"bot_ids": ["a", "b"]}, {"bot_ids": ["c", "d"]}]}),
    ("swiss", {"rotate_partners": True}),
    ("swiss", {}),
])
def test_the_json_form_is_the_messages_proto3_json(name: str, data: dict[str, Any]) -> None:
    options = formats.get(name).read_options(data)
    back = formats.get(name).read_options(_round_trip(name, options.to_json()))
    assert back == options


def test_values_of_the_wrong_kind_or_unknown_names_are_refused_naming_the_field() -> None:
    rr = formats.get("round_robin")
    for data, needle in [({"rounds": "3"}, "round_robin.rounds: must be a whole number"),
                         ({"rounds": True}, "round_robin.rounds: must be a whole number"),
                         ({"rotate_partners": 1}, "round_robin.rotate_partners: must be true"),
                         ({"rounds": 0}, "round_robin.rounds: must be from 1 to 100"),
                         ({"series_length": 3}, "round_robin.series_length: not an option")]:
        with pytest.raises(InvalidArgument, match=f"^{needle}"):
            rr.read_options(data)
    with pytest.raises(InvalidArgument, match=r"^single_elimination\.series_length: must be an "
                                              r"odd number"):
        formats.get("single_elimination").read_options({"series_length": 4})


LEGACY = {"tournament_id": "t-old", "name": "old", "players": 4, "bot_ids": ["b-1", "b-2"],
          "names": ["a", "b"], "rules": {}, "seed": 3, "clock": [2000, 30000],
          "faults": [3, 30000], "rounds": 2, "series_length": 3, "duplicate": True,
          "rotate_partners": False, "seeding": "given", "all_triples": False}


@pytest.mark.parametrize(("fmt", "options"), [
    ("round_robin", {"rounds": 2, "rotate_partners": False, "all_triples": False}),
    ("single_elimination", {"series_length": 3}),
    ("double_elimination", {"series_length": 3}),
])
def test_a_spec_stored_with_the_flat_fields_reads_back(fmt: str, options: dict[str, Any]
                                                       ) -> None:
    spec = TournamentSpec.from_json(json.dumps({**LEGACY, "format": fmt}))
    assert dict(spec.options) == options
    assert spec.duplicate == "replay"
    assert formats.get(fmt).options(spec).to_json() == options
    again = TournamentSpec.from_json(spec.to_json())
    assert again == spec
    pb = wire.spec_to_pb(spec, reveal=False)
    assert pb.WhichOneof("format_options") == fmt


def _request(**kw: Any) -> tournament_pb2.TournamentSpec:
    return tournament_pb2.TournamentSpec(name="x", players=3, bot_ids=["a", "b", "c"], **kw)


def test_a_request_names_its_options_in_the_formats_message() -> None:
    pb = _request(format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
                  round_robin=tournament_pb2.RoundRobinOptions(rounds=3, all_triples=True))
    assert wire.spec_request_from_pb(pb)["options"] == {"rounds": 3, "all_triples": True}
    pb = _request(format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN)
    assert wire.spec_request_from_pb(pb)["options"] == {}


def test_what_older_clients_sent_for_every_format_still_reads() -> None:
    """The old SDK sent rounds=1 and series_length=1 whatever the format took."""
    pb = _request(format=tournament_pb2.TOURNAMENT_FORMAT_SINGLE_ELIMINATION, rounds=1,
                  series_length=3)
    assert wire.spec_request_from_pb(pb)["options"] == {"series_length": 3}
    pb = _request(format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN, rounds=2,
                  series_length=1)
    assert wire.spec_request_from_pb(pb)["options"] == {"rounds": 2}
    pb = _request(format=tournament_pb2.TOURNAMENT_FORMAT_SWISS, rounds=1, series_length=1)
    assert wire.spec_request_from_pb(pb)["options"] == {"rounds": 1}


def test_the_deprecated_flat_fields_still_read() -> None:
    pb = _request(format=tournament_pb2.TOURNAMENT_FORMAT_SINGLE_ELIMINATION, series_length=3)
    assert wire.spec_request_from_pb(pb)["options"] == {"series_length": 3}
    pb = _request(format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN, rounds=2,
                  rotate_partners=True)
    assert wire.spec_request_from_pb(pb)["options"] == {"rounds": 2, "rotate_partners": True}


@pytest.mark.parametrize(("kw", "needle"), [
    ({"format": tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN, "series_length": 3},
     "spec.series_length: not an option of the round_robin format"),
    ({"format": tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
      "single_elimination": tournament_pb2.BracketOptions(series_length=3)},
     "spec.single_elimination: options of the single_elimination format, but spec.format "
     "is round_robin"),
    ({"format": tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN, "rounds": 2,
      "round_robin": tournament_pb2.RoundRobinOptions(rounds=2)},
     "spec.rounds: deprecated; with spec.round_robin set"),
])
def test_options_of_another_format_are_refused_naming_the_field(kw: dict[str, Any],
                                                                needle: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        wire.spec_request_from_pb(_request(**kw))
    assert str(err.value).startswith(needle)


def _made(fmt: str, players: int = 3, **kw: Any) -> TournamentSpec:
    bots = [(b, b) for b in "abcd"[:players]]
    return make_spec(tournament_id="t-1", name="x", players=players, format=fmt, bots=bots,
                     rules={}, clock=Clock(), faults=Faults(), seed=5, duplicate="boards",
                     seeding="given", **kw)


def test_make_spec_still_takes_the_flat_options_of_older_callers() -> None:
    """Callers written before formats owned their options pass every flat option."""
    old = {"rounds": 2, "series_length": 1, "rotate_partners": False, "all_triples": False}
    assert dict(_made("round_robin", **old).options) == {
        "rounds": 2, "rotate_partners": False, "all_triples": False}
    assert dict(_made("single_elimination", players=4, rounds=1, series_length=3).options) \
        == {"series_length": 3}
    assert dict(_made("round_robin").options) == {"rounds": 1, "rotate_partners": False,
                                                  "all_triples": False}
    with pytest.raises(InvalidArgument) as err:
        _made("round_robin", series_length=3)
    assert str(err.value).startswith("spec.series_length: not an option of the round_robin")
    with pytest.raises(InvalidArgument) as err:
        _made("round_robin", rounds=0)
    assert str(err.value).startswith("round_robin.rounds: must be from 1")
    assert dict(_made("round_robin", options={"rounds": 3}, rounds=1).options)["rounds"] == 3
    with pytest.raises(InvalidArgument) as err:
        _made("round_robin", options={"rounds": 3}, rounds=2)
    assert str(err.value).startswith("spec.rounds: deprecated; with options given")


def test_a_response_sets_the_message_and_mirrors_the_flat_fields() -> None:
    spec = formats.prepare(TournamentSpec(
        tournament_id="t-1", name="x", players=4, format="round_robin",
        bot_ids=("a", "b", "c", "d"), names=("a", "b", "c", "d"), rules=Rules.make(4), seed=1,
        options={"rounds": 2, "rotate_partners": True}))
    pb = wire.spec_to_pb(spec, reveal=True)
    assert pb.round_robin.rounds == 2 and pb.round_robin.rotate_partners
    assert pb.rounds == 2 and pb.rotate_partners and not pb.series_length
    assert format_options.summary(pb) == ["2 rounds", "rotating partners"]
    assert format_options.format_title(pb) == "round robin"


def _cli(*argv: str) -> argparse.Namespace:
    p = Parser(prog="x")
    p.add_argument("--format")
    format_options.add_flags(p)
    return p.parse_args(list(argv))


def test_the_cli_has_a_flag_per_option_of_every_format() -> None:
    p = Parser(prog="x")
    format_options.add_flags(p)
    flags = {o for a in p._actions for o in a.option_strings}
    for name in formats.names():
        for field in option_fields(formats.get(name).options_type):
            flag = field.metadata["flag"] or field.name.replace("_", "-")
            assert f"--{flag}" in flags, (name, field.name)


def test_cli_flags_give_the_chosen_formats_options() -> None:
    args = _cli("--rounds", "3", "--rotate-partners")
    assert format_options.collect(args, "round_robin", "x") == {
        "rounds": 3, "rotate_partners": True, "all_triples": False}
    assert format_options.collect(_cli("--series", "5"), "double_elimination", "x") == {
        "series_length": 5}
    with pytest.raises(UsageError, match=r"^x: --series is not an option of --format "
                                         r"round-robin \(it is one of single-elimination"):
        format_options.collect(_cli("--series", "3"), "round_robin", "x")
    with pytest.raises(UsageError, match=r"^x: argument --rounds: must be from 1 to 100"):
        format_options.collect(_cli("--rounds", "0"), "round_robin", "x")
    with pytest.raises(UsageError, match=r"^x: argument --rounds: must be a whole number"):
        format_options.collect(_cli("--rounds", "many"), "round_robin", "x")


def test_swiss_rounds_unset_is_not_zero_on_the_wire() -> None:
    """`optional uint32 rounds`: unset means the field's default, 0 is refused."""
    assert "rounds" not in _round_trip("swiss", {})
    pb = _request(format=tournament_pb2.TOURNAMENT_FORMAT_SWISS,
                  swiss=tournament_pb2.SwissOptions(rounds=0))
    data = wire.spec_request_from_pb(pb)["options"]
    assert data == {"rounds": 0}
    with pytest.raises(InvalidArgument, match=r"^swiss\.rounds: must be from 1"):
        formats.get("swiss").read_options(data)


def test_cli_teams_and_shared_flags() -> None:
    args = _cli("--teams", "a+b, c+d", "--rounds", "2")
    assert format_options.collect(args, "swiss", "x") == {
        "rounds": 2, "teams": [{"bot_ids": ["a", "b"]}, {"bot_ids": ["c", "d"]}],
        "rotate_partners": False}
    for argv, needle in [(("--teams", "a+b,,c+d"), "argument --teams: team 2 is empty"),
                         (("--teams", "a+a"), "argument --teams: team 1 names 'a' twice"),
                         (("--teams", "a+b,b+c"), "argument --teams: 'b' is in team 1 and"),
                         (("--teams", "a+b+c"), "argument --teams: team 1 names 3 bots"),
                         (("--teams", "a+b", "--rotate-partners"),
                          "x: swiss.rotate_partners: not with teams")]:
        with pytest.raises(UsageError) as err:
            format_options.collect(_cli(*argv), "swiss", "x")
        assert needle in str(err.value), err.value
    with pytest.raises(UsageError, match="--teams is not an option of --format round-robin"):
        format_options.collect(_cli("--teams", "a+b"), "round_robin", "x")


def test_the_command_line_loads_no_pairing_search() -> None:
    """Every format registers at import, but the Swiss search's numpy and scipy (about
    half a second) load only when a round is paired: no CLI command pays for them."""
    out = subprocess.run([sys.executable, "-c", "import sys, clients.cli; print(sorted("
                          "m for m in ('numpy', 'scipy') if m in sys.modules))"],
                         capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
