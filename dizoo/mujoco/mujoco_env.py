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


# The ten tasks under their short names. Each is a MujocoEnv subclass that only presets the Gymnasium id,
# made here from one table rather than written out ten times.
MUJOCO_TASKS = {
    'hopper': 'Hopper-v5',
    'halfcheetah': 'HalfCheetah-v5',
    'walker2d': 'Walker2d-v5',
    'swimmer': 'Swimmer-v5',
    'reacher': 'Reacher-v5',
    'invertedpendulum': 'InvertedPendulum-v5',
    'inverteddoublependulum': 'InvertedDoublePendulum-v5',
    'ant': 'Ant-v5',
    'humanoid': 'Humanoid-v5',
    'humanoidstandup': 'HumanoidStandup-v5',
}


def _task_class(name: str, gym_id: str) -> type:
    """The registered class of one task: ``MujocoEnv`` with ``gym_id`` as its default id."""
    class_name = gym_id.split('-')[0] + 'Env'
    return ENV_REGISTRY.register(name, type(class_name, (MujocoEnv,), dict(
        default_id=gym_id, __module__=__name__, __qualname__=class_name,
        __doc__=f'Gymnasium\'s ``{gym_id}`` under the short name ``{name!r}``.')))


TASK_CLASSES = {name: _task_class(name, gym_id) for name, gym_id in MUJOCO_TASKS.items()}
