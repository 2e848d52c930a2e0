"""PettingZoo envs: any two-player AEC or parallel env as a battle env.

Importing this package registers the env ``'pettingzoo'`` without importing PettingZoo; building
one needs ``pip install sparring[pettingzoo]``.
"""
from sparring.dizoo.pettingzoo.pettingzoo_env import PettingZooBattleEnv
