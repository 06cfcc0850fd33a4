"""Every Redis key the project uses, in one place, so the data model can be read at a glance.

| key                         | type   | holds                                               |
|-----------------------------|--------|-----------------------------------------------------|
| ms:admin:token              | string | SHA-256 of the admin token                          |
| ms:admin:watch              | string | SHA-256 of the watch pass (derived from the token)  |
| ms:bots                     | zset   | bot ids by registration time                        |
| ms:bot:{id}                 | hash   | name, token hash, created_at                        |
| ms:botname:{name}           | string | bot id (makes names unique)                         |
| ms:bot:{id}:pending         | hash   | request id -> decision request JSON, until answered |
| ms:bot:{id}:events          | pubsub | decision requests and match events for the bot      |
| ms:bot:{id}:inbox           | stream | the bot's events other than requests, the last hour |
|                             |        | (what a reconnect replays after the bot's cursor)   |
| ms:bot:{id}:live            | set    | matches under way with the bot in a seat            |
| ms:bot:{id}:presence        | zset   | live stream ids, scored by expiry on Redis's clock  |
| ms:bot:{id}:matches         | zset   | the bot's match ids by creation time                |
| ms:bot:{id}:deals           | hash   | every deal seed the bot was dealt -> its board id   |
| ms:admin:deals              | string | the secret that turns planned boards into deals     |
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
| ms:tournament:{id}          | hash   | the tournament spec and status                      |
| ms:tournament:{id}:matches  | zset   | match ids the tournament created, in order          |
| ms:tournament:{id}:events   | stream | numbered public events (id `<seq>-0`): a game's     |
|                             |        | result only once its board is released              |
| ms:tournament:{id}:emitted  | set    | keys of public events emitted, so none is twice     |
| ms:tournament:{id}:live     | stream | numbered events for organisers, results as recorded |
| ms:tournament:{id}:live_emitted | set | keys of organiser events emitted                   |
| ms:tournament:{id}:released | zset   | games whose board every table has finished, in order|
| ms:tournament:{id}:lock     | string | held by the scheduler run advancing it              |
| ms:tournament:{id}:dirty    | string | set when the scheduler should look again            |
| ms:tournament:{id}:recorded | zset   | finished games, scored by recording order (1, 2, ..)|
| ms:tournament:{id}:state    | string | the scheduler's cached plan state and its cursor    |
| ms:tournament:{id}:units    | list   | the fixed schedule, one JSON unit per entry         |
| ms:tournament:{id}:failed   | set    | its games that cannot be hosted (RQ gave up)        |
| ms:tournament:{id}:redealt  | set    | its units dealt afresh (a bot had had the deal)     |
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
| ms:ratings:{pool}:dirty     | string | set when a fit is asked for                         |
| ms:ratings:{pool}:tournaments | set  | tournaments whose own fit is asked for              |
| ms:ratings:{pool}:queued    | string | a fit job is queued (many requests, one job)        |
| ms:ratings:{pool}:lock      | string | held by the fit job running                         |
| ms:tournament:{id}:rating   | string | the fit over the tournament's own released games    |
| ms:tests                    | zset   | test ids (tests of a change) by creation time       |
| ms:test:{id}                | hash   | a test's spec and status (the fields of a           |
|                             |        | tournament's, plus `stop` once StopTest asked)      |
| ms:test:{id}:...            |        | every `ms:tournament:{id}:...` key above but the    |
|                             |        | units and the rating, for the test's scheduling     |
| ms:test:{id}:pairs          | hash   | board number -> counted pair (JSON), written once   |
| ms:arena:{pool}             | hash   | the arena of a pool: spec, status, times, and what  |
|                             |        | its last step saw (online, waiting, retry_at, ...)  |
| ms:arena:{pool}:joined      | zset   | bots that joined it, by when                        |
| ms:arena:{pool}:state       | string | the matchmaking step's state (compare-and-set)      |
| ms:arena:{pool}:recorded    | zset   | its finished games, scored by recording order       |
| ms:arena:{pool}:games       | zset   | every game it created, in order                     |
| ms:arena:{pool}:released    | zset   | its games whose board every table finished, in order|
| ms:arena:{pool}:lock        | string | held by the matchmaking step running                |
| ms:arena:{pool}:dirty       | string | set when a step should look again                   |
| ms:arena:{pool}:queued      | string | a step job is queued (many asks, one job)           |
"""

from __future__ import annotations

from store.ids import is_test_id
from store.rating_tables import OFFICIAL, PROVISIONAL, check_method_name

P = "ms:"

ADMIN_TOKEN = P + "admin:token"
WATCH_PASS = P + "admin:watch"
DEAL_SECRET = P + "admin:deals"
DEALT_BOARDS = P + "deals:boards"  # every deal seed dealt, with the one board it was for
OPEN_MATCHES = P + "matches:open"
BOTS = P + "bots"
MATCHES = P + "matches"
RECOVERY_LOCK = P + "recovery:lock"
NUDGE_LOCK = P + "recovery:nudge_lock"
RECOVERY_SUSPECTS = P + "recovery:suspects"


