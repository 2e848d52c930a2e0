"""Pong duel: a real-time two-paddle Pong as a vectorised battle env, and its ball-tracking bot."""
from sparring.dizoo.pong_duel.pong_duel_env import PongDuelEnv
from sparring.dizoo.pong_duel.bots import PongTrackerBot
