"""The compact encoding of a finished game, and back to its `moon-transcript/1` JSON, byte for byte.

A game is its rules, its seed and its actions; everything else in its transcript
is either derived from them by replay (`hands`, `final`, `winner`, `end`,
`partial_hand`), shared by every game of its event, or a few short per-game
fields. `encode` splits a transcript into two parts:

- the **template**, compact JSON of what the games of one event share: the
  ordered top-level keys, which of them are per game, which per-game ones the
  archive hands back itself (`known`), and the values of the shared ones
  (`format`, `players`, `rules`, `clock`, `fault_policy`, `event`, the event's id field,
  `duplicate`, `notes`). The same event and the same `known` keys give the same
  string, so the archive stores it once, keyed by `template_id`;
- the **blob**, the game's own bytes.

`known` holds values the archive keeps in columns anyway (`match_id`, `seed`,
`bot_ids`, `board`, `unit`, or any other per-game key): a key whose known value
equals the transcript's is left out of the blob, named in the template, and
taken from `known` again by `decode`. Pass the same keys to both.

Actions are coded as their index among the legal actions at that point
(`GameState.legal_ids()`), all of them as ONE mixed-radix integer: value =
sum(idx_i * prod_{j<i} n_i), little-endian, as few bytes as it needs. That is
log2 of the product of the legal counts, the entropy bound of a game under a
uniform-legal model (`entropy_bits`), to within a byte.

Blob, version 1 (all integers unsigned LEB128 varints unless said otherwise)::

    version  1 byte   1
    flags    1 byte   FALLBACK, CUT, FORFEIT, WINNER, END, GENERIC, DEFLATED, FAULTS
    crc      4 bytes  CRC32 (little-endian) of the transcript's JSON bytes and of
                      every other byte of the blob
    length   varint   bytes of the fields that follow (as stored)
    fields            raw, or raw deflate with the preset dictionary ZDICT (DEFLATED):
      count             actions played, only for a game cut short (CUT)
      generic           JSON of the per-game fields no typed form fits (GENERIC)
      then, per per-game key of the template in order, unless known, generic or
      derived: seed (varint); match_id, board, unit (text); bot_ids (count,
      texts); seats (per seat: 0 and a text, 1 = that seat's bot id, 2+j =
      seat j's name); faults if any (FAULTS: count; per fault the seq's gap from
      the last, kind and reason: hand, seat and replacement are replayed); forfeit (seat,
      reason); winner (0 = null, w+1) and end (0 and a text, or 1 + its index
      in ENDS) only when they differ from the replay's (WINNER, END)
    actions           the mixed-radix integer: the rest of the blob

A text is a varint length and UTF-8. The game ends where the rules end it, or
after `count` actions when cut short (a forfeit), and the integer must be used
up exactly.

**Integrity.** The CRC covers the decoded transcript's JSON and the blob's own
bytes, so a damaged blob (a flipped bit, a truncation), a wrong template or
wrong `known` values raise a `CodecError` on decode rather than returning
another game (or the right game from bytes that are not what was written):
replay alone would not do, as every integer below the product of the legal
counts is a legal game.

**Never lose a game.** `encode` decodes what it made and compares JSON bytes;
anything the compact form cannot hold exactly (an unknown field inside a hand,
an older shape, a game that does not replay) is stored whole instead: flags =
FALLBACK, then the zlib-compressed JSON, with the fixed `FALLBACK_TEMPLATE`.
An unknown top-level field does not need the fallback: it goes per game in
`generic`. ZDICT and the tables below are part of version 1: changing them
needs a new version byte.

Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from moon.actions import ACTIONS
from moon.errors import MoonError
from moon.rules import Rules
from moon.state import GameState
from moon.transcript import actions_of, transcript

__all__ = [
    "FALLBACK_TEMPLATE",
    "VERSION",
    "CodecError",
    "Packed",
    "decode",
    "encode",
    "entropy_bits",
    "is_compact",
    "shared",
    "template_id",
]

VERSION = 1
FALLBACK_TEMPLATE = '{"codec":1,"fallback":true}'

# Flag bits of the second byte.
FALLBACK = 0x01  # the rest is the whole transcript, zlib-compressed JSON
CUT = 0x02  # the game was cut short (a forfeit): the action count is stored, partial_hand shown
FORFEIT = 0x04  # the transcript has a `forfeit` field
WINNER = 0x08  # `winner` is stored: it differs from the replay's (a forfeit's adjudication)
END = 0x10  # `end` is stored: it differs from the replay's ("forfeit")
GENERIC = 0x20  # some per-game fields are stored as JSON
DEFLATED = 0x40  # the fields are raw deflate with ZDICT
FAULTS = 0x80  # `faults` is not empty: stored (an empty list costs nothing)
_ALL_FLAGS = FALLBACK | CUT | FORFEIT | WINNER | END | GENERIC | DEFLATED | FAULTS

# Top-level keys whose values the games of one event share: they go in the template.
SHARED = frozenset(("format", "players", "rules", "clock", "fault_policy", "event",
                    "tournament_id", "test_id", "arena", "duplicate", "notes"))
# What a replay of the rules, the seed and the actions gives back.
_DERIVED = frozenset(("hands", "final", "partial_hand", "winner", "end"))
_REQUIRED = ("format", "players", "seed", "rules", "seats", "hands", "final", "winner", "end")
_FAULT_KEYS = ["seq", "hand", "seat", "kind", "reason", "replacement"]
_FORFEIT_KEYS = ["seat", "reason"]
ENDS = ("normal", "hand_limit", "forfeit")
KINDS = ("late", "illegal")
# Deflate's preset dictionary: what the text of a game's fields is often made of (house
# bot ids, the referee's fault and forfeit reasons). The likeliest strings come last.
ZDICT = (
    b'{"":null,"":true,"":false,"":[]}"seq":"hand":"seat":"kind":"reason":"replacement":'
    b"play 6-6discard pass bid trump doubles none "
    b"t-c-m-arena-3p/b arena-2v2/b "
    b"house bot  computed  ms, limit  ms answered after  ms, limit  ms "
    b"no answer within 1000 ms 'play ' is not a legal action here "
    b"disconnected for more than 30 s "
    b"3 strikes (late or illegal answers)"
    b"house:pimc?samples=64&solve=3house:randomhouse:greedy"
)
_MAX_VARINT_BYTES = 10  # 70 bits: a seed (64) and any count fit


class CodecError(ValueError):
    """A blob, template or `known` values that do not decode to a game; the message says
    what is wrong (damaged, truncated, an unknown version, a missing known value)."""


class _Unfit(Exception):
    """The compact form cannot hold this transcript: `encode` stores it whole."""


@dataclass(frozen=True, slots=True)
class Packed:
    """A game encoded: `template` (shared by the games of an event, stored once) and `blob`."""

    template: str
    blob: bytes


def template_id(template: str) -> str:
    """The key a template is stored under: the SHA-256 of its text, in hex."""
    return hashlib.sha256(template.encode()).hexdigest()


def is_compact(blob: bytes) -> bool:
    """True when `blob` is the compact form (not the whole JSON of the fallback)."""
    return len(blob) >= 2 and blob[0] == VERSION and not blob[1] & FALLBACK


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def _sealed(text: str, blob: bytes) -> bytes:
    """`blob` (its CRC bytes zero) with the CRC of the transcript's JSON and the blob's
    other bytes in place."""
    crc = zlib.crc32(blob[:2] + blob[6:], zlib.crc32(text.encode()))
    return blob[:2] + crc.to_bytes(4, "little") + blob[6:]


# ----------------------------------------------------------------- bytes


class _Writer:
    """Varints and texts into a byte buffer."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def uint(self, n: int) -> None:
        if n < 0:
            raise _Unfit(f"negative number {n}")
        while n > 0x7F:
            self.buf.append(n & 0x7F | 0x80)
            n >>= 7
        self.buf.append(n)

    def text(self, s: str) -> None:
        data = s.encode()
        self.uint(len(data))
        self.buf += data

    def choice(self, s: str, table: tuple[str, ...]) -> None:
        """1 + the index of `s` in `table`, or 0 and `s` itself."""
        if s in table:
            self.uint(1 + table.index(s))
        else:
            self.uint(0)
            self.text(s)


