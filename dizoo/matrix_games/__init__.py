"""One-shot matrix games (a 2x2 zero-sum game, prisoner's dilemma, rock-paper-scissors) as battle envs."""
from sparring.dizoo.matrix_games.matrix_game_env import (MatrixGameEnv, PrisonersDilemmaEnv, RockPaperScissorsEnv,
                                                         ZeroSum2x2Env)
