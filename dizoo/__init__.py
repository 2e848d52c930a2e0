"""Environment families, one package each; importing this package registers them."""
from sparring.dizoo import classic_control
from sparring.dizoo import board_games
from sparring.dizoo import matrix_games
from sparring.dizoo import pong_duel
from sparring.dizoo import team_pong
from sparring.dizoo import pursuit
from sparring.dizoo import target_chase  # registers 'target_chase', a continuous game of three or more seats
from sparring.dizoo import openspiel  # registers 'openspiel'; OpenSpiel itself is imported only when a game is built
from sparring.dizoo import pettingzoo  # registers 'pettingzoo'; PettingZoo itself is imported only when an env is built
from sparring.dizoo import atari  # registers 'atari'; ale-py is imported only when a game is checked or built
from sparring.dizoo import mujoco  # registers 'hopper', 'halfcheetah', 'walker2d'; needs mujoco when one is built
from sparring.dizoo import memory  # registers 'cue_recall'