class _Reader:
    """Reads what `_Writer` wrote; a CodecError for anything short or malformed."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def uint(self) -> int:
        n = shift = 0
        for _ in range(_MAX_VARINT_BYTES):
            if self.pos >= len(self.data):
                raise CodecError(f"damaged blob: {self.what} end inside a number (truncated?)")
            b = self.data[self.pos]
            self.pos += 1
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7
        raise CodecError(f"damaged blob: a number in {self.what} runs past "
                         f"{_MAX_VARINT_BYTES} bytes")

    def text(self) -> str:
        n = self.uint()
        if self.pos + n > len(self.data):
            raise CodecError(f"damaged blob: a text of {n} bytes runs past the end of "
                             f"{self.what} (truncated?)")
        raw = self.data[self.pos : self.pos + n]
        self.pos += n
        try:
            return raw.decode()
        except UnicodeDecodeError:
            raise CodecError(f"damaged blob: a text in {self.what} is not UTF-8") from None

    def choice(self, table: tuple[str, ...]) -> str:
        code = self.uint()
        if code == 0:
            return self.text()
        if code > len(table):
            raise CodecError(f"damaged blob: code {code} in {self.what} names no value")
        return table[code - 1]

    def done(self) -> None:
        if self.pos != len(self.data):
            raise CodecError(f"damaged blob: {len(self.data) - self.pos} bytes left over "
                             f"in {self.what}")


def _deflate(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, ZDICT)
    return c.compress(data) + c.flush()


def _inflate(data: bytes) -> bytes:
    d = zlib.decompressobj(-15, ZDICT)
    try:
        out = d.decompress(data) + d.flush()
    except zlib.error as exc:
        raise CodecError(f"damaged blob: the fields do not inflate ({exc})") from None
    if not d.eof or d.unused_data:
        raise CodecError("damaged blob: the deflated fields are cut short or run on")
    return out


# ---------------------------------------------------------------- encode


def encode(transcript: Mapping[str, Any], known: Mapping[str, Any] | None = None) -> Packed:
    """A transcript as a template and a blob; `decode` gives back the same JSON, byte for byte.

    Per-game values equal to those in `known` are left out of the blob. Checks its own
    work and stores the whole JSON when the compact form would not give it back exactly.
    CodecError only for what is not JSON at all.
    """
    if not isinstance(transcript, Mapping):
        raise CodecError(f"a transcript is a JSON object, not {type(transcript).__name__}")
    known = known or {}
    try:
        text = _dumps(transcript)
    except (TypeError, ValueError) as exc:
        raise CodecError(f"the transcript is not JSON: {exc}") from None
    try:
        packed = _compact(transcript, known, text)
        if _decode(packed.template, packed.blob, known)[1] == text:
            return packed
    except Exception:  # whatever the compact form trips on, the fallback holds
        pass
    blob = _sealed(text, bytes((VERSION, FALLBACK, 0, 0, 0, 0)) + zlib.compress(
        text.encode(), 9))
    if _decode(FALLBACK_TEMPLATE, blob, known)[1] != text:
        raise CodecError("the transcript's JSON does not read back as itself")
    return Packed(FALLBACK_TEMPLATE, blob)


def _same(a: object, b: object) -> bool:
    """Equal as JSON text: same values, JSON types (`true` is not `1`) and key order."""
    return _dumps(a) == _dumps(b)


def _is_int(v: object) -> bool:
    return type(v) is int


def _str_list(v: object) -> bool:
    return isinstance(v, list) and all(isinstance(s, str) for s in v)


def _compact(t: Mapping[str, Any], known: Mapping[str, Any], text: str) -> Packed:
    missing = [k for k in _REQUIRED if k not in t]
    if missing:
        raise _Unfit(f"no {missing}")
    players, options, seed, seats = t["players"], t["rules"], t["seed"], t["seats"]
    if not (_is_int(players) and isinstance(options, dict) and _is_int(seed)
            and _str_list(seats) and len(seats) == players):
        raise _Unfit("header")
    rules = Rules.make(players, options)
    actions = actions_of(dict(t))

    # Replay: each action's index among the legal ones, and where each was taken.
    st = GameState.new(rules, seed)
    digits: list[tuple[int, int]] = []
    hand_at: list[int] = []
    seat_at: list[int] = []
    for aid in actions:
        legal = st.legal_ids()
        hand_at.append(st.hand_index + 1)
        seat_at.append(st.to_act)
        digits.append((legal.index(aid), len(legal)))
        st.apply_id(aid)
    cut = not st.is_over
    number = 0
    for idx, n in reversed(digits):
        number = number * n + idx

    order = list(t)
    if "partial_hand" not in t:  # where transcript() puts it, so a forfeit shares the template
        order.insert(order.index("end") + 1, "partial_hand")
    if "forfeit" not in t:  # where a forfeit's extra puts it
        order.append("forfeit")
    game = [k for k in order if k not in SHARED]
    from_known = [k for k in game if k in t and k in known and k not in _DERIVED
                  and _same(known[k], t[k])]

    flags = CUT if cut else 0
    generic: dict[str, Any] = {}
    w = _Writer()
    bot_ids: list[str] = t["bot_ids"] if _str_list(t.get("bot_ids")) else []
    for k in game:
        if k not in t or k in from_known or k in ("hands", "final", "partial_hand"):
            continue
        v = t[k]
        if k == "winner":
            if _same(v, st.winner):
                continue
            if v is None or (_is_int(v) and v >= 0):
                flags |= WINNER
                w.uint(0 if v is None else v + 1)
            else:
                generic[k] = v
        elif k == "end":
            if _same(v, st.end):
                continue
            if isinstance(v, str):
                flags |= END
                w.choice(v, ENDS)
            else:
                generic[k] = v
        elif k == "seed":
            w.uint(v)
        elif k == "seats":
            for i, name in enumerate(seats):
                if i < len(bot_ids) and bot_ids[i] == name:
                    w.uint(1)
                elif name in seats[:i]:
                    w.uint(2 + seats.index(name))
                else:
                    w.uint(0)
                    w.text(name)
        elif k in ("match_id", "board", "unit") and isinstance(v, str):
            w.text(v)
        elif k == "bot_ids" and _str_list(v):
            w.uint(len(v))
            for s in v:
                w.text(s)
        elif k == "faults" and _faults_fit(v, actions, hand_at, seat_at):
            if not v:
                continue
            flags |= FAULTS
            w.uint(len(v))
            last = -1
            for f in v:
                w.uint(f["seq"] - last - 1)
                last = f["seq"]
                w.choice(f["kind"], KINDS)
                w.text(f["reason"])
        elif (k == "forfeit" and isinstance(v, dict) and list(v) == _FORFEIT_KEYS
              and _is_int(v["seat"]) and v["seat"] >= 0 and isinstance(v["reason"], str)):
            w.uint(v["seat"])
            w.text(v["reason"])
        else:
            generic[k] = v
    if "forfeit" in t:
        flags |= FORFEIT

    head = _Writer()
    if cut:
        head.uint(len(actions))
    if generic:
        flags |= GENERIC
        head.text(_dumps(generic))
    fields = bytes(head.buf + w.buf)
    if fields:
        packed = _deflate(fields)
        if len(packed) < len(fields):
            fields = packed
            flags |= DEFLATED
    length = _Writer()
    length.uint(len(fields))
    blob = (bytes((VERSION, flags, 0, 0, 0, 0)) + bytes(length.buf) + fields
            + number.to_bytes((number.bit_length() + 7) // 8, "little"))
    template = _dumps({
        "codec": VERSION,
        "keys": order,
        "game": game,
        "known": from_known,
        "shared": {k: t[k] for k in order if k in SHARED},
    })
    return Packed(template, _sealed(text, blob))


def _faults_fit(v: object, actions: list[int], hand_at: list[int], seat_at: list[int]) -> bool:
    """True when every fault is as the match job writes it: its hand, seat and replacement
    are those the replay gives at its seq, and the seqs increase."""
    if not isinstance(v, list):
        return False
    last = -1
    for f in v:
        if not (isinstance(f, dict) and list(f) == _FAULT_KEYS):
            return False
        seq = f["seq"]
        if not (_is_int(seq) and last < seq < len(actions)):
            return False
        last = seq
        if not (_same(f["hand"], hand_at[seq]) and _same(f["seat"], seat_at[seq])
                and isinstance(f["kind"], str) and isinstance(f["reason"], str)
                and f["replacement"] == ACTIONS[actions[seq]].label):
            return False
    return True


# ---------------------------------------------------------------- decode


def decode(template: str, blob: bytes, known: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The transcript `encode` was given, key order and JSON types included.

    CodecError (a ValueError) naming what is wrong for a damaged blob, an unknown
    version, a template or `known` values that are not the ones it was encoded with.
    """
    return _decode(template, blob, known or {})[0]


