"""The PSRO-style league of ``zero_sum_2x2_league.py`` on rock-paper-scissors, whose equilibrium is uniform."""
import copy

from sparring.dizoo.matrix_games.config.zero_sum_2x2_league import config as zero_sum_config

config = copy.deepcopy(zero_sum_config)
config['exp_name'] = 'runs/rock_paper_scissors_league'
config['env']['type'] = 'rock_paper_scissors'
