"""A complete bot: bid with three doubles, name its longest suit, play its highest tile."""

from clients.bot import Bot
from moon import ActionKind


class HighestBot(Bot):
    name = "highest"

    def act(self, obs, legal):
        kinds = {a.kind for a in legal}
        if ActionKind.BID in kinds and sum(t.is_double for t in obs.hand) >= 3:
            return next(a for a in legal if a.kind is ActionKind.BID)  # the lowest bid
        if ActionKind.TRUMP in kinds:  # trump N (value 0..6): N is a suit
            suits = [a for a in legal if a.kind is ActionKind.TRUMP and a.value <= 6]
            return max(suits, key=lambda a: sum(a.value in (t.high, t.low) for t in obs.hand))
        if ActionKind.DISCARD in kinds:
            return min(legal, key=lambda a: a.tile.high + a.tile.low)
        if ActionKind.PLAY in kinds:
            return max(legal, key=lambda a: (a.tile.high, a.tile.low))
        return legal[0]  # pass when allowed (id 0 sorts first), else the lowest bid
