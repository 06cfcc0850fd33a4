"""A search bot with the engine as a library: deal the unseen tiles, try each move, play on."""

from bots import greedy_action
from clients.bot import Bot
from moon import Sampler


class SearchBot(Bot):
    name = "search"
    deals = 12  # deals of the unseen tiles per decision

    def act(self, obs, legal):
        if len(legal) == 1:
            return legal[0]
        sampler = Sampler(obs)  # the tiles this seat has not seen, dealt as play allows
        totals = dict.fromkeys(legal, 0.0)
        for _ in range(self.deals):
            deal = sampler.sample(self.rng)  # a whole GameState this seat could be in
            for action in legal:
                state = deal.copy()
                state.apply_id(action.id)
                totals[action] += self.play_out(state, obs.seat)
        return max(legal, key=totals.__getitem__)

    def play_out(self, state, seat):
        """Greedy moves to the end of the hand: what it was worth to `seat`."""
        before, hand = state.scores[:], state.hand_index
        while state.hand_index == hand and not state.is_over:
            obs = state.observation(state.to_act)
            state.apply(greedy_action(obs, state.legal_actions()))
        gain = [after - was for after, was in zip(state.scores, before, strict=True)]
        return gain[state.side_of(seat)] - sum(gain) / len(gain)
