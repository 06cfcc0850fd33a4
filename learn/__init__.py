"""Moon for learning agents: an OpenSpiel game, PettingZoo and Gymnasium environments, and a
player that runs any OpenSpiel bot on the engine's observations (the optional extra `learn`).

Each adapter is a module of its own, imported on demand, so that the rest of the project
never needs pyspiel, pettingzoo or gymnasium: `learn.openspiel` (registers the game
`moon` with pyspiel), `learn.pettingzoo`, `learn.gym` and `learn.runner`. Imports only
`moon` and `bots`.
"""
