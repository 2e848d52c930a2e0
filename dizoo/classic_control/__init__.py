"""Classic-control envs (CartPole, Acrobot, Pendulum); ``config/`` holds ready configs."""
from sparring.dizoo.classic_control.classic_control_env import AcrobotEnv, CartPoleEnv, PendulumEnv
