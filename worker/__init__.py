"""Workers: environment managers, collectors, learner, evaluators. Shared by serial and parallel modes.

Names are imported on first use, so an env subprocess that only needs ``sparring.worker.env``
does not pay for importing torch.
"""
import importlib

_EXPORTS = {
    'Chunk': 'sparring.worker.chunk',
    'SampleCollector': 'sparring.worker.collector',
    'BattleCollector': 'sparring.worker.battle_collector',
    'Evaluator': 'sparring.worker.evaluator',
    'EvalResult': 'sparring.worker.evaluator',
    'BattleEvaluator': 'sparring.worker.battle_evaluator',
    'BattleEvalResult': 'sparring.worker.battle_evaluator',
    'Learner': 'sparring.worker.learner',
    'ParamStore': 'sparring.worker.policy_pool',
    'PolicyPool': 'sparring.worker.policy_pool',
}

__all__ = list(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
