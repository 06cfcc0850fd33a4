"""Each format's options on the client side, made from the format's declaration
(`tournaments.options`): the command line's flags, and what people see of them.

One flag per option field of every registered format (`--rounds`, `--series`,
`--teams`, ...): formats that share a field name share the flag, and its help says
what it means for each. A flag is checked against the chosen `--format` once the
command line is read: an option of another format is a usage error naming the flag,
and a value the format refuses is one too (the same checks the referee makes, from
the same code). So a new format adds no CLI code.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from google.protobuf import json_format

from clients.parser import Parser, UsageError
from proto.moon.v1 import tournament_pb2
from store.errors import InvalidArgument
from tournaments import formats
from tournaments.options import option_fields, scalar_type

__all__ = ["add_flags", "collect", "format_title", "parse_flag", "summary"]

_DEST = "format_option_"


def _flag(field: dataclasses.Field[Any]) -> str:
    return str(field.metadata.get("flag") or field.name.replace("_", "-"))


def _declared() -> dict[str, list[tuple[str, dataclasses.Field[Any]]]]:
    """flag -> [(format, field)] over every registered format, in registration order."""
    out: dict[str, list[tuple[str, dataclasses.Field[Any]]]] = {}
    for name in formats.names():
        for field in option_fields(formats.get(name).options_type):
            if "help" in field.metadata:
                out.setdefault(_flag(field), []).append((name, field))
    return out


def _dashed(name: str) -> str:
    return name.replace("_", "-")


def add_flags(p: Parser) -> None:
    """Add one flag per option field of every registered format to `p`."""
    for flag, owners in _declared().items():
        parts: dict[str, list[str]] = {}  # help text -> formats, so shared text is said once
        for name, field in owners:
            default = field.default
            shown = "" if default in (None, False, ()) else f" (default {default})"
            parts.setdefault(f"{field.metadata['help']}{shown}", []).append(
                formats.get(name).title)
        text = "; ".join(f"{' and '.join(who)}: {what}" for what, who in parts.items())
        name, first = owners[0]
        dest = _DEST + flag.replace("-", "_")
        if scalar_type(formats.get(name).options_type, first.name) is bool:
            p.add_argument(f"--{flag}", dest=dest, action="store_const", const=True,
                           default=None, help=text)
        else:
            p.add_argument(f"--{flag}", dest=dest, default=None, help=text,
                           metavar=first.metadata.get("metavar") or None)


def parse_flag(fmt: str, flag: str, text: Any, prog: str) -> Any:
    """One option flag's value for format `fmt` (text, or True for a boolean flag given),
    in the JSON form of its field, checked on its own as the referee checks it;
    UsageError naming the flag."""
    owner = formats.get(fmt).options_type
    field = next(f for f in option_fields(owner) if _flag(f) == flag)
    value = _parse(field, scalar_type(owner, field.name), text, f"{prog}: argument --{flag}")
    try:
        owner.from_json({field.name: value})
    except InvalidArgument as exc:
        raise UsageError(f"{prog}: argument --{flag}: "
                         f"{str(exc).removeprefix(field.name + ': ')}") from None
    return value


def collect(args: argparse.Namespace, fmt: str, prog: str) -> dict[str, Any]:
    """The options the command line gives for format `fmt`, in their JSON form, checked
    as the referee checks them; UsageError naming the flag."""
    takes = {_flag(f): f for f in option_fields(formats.get(fmt).options_type)
             if "help" in f.metadata}
    values: dict[str, Any] = {}
    for flag, owners in _declared().items():
        given = getattr(args, _DEST + flag.replace("-", "_"), None)
        if given is None:
            continue
        field = takes.get(flag)
        if field is None:
            who = ", ".join(_dashed(name) for name, _ in owners)
            raise UsageError(f"{prog}: --{flag} is not an option of --format {_dashed(fmt)} "
                             f"(it is one of {who})")
        values[field.name] = parse_flag(fmt, flag, given, prog)
    try:
        out: dict[str, Any] = formats.get(fmt).read_options(values).to_json()
    except InvalidArgument as exc:
        raise UsageError(f"{prog}: {exc}") from None
    return out


def _parse(field: dataclasses.Field[Any], kind: type | None, text: Any, where: str) -> Any:
    """A flag's value in the JSON form of its field."""
    if text is True:  # a boolean flag, given
        return True
    parse = field.metadata.get("parse")
    try:
        if parse is not None:
            return parse(str(text))
        if kind is int:
            return int(str(text).strip())
    except ValueError as exc:
        detail = str(exc) if parse is not None else f"must be a whole number, got {text!r}"
        raise UsageError(f"{where}: {detail}") from None
    return str(text)


def _format_name(spec: tournament_pb2.TournamentSpec) -> str | None:
    try:
        name = tournament_pb2.TournamentFormat.Name(spec.format)
    except ValueError:
        return None
    name = name.removeprefix("TOURNAMENT_FORMAT_").lower()
    return name if name in formats.names() else None


def format_title(spec: tournament_pb2.TournamentSpec, unknown: str = "unknown format") -> str:
    """The format's name for people (`round robin`, `Swiss`)."""
    name = _format_name(spec)
    return formats.get(name).title if name else unknown


def summary(spec: tournament_pb2.TournamentSpec) -> list[str]:
    """The spec's format options for people (`3 rounds`, `best of 3`); [] when there is
    nothing to say or the options cannot be read."""
    name = _format_name(spec)
    which: str | None = spec.WhichOneof("format_options")
    if name is None or which != name:
        return []
    data = json_format.MessageToDict(getattr(spec, name), preserving_proto_field_name=True)
    try:
        said: list[str] = formats.get(name).read_options(data).summary()
    except InvalidArgument:
        return []
    return said
