"""Every Redis key the project uses, in one place, so the data model can be read at a glance.

| key                         | type   | holds                                               |
|-----------------------------|--------|-----------------------------------------------------|
| ms:admin:token              | string | SHA-256 of the admin token                          |
| ms:admin:watch              | string | SHA-256 of the watch pass (derived from the token)  |
| ms:bots                     | zset   | bot ids by registration time                        |
| ms:groups                   | hash   | the stack's groups kept apart on boards: name ->    |
|                             |        | JSON list of bot ids (store.groups)                 |
| ms:bot:{id}                 | hash   | name, token hash, created_at; owner (author id),    |
|                             |        | previous (bot id), retired_at, rotated_at           |
| ms:authors                  | zset   | author ids by sign-up time                          |
| ms:author:{id}              | hash   | name, token hash, created_at, organiser, invited_by,|
|                             |        | limits (JSON, the admin's; absent: the defaults)    |
| ms:authorname:{name}        | string | author id (makes author names unique)               |
| ms:author:{id}:bots         | zset   | the author's bot ids by registration time           |
| ms:author:{id}:tests        | set    | the author's tests still running                    |
| ms:author:{id}:cpu:{day}    | string | house-bot CPU seconds spent on the author's tests   |
|                             |        | that UTC day (kept two days)                        |
| ms:invite:{hash}            | hash   | an invitation: by, created_at, expires_at, used_by  |
|                             |        | (kept a week past its expiry, to say why it fails)  |
| ms:limits:default           | string | the stack's default author limits (JSON)            |
| ms:share:slots              | string | the game slots all tests share (the admin's; absent:|
|                             |        | what the live workers host)                         |
| ms:share:workers            | hash   | worker instance -> "<slots> <expires, Unix s>"      |
| ms:share:claims             | hash   | running test -> its claim on the share (JSON:       |
|                             |        | author, pairs it wants, pairs in flight)            |
| ms:author:{id}:share_lock   | string | held while a step of one of the author's tests      |
|                             |        | plans against their limit of pairs in flight        |
| ms:throttle:{what}:{addr}:{hour} | string | registrations from one address this hour   |
| ms:audit                    | stream | who did what to which account, bot or test (capped) |
| ms:author:{id}:audit        | stream | ... the entries that concern one author (capped)    |
| ms:author:{id}:lock         | string | held while a change a limit spans is made (`Lock`)  |
| ms:botname:{name}           | string | bot id (makes names unique)                         |
| ms:bot:{id}:rotating        | string | set for 5 s after its token was rotated             |
| ms:bot:{id}:pending         | hash   | request id -> decision request JSON, until answered |
| ms:bot:{id}:events          | pubsub | decision requests and match events for the bot      |
| ms:bot:{id}:inbox           | stream | the bot's events other than requests, the last hour |
|                             |        | (what a reconnect replays after the bot's cursor)   |
| ms:bot:{id}:live            | set    | matches under way with the bot in a seat            |
| ms:bot:{id}:presence        | zset   | live stream ids, scored by expiry on Redis's clock  |
| ms:bot:{id}:matches         | zset   | the bot's match ids by creation time                |
| ms:admin:deals              | string | the secret that turns planned boards into deals     |
| ms:deals:dealt              | hash   | every deal the stack dealt, exactly: buckets `0`..  |
|                             |        | of packed 8-byte keys (linear hashing, ~256 each),  |
|                             |        | and `buckets`, `deals`, `since`, `migrated`         |
| ms:deals:recent             | hash   | deal seed -> its board, claimed this window (1 h)   |
| ms:deals:recent:old         | hash   | ... and the window before (then dropped)            |
| ms:deals:boards             | hash   | (older stacks) deal seed -> board: moved into       |
| ms:bot:{id}:deals           | hash   | ms:deals:dealt once, then deleted (store.deals)     |
| ms:matches                  | zset   | match ids by creation time                          |
| ms:matches:open             | set    | match ids without a result yet (for recovery)       |
| ms:match:{id}               | hash   | the match spec and status                           |
| ms:bot:{id}:epoch           | string | counter: the newest stream of the bot holds the top |
| ms:match:{id}:log           | list   | one JSON entry per accepted action, in order        |
| ms:match:{id}:conn          | list   | connection changes while the match waited on a seat |
| ms:match:{id}:replies       | list   | answers forwarded by referees to the match job      |
| ms:match:{id}:lease         | string | id of the job run hosting the match, with a TTL     |
| ms:match:{id}:result        | string | result + transcript JSON, written once (SET NX)     |
| ms:tournaments              | zset   | tournament ids by creation time                     |
| ms:tournament:{id}:units    | list   | the fixed schedule, one JSON unit per entry         |
| ms:{kind}:{id}              | hash   | an event (`store.refs.EventRef`: ms:tournament:{id},|
|                             |        | ms:test:{id}, ms:arena:{pool}): spec, status, done, |
|                             |        | total, step_seq (the step state's version), wake_at,|
|                             |        | recorded (the last recording number given)          |
| ms:{kind}:{id}:matches      | zset   | match ids the event created, in order               |
| ms:{kind}:{id}:events       | stream | numbered public events (id `<seq>-0`): a game's     |
|                             |        | result only once its board is released              |
| ms:{kind}:{id}:emitted      | set    | keys of public events emitted, so none is twice     |
| ms:{kind}:{id}:live         | stream | numbered events for organisers, results as recorded |
| ms:{kind}:{id}:live_emitted | set    | keys of organiser events emitted                    |
| ms:{kind}:{id}:released     | zset   | games whose board every table has finished, in order|
| ms:{kind}:{id}:lock         | string | held by the step run advancing it                   |
| ms:{kind}:{id}:dirty        | string | set when the step should look again                 |
| ms:{kind}:{id}:queued       | string | a step job is queued (many asks, one job)           |
| ms:{kind}:{id}:recorded     | zset   | finished or failed games, by recording number (an   |
|                             |        | arena's leave it as they are archived)              |
| ms:{kind}:{id}:state        | string | the step's state: cursor, boards open, the planner's|
|                             |        | state, games decided not yet known created          |
| ms:{kind}:{id}:failed       | set    | its games that cannot be hosted (RQ gave up)        |
| ms:{kind}:{id}:redealt      | set    | its units dealt afresh (another board had the deal)|
| ms:{kind}:{id}:rows         | hash   | an open tournament's or test's archived games:      |
|                             |        | match id -> standings row                           |
| ms:events:live              | set    | events the step still drives (`<kind>:<id>`)        |
| ms:archive:pending          | zset   | finished, public games to archive, by release time  |
| ms:archive:dirty, :queued, :lock | string | the archiving job's asks, marker and lock      |
| ms:archive:parked           | hash   | games the archive refused (match id -> why): they   |
|                             |        | stay in Redis, and wait again at a worker's start   |
| ms:archive:events           | set    | ended tournaments and tests (`<kind>:<id>`) that    |
|                             |        | move to the archive once their games have           |
| ms:archive:backfill         | string | where an upgraded stack's walk of ms:matches is     |
| ms:archive:backfill:done    | string | set once that walk is over                          |
| ms:admin:archive            | string | the stack's archive URL (for a part given none)     |
| ms:events:live:listed       | string | set once the running events of an older stack were |
|                             |        | listed in ms:events:live                            |
| ms:results:{pool}           | zset   | released match ids per rating pool (3p, 2v2)        |
| ms:recovery:lock            | string | taken by the worker doing this period's recovery    |
| ms:recovery:nudge_lock      | string | ... and this period's look at tournaments and fits  |
| ms:worker:{instance}:alive  | string | set while a worker process lives (a short TTL)      |
| ms:recovery:suspects        | hash   | open match -> when (Redis's clock) recovery first   |
|                             |        | found it with no live host                          |
| ms:ratings:{pool}           | string | the pool's fitted rating table (JSON)               |
| ms:ratings:{pool}:los       | string | its LOS matrix (pools of up to 400 bots)            |
| ms:ratings:{pool}:live      | string | the provisional table, between fits                 |
| ms:ratings:{pool}:method:{name} | string | the table of rating method {name} (the batch fit's |
|                             |        | is ms:ratings:{pool}, the provisional's :live)      |
| ms:ratings:{pool}:method:{name}:los | string | its LOS matrix, if the method gives one     |
| ms:ratings:{pool}:methods   | hash   | method name -> title, games and time of its table   |
| ms:ratings:{pool}:history:{bot} | list | the bot's rating after each fit with new games of |
|                             |        | it, oldest first (the newest 1,000)                 |
| ms:ratings:{pool}:snapshot_at | string | when its tables were last kept in the archive     |
| ms:ratings:{pool}:dirty     | string | set when a fit is asked for                         |
| ms:ratings:{pool}:tournaments | set  | tournaments whose own fit is asked for              |
| ms:ratings:{pool}:queued    | string | a fit job is queued (many requests, one job)        |
| ms:ratings:{pool}:lock      | string | held by the fit job running                         |
| ms:tournament:{id}:rating   | string | the fit over the tournament's own released games    |
| ms:tests                    | zset   | test ids (tests of a change) by creation time       |
| ms:test:{id}:pairs          | hash   | board number -> settled pair (JSON), written once   |
| ms:arena:{pool}:joined      | zset   | bots that joined the pool's arena, by when          |
"""

