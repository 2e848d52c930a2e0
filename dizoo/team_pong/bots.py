"""Team Pong's reference bot: every paddle tracks the ball within its own lane, reacting with some probability."""
from __future__ import annotations

from sparring.dizoo.pong_duel.bots import PongTrackerBot
from sparring.config.registry import BOT_REGISTRY


@BOT_REGISTRY.register('team_pong_heuristic')
class TeamPongTrackerBot(PongTrackerBot):
    """Pong duel's tracker for each agent: the battle arena gives a team bot one row per agent, and an
    agent's observation starts with Pong duel's ball and own-paddle features (its lane bounds keep
    the paddle where it belongs), so the same rule plays any team size."""
