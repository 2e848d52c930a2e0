"""sparring.league: players, the shared payoff, opponent sampling, ratings and leagues.

Importing this package registers the built-in players (``naive_sp``, ``main_player``,
``main_exploiter``, ``league_exploiter``, ``mlagents_sp``, ``openai_five_sp``) and leagues
(``one_vs_one``, ``alphastar``). See ``job_protocol`` for the job / result / update dicts.
"""
from sparring.league.errors import LeagueError, UnknownPlayerError
from sparring.league.outcome import OUTCOMES
from sparring.league.payoff import BattleRecordDict, BattleSharedPayoff
from sparring.league.meta_strategy import meta_game, payoff_nash, solve_zero_sum_matrix, symmetric_nash
from sparring.league.sampling import (PFSP_WEIGHTINGS, normalise, pfsp_probabilities, pfsp_sample, pfsp_weights,
                                      register_pfsp_weighting, sample_weighted, uniform_sample)
from sparring.league.rating import EloRating, LeagueRatings, RatingSystem, TrueSkillRating
from sparring.league.roster import PlayerGroup, Roster
from sparring.league.player import ActivePlayer, HistoricalPlayer, NaiveSpPlayer, Player, ReferencePlayer
from sparring.league.alphastar_player import LeagueExploiter, MainExploiter, MainPlayer
from sparring.league.selfplay_player import MLAgentsSelfPlayPlayer, OpenAIFiveSelfPlayPlayer, PeriodicSelfPlayPlayer
from sparring.league.base_league import BaseLeague, build_league
from sparring.league.leagues import AlphaStarLeague, OneVsOneLeague
from sparring.league.single_agent import SingleAgentLeague
from sparring.league.persistence import load_state, save_state

__all__ = [
    'LeagueError', 'UnknownPlayerError', 'OUTCOMES',
    'BattleRecordDict', 'BattleSharedPayoff',
    'meta_game', 'payoff_nash', 'solve_zero_sum_matrix', 'symmetric_nash',
    'PFSP_WEIGHTINGS', 'normalise', 'pfsp_probabilities', 'pfsp_sample', 'pfsp_weights', 'register_pfsp_weighting',
    'sample_weighted', 'uniform_sample',
    'EloRating', 'TrueSkillRating', 'RatingSystem', 'LeagueRatings',
    'PlayerGroup', 'Roster',
    'Player', 'HistoricalPlayer', 'ReferencePlayer', 'ActivePlayer', 'NaiveSpPlayer',
    'MainPlayer', 'MainExploiter', 'LeagueExploiter',
    'PeriodicSelfPlayPlayer', 'MLAgentsSelfPlayPlayer', 'OpenAIFiveSelfPlayPlayer',
    'BaseLeague', 'OneVsOneLeague', 'AlphaStarLeague', 'SingleAgentLeague', 'build_league',
    'save_state', 'load_state',
]