def bot(bot_id: str) -> str:
    """Hash of one bot's record."""
    return f"{P}bot:{bot_id}"


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
    """Every deal seed the bot was dealt, with the board each was dealt for."""
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


def _event(event_id: str) -> str:
    """The prefix of an event's keys: `ms:tournament:{id}`, or `ms:test:{id}` for a test of
    a change. A test is scheduled by the same step as a tournament (`workers.scheduler`),
    so every `tournament_*` key below is also a test's, under its own prefix."""
    return f"{P}test:{event_id}" if is_test_id(event_id) else f"{P}tournament:{event_id}"


def tournament(tournament_id: str) -> str:
    """Hash of a tournament's (or a test's) spec and status."""
    return _event(tournament_id)


TOURNAMENTS = P + "tournaments"
TESTS = P + "tests"


def test_pairs(test_id: str) -> str:
    """A test's counted pairs: board number -> the pair (JSON), each written once."""
    return f"{_event(test_id)}:pairs"


def tournament_events(tournament_id: str) -> str:
    """Stream of a tournament's events; entry ids are `<sequence>-0`."""
    return f"{_event(tournament_id)}:events"


def tournament_emitted(tournament_id: str) -> str:
    """Keys of public events already emitted, so a re-run emits nothing twice."""
    return f"{_event(tournament_id)}:emitted"


def tournament_live(tournament_id: str) -> str:
    """Stream of a tournament's events for organisers: results as they are recorded."""
    return f"{_event(tournament_id)}:live"


def tournament_live_emitted(tournament_id: str) -> str:
    """Keys of organiser events already emitted."""
    return f"{_event(tournament_id)}:live_emitted"


def tournament_released(tournament_id: str) -> str:
    """Games of the tournament whose board is released (public), scored 1, 2, ..."""
    return f"{_event(tournament_id)}:released"


def tournament_matches(tournament_id: str) -> str:
    """Ids of the matches a tournament has created, scored by creation order."""
    return f"{_event(tournament_id)}:matches"


def tournament_lock(tournament_id: str) -> str:
    """Held while one run of the scheduler advances the tournament."""
    return f"{_event(tournament_id)}:lock"


def tournament_dirty(tournament_id: str) -> str:
    """Set when something happened that the scheduler has not looked at yet."""
    return f"{_event(tournament_id)}:dirty"


def results(pool: str) -> str:
    """Released match ids of a rating pool (`3p` or `2v2`), scored by release time."""
    return f"{P}results:{pool}"


def tournament_recorded(tournament_id: str) -> str:
    """Finished games of a tournament, scored 1, 2, 3, ... in the order they were recorded."""
    return f"{_event(tournament_id)}:recorded"


def tournament_state(tournament_id: str) -> str:
    """The scheduler's state (cursor into `recorded`, and the format's plan state)."""
    return f"{_event(tournament_id)}:state"


def tournament_units(tournament_id: str) -> str:
    """A schedule fixed in advance (round robins): one JSON unit per entry, in play order."""
    return f"{_event(tournament_id)}:units"


def tournament_redealt(tournament_id: str) -> str:
    """Units of the tournament dealt afresh: a bot had been dealt the planned deal."""
    return f"{_event(tournament_id)}:redealt"


def tournament_failed(tournament_id: str) -> str:
    """Games of the tournament that recovery marked failed."""
    return f"{_event(tournament_id)}:failed"


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


def ratings_lock(pool: str) -> str:
    """Held by the fit job of the pool while it runs."""
    return f"{P}ratings:{pool}:lock"


def tournament_rating(tournament_id: str) -> str:
    """The fit over one tournament's own released games."""
    return f"{_event(tournament_id)}:rating"


def arena(pool: str) -> str:
    """Hash of a pool's arena: its spec, status and what its last step saw."""
    return f"{P}arena:{pool}"


def arena_joined(pool: str) -> str:
    """Zset of the bots that joined a pool's arena, scored by when."""
    return f"{P}arena:{pool}:joined"


def arena_state(pool: str) -> str:
    """The arena's matchmaking state (JSON), replaced by compare-and-set."""
    return f"{P}arena:{pool}:state"


def arena_recorded(pool: str) -> str:
    """Zset of the arena's finished games, scored by recording order (1, 2, ...)."""
    return f"{P}arena:{pool}:recorded"


def arena_games(pool: str) -> str:
    """Zset of every game the arena created, scored by creation order."""
    return f"{P}arena:{pool}:games"


def arena_released(pool: str) -> str:
    """Zset of the arena's released games, in order of release."""
    return f"{P}arena:{pool}:released"


def arena_lock(pool: str) -> str:
    """Held by the arena's matchmaking step while it runs."""
    return f"{P}arena:{pool}:lock"


def arena_dirty(pool: str) -> str:
    """Set when the arena's matchmaking step should look again."""
    return f"{P}arena:{pool}:dirty"


def arena_queued(pool: str) -> str:
    """Set while a matchmaking job of the arena is queued."""
    return f"{P}arena:{pool}:queued"
