"""Device placement (``policy.device``, ``policy.collect.device``), tested on a CPU-only torch.

What runs here: the CPU path end to end (PPO and DQN serial runs, a resume from their checkpoints),
the config errors, ``'auto'`` resolving to the CPU, parameters and checkpoints coming out as CPU
tensors. No GPU exists here, so two tests stand in for one, and say how far they go:

* the CUDA branch of device resolution runs with torch's "is CUDA there" check replaced, up to the
  first real allocation on the device (which fails, as it must without CUDA);
* moving a trained policy to the ``meta`` device (tensors without data) shows that a move reaches
  every tensor it must (network, normaliser, optimiser state, kept batches). Nothing is computed there.
"""
import gymnasium as gym
import numpy as np
import pytest
import torch

import sparring.dizoo  # noqa: F401  (registers the envs)
from sparring.config import compile_config
from sparring.config.compile import compile_section
from sparring.config.registry import POLICY_REGISTRY
from sparring.config.schema import ConfigError
from sparring.framework import serial_pipeline
from sparring.policy import device as device_mod
from sparring.policy.device import Placement, resolve_device
from sparring.worker.checkpoint import CheckpointManager
from sparring.worker.collector import SampleCollector
from sparring.worker.env.manager import make_env_manager
from sparring.worker.learner import Learner

pytestmark = pytest.mark.usefixtures('one_torch_thread')
CPU = torch.device('cpu')


def _tensors(obj, path=''):
    """(path, tensor) for every tensor inside nested dicts, lists and tuples."""
    if isinstance(obj, torch.Tensor):
        yield path, obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from _tensors(value, f'{path}.{key}')
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield from _tensors(value, f'{path}[{i}]')


# -- config ------------------------------------------------------------------------------------

@pytest.mark.parametrize('policy_type', ['ppo', 'ppo_separate_value', 'dqn'])
def test_defaults_are_the_cpu_for_learning_and_acting(policy_type):
    cfg = compile_section('policy', dict(type=policy_type))
    assert cfg.device == 'cpu' and cfg.collect.device == 'cpu'


@pytest.mark.parametrize('key, section', [('policy.device', dict(device='cuda')),
                                          ('policy.device', dict(device='cuda:0')),
                                          ('policy.collect.device', dict(collect=dict(device='cuda')))])
@pytest.mark.parametrize('policy_type', ['ppo', 'dqn'])
def test_cuda_on_a_cpu_only_torch_is_a_config_error_naming_the_key(policy_type, key, section, tmp_path):
    assert not torch.cuda.is_available()  # this machine; the test means nothing elsewhere
    config = dict(exp_name=str(tmp_path / 'run'), env=dict(type='cartpole'), policy=dict(type=policy_type, **section))
    with pytest.raises(ConfigError) as err:
        compile_config(config, save=False)
    message = str(err.value)
    assert f'"{key}"' in message and torch.__version__ in message and 'has no CUDA' in message
    assert "expected 'cpu' or 'auto'" in message


def test_a_config_saved_elsewhere_is_checked_again_where_the_policy_is_built():
    """A config compiled on a CUDA machine and built here: the same error, from the policy's constructor."""
    cfg = compile_section('policy', dict(type='ppo'))
    cfg.collect.device = 'cuda'
    with pytest.raises(ConfigError, match='"policy.collect.device".*has no CUDA'):
        POLICY_REGISTRY.get('ppo')(cfg, gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(2))
    cfg.collect.device, cfg.device = 'cpu', 'cuda:1'
    policy = POLICY_REGISTRY.get('ppo')(cfg, gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(2))
    with pytest.raises(ConfigError, match='"policy.device".*has no CUDA'):
        Learner(policy, 100)


@pytest.mark.parametrize('bad', ['gpu', 'cuda:', 'cuda:x', 'CPU', 'mps', ' cpu'])
def test_other_device_names_are_refused_with_the_choices(bad):
    with pytest.raises(ConfigError, match="\"policy.device\": expected 'cpu', 'cuda', 'cuda:N' or 'auto'"):
        compile_section('policy', dict(type='ppo', device=bad))
    with pytest.raises(ConfigError, match='"policy.collect.device": expected str'):
        compile_section('policy', dict(type='ppo', collect=dict(device=0)))


def test_a_misspelt_key_suggests_device():
    with pytest.raises(ConfigError, match="Did you mean 'device'"):
        compile_section('policy', dict(type='dqn', devise='cpu'))


def test_auto_resolves_to_the_cpu_here_for_the_learner_and_the_collectors():
    cfg = compile_section('policy', dict(type='ppo', device='auto', collect=dict(device='auto')))
    assert cfg.device == 'auto'  # resolved where the policy is built, not when compiled
    policy = POLICY_REGISTRY.get('ppo')(cfg, gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(2))
    assert policy.device == CPU
    assert Learner(policy, 100).policy.device == CPU
    assert resolve_device('auto') == CPU


