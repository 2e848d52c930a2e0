"""MuJoCo tasks (Gymnasium + mujoco, v5) under short names: the write-up's ten, 'hopper' to 'humanoidstandup'.

They are :class:`~sparring.worker.env.gym_env.GymEnv` with a preset id, so every GymEnv option
applies, notably ``reward_scaling`` (divide training rewards by the running std of the
discounted return) and ``time_feature`` (the elapsed fraction of the episode as a last observation). Observation normalisation belongs to the policy (``policy.obs_norm``), where
its statistics are checkpointed with the model. The physics steps in ~0.15 ms, so the envs run
in process by default. mujoco is the optional extra ``mujoco``, imported when a config is checked.
"""
from __future__ import annotations

from sparring.config.optional import require
from sparring.config.registry import ENV_REGISTRY
from sparring.worker.env.gym_env import GymEnv


class MujocoEnv(GymEnv):
    """A Gymnasium MuJoCo task; checking its config first checks that mujoco is installed."""

    default_manager = 'base'

    @classmethod
    def validate_config(cls, section: dict) -> None:
        require('mujoco', 'MuJoCo envs', 'mujoco')
        super().validate_config(section)


@ENV_REGISTRY.register('hopper')
class HopperEnv(MujocoEnv):
    default_id = 'Hopper-v5'


@ENV_REGISTRY.register('halfcheetah')
class HalfCheetahEnv(MujocoEnv):
    default_id = 'HalfCheetah-v5'


@ENV_REGISTRY.register('walker2d')
class Walker2dEnv(MujocoEnv):
    default_id = 'Walker2d-v5'


@ENV_REGISTRY.register('swimmer')
class SwimmerEnv(MujocoEnv):
    default_id = 'Swimmer-v5'


@ENV_REGISTRY.register('reacher')
class ReacherEnv(MujocoEnv):
    default_id = 'Reacher-v5'


@ENV_REGISTRY.register('invertedpendulum')
class InvertedPendulumEnv(MujocoEnv):
    default_id = 'InvertedPendulum-v5'


@ENV_REGISTRY.register('inverteddoublependulum')
class InvertedDoublePendulumEnv(MujocoEnv):
    default_id = 'InvertedDoublePendulum-v5'


@ENV_REGISTRY.register('ant')
class AntEnv(MujocoEnv):
    default_id = 'Ant-v5'


@ENV_REGISTRY.register('humanoid')
class HumanoidEnv(MujocoEnv):
    default_id = 'Humanoid-v5'


@ENV_REGISTRY.register('humanoidstandup')
class HumanoidStandupEnv(MujocoEnv):
    default_id = 'HumanoidStandup-v5'
