"""DQN's replay buffers live with the policy that samples them (:mod:`sparring.policy.replay_buffer`); this name stays."""
from sparring.policy.replay_buffer import (PrioritizedReplayBuffer, ReplayBuffer, SumTree,  # noqa: F401
                                           make_replay_buffer)