from __future__ import annotations

from store.rating_tables import OFFICIAL, PROVISIONAL, check_method_name
from store.refs import EventRef

P = "ms:"

ADMIN_TOKEN = P + "admin:token"
WATCH_PASS = P + "admin:watch"
DEAL_SECRET = P + "admin:deals"
DEALS = P + "deals:dealt"  # every deal dealt (store.deals: exact, 8 bytes a deal)
DEALS_RECENT = P + "deals:recent"  # deal seed -> board, for the deals claimed this window
DEALS_OLD = P + "deals:recent:old"  # ... and those of the window before
DEALT_BOARDS = P + "deals:boards"  # an older stack's deal seed -> board (migrated, deleted)
OPEN_MATCHES = P + "matches:open"
BOTS = P + "bots"
GROUPS = P + "groups"  # the stack's groups kept apart on boards (store.groups)
MATCHES = P + "matches"
RECOVERY_LOCK = P + "recovery:lock"
NUDGE_LOCK = P + "recovery:nudge_lock"
RECOVERY_SUSPECTS = P + "recovery:suspects"


def bot(bot_id: str) -> str:
    """Hash of one bot's record."""
    return f"{P}bot:{bot_id}"


AUTHORS = P + "authors"
DEFAULT_LIMITS = P + "limits:default"
SHARE_SLOTS = P + "share:slots"
SHARE_WORKERS = P + "share:workers"
SHARE_CLAIMS = P + "share:claims"
AUDIT = P + "audit"


