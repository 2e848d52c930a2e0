"""sparring: reinforcement learning by self-play in a league.

Sub-packages: ``framework`` (entry points, commander, CLI), ``league`` (players, payoff,
ratings), ``policy`` (PPO and models), ``worker`` (envs, collectors, learner, evaluator),
``config`` (registries, defaults and compilation) and ``dizoo`` (environments with ready configs).

``sparring.load_player(run_dir, player=None, snapshot=None)`` gives a trained player's policy; it is
imported on first use, so ``import sparring`` stays cheap.
"""
__version__ = '0.1.0'

_LAZY = {'load_player': 'sparring.framework.player_loader'}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
