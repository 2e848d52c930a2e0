"""Team Pong: N-versus-N Pong with one shared policy per team, and its random and lane-keeping team bots."""
from sparring.dizoo.team_pong.team_pong_env import TeamPongEnv
from sparring.dizoo.team_pong.bots import TeamPongTrackerBot