# -- the CUDA branch, as far as it goes without CUDA ---------------------------------------------

@pytest.fixture
def pretend_two_gpus(monkeypatch):
    """torch's answers replaced: two CUDA devices 'exist'. Only the resolution logic can run on them."""
    monkeypatch.setattr(device_mod, 'cuda_available', lambda: True)
    monkeypatch.setattr(device_mod, 'cuda_device_count', lambda: 2)


def test_with_cuda_reported_auto_picks_it_and_indices_are_checked(pretend_two_gpus):
    assert resolve_device('auto') == torch.device('cuda')
    assert resolve_device('cuda') == torch.device('cuda')
    assert resolve_device('cuda:1', 'policy.collect.device') == torch.device('cuda', 1)
    assert resolve_device('cpu') == CPU
    with pytest.raises(ConfigError, match=r'"policy.device": \'cuda:2\': torch sees 2 CUDA device\(s\), cuda:0 to '
                                          r'cuda:1'):
        resolve_device('cuda:2')
    cfg = compile_section('policy', dict(type='ppo', device='cuda:1'))  # the compile-time check passes too
    assert cfg.device == 'cuda:1'


def test_with_cuda_reported_a_policy_goes_to_move_and_stops_at_the_first_real_allocation(pretend_two_gpus):
    """The learner's move runs the CUDA path until torch must really allocate on the device: on this
    CPU-only torch that raises torch's own "not compiled with CUDA" error, never a silent CPU fallback."""
    cfg = compile_section('policy', dict(type='ppo', device='auto', model=dict(hidden_sizes=[8])))
    policy = POLICY_REGISTRY.get('ppo')(cfg, gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(2))
    assert policy.device == CPU  # built on the acting device, collect.device='cpu'
    with pytest.raises((AssertionError, RuntimeError), match='CUDA'):
        Learner(policy, 100)
    with pytest.raises((AssertionError, RuntimeError), match='CUDA'):
        Placement(resolve_device('cuda')).tensor(np.zeros(3, np.float32))


# -- moves reach every tensor (meta: no data, no computation) ------------------------------------

def _trained(policy_cfg, env_type='cartpole', steps=16):
    cfg = compile_section('policy', policy_cfg)
    with make_env_manager(dict(type=env_type), 2, seed=0) as env:
        policy = POLICY_REGISTRY.get(cfg.type)(cfg, env.observation_space, env.action_space, seed=0)
        collector = SampleCollector(env, policy, steps)
        for _ in range(2):  # twice: the KL objective keeps the previous chunk for its value fit
            policy.learn(collector.collect().data)
    return policy


def _trained_cnn():
    cfg = compile_section('policy', dict(type='ppo', model=dict(type='cnn', hidden_size=16), obs_norm=False,
                                         learn=dict(epochs=1, num_minibatches=1)))
    policy = POLICY_REGISTRY.get('ppo')(cfg, gym.spaces.Box(0, 255, (4, 36, 36), np.uint8), gym.spaces.Discrete(3))
    rng = np.random.default_rng(0)
    T, B = 4, 2
    obs = rng.integers(0, 256, (T, B, 4, 36, 36), dtype=np.uint8)
    out = policy.act(obs.reshape(T * B, 4, 36, 36))
    policy.learn(dict(obs=obs, action=out.action.reshape(T, B), log_prob=out.log_prob.reshape(T, B),
                      value=out.value.reshape(T, B), reward=rng.normal(size=(T, B)).astype(np.float32),
                      terminated=np.zeros((T, B), bool), truncated=np.zeros((T, B), bool),
                      next_value=np.zeros((T, B), np.float32)))
    return policy


SMALL = dict(epochs=1, num_minibatches=2)
TRAINED = {
    'ppo_mlp_five_clip_obs_norm': lambda: _trained(dict(type='ppo', obs_norm=True, learn=dict(SMALL, grad_clip='five'))),
    'ppo_kl_penalty_value_replay': lambda: _trained(dict(type='ppo', learn=dict(SMALL, objective='kl_penalty')),
                                                    env_type='pendulum'),
    'ppo_lstm': lambda: _trained(dict(type='ppo', collect=dict(n_steps=16),
                                      model=dict(type='lstm', hidden_size=8, encoder_sizes=[8], bptt_len=4),
                                      learn=SMALL)),
    'ppo_cnn': _trained_cnn,
    'ppo_separate_value_task_mlp': lambda: _trained(
        dict(type='ppo_separate_value', obs_norm=True, model=dict(type='task_mlp'),
             learn=dict(SMALL, objective='kl_penalty', value_epochs=1)), env_type='pendulum'),
    'dqn_prioritized': lambda: _trained(dict(type='dqn', model=dict(hidden_sizes=[8]), replay=dict(prioritized=True),
                                             learn=dict(learning_starts=8, batch_size=8, updates_per_chunk=2))),
}


