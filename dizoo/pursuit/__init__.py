"""Pursuit and evasion: an asymmetric game of two roles (a pursuer and an evader with their own observations),
and a scripted bot for each role."""
from sparring.dizoo.pursuit.pursuit_env import PursuitEnv
from sparring.dizoo.pursuit.bots import ChaseBot, FleeBot
