"""PPO's objectives as objects: the registry, the call order of the update, the typed statistics and the
checkpoint layout every objective keeps (``benchmarks/golden.py`` proves the numbers bit for bit)."""
import ast
import copy
import inspect

import numpy as np
import pytest
import torch

import sparring.policy.ppo as ppo_module
from sparring.config import compile_section
from sparring.config.registry import POLICY_REGISTRY
from sparring.config.schema import ConfigError
from sparring.policy import functional as F
from sparring.policy.objectives import OBJECTIVES, make_objective
from sparring.policy.objectives.base import Objective, PolicyLoss
from sparring.policy.objectives.clip import ClipObjective
from sparring.policy.objectives.stats import UpdateStats
from sparring.worker.collector import SampleCollector
from sparring.worker.env import make_env_manager

# The names an update logs, in order (the logs, TensorBoard and the golden records read them).
CLIP_NAMES = ['policy_loss', 'value_loss', 'entropy', 'approx_kl', 'clip_fraction', 'skipped_updates', 'lr',
              'clip_range', 'gradient_steps', 'samples', 'samples_consumed', 'early_stop', 'explained_variance']


def _policy(objective='clip', seed=0, **learn):
    cfg = compile_section('policy', dict(type='ppo', model=dict(hidden_sizes=[8]), collect=dict(n_steps=16),
                                         learn=dict(dict(objective=objective, epochs=2, num_minibatches=2), **learn)))
    env = make_env_manager(dict(type='cartpole'), 2, seed)
    policy = POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=seed)
    return policy, SampleCollector(env, policy, 16)


def test_the_config_names_exactly_the_registered_objectives_and_each_builds_its_class():
    for name, cls in OBJECTIVES.items():
        if name == 'search':  # needs a two-player game: tests/dizoo/test_expert_iteration.py
            continue
        policy, _ = _policy(name)
        assert type(policy.objective) is cls
    with pytest.raises(ConfigError, match='policy.learn.objective'):
        compile_section('policy', dict(type='ppo', learn=dict(objective='clipped')))


def test_ppo_names_no_objective_in_its_code():
    """The update calls its objective and never asks which one it is (the docstring may name them)."""
    tree = ast.parse(inspect.getsource(ppo_module))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    strings = {node.value for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}
    names = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert not strings & set(OBJECTIVES)
    assert not {'kl_penalty', 'mmd', 'magnet', 'search_window'} & names


def test_the_statistics_keep_their_logged_names_and_order():
    policy, collector = _policy('clip')
    assert list(policy.learn(collector.collect().data)) == CLIP_NAMES
    policy, collector = _policy('kl_penalty')
    names = list(policy.learn(collector.collect().data))
    assert names == CLIP_NAMES[:5] + ['kl', 'kl_beta', 'lr_multiplier'] + CLIP_NAMES[5:]
    policy, collector = _policy('mmd', grad_clip='five')
    names = list(policy.learn(collector.collect().data))
    assert names == CLIP_NAMES[:5] + ['grad_clip_fraction', 'magnet_coef'] + CLIP_NAMES[5:]


def test_update_stats_as_dict_puts_a_separate_value_fit_over_the_joint_value_loss():
    stats = UpdateStats(policy_loss=1.0, value_loss=0.0, entropy=0.5, approx_kl=0.01, clip_fraction=0.1,
                        grad_clip_fraction=None, objective={}, skipped_updates=0, lr=1e-3, clip_range=0.2,
                        gradient_steps=4, samples=32, samples_consumed=128, early_stop=0.0, explained_variance=0.3,
                        value_fit=dict(value_loss=2.5, value_gradient_steps=3), average=dict(average_loss=0.7))
    out = stats.as_dict()
    assert out['value_loss'] == 2.5 and list(out)[1] == 'value_loss'  # replaced in place, as the logs had it
    assert list(out)[-2:] == ['value_gradient_steps', 'average_loss'] and 'grad_clip_fraction' not in out


@pytest.mark.parametrize('objective, learn, extra', [
    ('clip', {}, set()), ('kl_penalty', {}, {'value_replay_batch'}), ('mmd', {}, set()),
    ('mmd', dict(magnet='moving'), {'magnet'})])
def test_every_objective_keeps_the_checkpoint_layout_and_resumes_exactly(objective, learn, extra):
    policy, collector = _policy(objective, seed=3, **learn)
    policy.learn(collector.collect().data)
    chunk = collector.collect().data  # before the state is taken: acting draws from the policy's generator
    state = copy.deepcopy(policy.state_dict())  # as written to disk: the live dict shares Adam's moments on the CPU
    # kl_beta and lr_multiplier are in every PPO checkpoint, whatever the objective (runs on disk hold them).
    assert set(state) == {'params', 'optimizer', 'version', 'generator', 'kl_beta', 'lr_multiplier'} | extra
    resumed, _ = _policy(objective, seed=4, **learn)
    resumed.load_state_dict(state)
    assert policy.learn(chunk) == resumed.learn(chunk)


