"""OpenSpiel games: any two-player turn-based game as a battle env, OpenSpiel's MCTS bot, exact exploitability.

Importing this package registers the env ``'openspiel'`` and the bot ``'openspiel_mcts'`` without
importing OpenSpiel; building either needs ``pip install sparring[openspiel]``. The exploitability
functions live in :mod:`sparring.dizoo.openspiel.exploitability`, which imports OpenSpiel itself.
"""
from sparring.dizoo.openspiel.openspiel_env import OpenSpielBattleEnv
from sparring.dizoo.openspiel.bots import OpenSpielMCTSBot
