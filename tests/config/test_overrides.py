"""``--set`` overrides (parsed, applied to a plain config, then checked by the compiler) and the readable
printout of a compiled config."""
import pytest

from sparring.config import ConfigError, compile_config
from sparring.config.compile import apply_overrides, format_config, parse_override


def test_a_value_is_a_python_literal_else_the_string_it_is():
    assert parse_override('policy.learn.lr=3e-4') == ('policy.learn.lr', 3e-4)
    assert parse_override('policy.model.hidden_sizes=[32, 32]') == ('policy.model.hidden_sizes', [32, 32])
    assert parse_override('env.stop_value=None') == ('env.stop_value', None)
    assert parse_override('train.tensorboard=False') == ('train.tensorboard', False)
    assert parse_override('env.id=CartPole-v1') == ('env.id', 'CartPole-v1')
    assert parse_override("exp_name='a=b'") == ('exp_name', 'a=b')  # only the first '=' splits
    for bad in ('nokey', '=3', 'a..b=1', '.a=1'):
        with pytest.raises(ConfigError, match='expected dotted.key=value'):
            parse_override(bad)


def test_overrides_create_sections_and_leave_the_original_alone():
    config = dict(env=dict(type='gym', id='CartPole-v1'), league=None)
    out = apply_overrides(config, [('policy.learn.lr', 1e-3), ('env.id', 'Acrobot-v1'), ('league.type', 'one_vs_one')])
    assert out['policy'] == {'learn': {'lr': 1e-3}} and out['env']['id'] == 'Acrobot-v1'
    assert out['league'] == {'type': 'one_vs_one'}
    assert config == dict(env=dict(type='gym', id='CartPole-v1'), league=None)
    with pytest.raises(ConfigError, match=r'--set env.id.x: "env.id" is .CartPole-v1., not a section'):
        apply_overrides(config, [('env.id.x', 1)])


def test_overridden_keys_are_checked_by_the_compiler():
    config = dict(env=dict(type='gym', id='CartPole-v1'))
    cfg = compile_config(apply_overrides(config, [('train.max_wall_seconds', 30)]), save=False)
    assert cfg.train.max_wall_seconds == 30.0 and isinstance(cfg.train.max_wall_seconds, float)
    with pytest.raises(ConfigError, match="unknown key 'lrr'.*Did you mean 'lr'"):
        compile_config(apply_overrides(config, [('policy.learn.lrr', 1e-3)]), save=False)
    with pytest.raises(ConfigError, match='"policy.learn.lr": expected a number, got str'):
        compile_config(apply_overrides(config, [('policy.learn.lr', 'fast')]), save=False)


def test_a_compiled_config_prints_one_key_per_line():
    cfg = compile_config(dict(env=dict(type='gym', id='CartPole-v1')), save=False)
    text = format_config(cfg)
    lines = text.splitlines()
    assert len(lines) > 50 and max(len(line) for line in lines) < 120
    assert 'env:' in lines and "  id: 'CartPole-v1'" in lines and '    lr: 0.0003' in lines
    assert "  type: 'gym'" in lines[lines.index('env:'):]
    assert str(cfg) == text and repr(cfg) == repr(dict(cfg))  # print() reads; repr stays the dict's
    assert format_config(cfg.policy.learn).splitlines()[0].endswith(':') is False
