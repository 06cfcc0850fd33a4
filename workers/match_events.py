"""The public events of a match, derived from its action log: what WatchMatch streams.

The events are a pure function of the spec and the log, so their sequence
numbers never change and a watcher can resume after any of them. Only public
information goes out: a discard is announced without its tile.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from moon import GameState
from moon.actions import ACTIONS, ActionKind
from workers.spec import MatchSpec

__all__ = ["MatchEvents"]


class MatchEvents:
    """Turns log entries into numbered events, incrementally."""

    def __init__(self, spec: MatchSpec) -> None:
        self.spec = spec
        self.state = GameState.new(spec.rules, spec.seed, record=True)
        self.consumed = 0  # log entries read so far
        self.events: list[dict[str, Any]] = [{"type": "match_started"}]
        self.strikes = [0] * spec.players

    def feed(self, entries: Sequence[str]) -> None:
        """Add the events of the next log entries (JSON strings, in log order)."""
        st = self.state
        for raw in entries:
            self.consumed += 1
            e = json.loads(raw)
            if "forfeit" in e:
                continue  # the finish event carries the forfeit
            seat, action = int(e["seat"]), ACTIONS[int(e["action"])]
            if e["by"] != "bot":
                self.strikes[seat] += 1
                self.events.append({
                    "type": "fault", "seat": seat,
                    "kind": "late" if e["by"] == "late" else "illegal_action",
                    "replacement": action.id, "strikes": self.strikes[seat],
                    "message": e.get("note", ""),
                })
            hand = st.hand_index
            st.apply_id(action.id)
            self.events.append({
                "type": "action_taken", "seat": seat, "hand_number": hand + 1,
                "kind": int(action.kind),
                "action": None if action.kind is ActionKind.DISCARD else action.id,
                "actions_played": len(st.actions),
            })
            if st.hand_index > hand or (st.is_over and len(st.hand_log) > hand):
                rec = st.hand_log[hand]
                self.events.append({"type": "hand_ended", "hand_number": hand + 1, **rec})

    def finish(self, status: str, result: dict[str, Any] | None, error: str) -> None:
        """Add the last event once the match is over."""
        self.events.append({"type": "match_finished", "status": status, "result": result,
                            "error": error})
