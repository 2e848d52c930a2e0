"""The generated references: meanings read from the right comments, and every key a compiled config holds
listed on the config reference page."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'docs', 'gen'))

import config_reference  # noqa: E402  (docs/gen is not a package)
import cli_reference  # noqa: E402
from source_comments import key_comments  # noqa: E402

SHARED_DEFAULTS = dict(
    alpha=1,  # the alpha
    beta=2,
)

TAIL_DEFAULTS = dict(
    gamma=3,  # the gamma
)
# A whole-line comment further down the module, about something else: not part of gamma's meaning.


def _defaults():
    return dict(
        lr=3e-4,  # learning rate
        # a block above
        # in two lines
        epochs=4,
        nested=dict(  # a nested section
            inner=1,  # inner's comment
            pair=dict(a=1, b=2),  # about the pair
        ),
        fields='{x}',  # where it goes; fields:
        # x and y
        plain=0,
        **SHARED_DEFAULTS,
    )


def test_comments_are_attributed_by_the_documented_rules():
    assert key_comments(_defaults) == {
        'lr': 'learning rate',
        'epochs': 'a block above in two lines',
        'nested': 'a nested section',
        'nested.inner': "inner's comment",
        'nested.pair': 'about the pair',
        'fields': 'where it goes; fields: x and y',
        'alpha': 'the alpha',
    }


def test_a_constant_takes_only_the_comments_inside_its_own_lines():
    def defaults():
        return dict(**TAIL_DEFAULTS)

    assert key_comments(defaults) == {'gamma': 'the gamma'}


def test_a_key_without_a_comment_gets_no_meaning():
    comments = key_comments(_defaults)
    assert 'plain' not in comments and 'beta' not in comments and 'nested.pair.a' not in comments


def _leaves(node, prefix=''):
    """Dotted paths of a compiled config, opened as the reference opens defaults."""
    for key, value in node.items():
        path = f'{prefix}.{key}' if prefix else key
        if isinstance(value, dict) and value and key not in config_reference.WHOLE_VALUE_KEYS:
            yield from _leaves(value, path)
        else:
            yield path


@pytest.fixture(scope='module')
def reference_page():
    return config_reference.render()


@pytest.mark.parametrize('config', [
    dict(env=dict(type='connect_four'), policy=dict(type='ppo', model=dict(type='cnn')),
         league=dict(type='alphastar')),
    dict(env=dict(type='gym', id='CartPole-v1'), policy=dict(type='dqn')),
    dict(env=dict(type='tictactoe'), policy=dict(type='ppo', model=dict(type='lstm')),
         league=dict(type='one_vs_one', active_players=dict(mlagents_sp=1, openai_five_sp=1))),
], ids=['alphastar-cnn', 'dqn', 'selfplay-lstm'])
def test_every_compiled_key_is_on_the_reference_page(config, reference_page):
    from sparring.config import compile_config
    compiled = compile_config(config, save=False)
    missing = [path for path in _leaves(compiled) if config_reference.key_cell(path) not in reference_page]
    assert not missing, f'keys of a compiled config missing from the reference: {missing}'


def test_the_reference_counts_its_keys_and_every_key_has_a_meaning(reference_page):
    first = reference_page.splitlines()[0]
    rows = [line for line in reference_page.splitlines() if line.startswith('| <code>')]
    assert first.startswith(f'{len(rows)} keys in ')
    assert not any(line.endswith('|  |') for line in rows)  # an empty meaning cell


class _NewPlayer:
    @classmethod
    def default_config(cls):
        return dict(
            documented=1,  # what it means
            forgotten=2,
        )


def test_a_key_without_a_comment_fails_the_build_naming_it_and_its_class():
    section = config_reference.Section('Player: new', 'player-new', 'league.players.new', ['new'], [_NewPlayer])
    section.rows = config_reference.class_rows(_NewPlayer, section.prefix, config_reference.comments_of(_NewPlayer), {})
    with pytest.raises(config_reference.UndocumentedKeys, match=r'^1 config keys .*: league\.players\.new\.forgotten '
                       r'\([\w.]*_NewPlayer\)$'):
        config_reference.render([section], [])


def test_the_cli_reference_lists_every_subcommand_and_option():
    from sparring.framework.cli import _build_parser
    page = cli_reference.render()
    for name in ('train', 'worker', 'surgery', 'eval', 'play', 'export', 'report', 'exploit'):
        assert f'## `sparring {name}`' in page
    for option in ('--resume', '--max-env-steps', '--against', '--budget-steps', '--widen', '--role'):
        assert f'`{option}`' in page
    assert '--parent-pid' not in page  # hidden from --help, so from the page too
    assert _build_parser().prog == 'sparring'
