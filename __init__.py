"""sparring: reinforcement learning by self-play in a league.

Sub-packages: ``framework`` (registries, entry points, CLI), ``league`` (players, payoff,
ratings), ``policy`` (PPO and models), ``worker`` (envs, collectors, learner, evaluator),
``config`` (defaults and compilation) and ``dizoo`` (environments with ready configs).
"""
__version__ = '0.1.0'
