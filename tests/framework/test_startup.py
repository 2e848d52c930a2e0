"""Start-up: the command line's ``--version`` and ``--help`` import no torch, and loading a player to act imports
neither torch's compiler (which building an optimiser pulls in) nor the report page. Seconds are measured by
``benchmarks/startup.py``, not asserted here."""
import json
import subprocess
import sys

import pytest

from sparring.policy.ppo import PPOPolicy


def modules_after(code: str) -> set:
    """The modules loaded in a fresh interpreter after running ``code``."""
    out = subprocess.run([sys.executable, '-c', f'{code}\nimport sys, json; print(json.dumps(sorted(sys.modules)))'],
                         capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


@pytest.mark.parametrize('argv', [['--version'], ['--help'], ['train', '--help']])
def test_the_command_line_answers_version_and_help_without_torch(argv):
    loaded = modules_after(f'from sparring.framework.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n'
                           f'    pass')
    assert 'sparring.framework.cli' in loaded
    assert not {'torch', 'numpy', 'sparring.league', 'sparring.worker.env'} & loaded


def test_loading_a_player_imports_neither_the_compiler_nor_the_report_page(trained_tictactoe):
    run_dir, _ = trained_tictactoe
    loaded = modules_after(f'import sparring\nsparring.load_player({run_dir!r}).act')
    assert 'sparring.policy.ppo' in loaded
    assert not {'torch._dynamo', 'sparring.framework.report_page', 'sparring.league.report_page'} & loaded


def test_a_policy_builds_its_optimiser_when_it_first_learns_and_places_it_then():
    import gymnasium as gym
    from sparring.config import compile_section
    cfg = compile_section('policy', dict(type='ppo'))
    policy = PPOPolicy(cfg, gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(2))
    assert '_optimizer' not in vars(policy)
    optimizer = policy.optimizer
    assert policy.optimizer is optimizer and optimizer.param_groups[0]['betas'] == (0.9, 0.999)
    assert {id(p) for p in optimizer.param_groups[0]['params']} == {id(p) for p in policy.net.parameters()}


def test_separate_value_ppo_and_the_average_policy_build_their_optimisers_when_they_first_learn():
    import gymnasium as gym
    import numpy as np
    from sparring.config import compile_section
    from sparring.config.registry import POLICY_REGISTRY
    from sparring.policy.model.task_mlp import task_sizes  # noqa: F401  (registers task_mlp)
    box = gym.spaces.Box(-np.inf, np.inf, (3,), np.float64)
    cfg = compile_section('policy', dict(type='ppo_separate_value', model=dict(type='task_mlp')))
    separate = POLICY_REGISTRY.get('ppo_separate_value')(cfg, box, gym.spaces.Box(-1, 1, (1,), np.float32))
    assert not {'_optimizer', '_value_optimizer'} & set(vars(separate))
    value_ids = {id(p) for p in separate.value_params}
    assert {id(p) for p in separate.value_optimizer.param_groups[0]['params']} == value_ids
    assert not {id(p) for p in separate.optimizer.param_groups[0]['params']} & value_ids
    assert separate.optimizer is separate.optimizer and separate.value_optimizer is separate.value_optimizer

    cfg = compile_section('policy', dict(type='ppo', model=dict(hidden_sizes=[8]), average=dict(enabled=True)))
    nfsp = PPOPolicy(cfg, box, gym.spaces.Discrete(2))
    assert '_optimizer' not in vars(nfsp) and '_optimizer' not in vars(nfsp.average)
    optimizer = nfsp.average.optimizer
    assert nfsp.average.optimizer is optimizer and '_optimizer' not in vars(nfsp)
    assert {id(p) for p in optimizer.param_groups[0]['params']} == {id(p) for p in nfsp.average.model.parameters()}
