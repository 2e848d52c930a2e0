"""compile_config: merging over class defaults, unknown keys, types, ranges, save and load."""
import json
import os

import pytest

from sparring.config import ConfigError, compile_config, load_config
from sparring.config.schema import in_range
from sparring.config.registry import ENV_REGISTRY


@ENV_REGISTRY.register('config_test_env')
class ConfigTestEnv:
    @classmethod
    def default_config(cls):
        return dict(size=5, rate=0.5, name='x', flags=[1, 2], kwargs={}, collector_env_num=2, evaluator_env_num=1,
                    n_evaluator_episodes=1, stop_value=None, manager=dict(type='base'))

    config_constraints = {'rate': in_range(0.0, 1.0)}


def _cfg(**env):
    return dict(env=dict(type='config_test_env', **env), policy=dict(type='ppo'))


def test_merge_keeps_defaults_and_user_values():
    cfg = compile_config(_cfg(size=7, kwargs=dict(anything=1)), save=False)
    assert cfg.env.size == 7 and cfg.env.rate == 0.5 and cfg.env.kwargs == {'anything': 1}
    assert cfg.policy.learn.gamma == 0.99  # from PPOPolicy.default_config
    assert cfg.policy.model.hidden_sizes == [64, 64]  # nested typed section: MLP defaults
    assert cfg.train.max_env_steps == 1_000_000  # top-level defaults


def test_unknown_key_suggests_closest():
    with pytest.raises(ConfigError) as err:
        compile_config(_cfg(sise=3), save=False)
    assert "unknown key 'sise'" in str(err.value) and "'size'" in str(err.value) and '"env"' in str(err.value)
    with pytest.raises(ConfigError, match="Did you mean 'gamma'"):
        compile_config(dict(env=dict(type='config_test_env'), policy=dict(learn=dict(gamme=0.9))), save=False)


def test_wrong_type_names_key_and_expected_type():
    with pytest.raises(ConfigError, match='"env.size": expected int, got str'):
        compile_config(_cfg(size='7'), save=False)
    with pytest.raises(ConfigError, match='"env.flags": expected a list'):
        compile_config(_cfg(flags=3), save=False)
    with pytest.raises(ConfigError, match='"policy.learn": expected a dict'):
        compile_config(dict(env=dict(type='config_test_env'), policy=dict(learn=3)), save=False)
    # an int where a float is expected is fine; a float that is an integer where an int is expected too
    cfg = compile_config(dict(_cfg(rate=1), train=dict(max_env_steps=1e5)), save=False)
    assert cfg.env.rate == 1.0 and cfg.train.max_env_steps == 100000 and isinstance(cfg.train.max_env_steps, int)


def test_range_checks():
    with pytest.raises(ConfigError, match=r'"env.rate": expected a number in \[0.0, 1.0\], got 1.5'):
        compile_config(_cfg(rate=1.5), save=False)
    with pytest.raises(ConfigError, match='"policy.learn.gamma"'):
        compile_config(dict(env=dict(type='config_test_env'), policy=dict(learn=dict(gamma=1.2))), save=False)
    with pytest.raises(ConfigError, match='"policy.model.hidden_sizes"'):
        compile_config(dict(env=dict(type='config_test_env'), policy=dict(model=dict(hidden_sizes=[0]))),
                       save=False)


def test_unknown_type_lists_registered_names():
    with pytest.raises(ConfigError, match=r'"policy.type": unknown policy \'ppp\'. Did you mean \'ppo\''):
        compile_config(dict(env=dict(type='config_test_env'), policy=dict(type='ppp')), save=False)


def test_saved_config_loads_back_identically(tmp_path):
    exp = str(tmp_path / 'exp')
    cfg = compile_config(_cfg(size=9), exp_name=exp, seed=42)
    path = os.path.join(exp, 'config.json')
    assert json.load(open(path))['seed'] == 42
    loaded = load_config(exp)
    assert loaded == cfg
    # a loaded config compiles to itself: it can be fed back in to repeat the run
    assert compile_config(dict(loaded), save=False) == cfg


def test_non_dict_config_and_bad_import_names():
    with pytest.raises(ConfigError, match='expected a dict'):
        compile_config([1, 2])
    with pytest.raises(ConfigError, match='import_names'):
        compile_config(dict(import_names='mypkg'), save=False)


def test_none_only_where_the_constraint_allows_it():
    # value_clip_range defaults to 0.2 but None switches value clipping off
    cfg = compile_config(dict(env=dict(type='config_test_env'), policy=dict(learn=dict(value_clip_range=None))),
                         save=False)
    assert cfg.policy.learn.value_clip_range is None
    with pytest.raises(ConfigError, match='"policy.learn.gamma": expected a number, got NoneType'):
        compile_config(dict(env=dict(type='config_test_env'), policy=dict(learn=dict(gamma=None))), save=False)
