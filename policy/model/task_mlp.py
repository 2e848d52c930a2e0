"""The MuJoCo write-up's networks: three tanh layers whose widths follow from the task's dimensions.

Policy: ``obs_dim * 10``, their geometric mean, ``act_dim * 10``. Value function: ``obs_dim * 10``,
their geometric mean, 5. Hopper (11 observations, 3 actions) gives 110-57-30 and 110-23-5. The
observation dimension is what the model sees, so an env's time-step feature counts in it (Hopper
with it: 120-60-30). Everything else is :class:`MLPActorCritic` with separate trunks.
"""
from __future__ import annotations

import math

import gymnasium as gym

from sparring.config.registry import MODEL_REGISTRY
from sparring.config.schema import in_range, one_of
from sparring.policy.model.mlp import ACTIVATIONS, MLPActorCritic, action_output


def task_sizes(obs_dim: int, act_dim: int, width_per_dim: int = 10,
               value_last_width: int = 5) -> tuple[list[int], list[int]]:
    """(policy widths, value widths) of the write-up; the middle width is the geometric mean, rounded down."""
    first = obs_dim * width_per_dim
    policy_last = act_dim * width_per_dim
    policy = [first, int(math.sqrt(first * policy_last)), policy_last]
    value = [first, int(math.sqrt(first * value_last_width)), value_last_width]
    return policy, value


@MODEL_REGISTRY.register('task_mlp')
class TaskSizedMLP(MLPActorCritic):
    @classmethod
    def default_config(cls) -> dict:
        return dict(
            activation='tanh',  # the hidden layers' activation: 'tanh', 'relu', 'elu' or 'gelu'
            width_per_dim=10,  # first width: observation dimensions x this; policy's last: action dimensions x this
            value_last_width=5,  # the value function's last hidden width
            init_log_std=0.0,  # Box actions only (the write-up starts at log-variance -1, i.e. -0.5)
            policy_head_gain=0.01,
        )

    config_constraints = {
        'activation': one_of(*ACTIVATIONS),
        'width_per_dim': in_range(1, None),
        'value_last_width': in_range(1, None),
        'policy_head_gain': in_range(0.0, None, open_lo=True),
    }

    @classmethod
    def trunk_sizes(cls, cfg: dict, in_dim: int, action_space: gym.Space) -> tuple[list[int], list[int]]:
        act_dim, _ = action_output(action_space, 0.0, 'task_mlp model')
        return task_sizes(in_dim, act_dim, cfg['width_per_dim'], cfg['value_last_width'])
