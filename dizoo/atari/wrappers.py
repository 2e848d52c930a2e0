"""The Atari preprocessing wrappers, each a small Gymnasium wrapper that one test can pin down.

:func:`wrap_atari` stacks them as in the DQN/PPO Atari papers, innermost first: random no-ops
at the start of a game, frame skip with a max over the last two frames, episodic life, FIRE to
start a life, grey 84x84, reward sign, a stack of the last frames. They rely only on the
Gymnasium API plus ``info['lives']`` and ``unwrapped.get_action_meanings()``, which ale-py
provides, so a fake emulator can stand in for ALE in the tests.

Grey-scale and resize are done here in numpy instead of OpenCV: the ``opencv-python`` wheel is
~60 MB for one function, while area resampling is a weighted sum of the 3 input rows (then
columns) that each output pixel covers, ~0.3 ms a frame. Deliberately not a BLAS matrix product:
OpenBLAS's threads, on a loaded 2-core machine, made that 30x slower (13 ms against 0.4 ms).
"""
from __future__ import annotations

from typing import Optional

import gymnasium
import numpy as np
from gymnasium import spaces

from sparring.worker.env.errors import EnvError

# ITU-R BT.601 luma weights, the ones OpenCV's RGB-to-grey conversion uses.
LUMA_WEIGHTS = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def area_weights(src: int, dst: int) -> np.ndarray:
    """``[dst, src]`` weights that average each output cell over the input cells it covers.

    Output cell i covers input interval ``[i * src / dst, (i + 1) * src / dst)``; each input cell
    counts with the length of its overlap, divided by the interval's length (area resampling,
    as OpenCV's INTER_AREA does for shrinking). Each row sums to 1.
    """
    if src < 1 or dst < 1:
        raise ValueError(f'area_weights: sizes must be >= 1, got src={src}, dst={dst}')
    edges = np.arange(dst + 1, dtype=np.float64) * (src / dst)
    lo, hi = edges[:-1, None], edges[1:, None]
    cells = np.arange(src, dtype=np.float64)[None, :]
    overlap = np.clip(np.minimum(hi, cells + 1) - np.maximum(lo, cells), 0.0, None)
    return (overlap / (src / dst)).astype(np.float32)