def author(author_id: str) -> str:
    """An author's record."""
    return f"{P}author:{author_id}"


def author_name(name: str) -> str:
    """Author name (lower case) -> author id."""
    return f"{P}authorname:{name}"


def author_bots(author_id: str) -> str:
    """The author's bots by registration time."""
    return f"{P}author:{author_id}:bots"


def author_tests(author_id: str) -> str:
    """The author's running tests."""
    return f"{P}author:{author_id}:tests"


def author_cpu(author_id: str, day: int) -> str:
    """House-bot CPU seconds spent on the author's tests on UTC day `day` (days since 1970)."""
    return f"{P}author:{author_id}:cpu:{day}"


def author_lock(author_id: str) -> str:
    """Held while one of the author's changes that a limit or a check spans is made (a
    test created within their limits, a version declared without a cycle)."""
    return f"{P}author:{author_id}:lock"


def author_share_lock(author_id: str) -> str:
    """Held while a step of one of the author's tests plans against their pairs limit."""
    return f"{P}author:{author_id}:share_lock"


def author_audit(author_id: str) -> str:
    """The audit entries that concern one author."""
    return f"{P}author:{author_id}:audit"


def invitation(code_hash: str) -> str:
    """An invitation, by the SHA-256 of its code."""
    return f"{P}invite:{code_hash}"


def throttle(what: str, address: str, hour: int) -> str:
    """Registrations of `what` from one address in one hour."""
    return f"{P}throttle:{what}:{address}:{hour}"


def bot_rotating(bot_id: str) -> str:
    """Set for a few seconds after the bot's token was rotated."""
    return f"{P}bot:{bot_id}:rotating"


