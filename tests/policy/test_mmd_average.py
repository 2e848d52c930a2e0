"""The NFSP-style average policy (``policy.average``): it fits the frequencies of the chosen actions, answers for
the policy, and travels with its parameters and checkpoints."""
import gymnasium as gym
import numpy as np
import pytest
import torch

import sparring.dizoo  # noqa: F401  (registers the envs)
from sparring.config import compile_section
from sparring.config.registry import MODEL_REGISTRY, POLICY_REGISTRY
from sparring.config.schema import ConfigError
from sparring.policy.average_policy import AVERAGE_DEFAULTS, AveragePolicy

pytestmark = pytest.mark.usefixtures('one_torch_thread')

OBS = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
ACTIONS = gym.spaces.Discrete(3)


def _chunk(actions, masks):
    """One observation (1, 0) per step, the given actions and legal-action masks, all steps chosen by the policy."""
    n = len(actions)
    return dict(obs=np.tile(np.float32([1.0, 0.0]), (n, 1)), action=np.array(actions),
                action_mask=np.array(masks, bool), train_mask=np.ones(n, bool))


def test_the_average_fits_the_frequencies_of_the_chosen_actions_over_its_window():
    torch.manual_seed(0)
    model_cfg = compile_section('policy', dict(type='ppo', model=dict(hidden_sizes=[8])))['model']
    model = MODEL_REGISTRY.get('mlp')(model_cfg, OBS, ACTIONS)
    cfg = dict(AVERAGE_DEFAULTS, enabled=True, window=2, steps=300, batch_size=64, lr=0.05)
    average = AveragePolicy(cfg, model, torch.Generator().manual_seed(0))
    legal = [True, True, False]
    # Three chunks: the first leaves the window of two. What remains chose action 0 three times in four.
    average.add(_chunk([1] * 4, [legal] * 4))
    assert average.add(_chunk([0, 0, 1, 0], [legal] * 4)) == 4
    average.add(_chunk([0, 1, 0, 0], [legal] * 4))
    stats = average.fit(torch.device('cpu'))
    assert stats['average_samples'] == 8
    probs = average.probabilities(torch.tensor([[1.0, 0.0]]), torch.tensor([legal]))[0]
    # the cross-entropy minimiser is the empirical distribution (0.75, 0.25); the illegal action gets nothing
    np.testing.assert_allclose(probs.numpy(), [0.75, 0.25, 0.0], atol=0.02)


def _policy(**average):
    cfg = compile_section('policy', dict(type='ppo', model=dict(hidden_sizes=[8]), collect=dict(n_steps=4),
                                         learn=dict(epochs=1, num_minibatches=1),
                                         average=dict(dict(enabled=True, steps=2, batch_size=4), **average)))
    return POLICY_REGISTRY.get('ppo')(cfg, OBS, ACTIONS, seed=0)


def _learnable_chunk(policy):
    obs = np.random.default_rng(0).uniform(-1, 1, (4, 2, 2)).astype(np.float32)
    out = policy.act(obs.reshape(8, 2))
    shape = (4, 2)
    return dict(obs=obs, action=out.action.reshape(shape), log_prob=out.log_prob.reshape(shape),
                value=out.value.reshape(shape), reward=np.ones(shape, np.float32), next_value=np.zeros(shape, np.float32),
                terminated=np.zeros(shape, bool), truncated=np.zeros(shape, bool))


def test_the_average_answers_for_the_policy_and_travels_with_its_parameters():
    policy = _policy()
    stats = policy.learn(_learnable_chunk(policy))
    assert stats['average_samples'] == 8 and stats['average_loss'] > 0
    obs = np.float32([[0.5, -0.5]])
    answer = policy.action_probabilities(obs)
    expected = policy.average.probabilities(torch.tensor(obs), None).numpy()
    np.testing.assert_allclose(answer, expected)
    head = policy.model(torch.tensor(obs))[0]
    assert not np.allclose(answer, torch.softmax(head, -1).detach().numpy())  # not the current iterate
    params = policy.get_params()
    assert any(k.startswith('average.') for k in params)
    other = _policy()
    other.set_params(params, 3)
    np.testing.assert_allclose(other.action_probabilities(obs), answer)
    other.load_state_dict(policy.state_dict())
    assert other.average.optimizer.state_dict()['state'].keys() == policy.average.optimizer.state_dict()['state'].keys()
    # answer=False: the average is fitted but the current iterate answers
    quiet = _policy(answer=False)
    quiet.set_params(params, 3)
    np.testing.assert_allclose(quiet.action_probabilities(obs), torch.softmax(head, -1).detach().numpy(), rtol=1e-5)


def test_average_config_errors_and_default_off():
    assert compile_section('policy', dict(type='ppo'))['average']['enabled'] is False
    for average, key in ((dict(window=0), 'policy.average.window'), (dict(enabled='yes'), 'policy.average.enabled'),
                         (dict(lr=0.0), 'policy.average.lr'), (dict(batch_size=0), 'policy.average.batch_size')):
        with pytest.raises(ConfigError, match=key):
            compile_section('policy', dict(type='ppo', average=average))
    cfg = compile_section('policy', dict(type='ppo', average=dict(enabled=True)))
    box = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    with pytest.raises(TypeError, match='Discrete'):
        POLICY_REGISTRY.get('ppo')(cfg, OBS, box)