def area_band(src: int, dst: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`area_weights` stored as a band: ``index[k, i]`` is the k-th input cell output cell i
    covers and ``weight[k, i]`` its weight (0 past the cells it covers), both ``[K, dst]``."""
    dense = area_weights(src, dst)
    covered = dense > 0
    first = covered.argmax(axis=1)
    offsets = np.arange(int(covered.sum(axis=1).max()))[:, None]
    index = np.minimum(first[None, :] + offsets, src - 1)
    weight = np.take_along_axis(dense, index.T, axis=1).T
    weight[first[None, :] + offsets > src - 1] = 0.0  # cells clipped onto the last one count once
    return index, np.ascontiguousarray(weight)


def grey(frame: np.ndarray) -> np.ndarray:
    """``[H, W, 3]`` RGB (or ``[H, W]`` grey) to ``[H, W]`` float32 luma."""
    if frame.ndim == 2:
        return frame.astype(np.float32)
    red, green, blue = LUMA_WEIGHTS
    return frame[..., 0] * red + frame[..., 1] * green + frame[..., 2] * blue


class GreyResize(gymnasium.ObservationWrapper):
    """RGB ``[H, W, 3]`` (or grey ``[H, W]``) uint8 frames to grey ``[size, size]`` uint8 by area resampling."""

    def __init__(self, env: gymnasium.Env, size: int = 84) -> None:
        super().__init__(env)
        shape = env.observation_space.shape or ()
        if len(shape) not in (2, 3) or (len(shape) == 3 and shape[2] != 3):
            raise EnvError(f'GreyResize: observation space {env.observation_space!r}; expected frames of shape '
                           f'[H, W, 3] (RGB) or [H, W] (grey)')
        self.row_index, row_weight = area_band(shape[0], size)
        self.row_weight = row_weight[:, :, None]
        self.col_index, col_weight = area_band(shape[1], size)
        self.col_weight = col_weight.T[None]  # [1, size, K]: broadcasts over output rows
        self.observation_space = spaces.Box(0, 255, (size, size), np.uint8)

    def observation(self, frame: np.ndarray) -> np.ndarray:
        rows = (grey(frame)[self.row_index] * self.row_weight).sum(axis=0)  # [size, W]
        pixels = (rows[:, self.col_index.T] * self.col_weight).sum(axis=2)  # [size, size]
        return np.rint(pixels, out=pixels).clip(0, 255).astype(np.uint8)


class NoopReset(gymnasium.Wrapper):
    """Start each game with a random number (1 to ``noop_max``) of no-op frames, so starts differ.

    The count is drawn from the env's own seeded generator, so a seeded reset is reproducible.
    """

    def __init__(self, env: gymnasium.Env, noop_max: int = 30, noop_action: int = 0) -> None:
        super().__init__(env)
        self.noop_max = noop_max
        self.noop_action = noop_action

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        if self.noop_max < 1:
            return obs, info
        for _ in range(int(self.np_random.integers(1, self.noop_max + 1))):
            obs, _, terminated, truncated, info = self.env.step(self.noop_action)
            if terminated or truncated:
                obs, info = self.env.reset()
        return obs, info


class MaxAndSkip(gymnasium.Wrapper):
    """Repeat each action ``skip`` frames, sum the rewards and return the max of the last two frames.

    The max removes the flicker of sprites the Atari draws on alternate frames. The two frames
    are always the last two the emulator produced (even when the game ended after the first
    frame of a step), never stale ones.
    """

    def __init__(self, env: gymnasium.Env, skip: int = 4) -> None:
        super().__init__(env)
        if skip < 1:
            raise ValueError(f'MaxAndSkip: skip must be >= 1, got {skip}')
        self.skip = skip
        self._previous: Optional[np.ndarray] = None
        self._last: Optional[np.ndarray] = None

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self._previous = self._last = obs
        return obs, info

    def step(self, action):
        if self._last is None:
            raise EnvError('MaxAndSkip: step() before reset(); expected reset() first')
        total = 0.0
        terminated = truncated = False
        info: dict = {}
        previous, last = self._last, self._last
        for _ in range(self.skip):
            obs, reward, terminated, truncated, info = self.env.step(action)
            previous, last = last, obs
            total += float(reward)
            if terminated or truncated:
                break
        self._previous, self._last = previous, last
        return np.maximum(previous, last), total, terminated, truncated, info


def lives_of(info: dict, wrapper: str) -> int:
    if 'lives' not in info:
        raise EnvError(f'{wrapper}: the env returned info without "lives" ({sorted(info)}); expected an ALE env, '
                       f'which reports the lives left in info["lives"]')
    return int(info['lives'])


class EpisodicLife(gymnasium.Wrapper):
    """A lost life ends the episode (``terminated``) but not the game; only game over resets it.

    The value of a state then never counts on lives to come, which speeds up learning. After a
    lost life, ``reset()`` continues the game with one no-op step.
    """

    def __init__(self, env: gymnasium.Env, noop_action: int = 0) -> None:
        super().__init__(env)
        self.noop_action = noop_action
        self.lives = 0
        self.game_over = True

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = terminated or truncated
        lives = lives_of(info, 'EpisodicLife')
        if lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs):
        if self.game_over:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, terminated, truncated, info = self.env.step(self.noop_action)
            if terminated or truncated:  # the game ended during the no-op after all
                obs, info = self.env.reset(**kwargs)
        self.game_over = False
        self.lives = lives_of(info, 'EpisodicLife')
        return obs, info


class FireOnLifeStart(gymnasium.Wrapper):
    """Press FIRE at the start of each game and after each lost life, in games that wait for it.

    Without it a greedy policy that never picks FIRE would wait forever after losing a life
    (Breakout serves the ball only on FIRE). Placed outside :class:`EpisodicLife`, a lost life
    ends the training episode and the FIRE comes with the next ``reset()``; in whole-game
    (evaluation) envs it comes within the step that lost the life, its reward added.
    """

    def __init__(self, env: gymnasium.Env, fire_action: int) -> None:
        super().__init__(env)
        self.fire_action = fire_action
        self.lives = 0

    def reset(self, **kwargs):
        self.env.reset(**kwargs)
        obs, _, terminated, truncated, info = self.env.step(self.fire_action)
        if terminated or truncated:
            obs, info = self.env.reset()
        self.lives = lives_of(info, 'FireOnLifeStart')
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        lives = lives_of(info, 'FireOnLifeStart')
        if lives < self.lives and not (terminated or truncated):
            obs, fire_reward, terminated, truncated, info = self.env.step(self.fire_action)
            reward = float(reward) + float(fire_reward)
            lives = lives_of(info, 'FireOnLifeStart')
        self.lives = lives
        return obs, reward, terminated, truncated, info


def clip_reward_to_sign(env: gymnasium.Env) -> gymnasium.Env:
    """Rewards become -1, 0 or +1, so one learning rate fits games whose scores differ in scale."""
    return gymnasium.wrappers.TransformReward(env, lambda reward: float(np.sign(float(reward))))


def action_meanings(env: gymnasium.Env) -> list:
    meanings = getattr(env.unwrapped, 'get_action_meanings', None)
    if meanings is None:
        raise EnvError(f'{type(env.unwrapped).__name__} has no get_action_meanings(); expected an ALE env')
    return list(meanings())


def wrap_atari(env: gymnasium.Env, *, noop_max: int = 30, frame_skip: int = 4, screen_size: int = 84,
               frame_stack: int = 4, episodic_life: bool = True, clip_rewards: bool = True,
               fire_reset: bool = True) -> gymnasium.Env:
    """The preprocessing stack around an ALE env that shows every frame (``frameskip=1``).

    Observations become ``[frame_stack, screen_size, screen_size]`` uint8. ``episodic_life`` and
    ``clip_rewards`` shape the training signal; evaluation envs turn both off to play whole
    games and report the raw score.
    """
    meanings = action_meanings(env)
    if meanings[0] != 'NOOP':
        raise EnvError(f'wrap_atari: action 0 means {meanings[0]!r}; expected NOOP (the no-op action)')
    env = NoopReset(env, noop_max)
    env = MaxAndSkip(env, frame_skip)
    if episodic_life:
        env = EpisodicLife(env)
    if fire_reset and 'FIRE' in meanings:
        env = FireOnLifeStart(env, meanings.index('FIRE'))
    env = GreyResize(env, screen_size)
    if clip_rewards:
        env = clip_reward_to_sign(env)
    return gymnasium.wrappers.FrameStackObservation(env, frame_stack)