def bot_name(name: str) -> str:
    """Name -> id index (SET NX keeps names unique)."""
    return f"{P}botname:{name}"


def pending(bot_id: str) -> str:
    """Decision requests addressed to a bot and not answered yet."""
    return f"{P}bot:{bot_id}:pending"


def events(bot_id: str) -> str:
    """Pub/sub channel that carries requests and events to the bot's streams."""
    return f"{P}bot:{bot_id}:events"


def inbox(bot_id: str) -> str:
    """The bot's event log: every event sent to it but decision requests, for a while."""
    return f"{P}bot:{bot_id}:inbox"


def bot_live(bot_id: str) -> str:
    """Matches that started with the bot in a seat and have not ended."""
    return f"{P}bot:{bot_id}:live"


def presence(bot_id: str) -> str:
    """Live stream ids of a bot, scored by expiry (unix seconds)."""
    return f"{P}bot:{bot_id}:presence"


def bot_matches(bot_id: str) -> str:
    """The matches a bot has a seat in, by creation time (its listing reads only these)."""
    return f"{P}bot:{bot_id}:matches"


def bot_deals(bot_id: str) -> str:
    """An older stack's record of the deals a bot was dealt (migrated, then deleted)."""
    return f"{P}bot:{bot_id}:deals"


def bot_epoch(bot_id: str) -> str:
    """Counter of the bot's streams: a stream ends when a newer one holds a higher epoch."""
    return f"{P}bot:{bot_id}:epoch"


def worker_alive(instance: str) -> str:
    """Present while the worker process `instance` lives (renewed every second)."""
    return f"{P}worker:{instance}:alive"


def match(match_id: str) -> str:
    """Hash of a match's spec and status."""
    return f"{P}match:{match_id}"


def match_log(match_id: str) -> str:
    """Accepted actions of a match, in order."""
    return f"{P}match:{match_id}:log"


def conn(match_id: str) -> str:
    """Connection changes of the seats' bots, each tied to the action the match waited on."""
    return f"{P}match:{match_id}:conn"


def replies(match_id: str) -> str:
    """Answers for a match's job."""
    return f"{P}match:{match_id}:replies"


def lease(match_id: str) -> str:
    """Which job run hosts the match now."""
    return f"{P}match:{match_id}:lease"


def result(match_id: str) -> str:
    """The finished match: result and transcript, written once."""
    return f"{P}match:{match_id}:result"


def event(ref: EventRef) -> str:
    """Hash of an event's spec and status, and the prefix of all its keys:
    `ms:tournament:{id}`, `ms:test:{id}` (a test of a change), `ms:arena:{pool}`. The one
    scheduling step (`workers.scheduler`) drives every kind on the same keys below."""
    return f"{P}{ref.kind}:{ref.id}"


def event_games(ref: EventRef) -> str:
    """Ids of the games an event has created, scored by creation order."""
    return f"{event(ref)}:matches"


def event_recorded(ref: EventRef) -> str:
    """Finished (or failed) games of an event, scored 1, 2, 3, ... in recording order (the
    last number given is the event hash's `recorded`: an arena's archived games leave)."""
    return f"{event(ref)}:recorded"


def event_released(ref: EventRef) -> str:
    """Games of the event whose board is released (public), scored 1, 2, ..."""
    return f"{event(ref)}:released"


def event_state(ref: EventRef) -> str:
    """The step's state: its cursor into `recorded`, the boards open, the planner's state,
    the games decided and not yet known created (JSON; its version is `step_seq` in the
    event's hash)."""
    return f"{event(ref)}:state"


def event_lock(ref: EventRef) -> str:
    """Held while one run of the step advances the event."""
    return f"{event(ref)}:lock"


def event_dirty(ref: EventRef) -> str:
    """Set when the step should look at the event again."""
    return f"{event(ref)}:dirty"


def event_queued(ref: EventRef) -> str:
    """Set (with a TTL) while a step job of the event is queued: many asks, one job."""
    return f"{event(ref)}:queued"


def event_failed(ref: EventRef) -> str:
    """Games of the event that recovery marked failed (no run can host them)."""
    return f"{event(ref)}:failed"


