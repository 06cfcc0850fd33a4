"""In-process self-play: bots play games against each other, no network involved."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clients.bot import Bot, bad_answer
from moon import Action, GameState, IllegalActionError, Rules
from moon.deal import mix64
from moon.transcript import transcript

__all__ = ["BotFailure", "SeatStats", "SelfplayReport", "bot_seed", "play_game", "selfplay"]


class BotFailure(Exception):
    """A bot raised, or answered with something that is not one of the legal actions.

    The message names the bot (as given), its seat, the game's seed and the hand;
    `bot_traceback` is the bot's own traceback when it raised (else empty).
    """

    def __init__(self, message: str, bot_traceback: str = "") -> None:
        super().__init__(message)
        self.bot_traceback = bot_traceback


def _raised(where: str, exc: Exception) -> BotFailure:
    # Drop the frame that caught it (self-play's own): what is left is the bot's code.
    tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    first = str(exc).strip().splitlines()
    detail = f"{type(exc).__name__}: {first[0]}" if first else type(exc).__name__
    return BotFailure(f"{where} raised {detail}", text)


def _bad_answer(where: str, choice: object, legal: Sequence[Action]) -> BotFailure:
    return BotFailure(f"{where} {bad_answer(choice, legal)}")


def bot_seed(game_seed: int, seat: int) -> int:
    """The seed of the bot in `seat` for one game: same game seed, same bot choices."""
    return mix64(game_seed ^ mix64(0xB07 + seat))


def play_game(rules: Rules, seed: int, bots: Sequence[Bot], names: Sequence[str]) -> dict[str, Any]:
    """Play one game to its end and return its transcript; BotFailure naming the bot, seat,
    game and hand if a bot raises or answers with something that is not legal."""
    st = GameState.new(rules, seed)
    while not st.is_over:
        seat = st.to_act
        legal = st.legal_actions()
        obs = st.observation(seat)
        try:
            choice = bots[seat].act(obs, legal)
        except Exception as exc:
            raise _raised(_where(names, seat, seed, st.hand_index + 1), exc) from None
        if not isinstance(choice, Action):
            raise _bad_answer(_where(names, seat, seed, st.hand_index + 1), choice, legal)
        try:
            st.apply(choice, seat)
        except IllegalActionError:
            raise _bad_answer(_where(names, seat, seed, st.hand_index + 1), choice,
                              legal) from None
    record = transcript(rules, seed, st.actions, names)
    for seat, bot in enumerate(bots):
        try:
            bot.game_over(record)
        except Exception as exc:
            raise _raised(f"{_where(names, seat, seed)}: its game_over", exc) from None
    return record


def _where(names: Sequence[str], seat: int, seed: int, hand: int | None = None) -> str:
    at = f"game seed {seed}" + (f", hand {hand}" if hand is not None else "")
    return f"bot {names[seat]!r} in seat {seat} ({at})"


@dataclass
class SeatStats:
    """Totals for one seat over the run."""

    name: str
    wins: int = 0
    draws: int = 0
    score_sum: int = 0


@dataclass
class SelfplayReport:
    """What a self-play run produced."""

    players: int
    games: int = 0
    hands: int = 0
    hand_limit: int = 0
    seconds: float = 0.0
    seats: list[SeatStats] = field(default_factory=list)

    def lines(self) -> list[str]:
        """A human summary, one line per row."""
        rate = self.games / self.seconds if self.seconds else 0.0
        w = max([24, *(len(s.name) + 2 for s in self.seats)])
        out = [
            f"games: {self.games}   hands/game: {self.hands / max(self.games, 1):.1f}   "
            f"hand-limit ends: {self.hand_limit}   games/s: {rate:.1f}",
            f"{'seat':<6}{'bot':<{w}}{'wins':>7}{'win%':>8}{'draws':>7}{'mean final':>12}",
        ]
        for i, s in enumerate(self.seats):
            pct = 100.0 * s.wins / self.games if self.games else 0.0
            mean = s.score_sum / self.games if self.games else 0.0
            out.append(f"{i:<6}{s.name:<{w}}{s.wins:>7}{pct:>7.1f}%{s.draws:>7}{mean:>12.1f}")
        by_bot: dict[str, list[int]] = {}
        for s in self.seats:
            agg = by_bot.setdefault(s.name, [0, 0, 0])
            agg[0] += 1
            agg[1] += s.wins
            agg[2] += s.score_sum
        if len(by_bot) < len(self.seats):
            out.append("per bot (seats pooled):")
            for name, (seats, wins, total) in by_bot.items():
                games = seats * self.games
                out.append(f"  {name:<{w}} win% per seat {100.0 * wins / max(games, 1):5.1f}   "
                           f"mean final {total / max(games, 1):6.1f}")
        return out


def selfplay(
    rules: Rules,
    bot_classes: Sequence[type[Bot]],
    names: Sequence[str],
    games: int,
    seed: int,
    on_game: Callable[[int, dict[str, Any]], None] | None = None,
) -> SelfplayReport:
    """Play `games` games with seeds `seed, seed+1, ...`; seats keep their bots."""
    report = SelfplayReport(players=rules.players, seats=[SeatStats(n) for n in names])
    start = time.perf_counter()
    for g in range(games):
        game_seed = seed + g
        bots = []
        for s, cls in enumerate(bot_classes):
            try:
                bots.append(cls(bot_seed(game_seed, s)))
            except Exception as exc:
                raise _raised(f"{_where(names, s, game_seed)}: creating it", exc) from None
        record = play_game(rules, game_seed, bots, names)
        report.games += 1
        report.hands += len(record["hands"])
        report.hand_limit += record["end"] == "hand_limit"
        for s, stats in enumerate(report.seats):
            side = s % 2 if rules.players == 4 else s
            stats.score_sum += record["final"][side]
            if record["winner"] is None:
                stats.draws += 1
            elif record["winner"] == side:
                stats.wins += 1
        if on_game is not None:
            on_game(g, record)
    report.seconds = time.perf_counter() - start
    return report