def _optimizers(policy):
    return [opt for opt in (policy.optimizer, getattr(policy, 'value_optimizer', None)) if opt is not None]


@pytest.mark.parametrize('name', sorted(TRAINED))
def test_a_move_reaches_the_network_optimiser_state_and_kept_batches(name):
    policy = TRAINED[name]()
    assert all(opt.state for opt in _optimizers(policy))  # there is optimiser state to move
    meta = torch.device('meta')
    policy.to_device(meta)
    assert policy.device == meta
    modules = [policy.net] + ([policy.target_net] if hasattr(policy, 'target_net') else [])
    for module in modules:
        for key, tensor in module.state_dict().items():
            assert tensor.device == meta, key
    for opt in _optimizers(policy):
        params = [p for group in opt.param_groups for p in group['params']]
        assert {id(p) for p in params} <= {id(p) for p in policy.net.parameters()}  # still the moved ones
        for state in opt.state.values():
            for key, tensor in state.items():
                # Adam keeps its step counts on the CPU unless capturable; torch's own loading decides that
                assert tensor.device == (CPU if key == 'step' else meta), key
    clipper = getattr(policy, 'grad_clipper', None)
    if clipper is not None:
        assert all(m.device == meta for m in clipper.second_moments)
        assert {id(p) for p in clipper.params} <= {id(p) for p in policy.net.parameters()}
    replay = getattr(policy, 'value_replay_batch', None)
    if name in ('ppo_kl_penalty_value_replay', 'ppo_separate_value_task_mlp'):
        assert replay is not None
    if replay is not None:
        assert all(t.device == meta for _, t in _tensors(replay.state_dict()))


# -- what leaves a policy is on the CPU and loads anywhere ---------------------------------------

@pytest.mark.parametrize('name', sorted(TRAINED))
def test_params_and_checkpoints_are_cpu_tensors_and_load_into_a_fresh_policy(name):
    policy = TRAINED[name]()
    params, state = policy.get_params(), policy.state_dict()
    found = list(_tensors(params)) + list(_tensors(state))
    assert found and all(t.device == CPU for _, t in found), [p for p, t in found if t.device != CPU]
    live = dict(policy.net.state_dict())
    assert all(params[k].data_ptr() != v.data_ptr() for k, v in live.items())  # copies, not views of the live net
    fresh = type(policy)(policy.cfg, policy.observation_space, policy.action_space, seed=99)
    fresh.load_state_dict(state)
    for key, value in fresh.get_params().items():
        assert torch.equal(value, params[key]), key
    assert fresh.version == policy.version


def test_noise_is_drawn_where_the_generator_lives():
    """A CPU generator drives sampling whatever the logits' device: here both CPU, the same numbers as a draw
    made directly, so seeded CPU runs are unchanged."""
    from sparring.policy import distributions as D
    log_probs = torch.log_softmax(torch.randn(5, 4), -1)
    direct = torch.rand(log_probs.shape, generator=torch.Generator().manual_seed(3))
    expected = torch.argmax(log_probs - torch.log(-torch.log(direct.clamp_(1e-20, 1.0))), -1)
    assert torch.equal(D.categorical_sample(log_probs, torch.Generator().manual_seed(3)), expected)


# -- the CPU path end to end ---------------------------------------------------------------------

def _run_config(exp_name, policy):
    return dict(exp_name=str(exp_name), seed=2,
                env=dict(type='cartpole', collector_env_num=2, evaluator_env_num=2, n_evaluator_episodes=2),
                policy=policy,
                train=dict(max_env_steps=256, eval_every_iters=4, checkpoint_every_iters=4, progress_bar=False,
                           tensorboard=False))


@pytest.mark.parametrize('policy', [
    dict(type='ppo', device='cpu', collect=dict(n_steps=32, device='cpu'), model=dict(hidden_sizes=[16]),
         learn=dict(epochs=1, num_minibatches=2)),
    dict(type='dqn', device='auto', collect=dict(n_steps=16, device='auto'), model=dict(hidden_sizes=[16]),
         learn=dict(learning_starts=32, updates_per_chunk=2, batch_size=16)),
], ids=['ppo_cpu', 'dqn_auto'])
def test_serial_runs_train_on_the_cpu_and_resume_from_cpu_checkpoints(policy, tmp_path):
    summary = serial_pipeline(_run_config(tmp_path / 'run', policy))
    assert summary['env_steps'] == 256 and summary['train_iter'] == 256 // (2 * policy['collect']['n_steps'])
    state = CheckpointManager(str(tmp_path / 'run')).load_latest()
    found = list(_tensors(state))
    assert found and all(t.device == CPU for _, t in found)
    resumed = serial_pipeline(_run_config(tmp_path / 'run', policy), resume=True, max_env_steps=320)
    assert resumed['env_steps'] == 320
