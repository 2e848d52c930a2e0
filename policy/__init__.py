"""Policies (the ``Policy`` interface, PPO, DQN, SAC), their models and pure loss/advantage functions."""
from sparring.policy.base import ActOutput, Policy
from sparring.policy.model import MLPActorCritic
from sparring.policy.normalizer import RunningNormalizer
from sparring.policy.ppo import PPOPolicy
from sparring.policy.ppo_separate_value import SeparateValuePPOPolicy
from sparring.policy.dqn import DQNPolicy
from sparring.policy.bot import Bot, RandomBot
from sparring.policy.sac import SACPolicy
