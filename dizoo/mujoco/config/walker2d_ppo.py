"""PPO on Walker2d-v5 with the MuJoCo recipe (see :func:`sparring.dizoo.mujoco.config.mujoco_ppo_config`)."""
from sparring.dizoo.mujoco.config import mujoco_ppo_config

config = mujoco_ppo_config('walker2d')
