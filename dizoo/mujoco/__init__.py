"""MuJoCo locomotion tasks via Gymnasium: 'hopper', 'halfcheetah', 'walker2d'; ``config/`` holds ready PPO configs."""
from sparring.dizoo.mujoco.mujoco_env import HalfCheetahEnv, HopperEnv, MujocoEnv, Walker2dEnv
