"""MuJoCo tasks via Gymnasium, the write-up's ten under short names; ``config/`` holds ready PPO configs."""
from sparring.dizoo.mujoco.mujoco_env import (AntEnv, HalfCheetahEnv, HopperEnv, HumanoidEnv, HumanoidStandupEnv,
                                              InvertedDoublePendulumEnv, InvertedPendulumEnv, MujocoEnv, ReacherEnv,
                                              SwimmerEnv, Walker2dEnv)
