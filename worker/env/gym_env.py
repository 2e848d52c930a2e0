"""Single-agent environments built from a config section: the Gymnasium adapter and the env factory.

``env=dict(type='gym', id='CartPole-v1')`` builds any Gymnasium env by id; an env family under
``dizoo/`` subclasses :class:`GymEnv` to preset the id under a short registered name.
:func:`make_env` is the one place envs are built, in the parent and in env subprocesses alike.
:func:`evaluator_env_config` gives the section evaluation envs are built from, with what only
shapes the training signal (``reward_scaling``, and a subclass's own such options) turned off.
"""
from __future__ import annotations

import difflib
import importlib
from typing import Iterable, Mapping

import gymnasium
import numpy as np

from sparring.config.compile import compile_section
from sparring.config.schema import ConfigError, all_of, in_range, of_type
from sparring.config.registry import ENV_REGISTRY, import_modules

# The compiler's rule for completing one config section, under the name the env modules use.
complete_section = compile_section

# sparring's own env families, imported wherever envs are built (also in env subprocesses, which
# must not import the rest of sparring's built-ins: those pull in torch).
ENV_FAMILY_MODULES = ('sparring.dizoo',)


def import_env_modules(import_names: Iterable[str] = ()) -> None:
    """Import the modules that register env types: sparring's env families and ``import_names``."""
    import_modules([*ENV_FAMILY_MODULES, *import_names])


def make_env(env_cfg: Mapping):
    """Build one env from its config section (a plain dict or EasyDict, compiled or partial)."""
    import_env_modules()
    section = compile_section('env', env_cfg)
    return ENV_REGISTRY.get(section.type)(section)


def env_label(env_cfg: Mapping) -> str:
    """How error messages name an env: its registered type and, when it has one, its id."""
    label = f'type {env_cfg.get("type")!r}'
    if env_cfg.get('id'):
        label += f', id {env_cfg["id"]!r}'
    return label


def _gym_id(value) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"expected a Gymnasium id such as 'CartPole-v1', got {value!r}")


def check_gym_id(env_id: str) -> None:
    """Raise :class:`ConfigError` unless Gymnasium can make ``env_id``, suggesting close ids."""
    module, _, name = env_id.rpartition(':')
    if module:  # 'package:Id' imports the package that registers Id, as gymnasium.make does
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            raise ConfigError(f'config key "env.id": cannot import module {module!r} named in the Gymnasium id '
                              f'{env_id!r} ({err})') from None
    try:
        gymnasium.spec(name)
    except gymnasium.error.Error as err:
        by_lower = {known.lower(): known for known in gymnasium.registry}
        close = [by_lower[c] for c in difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)]
        hint = f' Close Gymnasium ids: {", ".join(repr(c) for c in close)}.' if close else ''
        if name.lower() in ENV_REGISTRY:
            hint += f' For sparring\'s registered env write env=dict(type={name.lower()!r}).'
        raise ConfigError(f'config key "env.id": {env_id!r} is not a registered Gymnasium id ({err}).{hint}') from None


class TimeFeature(gymnasium.wrappers.TimeAwareObservation):
    """The observation gains one last entry, the elapsed fraction of the episode's time limit.

    With it the value function sees a time limit coming: the value of a state is the return still
    to come *before the limit*. A step that reaches the limit lands in a state with no time left,
    whose value is exactly zero, so it is reported ``terminated`` (and still ``truncated``): GAE
    then does not bootstrap it from an untrained guess at ``V(obs, 1.0)``. An episode cut short
    otherwise (a chunk's end, another wrapper's truncation) is bootstrapped from its observation,
    which carries its fraction. Needs a time limit and a flat Box observation.
    """

    def __init__(self, env: gymnasium.Env) -> None:
        space = env.observation_space
        if not isinstance(space, gymnasium.spaces.Box) or len(space.shape) != 1:
            raise ConfigError(f'config key "env.time_feature": needs a flat Box observation space to append the '
                              f'time fraction to, got {space}')
        limit = env.spec.max_episode_steps if env.spec is not None else None
        if not limit:
            raise ConfigError('config key "env.time_feature": the env has no time limit to measure; set '
                              '"env.max_episode_steps"')
        super().__init__(env, flatten=True, normalize_time=True)
        # Gymnasium builds the space by flattening a Dict; keep the bounds and dtype of the observation.
        self.observation_space = gymnasium.spaces.Box(np.append(space.low, 0.0).astype(space.dtype),
                                                      np.append(space.high, 1.0).astype(space.dtype),
                                                      dtype=space.dtype)

    def observation(self, observation):
        return np.append(observation, self.timesteps / self.max_timesteps).astype(self.observation_space.dtype)

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if self.timesteps >= self.max_timesteps:
            terminated = True
        return obs, reward, terminated, truncated, info


