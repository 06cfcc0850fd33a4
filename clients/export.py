"""`moonshot export`: finished games of a pool, an event or a bot, over a time range, to
Parquet or JSON lines, for pandas, DuckDB or R (the columns: `archive/export.py`).

It reads the stack's database of record directly, not the referee: the archive, in
keyset pages, and from Redis the public games that wait to be archived (so an export
made right after a tournament ends has all of it), never a game whose board is not
released.

Where the games are, as `moonshot up` names them:

- Redis: `--redis URL`, else `$REDIS_URL`, else the one `moonshot up` noted in its data
  folder (`--data`, default `$MOONSHOT_DATA` or moonshot-data), else the default Redis
  of `moonshot referee` and `moonshot worker`. A Redis given by flag or variable must
  answer; one found otherwise that does not is done without (the archive alone, and a
  line saying what that leaves out).
- The archive: `--archive URL` or `$MOONSHOT_ARCHIVE`, else the one the stack noted in
  Redis (`store.archiving.url`), else `moonshot up`'s SQLite in the data folder. An
  archive that is not there is never created.

Hidden games. The archive holds only public games; Redis also holds games that are
finished but hidden (their boards not released) and games in play. Those are never
exported. When the range asked for holds some, or could still (an event still running,
`--until` later than now), the export writes what is public and says on stderr, in one
line, what it left out; when nothing in the range is public yet but something is hidden
or to come, it refuses with one line and writes nothing. A range that starts in the
future is refused too.

Bad input (a pool, an event or bot id or name that is not one, an unknown event or bot,
a range backwards, an --out that cannot be written): one line, exit code 2 or 1, nothing
written. The file appears whole or not at all (`archive.export.write`).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import redis

from clients import flags
from clients.commands import DATA_DIR, DEFAULT_REDIS, REDIS_URL_FILE, check_out
from clients.parser import CommandError, Parser, UsageError
from clients.progress import Progress
from store.bots import shown
from store.errors import InvalidArgument
from store.pools import Pool
from store.refs import EventRef

if TYPE_CHECKING:  # imported where used: `moonshot` starts without SQLAlchemy
    from archive.db import Archive
    from archive.reads import ArchivedGame, Selection
    from store.archiving import Unarchived

__all__ = ["add_export", "parse_when"]

PROG = "moonshot export"
EXTENSIONS = {".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl",
              ".ndjson": "jsonl"}
CHUNK = 500  # games read from Redis at a time


def parse_when(text: str, flag: str) -> float:
    """An ISO 8601 date or time as unix seconds; a time without an offset is UTC."""
    try:
        return flags.iso_time(text)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"{PROG}: {flag} {exc}") from None


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class _Asked:
    """What the flags ask for, checked: nothing here has touched Redis or the archive."""

    pool: Pool | None
    event: EventRef | None
    bot: str  # as given: an id, a house bot's id (canonical), or a name
    since: float | None
    until: float | None
    out: Path
    fmt: str
    form: str
    transcripts: bool

    def what(self, bot_id: str = "") -> str:
        """The selection in words, after "games" ('' for every game): " of bot b-1 in
        pool 3p finished from 2026-01-01T00:00:00Z"."""
        parts = [f"of {self.event}"] if self.event else []
        parts += [f"of bot {bot_id or self.bot}"] if self.bot else []
        parts += [f"in pool {self.pool}"] if self.pool else []
        times = ([f"from {_iso(self.since)}"] if self.since is not None else []) + (
            [f"before {_iso(self.until)}"] if self.until is not None else [])
        if times:
            parts.append("finished " + " and ".join(times))
        return "".join(f" {part}" for part in parts)


