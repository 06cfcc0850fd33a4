"""A format's options: a frozen dataclass the format declares, read and written as JSON.

Each format declares its options once, as a subclass of `Options` whose fields say
everything the rest of the project needs to know about them:

- the type and default (the dataclass field), checked in `__post_init__` with an
  InvalidArgument that starts with the field's name;
- for people and the command line, `option(default, help, flag=..., parse=...,
  metavar=...)`: the CLI makes one `--flag` per field from it (`clients/format_options.py`),
  so a new format adds no CLI code;
- on the wire, the format's message in `TournamentSpec.format_options` has a field of
  the same name and kind for each field, and the JSON form here is that message's
  proto3 JSON with field names as declared (`to_json` / `from_json`): the referee
  converts with protobuf's own `json_format`, knowing nothing of the format.

Types a field may have: `bool`, `int`, `str`, `X | None` (an `optional` proto field:
None is unset), `tuple[X, ...]` (a `repeated` one), and a nested `Options` (a message).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Self

from store.errors import InvalidArgument

__all__ = ["Options", "option", "option_fields", "scalar_type"]

def option(default: Any, help: str, *, flag: str = "", metavar: str = "",
           parse: Callable[[str], Any] | None = None) -> Any:
    """A field of a format's options: its default and a line of help for people; `flag`
    names the command-line flag when it is not the field's name with dashes, `parse`
    reads the flag's text when a plain `int(...)` or `str` will not do (it raises
    ValueError with a message a user can act on)."""
    if isinstance(default, (list, dict, set)):
        raise TypeError("option defaults must be immutable (use a tuple)")
    return dataclasses.field(default=default, metadata={
        "help": help, "flag": flag, "metavar": metavar, "parse": parse})


def option_fields(cls: type[Options]) -> tuple[dataclasses.Field[Any], ...]:
    """The declared fields of an options class, in order."""
    return dataclasses.fields(cls)


def scalar_type(cls: type[Options], name: str) -> type | None:
    """The type of field `name` when it is a plain `bool`, `int` or `str` (optional or
    not), else None."""
    hint = typing.get_type_hints(cls)[name]
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = inner[0] if len(inner) == 1 else None
    return hint if hint in (bool, int, str) else None


@dataclass(frozen=True, slots=True)
class Options:
    """The base of every format's options (and of a message nested in them)."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """The options from their JSON form; InvalidArgument naming the field for a value
        of the wrong kind, an unknown name, or one the class's own checks refuse."""
        if not isinstance(data, Mapping):
            raise InvalidArgument(f"options: must be an object of named options, got "
                                  f"{type(data).__name__}")
        hints = typing.get_type_hints(cls)
        names = [f.name for f in dataclasses.fields(cls)]
        for key in data:
            if key not in names:
                takes = ", ".join(names) if names else "none"
                raise InvalidArgument(f"{str(key)[:64]}: not an option of this format "
                                      f"(its options: {takes})")
        return cls(**{k: _value(v, hints[k], k) for k, v in data.items()})

    def to_json(self) -> dict[str, Any]:
        """The JSON form: every field set (None left out), tuples as lists."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = _plain(value)
        return out

    def summary(self) -> list[str]:
        """What people should see of these options, as short phrases (`3 rounds`)."""
        return []


def _plain(value: Any) -> Any:
    if isinstance(value, Options):
        return value.to_json()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _value(value: Any, hint: Any, name: str) -> Any:
    """`value` (JSON) as a field of type `hint`, or InvalidArgument naming `name`."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        if value is None:
            return None
        inner = [a for a in args if a is not type(None)]
        return _value(value, inner[0], name)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise InvalidArgument(f"{name}: must be a list, got {_kind(value)}")
        return tuple(_value(v, args[0], f"{name}[{i}]") for i, v in enumerate(value))
    if isinstance(hint, type) and issubclass(hint, Options):
        try:
            return hint.from_json(value)
        except InvalidArgument as exc:
            raise InvalidArgument(f"{name}.{exc}") from None
    if hint is bool:
        if not isinstance(value, bool):
            raise InvalidArgument(f"{name}: must be true or false, got {_kind(value)}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgument(f"{name}: must be a whole number, got {_kind(value)}")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise InvalidArgument(f"{name}: must be text, got {_kind(value)}")
        return value
    raise TypeError(f"{name}: options cannot hold a {hint!r}")


def _kind(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"a {type(value).__name__}"
