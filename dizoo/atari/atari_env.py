"""Atari games (Gymnasium + ale-py) as the env type ``'atari'``, with the standard preprocessing.

``env=dict(type='atari', id='BreakoutNoFrameskip-v4')`` builds the game and wraps it with
:func:`~sparring.dizoo.atari.wrappers.wrap_atari`: observations are ``[4, 84, 84]`` uint8.
Training envs end an episode at each lost life and clip rewards to their sign; evaluation envs
(:meth:`AtariEnv.evaluator_config`) play whole games and report the raw score. ale-py ships the
ROMs; it is the optional extra ``atari`` and is imported only when a game is checked or built.
"""
from __future__ import annotations

from typing import Mapping

import gymnasium

from sparring.config.schema import ConfigError, in_range
from sparring.dizoo.atari.wrappers import wrap_atari
from sparring.config.optional import require
from sparring.config.registry import ENV_REGISTRY
from sparring.worker.env.gym_env import GymEnv, check_gym_id

# Options of the wrapper stack, passed through to ``wrap_atari`` by name.
WRAPPER_OPTIONS = ('noop_max', 'frame_skip', 'screen_size', 'frame_stack', 'episodic_life', 'clip_rewards',
                   'fire_reset')


@ENV_REGISTRY.register('atari')
class AtariEnv(GymEnv):
    default_id = 'BreakoutNoFrameskip-v4'
    # Measured on the shared 2-core machine: 8 envs stepped 127 agent steps/s in process and
    # 145/s in 2 subprocesses, too little to pay for the processes; with idle cores to spare,
    # env.manager=dict(type='subprocess') spreads them.
    default_manager = 'base'

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            super().default_config(),
            noop_max=30,  # a game starts after 1..noop_max random no-op frames (0: none)
            frame_skip=4,  # each action repeats this many frames; the max of the last two is seen
            screen_size=84,  # frames become grey screen_size x screen_size
            frame_stack=4,  # the observation stacks this many frames: [frame_stack, size, size]
            episodic_life=True,  # a lost life ends the training episode (evaluation plays whole games)
            clip_rewards=True,  # training rewards become their sign (evaluation reports the raw score)
            fire_reset=True,  # press FIRE at the start of each life in games that need it
        )

    config_constraints = dict(
        GymEnv.config_constraints,
        noop_max=in_range(0, None),
        frame_skip=in_range(1, None),
        screen_size=in_range(1, None),
        frame_stack=in_range(1, None),
    )

    @classmethod
    def validate_config(cls, section: dict) -> None:
        try:
            check_gym_id(section['id'])
        except ConfigError:
            # The ALE ids exist once ale-py is imported; if it is missing, say which extra to install.
            require('ale_py', 'Atari envs', 'atari', package='ale-py')
        super().validate_config(section)
        name = section['id'].rpartition(':')[2]
        make_kwargs = {**gymnasium.spec(name).kwargs, **section['kwargs']}
        if make_kwargs.get('frameskip', 1) != 1:
            raise ConfigError(
                f'config key "env.id": {section["id"]!r} makes ALE skip {make_kwargs["frameskip"]} frames itself, '
                f'but the atari env skips frames (env.frame_skip) to take the max of the last two; expected an id '
                f'that shows every frame, such as \'BreakoutNoFrameskip-v4\', or env.kwargs=dict(frameskip=1)')

    def wrap(self, env: gymnasium.Env, cfg: Mapping) -> gymnasium.Env:
        return wrap_atari(env, **{key: cfg[key] for key in WRAPPER_OPTIONS})

    @classmethod
    def evaluator_config(cls, section: Mapping) -> dict:
        return {**super().evaluator_config(section), 'episodic_life': False, 'clip_rewards': False}
