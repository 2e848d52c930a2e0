"""KL-penalty PPO on HalfCheetah-v5 with the write-up's recipe (see :func:`sparring.dizoo.mujoco.config.mujoco_ppo_kl_config`)."""
from sparring.dizoo.mujoco.config import mujoco_ppo_kl_config

config = mujoco_ppo_kl_config('halfcheetah')