@dataclass(frozen=True, slots=True)
class _Template:
    keys: list[str]
    game: list[str]
    known: list[str]
    shared: dict[str, Any]


def _template(template: str) -> _Template:
    try:
        d = json.loads(template)
    except (TypeError, ValueError):
        raise CodecError("not a codec template: not JSON") from None
    if not isinstance(d, dict) or d.get("codec") != VERSION:
        raise CodecError(f"not a version {VERSION} codec template")
    if d.get("fallback"):
        raise CodecError("the fallback template goes with a fallback blob, not a compact one")
    keys, game, known, shared = d.get("keys"), d.get("game"), d.get("known"), d.get("shared")
    if not (isinstance(keys, list) and isinstance(game, list) and isinstance(known, list)
            and _str_list(keys + game + known) and isinstance(shared, dict)):
        raise CodecError("not a codec template: keys, game, known and shared are missing")
    if (set(game) | set(shared) != set(keys) or set(game) & set(shared)
            or not set(known) <= set(game) or not set(_REQUIRED) <= set(keys)
            or "players" not in shared or "rules" not in shared):
        raise CodecError("not a codec template: its keys do not add up")
    return _Template(keys, game, known, shared)


def shared(template: str) -> dict[str, Any]:
    """What every game of a template shares (its rules, clock, fault policy, event...): what a
    listing shows without decoding a blob; {} for the fallback template."""
    d = json.loads(template)
    if not isinstance(d, dict) or d.get("fallback"):
        return {}
    return dict(_template(template).shared)


