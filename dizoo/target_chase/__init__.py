"""Target chase: a continuous free-for-all of three or more seats (players chasing one moving target, ranked by
who kept closest), and its scripted bot."""
from sparring.dizoo.target_chase.target_chase_env import TargetChaseEnv
from sparring.dizoo.target_chase.bots import GreedyChaseBot