def _asked(args: argparse.Namespace) -> _Asked:
    """The flags, checked before anything is read (UsageError: one line)."""
    from bots import house
    from store import bots as store_bots
    from store import ids

    pool = None
    if args.pool is not None:
        try:
            pool = Pool.parse(args.pool, "--pool")
        except InvalidArgument as exc:
            raise UsageError(f"{PROG}: {exc}") from None
    event = None
    if args.event is not None:
        try:
            event = EventRef.parse(args.event.strip())
        except InvalidArgument as exc:
            raise UsageError(f"{PROG}: --event: {exc} (use tournament:t-..., test:c-..., "
                             "arena:3p or arena:2v2; a bare t-... or c-... id reads too)"
                             ) from None
    bot = ""
    if args.bot is not None:
        bot = args.bot.strip()
        if house.is_house(bot):
            try:
                bot = store_bots.house_bot(bot).bot_id
            except InvalidArgument as exc:
                raise UsageError(f"{PROG}: --bot: {exc}") from None
        elif not (ids.is_bot_id(bot) or store_bots.NAME_RE.fullmatch(bot)):
            raise UsageError(f"{PROG}: --bot {args.bot[:100]!r} is not a bot id (b-...), a "
                             "house bot (house:...) or a bot name")
    since = parse_when(args.since, "--since") if args.since is not None else None
    until = parse_when(args.until, "--until") if args.until is not None else None
    if since is not None and until is not None and until <= since:
        raise UsageError(f"{PROG}: --until {args.until} is not after --since {args.since}: "
                         "no game can finish in that range")
    out = Path(args.out)
    fmt = args.format or EXTENSIONS.get(out.suffix.lower())
    if fmt is None:
        raise UsageError(f"{PROG}: --out {args.out}: say --format parquet or jsonl (or name "
                         "the file .parquet or .jsonl)")
    check_out(args.out, PROG)
    transcripts = args.transcripts if args.transcripts is not None else (
        fmt == "jsonl" and args.form == "games")
    if transcripts and args.form != "games":
        raise UsageError(f"{PROG}: --transcripts goes with --form games (the seats form has "
                         "a row per seat, not per game)")
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise UsageError(f"{PROG}: Parquet needs pyarrow, which this install lacks: pip "
                         "install 'moonshot[export]' (or write --format jsonl)")
    return _Asked(pool, event, bot, since, until, out, fmt, args.form, transcripts)


# ----------------------------------------------------------------- where the games are


@dataclass
class _Redis:
    """The stack's Redis, if reached; else why not."""

    client: redis.Redis | None
    url: str
    why_not: str = ""


def _redis(args: argparse.Namespace, data: Path) -> _Redis:
    """--redis, $REDIS_URL, the URL `moonshot up` noted in the data folder, the default."""
    from store import bots as store_bots

    given = args.redis or os.environ.get("REDIS_URL") or ""
    source = "--redis" if args.redis else "$REDIS_URL"
    url = given
    if not url:
        try:
            url = (data / REDIS_URL_FILE).read_text().strip()
        except OSError:
            url = DEFAULT_REDIS
    try:
        client = store_bots.connect(url)
        client.ping()
    except ValueError as exc:
        if given:
            raise UsageError(f"{PROG}: {source} {shown(url)!r} is not a Redis URL: {exc}"
                             ) from None
        return _Redis(None, url, f"{shown(url)} is not a Redis URL")
    except redis.RedisError as exc:
        if given:
            raise CommandError(f"cannot reach Redis at {shown(url)} ({source}): {exc}"
                               ) from None
        return _Redis(None, url, f"no Redis answered at {shown(url)}")
    return _Redis(client, url)


