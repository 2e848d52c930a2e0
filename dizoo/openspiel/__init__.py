"""OpenSpiel games: any turn-based game as a battle env (or a game of S seats), OpenSpiel's MCTS bot, exact exploitability.

Importing this package registers the envs ``'openspiel'`` (two seats) and ``'openspiel_multiseat'`` (games of
three or more players, :mod:`sparring.dizoo.openspiel.multiseat_env`) and the bot ``'openspiel_mcts'`` without
importing OpenSpiel; building either needs ``pip install sparring[openspiel]``. The exploitability
functions live in :mod:`sparring.dizoo.openspiel.exploitability`, which imports OpenSpiel itself.
"""
from sparring.dizoo.openspiel.openspiel_env import OpenSpielBattleEnv
from sparring.dizoo.openspiel.bots import OpenSpielMCTSBot
from sparring.dizoo.openspiel.multiseat_env import OpenSpielMultiSeatEnv
