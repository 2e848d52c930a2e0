"""MuJoCo tasks via Gymnasium, the write-up's ten under short names; ``config/`` holds ready PPO configs."""
from sparring.dizoo.mujoco.mujoco_env import MUJOCO_TASKS, TASK_CLASSES, MujocoEnv
