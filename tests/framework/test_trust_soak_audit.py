"""The soak's audit (benchmarks/soak.py) after a snapshot was quarantined (issue #28's soak, cut-snapshot phase):
games played against a stand-in for the quarantined snapshot are journaled but kept out of the payoff, and the
audit counts them as such, not as games lost."""
from types import SimpleNamespace

from sparring.framework.journal import Journal
from tests.scripts import load_script

soak = load_script('benchmarks/soak.py', 'soak')


class _League:
    """What the audit reads of a league: one learning player, a good snapshot and a quarantined one."""

    def __init__(self, payoff_games):
        self.players = {'p': SimpleNamespace(kind='active', param_ref=None, self_play_games=0),
                        'p_h1': SimpleNamespace(kind='historical', param_ref='params/p_h1.pt'),
                        'p_h2': SimpleNamespace(kind='historical', param_ref='params/p_h2.pt')}
        self.active_players = [self.players['p']]
        self.payoff = SimpleNamespace(played_pairs=lambda: [('p', 'p_h1', dict(games=payoff_games))])

    def get_player(self, pid):
        return self.players[pid]


def _journal(tmp_path, entries):
    """A commander journal holding ``entries``, written as the commander writes it."""
    journal = Journal(str(tmp_path / 'commander' / 'journal.jsonl'))
    journal.open(0)
    for entry in entries:
        journal.append(entry)
    journal.sync()
    journal.close()


def test_games_against_a_quarantined_snapshots_stand_in_are_not_counted_lost(tmp_path):
    _journal(tmp_path, [
        dict(op='games', chunk='c1', player='p', steps=8, games=[['p_h1', [1, 2], ['win', 'loss']]]),
        # a job against p_h2 drawn before its file was found damaged: recorded, kept out of the payoff
        dict(op='games', chunk='c2', player='p', steps=8, dropped=['params/p_h2.pt'],
             games=[['p_h2', [3], ['win']], ['p_h1', [4], ['draw']]]),
    ])
    result = soak.audit(str(tmp_path), _League(payoff_games=3))
    assert result['games_recorded'] == 4 and result['games_quarantined'] == 1
    assert result['games_lost'] == 0 and result['games_doubled'] == 0


def test_a_game_missing_from_the_payoff_is_still_lost(tmp_path):
    _journal(tmp_path, [dict(op='games', chunk='c1', player='p', steps=8, dropped=['params/p_h2.pt'],
                             games=[['p_h1', [1, 2], ['win', 'loss']]])])
    result = soak.audit(str(tmp_path), _League(payoff_games=1))
    assert result['games_quarantined'] == 0 and result['games_lost'] == 1