def event_redealt(ref: EventRef) -> str:
    """Units of the event dealt afresh: another board had been dealt the planned deal."""
    return f"{event(ref)}:redealt"


def event_stream(ref: EventRef) -> str:
    """Stream of an event's public events; entry ids are `<sequence>-0`."""
    return f"{event(ref)}:events"


def event_emitted(ref: EventRef) -> str:
    """Keys of public events already emitted, so a re-run emits nothing twice."""
    return f"{event(ref)}:emitted"


def event_live(ref: EventRef) -> str:
    """Stream of an event's events for organisers: results as they are recorded."""
    return f"{event(ref)}:live"


def event_live_emitted(ref: EventRef) -> str:
    """Keys of organiser events already emitted."""
    return f"{event(ref)}:live_emitted"


ARCHIVE_PENDING = P + "archive:pending"  # finished, public games to archive, by when
ARCHIVE_DIRTY = P + "archive:dirty"  # the archiving job is asked for
ARCHIVE_QUEUED = P + "archive:queued"  # an archiving job is queued (many asks, one job)
ARCHIVE_LOCK = P + "archive:lock"  # held by the archiving job running
ARCHIVE_PARKED = P + "archive:parked"  # games the archive refused: match id -> why
ARCHIVE_BACKFILL = P + "archive:backfill"  # an upgrade's walk of ms:matches: where it is
ARCHIVE_BACKFILL_DONE = P + "archive:backfill:done"  # set once that walk is over
ARCHIVE_URL = P + "admin:archive"  # the stack's archive, for parts started without one
ARCHIVE_EVENTS = P + "archive:events"  # ended events to archive once their games are


def event_rows(ref: EventRef) -> str:
    """An open event's archived games: match id -> standings row (JSON), what its standings
    read once a game has left Redis (until the event itself is archived)."""
    return f"{event(ref)}:rows"


LIVE_EVENTS = P + "events:live"  # events the step still drives, for recovery's nudges
LIVE_EVENTS_LISTED = P + "events:live:listed"  # set once running events were listed there


def tournament(tournament_id: str) -> str:
    """Hash of a tournament's (or a test's) spec and status."""
    return event(EventRef.of_id(tournament_id))


TOURNAMENTS = P + "tournaments"
TESTS = P + "tests"


def test_pairs(test_id: str) -> str:
    """A test's counted pairs: board number -> the pair (JSON), each written once."""
    return f"{tournament(test_id)}:pairs"


# A tournament's or test's keys by its id: the generic keys above, for callers (and tests)
# that hold the id of one of the two.


def tournament_events(tournament_id: str) -> str:
    """Stream of a tournament's (or test's) public events."""
    return event_stream(EventRef.of_id(tournament_id))


def tournament_emitted(tournament_id: str) -> str:
    """Keys of a tournament's public events already emitted."""
    return event_emitted(EventRef.of_id(tournament_id))


def tournament_live(tournament_id: str) -> str:
    """Stream of a tournament's events for organisers."""
    return event_live(EventRef.of_id(tournament_id))


def tournament_live_emitted(tournament_id: str) -> str:
    """Keys of a tournament's organiser events already emitted."""
    return event_live_emitted(EventRef.of_id(tournament_id))


def tournament_released(tournament_id: str) -> str:
    """A tournament's released games."""
    return event_released(EventRef.of_id(tournament_id))


def tournament_matches(tournament_id: str) -> str:
    """The games a tournament (or test) created."""
    return event_games(EventRef.of_id(tournament_id))


def tournament_lock(tournament_id: str) -> str:
    """A tournament's step lock."""
    return event_lock(EventRef.of_id(tournament_id))


def tournament_dirty(tournament_id: str) -> str:
    """A tournament's ask for a step."""
    return event_dirty(EventRef.of_id(tournament_id))


def results(pool: str) -> str:
    """Released match ids of a rating pool (`3p` or `2v2`), scored by release time."""
    return f"{P}results:{pool}"


def tournament_recorded(tournament_id: str) -> str:
    """A tournament's recorded games."""
    return event_recorded(EventRef.of_id(tournament_id))


def tournament_state(tournament_id: str) -> str:
    """A tournament's step state."""
    return event_state(EventRef.of_id(tournament_id))


