"""Mirror augmentation: every training step also as its mirror image, for games with a symmetry.

Connect four and tic-tac-toe look the same reflected left to right: a position's mirror has the
mirrored best move and the same value. ``policy.learn.mirror = dict(obs_axis=-1, actions=[...])``
adds to each update's batch the mirror of every step: the observation flipped along ``obs_axis``
(an axis of one observation, e.g. the board's columns), the action and the legal-action mask
permuted by ``actions`` (``actions[a]`` is the mirror of action ``a``; so is a search's visit
distribution, expert iteration's target); advantage, return and the
recorded value are the step's own.

The recorded log-probability is kept as well, and that is the right one for the importance ratio:
the mirrored step was drawn with the probability the behaviour policy gave the original action,
so ``pi_new(a'|s') / pi_old(a|s)`` weighs it as a sample of the mirrored behaviour policy. Where
the policy is already symmetric the two denominators agree; where it is not, the clip keeps the
update near the mirrored behaviour, as it keeps any step near the policy that took it.
"""
from __future__ import annotations

from typing import Any, Optional

import torch

from sparring.config.schema import ConfigError
from sparring.policy.train_batch import TrainBatch

KEY = 'policy.learn.mirror'


def check_mirror(value: Any) -> None:
    """Config constraint: None, or ``dict(obs_axis=int, actions=a permutation of range(n))``."""
    if value is None:
        return
    if not isinstance(value, dict) or set(value) != {'obs_axis', 'actions'}:
        raise ConfigError(f'config key "{KEY}": expected None or dict(obs_axis=<int>, actions=<list>), got {value!r}')
    axis, actions = value['obs_axis'], value['actions']
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ConfigError(f'config key "{KEY}.obs_axis": expected an int (an axis of one observation), got {axis!r}')
    if (not isinstance(actions, (list, tuple)) or any(isinstance(a, bool) or not isinstance(a, int) for a in actions)
            or sorted(actions) != list(range(len(actions)))):
        raise ConfigError(f'config key "{KEY}.actions": expected a permutation of 0..n-1 (actions[a] is the mirror '
                          f'of action a), got {actions!r}')
    if any(actions[actions[a]] != a for a in range(len(actions))):
        raise ConfigError(f'config key "{KEY}.actions": a mirror undone by itself is expected (actions[actions[a]] '
                          f'== a), got {actions!r}')


def check_mirror_fits(mirror: Optional[dict], obs_shape, num_actions: Optional[int], recurrent: bool) -> None:
    """The mirror against the policy's spaces (known once the policy is built)."""
    if mirror is None:
        return
    if recurrent:
        raise ConfigError(f'config key "{KEY}": mirror augmentation is for feed-forward models (a recurrent '
                          f'model\'s windows carry states of the unmirrored episode)')
    if num_actions is None:
        raise ConfigError(f'config key "{KEY}": mirror augmentation needs discrete actions')
    if len(mirror['actions']) != num_actions:
        raise ConfigError(f'config key "{KEY}.actions": {len(mirror["actions"])} entries for {num_actions} actions')
    if not -len(obs_shape) <= mirror['obs_axis'] < len(obs_shape):
        raise ConfigError(f'config key "{KEY}.obs_axis": {mirror["obs_axis"]} is not an axis of observations '
                          f'shaped {tuple(obs_shape)}')


def with_mirror(batch: TrainBatch, mirror: dict) -> TrainBatch:
    """The batch followed by the mirror image of each of its steps (a feed-forward batch ``[N, ...]``)."""
    fields = batch.fields
    obs = fields['obs']
    axis = mirror['obs_axis'] % (obs.dim() - 1) + 1  # an axis of one observation, past the batch axis
    permutation = torch.as_tensor(mirror['actions'], dtype=torch.long, device=obs.device)
    mirrored = dict(fields)
    mirrored['obs'] = obs.flip(axis)
    mirrored['action'] = permutation[fields['action'].long()].to(fields['action'].dtype)
    if 'mask' in fields:
        # mask'[a'] = mask[a] with a' = actions[a], i.e. mask' = mask[:, inverse]; the mirror is its own inverse.
        mirrored['mask'] = fields['mask'][:, permutation]
    if 'search_policy' in fields:  # a distribution over actions, permuted like the mask
        mirrored['search_policy'] = fields['search_policy'][:, permutation]
    return TrainBatch({k: torch.cat([v, mirrored[k]]) for k, v in fields.items()})