def _decode(template: str, blob: bytes, known: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The transcript and its JSON text."""
    blob = bytes(blob)
    if len(blob) < 6:
        raise CodecError(f"damaged blob: {len(blob)} bytes, shorter than any game (truncated?)")
    if blob[0] != VERSION:
        raise CodecError(f"blob of codec version {blob[0]}; this build reads version {VERSION}")
    flags = blob[1]
    if flags & ~_ALL_FLAGS or (flags & FALLBACK and flags != FALLBACK):
        raise CodecError(f"damaged blob: unknown flags {flags:#04x}")
    try:
        if flags & FALLBACK:
            text = zlib.decompress(blob[6:]).decode()
            out = json.loads(text)
            if not isinstance(out, dict):
                raise CodecError("damaged blob: the stored JSON is not an object")
        else:
            out = _compact_decode(_template(template), blob, flags, known)
            text = _dumps(out)
    except CodecError:
        raise
    except (MoonError, ValueError, KeyError, IndexError, TypeError, zlib.error,
            RecursionError, OverflowError) as exc:
        raise CodecError(f"damaged blob: {type(exc).__name__}: {exc}") from None
    if _sealed(text, blob) != blob:
        raise CodecError("checksum mismatch: the blob is damaged, or the template or the "
                         "known values are not the ones it was encoded with")
    return out, text


def _compact_decode(tpl: _Template, blob: bytes, flags: int,
                    known: Mapping[str, Any]) -> dict[str, Any]:
    outer = _Reader(blob, "the blob")
    outer.pos = 6
    n = outer.uint()
    if outer.pos + n > len(blob):
        raise CodecError(f"damaged blob: {n} bytes of fields, {len(blob) - outer.pos} left "
                         f"(truncated?)")
    raw = blob[outer.pos : outer.pos + n]
    number = int.from_bytes(blob[outer.pos + n :], "little")
    r = _Reader(_inflate(raw) if flags & DEFLATED else raw, "the fields")

    count = r.uint() if flags & CUT else -1
    values: dict[str, Any] = {}
    if flags & GENERIC:
        generic = json.loads(r.text())
        if not isinstance(generic, dict):
            raise CodecError("damaged blob: the generic fields are not an object")
        values.update(generic)
    for k in tpl.known:
        if k not in known:
            raise CodecError(f"the template takes {k!r} from the known values, which lack it")
        values[k] = json.loads(_dumps(known[k]))  # fresh, and JSON types
    players = tpl.shared["players"]
    seat_codes: list[tuple[int, str]] = []
    faults: list[tuple[int, str, str]] = []
    forfeit: dict[str, Any] | None = None
    winner: int | None = None
    end: str | None = None
    for k in tpl.game:
        if k in values or k in ("hands", "final", "partial_hand"):
            continue
        if k == "winner":
            if flags & WINNER:
                code = r.uint()
                winner = None if code == 0 else code - 1
        elif k == "end":
            if flags & END:
                end = r.choice(ENDS)
        elif k == "seed":
            values[k] = r.uint()
        elif k == "seats":
            for _ in range(players):
                code = r.uint()
                seat_codes.append((code, r.text() if code == 0 else ""))
        elif k in ("match_id", "board", "unit"):
            values[k] = r.text()
        elif k == "bot_ids":
            values[k] = [r.text() for _ in range(r.uint())]
        elif k == "faults":
            seq = -1
            for _ in range(r.uint() if flags & FAULTS else 0):
                seq += r.uint() + 1
                faults.append((seq, r.choice(KINDS), r.text()))
            values[k] = []
        elif k == "forfeit":
            if flags & FORFEIT:
                forfeit = {"seat": r.uint(), "reason": r.text()}
        else:
            raise CodecError(f"damaged blob or template: no value for per-game key {k!r}")
    r.done()

    seats: list[str] = []
    bot_ids: list[str] = values["bot_ids"] if _str_list(values.get("bot_ids")) else []
    for i, (code, literal) in enumerate(seat_codes):
        if code == 1:
            if i >= len(bot_ids):
                raise CodecError(f"damaged blob: seat {i} is named by a bot id there is not")
            seats.append(bot_ids[i])
        elif code >= 2:
            if code - 2 >= i:
                raise CodecError(f"damaged blob: seat {i} is named as a later seat")
            seats.append(seats[code - 2])
        else:
            seats.append(literal)
    if not seat_codes:
        seats = values["seats"]
    seed = values["seed"]

    rules = Rules.make(players, tpl.shared["rules"])
    st = GameState.new(rules, seed)
    fault_at = {f[0] for f in faults}
    where: dict[int, tuple[int, int]] = {}
    while len(st.actions) != count:
        legal = st.legal_ids()
        if not legal:
            if count >= 0:
                raise CodecError(f"damaged blob: {count} actions, but the game ends after "
                                 f"{len(st.actions)}")
            break
        if len(st.actions) in fault_at:
            where[len(st.actions)] = (st.hand_index + 1, st.to_act)
        radix = len(legal)
        if radix == 1:
            st.apply_id(legal[0])
        else:
            number, idx = divmod(number, radix)
            st.apply_id(legal[idx])
    if number:
        raise CodecError("damaged blob: the action number has bits left after the last action")
    if count >= 0 and st.is_over:
        raise CodecError("damaged blob: a game cut short that the rules ended")

    derived = transcript(rules, seed, st.actions, seats)
    if "faults" in values and faults:
        values["faults"] = [
            {"seq": seq, "hand": where[seq][0], "seat": where[seq][1], "kind": kind,
             "reason": reason, "replacement": ACTIONS[st.actions[seq]].label}
            for seq, kind, reason in faults]
    if "seats" not in values:
        values["seats"] = seats
    for k in ("hands", "final", "partial_hand"):
        if k not in values and k in derived:
            values[k] = derived[k]
    if "winner" not in values:
        values["winner"] = winner if flags & WINNER else derived["winner"]
    if "end" not in values:
        values["end"] = end if flags & END else derived["end"]
    if forfeit is not None:
        values["forfeit"] = forfeit

    out: dict[str, Any] = {}
    for k in tpl.keys:
        if k in tpl.shared:
            out[k] = json.loads(_dumps(tpl.shared[k]))
        elif (k, flags & CUT) == ("partial_hand", 0) or (k, flags & FORFEIT) == ("forfeit", 0):
            continue  # an optional key this game does not have
        else:
            out[k] = values[k]
    return out


# --------------------------------------------------------------- figures


def entropy_bits(transcript: Mapping[str, Any]) -> float:
    """log2 of the product of the legal counts along the game: what its actions cost under
    a uniform-legal model, the bound the mixed-radix number meets to within a byte."""
    rules = Rules.make(int(transcript["players"]), transcript["rules"])
    st = GameState.new(rules, int(transcript["seed"]))
    bits = 0.0
    for aid in actions_of(dict(transcript)):
        bits += math.log2(len(st.legal_ids()))
        st.apply_id(aid)
    return bits
