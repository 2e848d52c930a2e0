"""OpenSpiel games: any turn-based game as a battle env (or a game of S seats), OpenSpiel's MCTS bot, exact exploitability.

Importing this package registers the envs ``'openspiel'`` (two seats, optionally with roles) and
``'openspiel_multiseat'`` (games of three or more players, :mod:`sparring.dizoo.openspiel.multiseat_env`), the bot
``'openspiel_mcts'`` and sheriff's bots of each role (:mod:`sparring.dizoo.openspiel.sheriff_bots`) without
importing OpenSpiel; building any of them needs ``pip install sparring[openspiel]``. The exploitability
functions live in :mod:`sparring.dizoo.openspiel.exploitability` (one policy in both seats) and
:mod:`sparring.dizoo.openspiel.role_analysis` (a pair of role policies), which import OpenSpiel themselves.
"""
from sparring.dizoo.openspiel.openspiel_env import OpenSpielBattleEnv
from sparring.dizoo.openspiel.bots import OpenSpielMCTSBot
from sparring.dizoo.openspiel.multiseat_env import OpenSpielMultiSeatEnv
from sparring.dizoo.openspiel.sheriff_bots import InspectorBot, SmugglerBot