def test_a_new_objective_is_a_class_and_a_registry_entry(monkeypatch):
    """A made-up objective (the clipped surrogate at half weight) plugs in with no change to the policy, and
    its hooks run in the update's order."""
    calls = []

    class HalfClip(ClipObjective):
        def before_update(self, batch, progress):
            calls.append('before_update')

        def policy_loss(self, mb):
            calls.append('policy_loss')
            loss, approx_kl, clip_fraction = super().policy_loss(mb)
            return PolicyLoss(0.5 * loss, approx_kl, clip_fraction)

        def stops_early(self, batch, epoch_rows):
            calls.append('stops_early')
            return False

        def after_update(self, batch, fresh):
            calls.append('after_update')
            return dict(half=0.5)

    monkeypatch.setitem(OBJECTIVES, 'half_clip', HalfClip)
    policy, collector = _policy('clip')
    policy.cfg['learn']['objective'] = 'half_clip'  # past the config's check, which reads the registry at import
    policy.objective = make_objective(policy.objective.parts)
    stats = policy.learn(collector.collect().data)
    assert calls == ['before_update'] + ['policy_loss'] * 2 + ['stops_early'] + ['policy_loss'] * 2 + [
        'stops_early', 'after_update']
    assert stats['half'] == 0.5 and list(stats)[5] == 'half'


def test_the_clip_objective_stops_on_target_kl_and_the_base_objective_needs_a_loss():
    policy, collector = _policy('clip', lr=0.5, target_kl=1e-9, anneal_lr=False)
    stats = policy.learn(collector.collect().data)
    assert stats['early_stop'] == 1.0 and stats['gradient_steps'] == 2  # one epoch of two minibatches
    with pytest.raises(NotImplementedError):
        Objective(policy.objective.parts).policy_loss(None)


def test_the_clip_objective_is_the_clipped_surrogate():
    policy, _ = _policy('clip')
    log_prob, old, adv = torch.tensor([0.0, -0.5]), torch.tensor([-0.2, 0.0]), torch.tensor([1.0, -1.0])
    from sparring.policy.objectives.base import Minibatch
    got = policy.objective.policy_loss(Minibatch(None, None, None, log_prob, old, adv, 0.2))
    want = F.clipped_surrogate_loss(log_prob, old, adv, 0.2)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_a_move_takes_the_moving_magnet_and_the_average_policy_along():
    cfg = compile_section('policy', dict(type='ppo', model=dict(hidden_sizes=[8]), average=dict(enabled=True),
                                         learn=dict(objective='mmd', magnet='moving', epochs=1, num_minibatches=2)))
    with make_env_manager(dict(type='cartpole'), 2, seed=0) as env:
        policy = POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=0)
        policy.learn(SampleCollector(env, policy, 16).collect().data)
    assert policy.average.optimizer.state  # there is optimiser state to move
    meta = torch.device('meta')
    policy.to_device(meta)
    moved = [policy.objective.magnet_net.state_dict(), policy.average.model.state_dict()]
    moved += [state for state in policy.average.optimizer.state.values()]
    for tensors in moved:
        for key, tensor in tensors.items():
            assert tensor.device == (torch.device('cpu') if key == 'step' else meta), key


def test_the_search_window_moves_and_resets_with_the_policy():
    from sparring.policy.device import Placement
    from sparring.policy.objectives.search import SearchObjective
    from sparring.policy.train_batch import TrainBatch
    learn = compile_section('policy', dict(type='ppo', learn=dict(objective='search', search_window=3)))['learn']
    parts = _policy('clip')[0].objective.parts
    objective = SearchObjective(type(parts)(**dict(vars(parts), learn=learn)))
    fresh = TrainBatch(dict(obs=torch.zeros(2, 4), action=torch.zeros(2, dtype=torch.long)))
    objective.after_update(fresh, fresh)
    objective.after_update(fresh, fresh)
    objective.after_update(fresh, fresh)
    assert len(objective.recent_batches) == 2  # the window before the next chunk: search_window - 1
    assert objective.training_batch(fresh).num_units == 6
    objective.to(Placement(torch.device('meta')))
    assert all(b.obs.device == torch.device('meta') for b in objective.recent_batches)
    objective.reset()
    assert not objective.recent_batches and objective.training_batch(fresh) is fresh
