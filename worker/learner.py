"""Learner: feeds chunks to a policy's ``learn``, anneals by progress, and tracks data quality.

It counts train iterations and samples, and measures OpenAI Five's two data-quality figures:
*staleness* (policy version minus the version that produced a chunk) and *sample reuse*
(samples consumed by gradient steps / samples produced). The same class serves the serial
pipeline (direct calls) and the parallel learner worker (chunks arriving over the network).
It moves its policy to ``policy.device`` (the model, optimiser state and batches live there);
collectors and evaluators act with policies built on ``policy.collect.device``.

Every chunk is checked against the policy's chunk spec (:mod:`sparring.policy.chunk_spec`) before its
update. No chunk ends the learner: one that does not fit the spec is dropped as ``invalid``, one whose
update raises anyway is dropped as ``failed``; both are counted in :attr:`Learner.dropped` and logged.
"""
from __future__ import annotations

import logging
import time
from typing import Dict, Optional, cast

from sparring.policy.base import Policy
from sparring.policy.chunk_spec import ChunkSpaces
from sparring.worker.chunk import Chunk

log = logging.getLogger('sparring.worker')

DROP_REASONS = ('invalid', 'failed')  # the chunk does not fit the spec; its update raised


class Learner:
    """Trains one policy on the chunks it is given (see the module docstring).

    Args:
        policy: the policy to train; moved to its ``policy.device``.
        max_env_steps: the run's env-step budget, against which annealed schedules (lr, clip range) progress.
        battle: the chunks come from battles (a league run), not from single-agent envs: the policy's chunk
            spec then has a battle chunk's fields.
    """

    def __init__(self, policy: Policy, max_env_steps: int, battle: bool = False) -> None:
        self.policy = policy.to_learner_device()
        self.spec = policy.chunk_spec(ChunkSpaces.of(policy, battle))
        self.max_env_steps = max_env_steps
        self.dropped = dict.fromkeys(DROP_REASONS, 0)  # chunks dropped (not trained on), by reason
        self.train_iter = 0
        self.env_steps = 0  # env steps behind the chunks received: drives annealing
        self.samples_produced = 0  # trainable samples received
        self.samples_consumed = 0  # samples passed through gradient steps (epochs count again)

    @property
    def progress(self) -> float:
        return min(1.0, self.env_steps / self.max_env_steps)

    @property
    def sample_reuse(self) -> float:
        return self.samples_consumed / max(self.samples_produced, 1)

    def train(self, chunk: Chunk, fresh: bool = True) -> Optional[Dict[str, float]]:
        """One update on ``chunk``; its figures, or None if the chunk was dropped (counted in :attr:`dropped`).
        ``fresh=False`` trains on a chunk seen before (a parallel learner re-using recent data while it waits): its
        env steps and samples are not counted again."""
        try:
            self.check(chunk)
        except ValueError as err:
            self._drop('invalid', chunk, err)
            return None
        try:
            return self._train(chunk, fresh)
        except Exception as err:  # noqa: BLE001 -- one chunk's failed update must not end the learner: dropped
            self._drop('failed', chunk, err)
            return None

    def check(self, chunk: Chunk) -> None:
        """Raise ValueError unless ``chunk`` fits the policy's spec and comes from parameters it has had."""
        chunk.validate(self.spec)
        if chunk.version > self.policy.version:
            raise ValueError(f'chunk {chunk.chunk_id} claims parameter version {chunk.version}, newer than the '
                             f'learner\'s {self.policy.version}')

    def _drop(self, reason: str, chunk: Chunk, err: Exception) -> None:
        self.dropped[reason] += 1
        log.warning('learner of %s: dropped chunk %s (%s): %s: %s', chunk.player_id, chunk.chunk_id, reason,
                    type(err).__name__, err, exc_info=reason == 'failed')

    def _train(self, chunk: Chunk, fresh: bool) -> Dict[str, float]:
        staleness = self.policy.version - chunk.version
        env_steps = cast(int, chunk.env_steps)  # set when the chunk was made
        started = time.perf_counter()
        stats = self.policy.learn(chunk.data, progress=self.progress)
        if fresh:
            self.env_steps += env_steps
            # A policy reports the samples it trained on and how many its gradient steps went through
            # (epochs count again); without the figures, every env step is one sample used once.
            self.samples_produced += int(stats.get('samples', env_steps))
        self.samples_consumed += int(stats.get('samples_consumed', env_steps))
        self.train_iter += 1
        stats.update(staleness=float(staleness), sample_reuse=self.sample_reuse,
                     train_seconds=time.perf_counter() - started)
        # A league learner with a replay buffer: the share of its transitions per opponent (SAC's), by name.
        mix = getattr(self.policy, 'opponent_mix', None)
        if mix is not None:
            self.policy.remember_opponents(opponent for opponent, _ in chunk.results)  # type: ignore[attr-defined]
            stats.update({f'replay_opponents/{opponent}': share for opponent, share in mix().items()})
        return stats

    def state_dict(self) -> dict:
        return dict(train_iter=self.train_iter, env_steps=self.env_steps, samples_produced=self.samples_produced,
                    samples_consumed=self.samples_consumed, policy=self.policy.state_dict())

    def load_state_dict(self, state: dict) -> None:
        self.train_iter = int(state['train_iter'])
        self.env_steps = int(state['env_steps'])
        self.samples_produced = int(state['samples_produced'])
        self.samples_consumed = int(state['samples_consumed'])
        self.policy.load_state_dict(state['policy'])
