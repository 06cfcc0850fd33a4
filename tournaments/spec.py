"""Making a tournament spec from a request: parse, seed, and check against its format."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from moon import MoonError, Rules
from store.errors import InvalidArgument
from store.records import Clock, Faults, TournamentSpec
from tournaments import bracket as brk
from tournaments import formats
from tournaments.options import Options

__all__ = ["make_spec"]


def make_spec(
    *, tournament_id: str, name: str, players: int, format: str,
    bots: Sequence[tuple[str, str]], rules: Mapping[str, str], clock: Clock, faults: Faults,
    seed: int | None, duplicate: str, seeding: str,
    options: Mapping[str, Any] | Options | None = None,
    ratings: Mapping[str, float] | None = None,
) -> TournamentSpec:
    """A checked spec: `bots` are (bot id, name) as given, `options` the format's own
    (their JSON form), `ratings` (pool ratings now) order the bots when the format seeds
    by rating; errors are InvalidArgument naming the field.

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
    opts = fmt.read_options(options or {})
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
        duplicate=duplicate, seeding=seeding, options=opts.to_json(),
    )
    return fmt.prepare(spec)
