"""The observation normaliser a policy builds from its ``obs_norm`` setting."""
import gymnasium as gym
import pytest

from sparring.policy.normalizer import observation_normalizer


def test_a_policy_gets_a_normaliser_only_when_asked_and_only_for_a_box():
    assert observation_normalizer(False, gym.spaces.Discrete(3)) is None
    assert observation_normalizer(True, gym.spaces.Box(-1.0, 1.0, (4,))).mean.shape == (4,)
    with pytest.raises(TypeError, match='policy.obs_norm needs a Box observation space, got Discrete'):
        observation_normalizer(True, gym.spaces.Discrete(3))
