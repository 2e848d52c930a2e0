"""Gymnasium's classic-control tasks under short names: 'cartpole', 'acrobot' and 'pendulum'.

They are cheap to step (CartPole runs ~100k steps/s in process but ~14k/s as 8 subprocess
envs), so they run in process by default.
"""
from sparring.config.registry import ENV_REGISTRY
from sparring.worker.env.gym_env import GymEnv


@ENV_REGISTRY.register('cartpole')
class CartPoleEnv(GymEnv):
    default_id = 'CartPole-v1'
    default_manager = 'base'


@ENV_REGISTRY.register('acrobot')
class AcrobotEnv(GymEnv):
    default_id = 'Acrobot-v1'
    default_manager = 'base'


@ENV_REGISTRY.register('pendulum')
class PendulumEnv(GymEnv):
    default_id = 'Pendulum-v1'
    default_manager = 'base'
