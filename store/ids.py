"""Id formats and their parsers: every id a caller sends is checked here before it
becomes part of a Redis key, so no id can name another key (`<id>:log`, ...).

| id            | form                                   | example              |
|---------------|----------------------------------------|----------------------|
| bot           | `b-` + 1-32 of [0-9a-z]                | `b-3f9c0a1b2c4d`     |
| bot token     | `<bot id>.<secret>`                    | `b-3f9c....Zx8_q`    |
| author        | `u-` + 1-32 of [0-9a-z]                | `u-5d2e8a0c1f3b`     |
| author token  | `<author id>.<secret>`                 | `u-5d2e....Qw3_k`    |
| invitation    | `inv.<secret>`                         | `inv.Xc9...`         |
| tournament    | `t-` + 1-32 of [0-9a-z]                | `t-0a1b2c3d4e`       |
| test (of a change) | `c-` + 1-32 of [0-9a-z]           | `c-0a1b2c3d4e`       |
| single match  | `m-` + 1-32 of [0-9a-z]                | `m-0a1b2c3d4e5f`     |
| tournament game | `<tournament id>-<unit>-g<k>`       | `t-0a1b2c3d4e-x1-r2-g1` |
| test game     | `<test id>-p<board>-c` or `-b`         | `c-0a1b2c3d4e-p7-c`  |
| request       | `<match id>/<sequence>`                | `m-0a1b2c3d4e5f/17`  |
| match job     | `match-<match id>`                     |                      |
| scheduler job | `advance-<tournament or test id>`      |                      |
| bot event     | `<ms>-<n>` (an entry of the bot's event log) | `1712345678901-0` |
"""

from __future__ import annotations

import re
import secrets

from bots import house

__all__ = [
    "HOUSE_PREFIX",
    "MAX_SEQ_DIGITS",
    "advance_job_id",
    "author_of_token",
    "bot_of_token",
    "fit_job_id",
    "is_author_id",
    "is_bot_id",
    "is_event_id",
    "is_house_bot",
    "is_match_id",
    "is_test_id",
    "is_tournament_id",
    "match_job_id",
    "match_of_request",
    "new_author_id",
    "new_bot_id",
    "new_match_id",
    "new_test_id",
    "new_tournament_id",
    "parse_event_id",
    "request_id",
    "seq_of_request",
]

_BOT = re.compile(r"b-[0-9a-z]{1,32}")
_AUTHOR = re.compile(r"u-[0-9a-z]{1,32}")
_TOURNAMENT = re.compile(r"t-[0-9a-z]{1,32}")
_TEST = re.compile(r"c-[0-9a-z]{1,32}")
# A single match, or a game of an event (a tournament's or a test's): the event's id first.
_MATCH = re.compile(r"m-[0-9a-z]{1,32}|[tc]-[0-9a-z]{1,32}-[A-Za-z0-9-]{1,96}")
_SECRET = re.compile(r"[A-Za-z0-9_-]{1,128}")
MAX_SEQ_DIGITS = 18  # a sequence must fit Redis's 64-bit list index
_EVENT = re.compile(r"([0-9]{1,19})-([0-9]{1,19})")  # a stream entry id: two 64-bit numbers


def new_bot_id() -> str:
    """A fresh random bot id."""
    return "b-" + secrets.token_hex(6)


def new_author_id() -> str:
    """A fresh random author id."""
    return "u-" + secrets.token_hex(6)


def is_author_id(text: str) -> bool:
    """True when `text` has the form of an author id."""
    return _AUTHOR.fullmatch(text) is not None


def author_of_token(token: str) -> tuple[str, str] | None:
    """(author id, secret) of a well-formed author token, else None."""
    author_id, dot, secret = token.partition(".")
    if not dot or not is_author_id(author_id) or _SECRET.fullmatch(secret) is None:
        return None
    return author_id, secret


def new_tournament_id() -> str:
    """A fresh random tournament id."""
    return "t-" + secrets.token_hex(5)


def new_test_id() -> str:
    """A fresh random id for a test of a change."""
    return "c-" + secrets.token_hex(5)


def new_match_id() -> str:
    """A fresh random id for a single match (tournament games derive theirs)."""
    return "m-" + secrets.token_hex(6)


def is_bot_id(text: str) -> bool:
    """True when `text` has the form of a bot id."""
    return _BOT.fullmatch(text) is not None


HOUSE_PREFIX = house.PREFIX  # one prefix, `bots.house`'s


def is_house_bot(bot_id: str) -> bool:
    """True for a house bot's id as the stack stores it (`house:...`, canonical: lower case,
    `bots.house.parse`): the stack's own players, trusted to keep nothing between games, so
    the rule that no bot is dealt a deal twice is not theirs. Input that merely claims the
    prefix in any case is `bots.house.is_house`'s to judge (and refuse)."""
    return bot_id.startswith(HOUSE_PREFIX)


def is_tournament_id(text: str) -> bool:
    """True when `text` has the form of a tournament id."""
    return _TOURNAMENT.fullmatch(text) is not None


def is_test_id(text: str) -> bool:
    """True when `text` has the form of a test's id (a test of a change)."""
    return _TEST.fullmatch(text) is not None


def is_event_id(text: str) -> bool:
    """True for the id of an event that owns games and a scheduler: a tournament or a test.
    A match's `tournament_id` field holds it (empty for a single match)."""
    return is_tournament_id(text) or is_test_id(text)


def is_match_id(text: str) -> bool:
    """True when `text` has the form of a match id (single or tournament game)."""
    return _MATCH.fullmatch(text) is not None


def bot_of_token(token: str) -> tuple[str, str] | None:
    """(bot id, secret) of a well-formed bot token, else None."""
    bot_id, dot, secret = token.partition(".")
    if not dot or not is_bot_id(bot_id) or _SECRET.fullmatch(secret) is None:
        return None
    return bot_id, secret


def request_id(match_id: str, seq: int) -> str:
    """The id of the request for action `seq` of a match."""
    return f"{match_id}/{seq}"


def match_of_request(rid: str) -> str:
    """The match id a request id names, or '' when it is not a well-formed request id."""
    match_id, sep, seq = rid.rpartition("/")
    well_formed = sep and seq.isascii() and seq.isdigit() and len(seq) <= MAX_SEQ_DIGITS
    return match_id if well_formed and is_match_id(match_id) else ""


def seq_of_request(rid: str) -> int:
    """The sequence of a well-formed request id (see `match_of_request`), else -1."""
    if not match_of_request(rid):
        return -1
    return int(rid.rpartition("/")[2])


def match_job_id(match_id: str) -> str:
    """The RQ job id hosting a match."""
    return f"match-{match_id}"


def advance_job_id(event_id: str) -> str:
    """The RQ job id of a scheduling step of a tournament or a test."""
    return f"advance-{event_id}"


def fit_job_id(pool: str) -> str:
    """The RQ job id of a pool's rating fit."""
    return f"fit-{pool}"


def parse_event_id(text: str) -> tuple[int, int] | None:
    """A bot event's id as (ms, n), in the order the bot's event log holds them; None for
    anything else."""
    m = _EVENT.fullmatch(text)
    if m is None:
        return None
    ms, n = int(m[1]), int(m[2])
    return (ms, n) if ms < 2**64 and n < 2**64 else None
