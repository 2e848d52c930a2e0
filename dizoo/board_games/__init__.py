"""Tic-tac-toe and connect four: vectorised turn-based battle envs and their reference bots."""
from sparring.dizoo.board_games.board_game_env import ConnectFourEnv, LineGameEnv, TicTacToeEnv
from sparring.dizoo.board_games.bots import (ConnectFourHeuristicBot, ConnectFourMCTSBot, TicTacToeHeuristicBot,
                                             TicTacToeMCTSBot)