def tournament_units(tournament_id: str) -> str:
    """A schedule fixed in advance (round robins): one JSON unit per entry, in play order."""
    return f"{tournament(tournament_id)}:units"


def tournament_redealt(tournament_id: str) -> str:
    """A tournament's units dealt afresh."""
    return event_redealt(EventRef.of_id(tournament_id))


def tournament_failed(tournament_id: str) -> str:
    """A tournament's failed games."""
    return event_failed(EventRef.of_id(tournament_id))


def ratings(pool: str) -> str:
    """A pool's fitted rating table."""
    return f"{P}ratings:{pool}"


def ratings_los(pool: str) -> str:
    """The LOS matrix of a pool's fit (kept for pools of up to 400 bots)."""
    return f"{P}ratings:{pool}:los"


def ratings_live(pool: str) -> str:
    """A pool's provisional rating table."""
    return f"{P}ratings:{pool}:live"


def rating_table(pool: str, method: str) -> str:
    """A pool's table of one rating method (the official fit's and the provisional
    figure's at the keys they always had)."""
    if method == OFFICIAL:
        return ratings(pool)
    if method == PROVISIONAL:
        return ratings_live(pool)
    return f"{P}ratings:{pool}:method:{check_method_name(method)}"


def rating_los(pool: str, method: str) -> str:
    """The LOS matrix of a pool's table of one rating method."""
    if method == OFFICIAL:
        return ratings_los(pool)
    return f"{rating_table(pool, method)}:los"


def rating_methods(pool: str) -> str:
    """The rating methods with a table of the pool: name -> what that table is."""
    return f"{P}ratings:{pool}:methods"


def rating_snapshot_at(pool: str) -> str:
    """When the pool's rating tables were last kept in the archive (unix seconds)."""
    return f"{P}ratings:{pool}:snapshot_at"


def rating_history(pool: str, bot_id: str) -> str:
    """A bot's points (one per fit that counted new games of it), oldest first."""
    return f"{P}ratings:{pool}:history:{bot_id}"


def ratings_dirty(pool: str) -> str:
    """Set when a fit of the pool is asked for."""
    return f"{P}ratings:{pool}:dirty"


def ratings_tournaments(pool: str) -> str:
    """Tournaments whose own fit is asked for."""
    return f"{P}ratings:{pool}:tournaments"


def ratings_queued(pool: str) -> str:
    """Set while a fit job of the pool is queued."""
    return f"{P}ratings:{pool}:queued"


def ratings_fitting(pool: str) -> str:
    """Tournaments whose own fit a running job has taken and not written yet (an ended
    tournament waits for it before it moves to the archive)."""
    return f"{P}ratings:{pool}:fitting"


def ratings_lock(pool: str) -> str:
    """Held by the fit job of the pool while it runs."""
    return f"{P}ratings:{pool}:lock"


def tournament_rating(tournament_id: str) -> str:
    """The fit over one tournament's own released games."""
    return f"{tournament(tournament_id)}:rating"


def arena(pool: str) -> str:
    """Hash of a pool's arena: its spec, status and what its last step saw."""
    return event(EventRef.arena(pool))


def arena_joined(pool: str) -> str:
    """Zset of the bots that joined a pool's arena, scored by when."""
    return f"{arena(pool)}:joined"


def arena_games(pool: str) -> str:
    """Every game the arena created, in order (its event's games)."""
    return event_games(EventRef.arena(pool))


def arena_recorded(pool: str) -> str:
    """The arena's recorded games."""
    return event_recorded(EventRef.arena(pool))


def arena_released(pool: str) -> str:
    """The arena's released games, in order of release."""
    return event_released(EventRef.arena(pool))


def arena_state(pool: str) -> str:
    """The arena's step state."""
    return event_state(EventRef.arena(pool))


def arena_lock(pool: str) -> str:
    """The arena's step lock."""
    return event_lock(EventRef.arena(pool))


def arena_dirty(pool: str) -> str:
    """The arena's ask for a step."""
    return event_dirty(EventRef.arena(pool))


def arena_queued(pool: str) -> str:
    """Set while a step job of the arena is queued."""
    return event_queued(EventRef.arena(pool))
