"""The referee's side of decision delivery: forwarding an answer to the match job.

A match job stores each decision request in the bot's pending hash and publishes
it on the bot's channel (see `workers.match`). When an answer arrives on a bot's
stream, the referee runs `ACCEPT` atomically: if the request is pending *for
that bot*, it is removed and the answer pushed to the match's reply list; if not,
nothing changes. So a bot can answer only requests addressed to it, and only the
first answer to a request counts, even with many streams and referees.
"""

from __future__ import annotations

import json
from typing import Any

from workers import keys

__all__ = ["ACCEPT_LUA", "accept_args", "match_of_request", "rejection"]

ACCEPT_LUA = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then
  redis.call('RPUSH', KEYS[2], ARGV[2])
  return 1
end
return 0
"""


MAX_SEQ_DIGITS = 18


def match_of_request(request_id: str) -> str:
    """The match id a request id names (`<match_id>/<seq>`), or '' when malformed."""
    match_id, sep, seq = request_id.rpartition("/")
    # A sequence is a plain decimal that fits Redis's 64-bit list index (not "²", not 10**20).
    well_formed = seq.isascii() and seq.isdigit() and len(seq) <= MAX_SEQ_DIGITS
    return match_id if sep and match_id and well_formed else ""


def accept_args(bot_id: str, request_id: str, action_id: int) -> tuple[list[str], list[str]]:
    """KEYS and ARGV for ACCEPT."""
    match_id = match_of_request(request_id)
    reply = json.dumps({"request_id": request_id, "action_id": action_id, "bot_id": bot_id})
    return [keys.pending(bot_id), keys.replies(match_id)], [request_id, reply]


def rejection(request_id: str, match_id: str, reason: str, message: str,
              replacement_action_id: int | None = None, strikes: int = 0) -> dict[str, Any]:
    """A `decision_rejected` event for a bot's stream, as the match job publishes it and
    the referee sends it (`server.wire` turns it into the protobuf message)."""
    return {
        "type": "decision_rejected",
        "request_id": request_id,
        "match_id": match_id,
        "reason": reason,
        "message": message,
        "replacement_action_id": replacement_action_id,
        "strikes": strikes,
    }
