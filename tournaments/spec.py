"""Making a tournament spec from a request: parse, seed, and check against its format."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from moon import MoonError, Rules
from store.errors import InvalidArgument
from store.records import Clock, Faults, SandboxLimits, TournamentSpec
from tournaments import bracket as brk
from tournaments import formats
from tournaments.options import Options, option_fields

__all__ = ["OLD_DEFAULTS", "flat_options", "make_spec"]

# What older callers passed for every format whatever it took: a flat option at this
# value is no option asked for, and a format without it takes no offence.
OLD_DEFAULTS: dict[str, object] = {"rounds": 1, "series_length": 1, "rotate_partners": False,
                                   "all_triples": False}


def make_spec(
    *, tournament_id: str, name: str, players: int, format: str,
    bots: Sequence[tuple[str, str]], rules: Mapping[str, str], clock: Clock, faults: Faults,
    seed: int | None, duplicate: str, seeding: str,
    options: Mapping[str, Any] | Options | None = None,
    ratings: Mapping[str, float] | None = None,
    rounds: int | None = None, series_length: int | None = None,
    rotate_partners: bool | None = None, all_triples: bool | None = None,
    sandbox: SandboxLimits | None = None,
) -> TournamentSpec:
    """A checked spec: `bots` are (bot id, name) as given, `options` the format's own
    (their JSON form), `ratings` (pool ratings now) order the bots when the format seeds
    by rating and stay in the spec for its standings (`TournamentSpec.ratings`); errors
    are InvalidArgument naming the field.

    `rounds`, `series_length`, `rotate_partners` and `all_triples` are the flat options
    of the spec from before formats owned theirs (deprecated, for older callers): when
    `options` is not given, those the format takes are its options.

    Seeding applies to the formats whose draw depends on the order (brackets): a round
    robin seats its bots in the order given, so one spec and seed always make the same
    tables. When no bot of a bracket has a rating yet, seeding by rating is seeding in
    the given order, and the spec says `given` so that everyone can see it.
    """
    if players not in (3, 4):
        raise InvalidArgument(f"players: must be 3 or 4, got {players}")
    try:
        parsed = Rules.make(players, dict(rules))
    except MoonError as exc:
        raise InvalidArgument(f"rules: {exc}") from None
    fmt = formats.get(format)
    flat = {k: v for k, v in (("rounds", rounds), ("series_length", series_length),
                              ("rotate_partners", rotate_partners),
                              ("all_triples", all_triples)) if v is not None}
    if options is None:
        options = flat_options(format, flat)
    elif stray := [k for k, v in flat.items() if v != OLD_DEFAULTS[k]]:
        raise InvalidArgument(f"spec.{stray[0]}: deprecated; with options given, give "
                              f"every option there")
    opts = fmt.read_options(options)
    ids = [bot_id for bot_id, _ in bots]
    if seeding == "rating" and fmt.seeded:
        known = {b: v for b, v in (ratings or {}).items() if b in ids}
        if known:
            # Pool ratings are centred on the pool mean: an unrated bot seeds as average.
            ids = list(brk.seed_order(ids, known, default=0.0))
        else:
            seeding = "given"
    names = dict(bots)
    spec = TournamentSpec(
        tournament_id=tournament_id, name=name, players=players, format=format,
        bot_ids=tuple(ids), names=tuple(names[b] for b in ids), rules=parsed,
        seed=secrets.randbits(63) if seed is None else seed, clock=clock, faults=faults,
        duplicate=duplicate, seeding=seeding, options=opts.to_json(), sandbox=sandbox,
        ratings={b: float(v) for b, v in (ratings or {}).items() if b in names},
    )
    return fmt.prepare(spec)


def flat_options(format: str, flat: Mapping[str, Any]) -> dict[str, Any]:
    """The options of `format` among deprecated flat ones (`rounds`, ...); InvalidArgument
    naming one the format does not take, unless it is at its old default."""
    takes = {f.name for f in option_fields(formats.get(format).options_type)}
    for name, value in flat.items():
        if name not in takes and value != OLD_DEFAULTS.get(name):
            raise InvalidArgument(f"spec.{name}: not an option of the {format} format "
                                  f"(its options: {', '.join(sorted(takes)) or 'none'})")
    return {name: value for name, value in flat.items() if name in takes}
