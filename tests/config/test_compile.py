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


@pytest.mark.parametrize('config, message', [
    # another library's name: a spelling match would suggest the wrong key ('clip_range', 'exp_name')
    (dict(policy=dict(learn=dict(learning_rate=1e-3))), "'learning_rate' in \"policy.learn\". In sparring that is 'lr'"),
    (dict(env_manager=dict(type='subprocess')), "'env_manager' in the top level. In sparring that is 'env.manager'"),
    (dict(learning_rate=1e-3), "In sparring that is 'policy.learn.lr'"),
    (dict(policy=dict(collect=dict(n_sample=64))), "In sparring that is 'n_steps' in \"policy.collect\" \\(n_steps is per env"),
    (dict(policy=dict(learn=dict(update_per_collect=4))), "In sparring that is 'epochs' or 'num_minibatches'"),
    (dict(policy=dict(type='dqn', learn=dict(update_per_collect=4))), "In sparring that is 'updates_per_chunk'"),
    (dict(policy=dict(learn=dict(batch_size=64))), "In sparring that is 'num_minibatches'"),
    (dict(env=dict(type='config_test_env', n_evaluator_episode=5)), "In sparring that is 'n_evaluator_episodes'"),
    (dict(policy=dict(cuda=True)), "'cuda' in \"policy\". In sparring that is 'device' in \"policy\""),
    (dict(policy=dict(collect=dict(gae_lambda=0.9))), "In sparring that is 'policy.learn.gae_lambda'"),
    (dict(policy=dict(learn=dict(ent_coef=0.01))), "In sparring that is 'entropy_coef'"),
    (dict(train=dict(total_timesteps=10)), "In sparring that is 'max_env_steps' in \"train\""),
])
def test_unknown_key_from_another_library_names_the_sparring_key(config, message):
    config = dict(config)
    config.setdefault('env', dict(type='config_test_env'))
    with pytest.raises(ConfigError, match=message) as err:
        compile_config(config, save=False)
    assert 'Did you mean' not in str(err.value)


def test_every_synonym_names_a_key_sparring_has():
    from sparring.config.synonyms import SYNONYMS
    compiled = [compile_config(dict(env=dict(type='gym', id='CartPole-v1'), policy=dict(type=kind)), save=False)
                for kind in ('ppo', 'dqn')]

    def exists(dotted):
        for cfg in compiled:
            node, found = cfg, True
            for part in dotted.split('.'):
                found = isinstance(node, dict) and part in node
                if not found:
                    break
                node = node[part]
            if found:
                return True
        return False

    missing = sorted({t for targets, _ in SYNONYMS.values() for t in targets if not exists(t)})
    assert not missing