@ENV_REGISTRY.register('gym')
class GymEnv(gymnasium.Wrapper):
    """A Gymnasium env made by id, with the config section that built it in ``self.cfg``."""

    # Subclasses registered under a short name preset these (see dizoo/classic_control). Envs step in
    # process unless the config asks for subprocesses: most Gymnasium envs are cheap (see DESIGN), and
    # spawned env workers would need the user's script to guard its top level with __main__.
    default_id = ''
    default_manager = 'base'
    registry_name: str  # the name ENV_REGISTRY.register gave the class

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            id=cls.default_id,  # a Gymnasium id; 'package:Id' first imports the package registering it
            kwargs={},  # free-form keyword arguments of gymnasium.make
            max_episode_steps=None,  # None keeps the id's own time limit
            collector_env_num=8,  # envs each collector steps side by side (one batch of the policy's forward pass)
            evaluator_env_num=8,  # envs an evaluation steps side by side
            n_evaluator_episodes=8,  # episodes (games, in a battle: per opponent) one evaluation plays
            stop_value=None,  # an evaluation mean return at which training may stop
            # Divide training rewards by the running std of the discounted return (the MuJoCo
            # recipe); evaluation envs always report raw rewards (see ``evaluator_config``).
            reward_scaling=False,
            reward_scaling_gamma=0.99,  # the discount of that return: best equal to policy.learn.gamma
            # Append the elapsed fraction of the time limit to the observation (0 after reset, 1 at the
            # limit); reaching the limit then ends the episode as terminated (see ``TimeFeature``).
            time_feature=False,
            manager=dict(type=cls.default_manager),
        )

    config_constraints = {
        'id': _gym_id,
        'max_episode_steps': all_of(of_type(int, allow_none=True), in_range(1, None, allow_none=True)),
        'collector_env_num': in_range(1, None),
        'evaluator_env_num': in_range(1, None),
        'n_evaluator_episodes': in_range(1, None),
        'stop_value': of_type(int, float, allow_none=True),
        'reward_scaling_gamma': in_range(0.0, 1.0),
    }

    @classmethod
    def validate_config(cls, section: dict) -> None:
        check_gym_id(section['id'])
        if section['max_episode_steps'] is not None and 'max_episode_steps' in section['kwargs']:
            raise ConfigError('config keys "env.max_episode_steps" and "env.kwargs.max_episode_steps" are both '
                              'set; expected only one of them')

    def __init__(self, cfg: Mapping) -> None:
        # Compiling again is a no-op for a compiled section and lets GymEnv(partial_dict) work.
        section = compile_section('env', {'type': self.registry_name, **cfg})
        make_kwargs = dict(section.kwargs)
        if section.max_episode_steps is not None:
            make_kwargs['max_episode_steps'] = section.max_episode_steps
        env = self.wrap(gymnasium.make(section.id, **make_kwargs), section)
        if section.time_feature:
            env = TimeFeature(env)
        if section.reward_scaling:
            # Gymnasium's wrapper divides by the std (not mean-centred) of the discounted return,
            # per env; its statistics live in the env and are not checkpointed.
            env = gymnasium.wrappers.NormalizeReward(env, gamma=section.reward_scaling_gamma)
        super().__init__(env)
        self.cfg = section

    def wrap(self, env: gymnasium.Env, cfg: Mapping) -> gymnasium.Env:
        """The env Gymnasium made, wrapped as this env type needs; subclasses add their wrapper stack."""
        return env

    @classmethod
    def evaluator_config(cls, section: Mapping) -> dict:
        """The section evaluation envs are built from: what only shapes the training signal is off."""
        return {**section, 'reward_scaling': False} if 'reward_scaling' in section else dict(section)


def evaluator_env_config(env_cfg: Mapping, import_names: Iterable[str] = ()):
    """The env section for evaluation envs: the env type's ``evaluator_config`` applied, if it has one.

    Evaluation reports what the task scores (raw rewards, whole games), while training envs may
    reshape the signal (reward scaling or clipping, a lost life ending an Atari episode).
    """
    import_env_modules(import_names)
    section = compile_section('env', env_cfg)
    hook = getattr(ENV_REGISTRY.get(section.type), 'evaluator_config', None)
    return section if hook is None else compile_section('env', hook(section))
