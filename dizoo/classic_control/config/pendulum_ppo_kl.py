"""KL-penalty PPO on Pendulum-v1: ``pendulum_ppo.py`` with the adaptive-KL objective; aims at >= -250 within 200k steps."""
import copy

from sparring.dizoo.classic_control.config.pendulum_ppo import config as _clip_config

config = copy.deepcopy(_clip_config)
config['exp_name'] = 'runs/pendulum_ppo_kl'
# beta steers the KL of each update towards kl_target; the value is also fitted on the previous chunk.
config['policy']['learn'].update(objective='kl_penalty', kl_target=0.01, beta_init=1.0, eta=50.0,
                                 num_minibatches=32)  # as measured (README): 32 minibatches of 64 steps