def _shown(url: str) -> str:
    """An archive URL as given, without its password."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def _same_archive(a: str, b: str) -> bool:
    from archive.db import check_url

    def norm(url: str) -> str:
        u = check_url(url)
        if u.drivername.startswith("sqlite"):
            return "sqlite:" + str(Path(u.database or "").resolve())
        return u.render_as_string(hide_password=False)

    return norm(a) == norm(b)


def _archive_url(args: argparse.Namespace, data: Path, r: _Redis) -> str:
    """--archive or $MOONSHOT_ARCHIVE, the stack's (noted in Redis), `moonshot up`'s."""
    from archive.db import check_url, default_url
    from archive.errors import BadURL
    from store import archiving

    noted = archiving.url(r.client) if r.client is not None else ""
    url = args.archive or noted
    if args.archive:
        try:
            check_url(args.archive)
        except BadURL as exc:
            raise UsageError(f"{PROG}: --archive: {exc}") from None
        if noted and not _same_archive(args.archive, noted):
            raise CommandError(
                f"the stack at {shown(r.url)} archives to {_shown(noted)}, not to "
                f"{_shown(args.archive)}: give --redis of that archive's stack (or no "
                "--archive)")
    if not url:
        url = default_url(data)
    parsed = check_url(url)
    if parsed.drivername.startswith("sqlite") and not Path(parsed.database or "").is_file():
        raise CommandError(
            f"no archive at {parsed.database}: give --archive URL (or $MOONSHOT_ARCHIVE), or "
            f"--data of the `moonshot up` that keeps it")
    return url


# ----------------------------------------------------------------------- the command


def _bot_id(asked: _Asked, r: redis.Redis | None, archive: Archive) -> str:
    """The bot asked for, by id: known to the archive or the stack; one line otherwise."""
    from archive import reads
    from store import bots as store_bots
    from store import ids
    from store.errors import NotFound

    text = asked.bot
    if ids.is_house_bot(text) or (ids.is_bot_id(text) and reads.has_bot(archive, text)):
        return text
    if r is not None:
        try:
            return store_bots.find_bot(r, text).bot_id  # by id, else by name
        except NotFound:
            pass
    named = reads.bot_ids_named(archive, text)
    if len(named) > 1:
        raise CommandError(f"{len(named)} archived bots are named {text!r} "
                           f"({', '.join(named)}): give --bot its id")
    if not named:
        raise CommandError(f"no bot with id or name {text!r} in the archive or the stack")
    return named[0]


def _left_out(asked: _Asked, waiting: Unarchived | None, r: _Redis, now: float) -> str:
    """What the export leaves out, in words ('' for nothing)."""
    parts = []
    if waiting is not None:
        if waiting.hidden:
            parts.append(f"{waiting.hidden} finished game{'s' * (waiting.hidden != 1)} "
                         "hidden until their boards are released")
        if waiting.playing:
            parts.append(f"{waiting.playing} game{'s' * (waiting.playing != 1)} still in "
                         "play")
        if waiting.event_live and (asked.until is None or asked.until > now):
            parts.append(f"the games {asked.event} plays from now on (it is still running)")
    else:
        parts.append(f"every game not archived yet, public or not ({r.why_not}: give "
                     "--redis to count them)")
    if asked.until is not None and asked.until > now and waiting is not None and (
            waiting.playing or waiting.event_live or asked.event is None):
        parts.append(f"games that finish between now and --until {_iso(asked.until)}")
    return "; ".join(parts)


def _run_export(args: argparse.Namespace) -> int:
    from sqlalchemy.exc import SQLAlchemyError

    from archive import export, reads
    from archive.db import open_archive
    from archive.errors import ArchiveError
    from store import archiving

    asked = _asked(args)
    now = time.time()
    if asked.since is not None and asked.since > now:
        raise CommandError(f"nothing to export: --since {_iso(asked.since)} is in the future, "
                           "and no game has finished then yet; nothing written")
    data = Path(args.data)
    rs = _redis(args, data)
    url = _archive_url(args, data, rs)
    try:
        archive = open_archive(url)
    except ArchiveError as exc:
        raise CommandError(str(exc)) from None
    try:
        r = rs.client
        bot_id = _bot_id(asked, r, archive) if asked.bot else ""
        players = asked.pool.players if asked.pool else None
        sel = reads.Selection(bot_id=bot_id, event=asked.event, players=players,
                              since=asked.since, until=asked.until)
        waiting = None if r is None else archiving.unarchived(
            r, event=asked.event, bot_id=bot_id, players=players, since=asked.since,
            until=asked.until, now=now)
        if asked.event is not None and not reads.has_event(archive, asked.event) and not (
                waiting is not None and waiting.event_known):
            raise CommandError(f"no {asked.event.kind} {asked.event.id} in the archive or the "
                               "stack")
        archived = reads.count_selected(archive, sel)
        public = waiting.public if waiting is not None else []
        left_out = _left_out(asked, waiting, rs, now)
        if archived + len(public) == 0 and waiting is not None and (
                waiting.hidden or waiting.playing or waiting.event_live):
            raise CommandError(f"nothing to export yet: no game{asked.what(bot_id)} is "
                               f"public; left out: {left_out}; nothing written")
        if left_out:
            print(f"{PROG}: left out: {left_out}", file=sys.stderr, flush=True)
        bar = Progress(archived + len(public), "export",
                       enabled=False if args.quiet else None)
        try:
            written = export.write(
                _games(archive, sel, r, public, asked.transcripts), asked.out,
                fmt=asked.fmt, form=asked.form, transcripts=asked.transcripts,
                progress=bar.update)
        except OSError as exc:
            raise CommandError(f"cannot write --out {asked.out}: {exc.strerror or exc}"
                               ) from None
        finally:
            bar.close()
    except ArchiveError as exc:
        raise CommandError(str(exc)) from None
    except SQLAlchemyError as exc:  # the archive went away during the export
        first = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0][:300]
        raise CommandError(f"archive {archive.shown}: {first}; nothing written") from None
    except redis.RedisError as exc:
        raise CommandError(f"Redis at {shown(rs.url)}: {exc}; nothing written") from None
    finally:
        archive.close()
        if rs.client is not None:
            rs.client.close()
    rows = f" ({written.rows} seat rows)" if asked.form == "seats" else ""
    print(f"exported {written.games} games{asked.what(bot_id)}{rows}, {written.bytes} bytes, "
          f"to {written.path}")
    return 0


def _games(archive: Archive, sel: Selection, r: redis.Redis | None, public: Sequence[str],
           transcripts: bool) -> Iterator[list[ArchivedGame]]:
    """The archive's games in archive order, then the public ones Redis still holds: each
    game once, whichever store it is in when it is read (the archiving job may move it
    meanwhile)."""
    from archive import reads
    from store import archiving

    rest = dict.fromkeys(public)
    for page in reads.stream(archive, sel, with_blob=transcripts):
        for g in page:
            rest.pop(g.match_id, None)
        yield page
    todo = list(rest)
    for i in range(0, len(todo), CHUNK):
        assert r is not None
        leaving, gone = archiving.read(r, todo[i:i + CHUNK])
        games = [reads.of_leaving(g) for g in leaving]
        for mid in gone:  # archived since: read it there
            found = reads.game(archive, mid, with_blob=True)
            if found is not None:
                games.append(found)
        yield games


def add_export(sub: argparse._SubParsersAction[Parser]) -> None:
    """Add `moonshot export` to the `moonshot` parser."""
    p = sub.add_parser(
        "export", help="write finished games (results, transcripts) to Parquet or JSON lines",
        description="Write the finished, public games of a pool, an event or a bot, over a "
                    "time range, to Parquet or JSON lines (for pandas, DuckDB, R). Games "
                    "whose boards are not released yet are never written: what the range "
                    "leaves out is said on stderr.")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="the file to write (.parquet or .jsonl), replaced whole at the end")
    p.add_argument("--format", choices=("parquet", "jsonl"), default=None,
                   help="default: from --out's extension")
    p.add_argument("--form", choices=("games", "seats"), default="games",
                   help="a row per game, or a row per game and seat (with its game score "
                        "in quarters)")
    p.add_argument("--transcripts", action=argparse.BooleanOptionalAction, default=None,
                   help="each game's moon-transcript/1 JSON (default: with jsonl, where each "
                        "line is the transcript with the game's columns; not with parquet)")
    p.add_argument("--pool", default=None, metavar="POOL", help="3p or 2v2")
    p.add_argument("--event", default=None, metavar="KIND:ID",
                   help="tournament:t-..., test:c-..., arena:3p or arena:2v2")
    p.add_argument("--bot", default=None, metavar="ID_OR_NAME",
                   help="the games of this bot (an id, a house bot's id, or a name)")
    p.add_argument("--since", default=None, metavar="WHEN",
                   help="games finished at or after this ISO date or time (UTC without an "
                        "offset)")
    p.add_argument("--until", default=None, metavar="WHEN",
                   help="games finished before this ISO date or time")
    p.add_argument("--archive", default=os.environ.get("MOONSHOT_ARCHIVE") or None,
                   metavar="URL",
                   help="sqlite:///PATH or postgresql://USER@HOST/DB (default "
                        "$MOONSHOT_ARCHIVE, else the stack's, noted in Redis, else "
                        "archive.sqlite3 in --data)")
    p.add_argument("--redis", default=None, metavar="URL",
                   help="the stack's Redis, for the games not archived yet (default "
                        "$REDIS_URL, else the one `moonshot up` noted in --data, else "
                        f"{DEFAULT_REDIS})")
    p.add_argument("--data", default=os.environ.get("MOONSHOT_DATA", DATA_DIR),
                   help="`moonshot up`'s data folder")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=_run_export)
