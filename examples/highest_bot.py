"""A complete bot: bid only with three doubles, otherwise play the highest legal tile."""

from clients.bot import Bot
from moon import ActionKind


class HighestBot(Bot):
    name = "highest"

    def act(self, obs, legal):
        doubles = sum(t.is_double for t in obs.hand)
        for action in legal:
            if action.kind is ActionKind.BID and doubles >= 3:
                return action  # the lowest bid allowed
        plays = [a for a in legal if a.kind is ActionKind.PLAY]
        if plays:
            return max(plays, key=lambda a: (a.tile.high, a.tile.low))
        passes = [a for a in legal if a.kind is ActionKind.PASS]
        return passes[0] if passes else legal[0]
