"""Evaluation opponents: a bot named twice (as a reference player and in ``battle.eval_opponents``) is evaluated
once, under its first name, with a warning."""
import pytest

from sparring.config import compile_config
from sparring.framework.run_setup import complete_league_config, evaluation_opponents
from sparring.league.base_league import build_league
from tests.configs import tiny_league_config


def _compiled(tmp_path, references, eval_opponents):
    cfg = compile_config(tiny_league_config(tmp_path / 'run', league=dict(reference_players=references),
                                            battle=dict(eval_opponents=eval_opponents)), save=False)
    complete_league_config(cfg)
    return cfg


def test_a_reference_bot_named_again_in_eval_opponents_is_evaluated_once_with_a_warning(tmp_path):
    cfg = _compiled(tmp_path, [dict(player_id='rnd', param_ref='bot:random'),
                               dict(player_id='blocker', param_ref='bot:tictactoe_heuristic?positional=false&block=true')],
                    ['bot:random', 'bot:tictactoe_heuristic?block=true&positional=false', 'bot:tictactoe_mcts'])
    with pytest.warns(UserWarning, match=r"'bot:random' is the opponent 'rnd' again; it is evaluated once, as 'rnd'"):
        opponents = evaluation_opponents(build_league(cfg.league), cfg)
    assert [oid for oid, _ in opponents] == ['rnd', 'blocker', 'tictactoe_mcts']


def test_the_bots_added_as_evaluation_opponents_leave_out_the_reference_players_bots(tmp_path):
    cfg = _compiled(tmp_path, [dict(player_id='rnd', param_ref='bot:random')], [])
    assert cfg.battle.eval_opponents == ['bot:tictactoe_heuristic', 'bot:tictactoe_mcts']
