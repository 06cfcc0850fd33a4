"""Making a tournament spec from a request: parse, seed, and check against its format."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence

from moon import MoonError, Rules
from store.errors import InvalidArgument
from store.records import Clock, Faults, TournamentSpec
from tournaments import bracket as brk
from tournaments import formats

__all__ = ["make_spec"]


def make_spec(
    *, tournament_id: str, name: str, players: int, format: str,
    bots: Sequence[tuple[str, str]], rules: Mapping[str, str], clock: Clock, faults: Faults,
    rounds: int, series_length: int, seed: int | None, duplicate: str, rotate_partners: bool,
    seeding: str, all_triples: bool, ratings: Mapping[str, float] | None = None,
) -> TournamentSpec:
    """A checked spec: `bots` are (bot id, name) as given, `ratings` (pool ratings now)
    order them when a bracket seeds by rating; errors are InvalidArgument naming the field.

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
    ids = [bot_id for bot_id, _ in bots]
    if seeding == "rating" and formats.get(format).seeded:
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
        rounds=rounds, series_length=series_length, duplicate=duplicate,
        rotate_partners=rotate_partners, seeding=seeding, all_triples=all_triples,
    )
    formats.check(spec)
    return spec
