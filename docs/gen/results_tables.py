"""The tables of the results page (docs/results.md), generated from ``benchmarks/results/*.json`` when the site is built.

The page is a template: its prose is written by hand, and each table is a line ``<!-- table: NAME -->`` that
the docs hook (``docs/hooks/reference.py``) replaces by what the function registered here under ``NAME`` makes
of the records. So a table shows what its record holds, and a record that changes changes the page; a
figure a record does not hold cannot be shown, and a missing record or entry fails the build naming the file
and the key (:class:`MissingFigure`). One small function per table: it picks the figures from its record and
formats them; the row labels are its own.

A new record's table: a function below decorated with ``@table('name')``, and the line
``<!-- table: name -->`` where the page shows it (``tests/docs/test_results_tables.py`` checks that every
table is on the page and every marker has a table).
"""
from __future__ import annotations

import glob
import json
import os
import statistics
from typing import Callable, Dict, Iterable, List, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS_DIR = os.path.join(ROOT, 'benchmarks', 'results')
MARKER = '<!-- table: {} -->'


class MissingFigure(KeyError):
    """A table asked for a record or an entry that ``benchmarks/results`` does not hold."""

    def __str__(self) -> str:
        return str(self.args[0])


class Records:
    """The records of ``results_dir``, read once; :meth:`get` walks into one by keys and names what is missing."""

    def __init__(self, results_dir: str = RESULTS_DIR) -> None:
        self.results_dir = results_dir
        self._cache: Dict[str, dict] = {}

    @property
    def read(self) -> List[str]:
        """The records read so far."""
        return sorted(self._cache)

    def record(self, name: str) -> dict:
        if name not in self._cache:
            path = os.path.join(self.results_dir, f'{name}.json')
            if not os.path.exists(path):
                raise MissingFigure(f'the results page names the record {name!r}; benchmarks/results has no {name}.json')
            with open(path) as f:
                self._cache[name] = json.load(f)
        return self._cache[name]

    def get(self, name: str, *keys):
        """``record[keys[0]][keys[1]]...``; a list is indexed by an int key."""
        value = self.record(name)
        for i, key in enumerate(keys):
            try:
                value = value[key]
            except (KeyError, IndexError, TypeError):
                path = '.'.join(str(k) for k in keys[:i + 1])
                raise MissingFigure(f'the results page reads {path!r} of benchmarks/results/{name}.json, '
                                    f'which has no such entry') from None
        return value

    def names(self) -> List[str]:
        return sorted(os.path.splitext(os.path.basename(p))[0]
                      for p in glob.glob(os.path.join(self.results_dir, '*.json')))


TableFunction = Callable[[Records], List[str]]
TABLES: Dict[str, TableFunction] = {}


def table(name: str) -> Callable[[TableFunction], TableFunction]:
    """Register a table function under ``name`` (the page's ``<!-- table: name -->``)."""
    def register(function: TableFunction) -> TableFunction:
        if name in TABLES:
            raise ValueError(f'two results tables are named {name!r}')
        TABLES[name] = function
        return function
    return register


def render(name: str, records: Optional[Records] = None) -> str:
    """The markdown of table ``name``."""
    if name not in TABLES:
        raise MissingFigure(f'the results page asks for the table {name!r}; docs/gen/results_tables.py has none '
                            f'(it has {", ".join(sorted(TABLES))})')
    try:
        return '\n'.join(TABLES[name](records or Records()))
    except MissingFigure:
        raise
    except (KeyError, IndexError) as err:  # a figure a table function read by plain indexing
        raise MissingFigure(f'the results table {name!r} (docs/gen/results_tables.py) found no {err} in its records '
                            f'under benchmarks/results') from err


# -- formatting -------------------------------------------------------------------------------------------------
def rows(header: Sequence[str], body: Iterable[Sequence[object]]) -> List[str]:
    """A markdown table: the header, its rule, one line per row."""
    out = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    out += ['| ' + ' | '.join('' if c is None else str(c) for c in row) + ' |' for row in body]
    return out


def num(x: Optional[float], digits: int = 0) -> str:
    """``x`` with ``digits`` decimals and thousands commas; '-' for None."""
    if x is None:
        return '-'
    return f'{x:,.{digits}f}'


def pct(x: float, digits: int = 1) -> str:
    """A fraction as a percentage: 0.994 -> '99.4 %'; whole percentages lose the '.0'."""
    text = f'{100 * x:.{digits}f}'
    if '.' in text:
        text = text.rstrip('0').rstrip('.')
    return f'{text} %'


def short(x: float, digits: int = 1) -> str:
    """A count in thousands or millions: 216,873 -> '217k', 7,568 -> '7.6k', 15,067,136 -> '15.1M'."""
    for scale, unit in ((1e6, 'M'), (1e3, 'k')):
        if abs(x) >= scale:
            value = x / scale
            return (f'{value:.0f}' if abs(value) >= 100 else f'{value:.{digits}f}') + unit
    return f'{x:.0f}'


def sig3(x: float) -> str:
    """A count in thousands or millions to three significant digits: 44,975 -> '45.0k', 1,088,239 -> '1.09M'."""
    for scale, unit in ((1e6, 'M'), (1e3, 'k')):
        if abs(x) >= scale:
            value = x / scale
            return f'{value:.{0 if value >= 100 else 1 if value >= 10 else 2}f}{unit}'
    return f'{x:.0f}'


def span(values: Iterable[float], digits: int = 1) -> str:
    """'lo-hi' of ``values`` (one value alone when they are equal)."""
    values = list(values)
    lo, hi = f'{min(values):.{digits}f}', f'{max(values):.{digits}f}'
    return lo if lo == hi else f'{lo}-{hi}'


def wdl(result: dict, digits: int = 1) -> str:
    """'win / draw / loss %' of a result with win, draw and loss fractions (at most ``digits`` decimals)."""
    return ' / '.join(pct(result[k], digits)[:-2] for k in ('win', 'draw', 'loss')) + ' %'


# -- PPO on CartPole and Pendulum, and SB3 -----------------------------------------------------------------------
@table('ppo_cartpole')
def ppo_cartpole(r: Records) -> List[str]:
    cart, pend = r.get('ppo_cartpole', 'cartpole', 'per_seed'), r.get('ppo_cartpole', 'pendulum', 'per_seed')
    seeds = sorted(cart, key=int)
    seconds = statistics.median(s['wall_seconds'] for s in pend.values())
    pend_steps = short(statistics.median(s['env_steps'] for s in pend.values()), 0)
    return rows(['task'] + [f'seed {s}' for s in seeds], [
        ['CartPole-v1: env steps / seconds to an evaluation mean of 475']
        + [f'{num(cart[s]["stop_env_steps"])} / {cart[s]["stop_seconds"]:.2f} s' if cart[s]['reached_stop_value']
           else 'not reached' for s in seeds],
        [f'Pendulum-v1: evaluation mean after {pend_steps} env steps ({seconds:.0f} s a run)']
        + [num(pend[s]['eval_mean']) for s in seeds]])


@table('vs_sb3')
def vs_sb3(r: Records) -> List[str]:
    cart, pend, update = (r.get('vs_sb3', k) for k in ('cartpole', 'pendulum', 'update'))
    seeds = sorted(int(s) for s in cart['per_seed'])
    ours, theirs = cart['sparring'], cart['sb3']

    def updates(network: str) -> List[str]:
        one, two = update[f'{network}_threads1'], update[f'{network}_threads2']
        if network == 'cartpole':
            return [f'{short(one["sparring"]["samples_per_second"])} samples/s', short(one['sb3']['samples_per_second']),
                    f'{one["ratio"]:.2f}']
        return [(f'{short(one["sparring"]["samples_per_second"])} / {short(two["sparring"]["samples_per_second"])} '
                f'samples/s; bfloat16 trunk {short(one["sparring_bf16"]["samples_per_second"])} / '
                f'{short(two["sparring_bf16"]["samples_per_second"])}'),
                f'{short(one["sb3"]["samples_per_second"])} / {short(two["sb3"]["samples_per_second"])}',
                f'{one["ratio"]:.2f} / {two["ratio"]:.2f}; bfloat16 {one["ratio_bf16"]:.2f} / {two["ratio_bf16"]:.2f}']

    load = lambda network, n: update[f'{network}_threads{n}']['sparring'].get('load', [None])[0]  # noqa: E731
    pend_seeds = sorted(int(s) for s in pend['per_seed'])
    return rows(['', 'sparring', 'SB3 rl-zoo', 'sparring / SB3'], [
        [f'CartPole-v1, seconds to eval 475, seeds {seeds[0]}-{seeds[-1]}',
         (f'median {ours["median_seconds"]:.1f} s, worst {ours["worst_seconds"]:.1f} s '
         f'(median {num(ours["median_env_steps"])} steps)'),
         (f'median {theirs["median_seconds"]:.1f} s, worst {theirs["worst_seconds"]:.1f} s '
         f'({num(theirs["median_env_steps"])})'), f'{cart["median_seconds_ratio"]:.2f}'],
        [f'Pendulum-v1 after 100k env steps, seeds {pend_seeds[0]}-{pend_seeds[-1]}',
         (f'eval median {pend["sparring"]["median_eval"]:.0f}, '
         f'{short(pend["sparring"]["median_steps_per_second"])} env steps/s'),
         f'{pend["sb3"]["median_eval"]:.0f}, {short(pend["sb3"]["median_steps_per_second"])} env steps/s',
         f'{pend["steps_per_second_ratio"]:.2f} (speed)'],
        [f'one update, CartPole 64-64 MLP (256 x 20 epochs), 1 thread (load {num(load("cartpole", 1), 1)})']
        + updates('cartpole'),
        [f'one update, connect-four CNN (4096 x 4 epochs), 1 / 2 threads (load {num(load("connect_four", 1), 1)})']
        + updates('connect_four')])


@table('vs_sb3_fresh_seeds')
def vs_sb3_fresh_seeds(r: Records) -> List[str]:
    entry = r.get('vs_sb3', 'fresh_seeds_100_112_amd')
    cart = entry['cartpole']
    ours, theirs = cart['sparring'], cart['sb3']
    faster = sum(s['sparring']['seconds'] < s['sb3']['seconds'] for s in cart['per_seed'].values())
    seeds = entry['seeds']
    return rows(['CartPole-v1 to eval 475, fresh seeds', 'sparring', f'SB3 {entry["machine"]["stable_baselines3"]}',
                 'sparring / SB3'], [
        [(f'seeds {seeds[0]}-{seeds[-1]} ({len(seeds)}), {entry["machine"]["cpu_model"]}, load '
         f'{entry["load_at_start"][0]:.2f}-{entry["load_at_end"][0]:.2f}'),
         (f'median {ours["median_seconds"]:.1f} s, worst {ours["worst_seconds"]:.1f} s '
         f'(median {num(ours["median_env_steps"])} env steps)'),
         (f'median {theirs["median_seconds"]:.1f} s, worst {theirs["worst_seconds"]:.1f} s '
         f'({num(theirs["median_env_steps"])})'),
         f'{cart["median_seconds_ratio"]:.2f}; faster on {faster} of {len(cart["per_seed"])} seeds']])


@table('cartpole_vs_sb3')
def cartpole_vs_sb3(r: Records) -> List[str]:
    figures = [('env steps to 475', 'median_env_steps', 'env_steps', num),
               ('wall seconds to 475', 'median_wall_seconds', 'wall_seconds', lambda x: f'{x:.1f}'),
               ('CPU seconds to 475', 'median_cpu_seconds', 'cpu_seconds', lambda x: f'{x:.1f}'),
               ('training CPU ms per env step', 'median_train_cpu_ms_per_env_step', 'train_cpu_ms_per_env_step',
                lambda x: f'{x:.3f}')]
    body = []
    for key in r.record('cartpole_vs_sb3'):
        if key.startswith('_'):
            continue
        entry = r.get('cartpole_vs_sb3', key)
        medians, ratios, seeds = entry['medians'], entry['ratios'], entry['seeds']
        label = f'`{key}`: {len(seeds)} seeds, load {entry["load_before"][0]:.1f} -> {entry["load_after"][0]:.1f}'
        body.append([label, 'runs that reached 475', f'{medians["sparring"]["reached"]} of {medians["sparring"]["runs"]}',
                     f'{medians["sb3"]["reached"]} of {medians["sb3"]["runs"]}', ''])
        for text, median_key, ratio_key, fmt in figures:
            ratio = ratios[ratio_key]
            body.append(['', f'{text} (median)', fmt(medians['sparring'][median_key]), fmt(medians['sb3'][median_key]),
                         (f'{ratio["ratio"]:.2f} ({100 * ratio["level"]:.0f} % CI {ratio["ci_low"]:.2f}-'
                         f'{ratio["ci_high"]:.2f})')])
    return rows(['entry', 'CartPole-v1, fresh seeds', 'sparring', 'SB3', 'sparring / SB3'], body)


@table('startup')
def startup(r: Records) -> List[str]:
    names = {'version': '`sparring --version`', 'help': '`sparring --help`',
             'load_player': "`load_player` of a small league's player"}
    entries = [(key, r.get('startup', key)) for key in ('startup', 'startup_quiet')]
    return rows(['command'] + [f'`{key}` (load {e["load_average_at_start"][0]:.1f}), seconds' for key, e in entries]
                + ['target, seconds'],
                [[text] + [f'{e["seconds"][k]:.3f}' for _, e in entries] + [str(entries[0][1]['targets'][k])]
                 for k, text in names.items()])

# -- connect four ------------------------------------------------------------------------------------------------
@table('connect_four_league')
def connect_four_league(r: Records) -> List[str]:
    final = r.get('league_games', 'connect_four', 'result', 'final')

    def cell(key: str) -> str:
        return pct(final[key]['win'])
    return rows(['opponent', 'games', 'win rate'], [
        ['random bot', final['random_1000']['games'], f'**{cell("random_1000")}**'],
        ['heuristic bot', final['heuristic']['games'],
         (f'{cell("heuristic")} greedy (a near-deterministic bot repeats games); {cell("heuristic_sampled")} with sampled '
         f'actions ({final["heuristic_sampled"]["games"]} games)')],
        ['MCTS, 100 simulations a move', final['mcts_100']['games'], cell('mcts_100')],
        ['MCTS, 1000 simulations a move', final['mcts_1000']['games'], cell('mcts_1000')]])


@table('league_speed')
def league_speed(r: Records) -> List[str]:
    runs = r.get('league_speed', 'runs')
    names = dict(ready='evaluation beside training (`train.eval_in_background=True`, the ready config)',
                 inline='evaluation in line with training', no_eval='no evaluation')
    return rows(['variant', 'env steps/s', 'seconds', 'load'], [
        [names.get(key, key), num(run['env_steps_per_second']), f'{run["wall_seconds"]:.0f}',
         span([run['load_start'][0], run['load_end'][0]])] for key, run in runs.items()])


def _strength_rows(r: Records, labels: Dict[str, str], steps_per_second: bool) -> List[List[object]]:
    out = []
    for label, text in labels.items():
        run = r.get('connect_four_strength', label)
        final = run['final']
        row: List[object] = [f'`{label}`: {text}', short(run['env_steps'], 2 if run['env_steps'] < 1e7 else 1)]
        if steps_per_second:
            row += [num(run['env_steps_per_second']),
                    span([run['load_start'][0], run['load_end'][0]])]
        row += [pct(final['mcts_100']['win']), pct(final['mcts_1000']['win'])]
        out.append(row)
    return out


@table('connect_four_strength')
def connect_four_strength(r: Records) -> List[str]:
    labels = {
        'ready': 'ready config, one hour',
        'threads2_60min': '`learn=dict(threads=2)` on free cores, one hour (`--learn-threads 2`)',
        'threads2_33min': 'the same, 33 minutes',
        'threads2_anneal20M': 'the same, 20M env steps with the lr annealed, 55 minutes',
        'ab_plain_1.5M': '1.5M env steps, plain',
        'ab_mirror_1.5M': '1.5M env steps, mirror augmentation',
        'exp_mctsref_8min': '8 minutes, an MCTS bot as reference partner',
        'exp_deep_8min': '8 minutes, a deeper CNN',
        'exp_2epochs_4minibatches_8min': '8 minutes, 2 epochs x 4 minibatches',
    }
    return rows(['run (label in the record)', 'env steps', 'env steps/s', 'load', 'vs MCTS-100', 'vs MCTS-1000'],
                _strength_rows(r, labels, steps_per_second=True))


@table('expert_iteration')
def expert_iteration(r: Records) -> List[str]:
    labels = {
        'threads2_60min': 'PPO league, one hour (`connect_four_league.py`, two update threads)',
        'search_random25_60min': '**expert iteration, one hour (`connect_four_search.py`, `random_moves=0.25`)**',
        'search_ready_seed1_60min': 'the same, another seed (`--seed 1`)',
        'search_random25_q50_25min': 'the same with `search_value_weight=0.5`, 25 minutes',
        'search_noise_8min': 'the same without random opening moves (`random_moves=0`), 8 minutes',
        'search_60min': 'the same without random opening moves, one hour',
        'search_ref_anneal_60min': '... with a fifth of the games against the reference bots and the lr annealed, 57 min',
        'search_deep_60min': '... with a second 3x3 conv layer (`conv_layers=[[64, 3, 1], [64, 3, 1]]`, 1.7x the '
                             'forward pass)',
        'search_window4_60min': '... with `search_window=4, epochs=1, num_minibatches=32` (same compute and steps)',
    }
    return rows(['run (label in the record)', 'env steps', 'vs MCTS-100', 'vs MCTS-1000'],
                _strength_rows(r, labels, steps_per_second=False))


@table('guided_search')
def guided_search(r: Records) -> List[str]:
    entry = r.get('guided_search', 'threads2_60min')
    body = [['the network alone (greedy)', pct(entry['network']['mcts_100']['win']),
             pct(entry['network']['mcts_1000']['win'])]]
    for simulations, result in sorted(entry['search'].items(), key=lambda kv: int(kv[0])):
        body.append([f'with a search of {simulations} simulations a move (`sparring eval --search {simulations}`)',
                     pct(result['mcts_100']['win']), pct(result['mcts_1000']['win'])])
    return rows([f'the `threads2_60min` player, {entry["games"]} games each', 'vs MCTS-100', 'vs MCTS-1000'], body)


@table('connect_four_seats')
def connect_four_seats(r: Records) -> List[str]:
    names = {'search_60min': 'without random opening moves', 'search_random25_60min': 'with `random_moves=0.25`'}
    body = []
    for label, text in names.items():
        entry = r.get('connect_four_seats', label)
        seats = entry['by_seat']
        shortest = min(loss['length'] for loss in entry['losses'])
        short_losses = sum(loss['length'] <= 11 for loss in entry['losses'])
        body.append([f'`{label}`: {text}', f'{seats["first"]["loss"]} of {seats["first"]["games"]}',
                     f'{seats["second"]["loss"]} of {seats["second"]["games"]}',
                     f'{short_losses} within 11 moves' if short_losses else f'none within 11 moves (shortest {shortest})'])
    return rows(['run', 'lost as first player', 'lost as second player', 'short losses'], body)


GAMES = dict(connect_four='connect four', tictactoe='tic-tac-toe')


def _ms(x: float) -> str:
    return f'{x:.2f}' if x < 10 else f'{x:.1f}'


@table('bots_speed')
def bots_speed(r: Records) -> List[str]:
    speed = r.get('bots_speed', 'speed')
    body = []
    for key, figures in speed.items():
        if not isinstance(figures, dict):
            continue
        game, position, simulations = key.split('/')
        body.append([(f'{GAMES.get(game, game)}, {position.replace("_", "-")}{" board" if position == "empty" else ""}, '
                     f'{simulations}'), _ms(figures['lockstep']), _ms(figures['sequential']),
                     f'{figures["speedup"]:.1f}x'])
    return rows(['game, position, simulations', 'lockstep (all trees of a batch together)', 'one tree at a time',
                 'speed-up'], body)


@table('bots_parity')
def bots_parity(r: Records) -> List[str]:
    parity = r.get('bots_speed', 'parity')
    body = []
    for key, result in parity.items():
        if not isinstance(result, dict):
            continue
        game, simulations = key.split('/')
        match = result['lockstep_vs_sequential']
        body.append([GAMES.get(game, game), simulations, match['games'],
                     f'{match["score"]:.3f} ± {match["standard_error"]:.3f}'])
    return rows(['game', 'simulations', 'games', 'score of the lockstep bot against one tree at a time'], body)


# -- poker, matrix games, exploitability ------------------------------------------------------------------------
def _within(curve: List[dict], after: float, key: str, target: float) -> tuple:
    """(share of the evaluations after ``after`` seconds with ``key`` at most ``target``, their range)."""
    later = [c[key] for c in curve if c['seconds'] > after]
    return sum(v <= target for v in later) / len(later), min(later), max(later)


@table('poker_mmd')
def poker_mmd(r: Records) -> List[str]:
    body = []
    for game, config in (('kuhn', 'kuhn_poker_mmd.py'), ('leduc', 'leduc_poker_mmd.py')):
        result = r.get('strength', game, 'result')
        first, final, targets = result['first_met'], result['final'], result['targets']
        meta_target, player_target = targets['meta_exploitability'], targets['player_exploitability']
        body.append([f'{game.capitalize()} (`{config}`)', f'{first["seconds"]:.0f} s', short(first['env_steps']),
                     f'{first["meta_exploitability"]:.4f}', f'{first["player_exploitability"]:.4f}', 'first met'])
        share, lo, hi = _within(result['curve'], first['seconds'], 'meta_exploitability', meta_target)
        note = (f'meta <= {meta_target}' + (f' and network <= {player_target}' if player_target else '')
                + f': {"met" if result["final_meets_target"] else "missed"}; after {first["seconds"]:.0f} s the '
                f'meta-strategy is within at {pct(share, 0)} of evaluations ({lo:.3g}-{hi:.3g})')
        if player_target is not None:
            share, lo, hi = _within(result['curve'], first['seconds'], 'player_exploitability', player_target)
            note += f', the network at {pct(share, 0)} ({lo:.3g}-{hi:.3g})'
        body.append(['', f'{final["seconds"]:.0f} s', short(final['env_steps']),
                     f'**{final["meta_exploitability"]:.4f}**', f'**{final["player_exploitability"]:.4f}**', note])
    return rows(['game', 'after', 'env steps', 'meta-strategy', 'live network', 'target'], body)


@table('poker_variants')
def poker_variants(r: Records) -> List[str]:
    names = {'leduc_n32_alpha0.2': 'Leduc, the ready config before (n_steps 32, `magnet_coef` 0.2)',
             'kuhn_average': 'Kuhn, the NFSP-style average network answering (`strength.py --label average`)'}
    body = []
    for label, text in names.items():
        result = r.get('strength', label, 'result')
        curve = [c for c in result['curve'] if c['seconds'] > 60]
        final = result['final']
        body.append([f'`{label}`: {text}', f'{final["seconds"]:.0f} s', f'{final["meta_exploitability"]:.4f}',
                     f'{final["player_exploitability"]:.4f}',
                     span([c['player_exploitability'] for c in curve], 2)])
    return rows(['run (label in the record)', 'after', 'meta-strategy', 'answer (network)',
                 'the answer after the first minute'], body)


@table('poker_psro')
def poker_psro(r: Records) -> List[str]:
    result = r.get('league_games', 'poker', 'result')
    return rows(['game', 'seconds', 'env steps', 'meta-strategy at the end', 'best meta-strategy'], [
        [name.replace('_', ' ').capitalize(), f'{run["wall_seconds"]:.0f}', short(run['env_steps'], 2),
         f'{run["final_meta_exploitability"]:.3f}', f'{run["best_meta_exploitability"]:.3f}']
        for name, run in result.items()])


@table('matrix_games')
def matrix_games(r: Records) -> List[str]:
    result = r.get('league_games', 'matrix', 'result')
    names = {'zero_sum_2x2': '2x2 zero-sum, PSRO league (`zero_sum_2x2_league.py`)',
             'rock_paper_scissors_league': 'rock-paper-scissors, PSRO league',
             'rock_paper_scissors_naive_self_play': 'rock-paper-scissors, naive self-play'}
    body = []
    for key, text in names.items():
        run = result[key]
        meta = ', '.join(f'{p:.3f}' for p in run['meta_strategy_seat_0'])
        target = ', '.join(f'{p:.3f}' for p in run['target'])
        body.append([text, f'{run["wall_seconds"]:.1f}', f'({meta})' + (', the equilibrium' if meta == target else ''),
                     f'{run["meta_exploitability"]:.2g}', f'{run["final_player_exploitability"]:.2f}'])
    return rows(['run', 'seconds', 'meta-strategy (seat 0)', 'its exploitability', "the last network's exploitability"],
                body)


@table('league_throughput')
def league_throughput(r: Records) -> List[str]:
    result = r.get('league_games', 'throughput', 'result')
    return rows(['game', 'collection alone', 'whole league loop'], [
        [game, num(run['collect_env_steps_per_second']), num(run['league_env_steps_per_second'])]
        for game, run in result.items()])


@table('exploit_check')
def exploit_check(r: Records) -> List[str]:
    body = []
    for game, name in (('kuhn_poker', 'Kuhn'), ('leduc_poker', 'Leduc')):
        entry = r.get('exploit_check', game)
        for check in entry['checks']:
            who = (f'naive self-play ({short(entry["train_env_steps"], 0)})' if check['player'] != 'random'
                   else 'uniform random')
            seats = check['best_response_value_per_seat']
            body.append([f'{name}, {who}', f'{short(check["env_steps"], 0)}, {check["exploit_seconds"]:.0f} s',
                         f'{check["exploitability"]:.3f} ({seats[0]:.3f} / {seats[1]:.3f})',
                         f'{check["exploiter_exact_return"]:.3f}',
                         f'{check["exploiter_mean_return"]:.3f} ± {check["exploiter_return_se"]:.3f}',
                         f'{check["gap"]:.3f}'])
    return rows(['game, frozen player (league env steps)', 'exploiter env steps, seconds',
                 'exact exploitability (seats)', "exploiter's exact return", 'measured return ± se', 'gap'], body)


# -- DQN, PPO variants, Atari, MuJoCo ---------------------------------------------------------------------------
@table('dqn')
def dqn(r: Records) -> List[str]:
    cart, pong, c4 = (r.get('dqn', k) for k in ('cartpole', 'pong_duel_league', 'connect_four_league'))
    seeds = sorted(cart['per_seed'], key=int)
    reached = [cart['per_seed'][s] for s in seeds if cart['per_seed'][s]['reached_stop_value']]
    mcts = next(k for k in c4['eval'] if k.startswith('connect_four_mcts'))
    return rows(['run', 'result'], [
        [f'CartPole-v1 (`cartpole_dqn.py`), seeds {seeds[0]}-{seeds[-1]}',
         f'evaluation mean 475 reached in {cart["solved_seeds"]} of {len(seeds)} seeds, after '
         + ', '.join(short(s['stop_env_steps'], 0) for s in reached) + ' env steps ('
         + ', '.join(f'{s["stop_seconds"]:.0f}' for s in reached) + ' s)'],
        ['Pong duel league (`pong_duel_dqn_league.py`)',
         (f'**{pct(pong["eval"]["random"]["win"])}** of {pong["eval"]["random"]["games"]} greedy games against the '
         f'random bot after {short(pong["env_steps"], 0)} env steps ({pong["wall_seconds"]:.0f} s); against the '
         f'tracker bot {pct(pong["eval"]["pong_duel_heuristic"]["win"], 0)} won, '
         f'{pct(pong["eval"]["pong_duel_heuristic"]["draw"], 0)} drawn at the step limit')],
        ['connect-four league (`connect_four_dqn_league.py`, the graded sparring partners)',
         (f'**{pct(c4["eval"]["random"]["win"])}** of {c4["eval"]["random"]["games"]} games against the random bot '
         f'after {short(c4["env_steps"], 0)} env steps ({c4["wall_seconds"]:.0f} s), '
         f'{pct(c4["eval"]["heuristic"]["win"], 0)} against the heuristic bot, {pct(c4["eval"][mcts]["win"], 0)} '
         f'against a {mcts.split("=")[-1]}-simulation MCTS bot')]])


@table('ppo_variants')
def ppo_variants(r: Records) -> List[str]:
    names = {'pendulum_kl': 'KL-penalty PPO, Pendulum-v1', 'pendulum_five': "OpenAI Five's gradient clip, Pendulum-v1"}
    body = []
    seeds: List[str] = []
    for key, text in names.items():
        per_seed = r.get('ppo_variants', key, 'per_seed')
        seeds = sorted(per_seed, key=int)
        steps = short(statistics.median(s['env_steps'] for s in per_seed.values()), 0)
        body.append([f'{text}, eval after {steps} steps'] + [num(per_seed[s]['eval_mean']) for s in seeds])
    return rows(['variant'] + [f'seed {s}' for s in seeds], body)


@table('cue_recall')
def cue_recall(r: Records) -> List[str]:
    memory = r.get('ppo_variants', 'memory')
    body = []
    for model, text in (('lstm', 'LSTM policy'), ('mlp', 'MLP policy')):
        per_seed = memory[model]['per_seed']
        seeds = sorted(per_seed, key=int)
        body.append([text] + [f'{per_seed[s]["eval_mean"]:.2f} after {short(per_seed[s]["env_steps"], 0)}'
                              for s in seeds])
    return rows(['cue recall, success rate'] + [f'seed {s}' for s in seeds], body)


@table('atari_breakout')
def atari_breakout(r: Records) -> List[str]:
    entry = r.get('atari_breakout', 'short_budget')
    per_seed = entry['per_seed']
    seeds = sorted(per_seed, key=int)

    def score(result: dict) -> str:
        return f'{result["mean"]:.2f} ± {result["se"]:.2f}'
    return rows([''] + [f'seed {s}' for s in seeds], [
        ['greedy'] + [score(per_seed[s]['greedy']) for s in seeds],
        ['sampled'] + [score(per_seed[s]['sampled']) for s in seeds],
        ['random policy, same games', score(entry['random_policy'])] + [''] * (len(seeds) - 1)])


@table('atari_ready_config')
def atari_ready_config(r: Records) -> List[str]:
    entry = r.get('atari_breakout', 'ready_config')
    per_seed = entry['per_seed']
    seeds = sorted(per_seed, key=int)
    return rows(['the ready config, 100k frames'] + [f'seed {s}' for s in seeds], [
        ['sampled'] + [f'{per_seed[s]["sampled"]["mean"]:.2f} ± {per_seed[s]["sampled"]["se"]:.2f}' for s in seeds]])


@table('mujoco_hopper')
def mujoco_hopper(r: Records) -> List[str]:
    body = []
    seeds: List[str] = []
    for key, text in (('clip', 'clipped PPO (`hopper_ppo.py`)'), ('kl_penalty', 'KL-penalty PPO')):
        per_seed = r.get('mujoco_hopper', key, 'per_seed')
        seeds = sorted(per_seed, key=int)
        body.append([text] + [num(per_seed[s]['eval_mean']) for s in seeds])
    return rows(['objective'] + [f'seed {s}' for s in seeds], body)


@table('mujoco_recipe')
def mujoco_recipe(r: Records) -> List[str]:
    body = []
    for task in ('swimmer', 'hopper', 'halfcheetah'):
        kl, clip = r.get('mujoco_recipe', f'{task}/kl'), r.get('mujoco_recipe', f'{task}/clip')

        def result(run: dict, budget: bool) -> str:
            wall = f' ({run["wall_seconds"] / 60:.0f} min)' if budget else ''
            if run['episodes_to_threshold'] is not None:
                return (f'{num(run["episodes_to_threshold"])} / {run["best_5_episode_average"]:.0f} '
                        f'({short(run["env_steps"], 0)} steps){wall}')
            return f'not crossed / {run["best_5_episode_average"]:.0f} in {num(run["episodes"])} episodes{wall}'
        body.append([f'{kl["gym_id"]} ({kl["threshold"]})', num(kl['write_up_episodes_to_threshold']),
                     result(kl, False), result(clip, True)])
    return rows(['task (threshold)', 'write-up: episodes', 'KL recipe: episodes / best 5-episode average',
                 'clipped PPO, same network'], body)


# -- surgery and team games -------------------------------------------------------------------------------------
@table('surgery_league')
def surgery_league(r: Records) -> List[str]:
    rec = r.record('surgery_league')
    args = r.get('surgery_league', 'args')
    stages = [(f'before the surgery, after {short(args["steps_before"], 0)} env steps ({rec["train_before_seconds"]:.0f} s)',
               r.get('surgery_league', 'before')),
              ((f'right after the surgery ({rec["surgery_seconds"]:.2f} s; largest change of an action probability '
               f'{rec["surgery"]["max_prob_change"]}, of a value {rec["surgery"]["max_value_change"]})'),
               r.get('surgery_league', 'right_after')),
              (f'after {short(args["steps_after"], 0)} env steps more ({rec["train_after_seconds"]:.0f} s)',
               r.get('surgery_league', 'end'))]
    return rows(['the Pong duel player', f'vs random bot ({args["games"]} games)', 'vs heuristic bot: win / draw / loss'],
                [[text, pct(result['random']['win']), wdl(result['pong_duel_heuristic'], 1)] for text, result in stages])


@table('team_league')
def team_league(r: Records) -> List[str]:
    result = r.get('team_league', 'eval')
    steps, seconds = r.get('team_league', 'env_steps'), r.get('team_league', 'train_seconds')
    return rows([f'Team Pong 2v2, after {short(steps, 0)} env steps ({seconds:.0f} s)', 'games', 'win / draw / loss'], [
        ['against the random team', result['random']['games'], wdl(result['random'], 1)],
        ['against the heuristic team', result['team_pong_heuristic']['games'], wdl(result['team_pong_heuristic'], 1)]])


# -- V-trace -----------------------------------------------------------------------------------------------------
def _paired(runs: List[dict], arm: str, k: int) -> str:
    """Mean ± standard error over seeds of (``arm`` at staleness ``k``) - (GAE on-policy), seed by seed."""
    by = {(run['seed'], run['arm'], run['staleness']): run['eval_return'] for run in runs}
    diffs = [by[(seed, arm, k)] - by[(seed, 'gae', 0)] for seed, a, s in by if a == arm and s == k
             and (seed, 'gae', 0) in by]
    mean = statistics.mean(diffs)
    sem = statistics.stdev(diffs) / len(diffs) ** 0.5
    return f'{mean:+.0f} ± {sem:.0f}'.replace('-', '−')


@table('vtrace_staleness')
def vtrace_staleness(r: Records) -> List[str]:
    entry = r.get('vtrace_staleness', 'cartpole_unweighted_seeds_120_135')
    means, runs = entry['means'], entry['runs']
    ks = sorted({run['staleness'] for run in runs})
    body = []
    for k in ks:
        gae, vtrace = means[f'gae_k{k}'], means[f'vtrace_k{k}']
        better = vtrace['mean'] - vtrace['sem'] > gae['mean'] + gae['sem']
        vt = f'{vtrace["mean"]:.0f} ± {vtrace["sem"]:.0f}'
        body.append([f'{k} (on-policy)' if k == 0 else k, f'{gae["mean"]:.0f} ± {gae["sem"]:.0f}',
                     f'**{vt}**' if better else vt, '' if k == 0 else _paired(runs, 'gae', k),
                     _paired(runs, 'vtrace', k)])
    return rows(['staleness k', 'GAE (uncorrected)', 'V-trace', 'GAE − on-policy', 'V-trace − on-policy'], body)


@table('vtrace_earlier')
def vtrace_earlier(r: Records) -> List[str]:
    """The entries before the adopted formula: the tuning arms and the V-trace with rho on the advantages."""
    arms = dict(gae='GAE (uncorrected)', vtrace='V-trace, rho on the advantages', norho='V-trace, unweighted (adopted)',
                dec='V-trace, clipped around the update-start policy')
    body = []
    for key, text in (('cartpole_tuning_seeds_0_15', 'tuning, seeds 0-15'), ('cartpole', 'seeds 100-103'),
                      ('cartpole_seeds_104_111_k0_k8', 'seeds 104-111')):
        for arm_k, m in r.get('vtrace_staleness', key, 'means').items():
            arm, k = arm_k.rsplit('_k', 1)
            body.append([f'`{key}`: {text}', arms.get(arm, arm), k, f'{m["mean"]:.0f} ± {m["sem"]:.0f}', m['n']])
    return rows(['entry', 'arm', 'staleness k', 'return, mean ± se', 'seeds'], body)


# -- continuous battles ------------------------------------------------------------------------------------------
@table('continuous_league')
def continuous_league(r: Records) -> List[str]:
    names = [('report', 'continuous', 'continuous (Gaussian PPO, 8 epochs)'),
             ('report', 'discrete', 'discrete (`pong_duel_league.py`, 4 epochs)'),
             ('report_discrete_8_epochs', 'discrete_8_epochs', 'discrete with 8 epochs')]
    body = []
    for entry, variant, text in names:
        run = r.get('continuous_league', entry, 'variants', variant)
        over, seeds = run['over_seeds'], run['seeds'].values()
        draw = statistics.mean(s['against']['pong_duel_heuristic']['draw'] for s in seeds)
        body.append([text, f'{over["random"]["win_mean"]:.2f} ± {over["random"]["win_standard_error_over_seeds"]:.2g}',
                     (f'{over["pong_duel_heuristic"]["win_mean"]:.2f} ± '
                     f'{over["pong_duel_heuristic"]["win_standard_error_over_seeds"]:.1g} / {draw:.2f}'),
                     span([s['train_wall_seconds'] for s in seeds], 0)])
    return rows(['league', 'vs random: win', 'vs tracker: win / draw', 'training wall s'], body)


# -- Soft Actor-Critic -------------------------------------------------------------------------------------------
def _to_target(run: dict) -> str:
    if run['target_env_steps'] is None:
        return 'not reached'
    return f'{run["target_env_steps"]} / {run["target_seconds"]:.1f} / {run["target_cpu_seconds"]:.1f}'


def _sac_to_target(r: Records, entry: str, speed: bool) -> List[str]:
    pendulum = r.get('sac_vs_sb3', entry, 'pendulum')
    per_seed = pendulum['per_seed']
    body = []
    for seed in sorted(per_seed, key=int):
        ours, theirs = per_seed[seed]['sparring'], per_seed[seed]['sb3']
        row = [seed, _to_target(ours), _to_target(theirs)]
        if speed:
            row.append(f'{ours["steps_per_second"]:.1f} / {theirs["steps_per_second"]:.1f}')
        body.append(row)
    ours, theirs = pendulum['sparring'], pendulum['sb3']
    median = ['median'] + [f'{m["median_target_env_steps"]:.0f} / {m["median_target_seconds"]:.1f} / '
                           f'{m["median_target_cpu_seconds"]:.1f}' for m in (ours, theirs)]
    if speed:
        median.append(f'{ours["median_steps_per_second"]:.1f} / {theirs["median_steps_per_second"]:.1f}')
    body.append(median)
    median_ratio = [(f'**{pendulum["target_seconds_ratio"]:.2f} x** wall, {pendulum["target_cpu_seconds_ratio"]:.2f} x '
                    f'CPU (medians)'), '']
    body.append(['sparring / SB3'] + median_ratio + ([f'{pendulum["steps_per_second_ratio"]:.2f} x'] if speed else []))
    header = ['seed', 'sparring: env steps / wall s / CPU s to -200', 'SB3: env steps / wall s / CPU s to -200']
    return rows(header + (['env steps/s, sparring / SB3'] if speed else []), body)


@table('sac_pendulum_to_target')
def sac_pendulum_to_target(r: Records) -> List[str]:
    return _sac_to_target(r, 'pendulum_to_target', speed=True)


@table('sac_pendulum_to_target_quiet')
def sac_pendulum_to_target_quiet(r: Records) -> List[str]:
    return _sac_to_target(r, 'pendulum_to_target_quiet', speed=False)


@table('sac_pendulum_earlier')
def sac_pendulum_earlier(r: Records) -> List[str]:
    """The runs before the ready config was tuned, by entry."""
    names = {'pendulum_to_target_defaults': "SAC's defaults (256-256, lr 3e-4), the hand-written gradients",
             'pendulum_to_target_first_hand_gradients': 'the first hand-written gradients',
             'pendulum_to_target_before': 'autograd'}
    body = []
    for key, text in names.items():
        pendulum = r.get('sac_vs_sb3', key, 'pendulum')
        load = r.get('sac_vs_sb3', key, 'load_start')
        body.append([f'`{key}`: {text}', f'{pendulum["sparring"]["median_target_env_steps"]:.0f}',
                     f'{pendulum["target_seconds_ratio"]:.2f} x', f'{pendulum["target_cpu_seconds_ratio"]:.2f} x'
                     if pendulum.get('target_cpu_seconds_ratio') else '-', f'{load[0]:.1f}'])
    return rows(['run (entry)', 'median env steps to -200', 'wall, sparring / SB3', 'CPU, sparring / SB3',
                 'load at the start'], body)


@table('sac_tuning')
def sac_tuning(r: Records) -> List[str]:
    variants = r.get('sac_tuning', 'pendulum_tuning', 'variants')
    winner = r.get('sac_tuning', 'pendulum_tuning', 'winner')
    body = []
    for name, variant in variants.items():
        overrides = dict(o.split('=', 1) for o in variant['overrides'])
        widths = overrides['policy.model.hidden_sizes'].strip('[]').replace(',', '-')
        text = f'{widths}, lr {overrides["policy.learn.lr"]} (`{name}`)'
        seeds = sorted(variant['runs'], key=int)
        runs = [variant['runs'][s] for s in seeds]
        cpu = statistics.median(run['cpu_ms_per_env_step'] for run in runs)
        body.append([f'**{text}, the ready config**' if name == winner else text,
                     ' / '.join(str(run['target_env_steps']) for run in runs) + f' (seeds {", ".join(seeds)})',
                     ' / '.join(f'{run["final_eval"]:.0f}' for run in runs), f'{cpu:.1f}'])
    return rows(['variant (chunks of 8 env steps, one gradient step each)', 'env steps to -200', 'return at 20k',
                 'CPU ms per env step (median)'], body)


@table('sac_pendulum_20k')
def sac_pendulum_20k(r: Records) -> List[str]:
    body = []
    for key in ('pendulum_20k', 'pendulum_20k_before'):
        per_seed = r.get('sac_vs_sb3', key, 'pendulum', 'per_seed')
        seeds = sorted(per_seed, key=int)
        for library in ('sparring', 'sb3'):
            body.append([f'`{key}`', 'SB3' if library == 'sb3' else library]
                        + [f'{per_seed[s][library]["final_eval"]:.0f}' for s in seeds]
                        + [f'{statistics.median(per_seed[s][library]["final_eval"] for s in seeds):.0f}'])
    return rows(['entry', 'library'] + [f'seed {s}' for s in seeds] + ['median'], body)


@table('sac_hopper')
def sac_hopper(r: Records) -> List[str]:
    entry = r.get('sac_vs_sb3', 'hopper_100k')
    body = []
    for seed in sorted(entry['per_seed'], key=int):
        for library in ('sparring', 'sb3'):
            run = entry['per_seed'][seed][library]
            body.append([seed, 'SB3' if library == 'sb3' else library,
                         ' / '.join(f'{point[1]:.0f}' for point in run['curve']),
                         f'**{run["final_eval"]:.0f}**', num(run['curve'][-1][3])])  # (steps, return, wall, CPU)
    steps = ' / '.join(f'{p[0] // 1000}k' for p in entry['per_seed'][seed]['sparring']['curve'])
    return rows(['seed', 'library', f'evaluations at {steps}', 'return at the end', 'CPU seconds'], body)


@table('sac_hopper_pace')
def sac_hopper_pace(r: Records) -> List[str]:
    hopper = r.get('sac_vs_sb3', 'hopper_pace', 'hopper')
    return rows(['Hopper-v5 while learning', 'sparring', 'SB3', 'sparring / SB3'], [
        ['env steps/s between the last two evaluations', f'{hopper["sparring"]["median_late_steps_per_second"]:.1f}',
         f'{hopper["sb3"]["median_late_steps_per_second"]:.1f}',
         f'{hopper["sparring"]["median_late_steps_per_second"] / hopper["sb3"]["median_late_steps_per_second"]:.2f} x']])


def _eval_of(run: dict) -> dict:
    return next(iter(run['eval'].values()))


@table('sac_league_tictactoe')
def sac_league_tictactoe(r: Records) -> List[str]:
    entry = r.get('sac_league', 'tictactoe_sac_vs_dqn')
    sac, dqn_run = _eval_of(entry['sac']), _eval_of(entry['dqn'])
    return rows(['opponent', f'discrete SAC ({short(entry["sac"]["env_steps"], 0)} env steps)',
                 f'DQN ({short(entry["dqn"]["env_steps"], 0)} env steps)'],
                [[name.replace('tictactoe_mcts', 'MCTS'), wdl(sac[name]), wdl(dqn_run[name])] for name in sac])


@table('sac_league_pong')
def sac_league_pong(r: Records) -> List[str]:
    entry = r.get('sac_league', 'pong_sac_vs_ppo')
    sac, ppo = _eval_of(entry['sac']), _eval_of(entry['ppo'])
    names = dict(random='random', pong_duel_heuristic='tracker (`pong_duel_heuristic`)')
    return rows(['opponent', f'SAC ({short(entry["sac"]["env_steps"], 0)} env steps)',
                 f'PPO ({short(entry["ppo"]["env_steps"], 0)} env steps)'],
                [[names.get(name, name), wdl(sac[name], 1), wdl(ppo[name], 1)] for name in sac])


@table('sac_league_curves')
def sac_league_curves(r: Records) -> List[str]:
    entry = r.get('sac_league', 'pong_sac_vs_ppo_curves')
    per_seed = [entry['per_seed'][s] for s in sorted(entry['per_seed'], key=int)]
    summary = entry['summary']

    def column(algo: str) -> List[str]:
        runs = [seed[algo] for seed in per_seed]
        speeds = [run['env_steps_per_second'] for run in runs]
        holds = [next((p for p in run['tracker_score'] if p['score'] >= -0.1), None) for run in runs]
        steps = [p['env_steps'] for p in holds if p]
        seconds = [p['seconds'] for p in holds if p]
        steps_text = (f'{short(statistics.median(steps), 0)} on each seed' if len(set(steps)) == 1 else
                      f'{short(statistics.median(steps), 0)} ({short(min(steps), 0)}-{short(max(steps), 0)})')
        return [f'{short(statistics.median(speeds), 2)} ({short(min(speeds), 2)}-{short(max(speeds), 2)})',
                steps_text + ('' if len(steps) == len(runs) else f'; {len(steps)} of {len(runs)} seeds'),
                f'{statistics.median(seconds):.0f} s ({min(seconds):.0f}-{max(seconds):.0f})',
                f'{span([100 * w for w in summary[algo]["final_random_win"]], 0)} %; '
                + ', '.join(f'{s:.2f}' for s in summary[algo]['final_tracker_score'])]
    sac, ppo = column('sac'), column('ppo')
    labels = ['env steps/s, evaluations included (median, range)', 'env steps until it holds the tracker',
              'wall seconds until then',
              'at the end: wins against random; wins minus losses against the tracker']
    return rows(['', 'SAC', 'PPO'], [[label, a, b] for label, a, b in zip(labels, sac, ppo)])


@table('sac_opponent_age')
def sac_opponent_age(r: Records) -> List[str]:
    body = []
    for key in ('pong_sac_max_opponent_age_60000', 'pong_sac_max_opponent_age_150000'):
        entry = r.get('sac_league', key)
        for seed in sorted(entry['per_seed'], key=int):
            off, on = (entry['per_seed'][seed][k] for k in ('off', 'on'))
            body.append([short(entry['env_steps'], 0), seed, wdl(_eval_of(off)['random']), wdl(_eval_of(on)['random']),
                         wdl(_eval_of(off)['pong_duel_heuristic']), wdl(_eval_of(on)['pong_duel_heuristic']),
                         num(on['forgotten'])])
    return rows(['env steps', 'seed', 'off: random', 'on (N = 1): random', 'off: tracker', 'on (N = 1): tracker',
                 'transitions forgotten (on)'], body)


# -- parallel mode -----------------------------------------------------------------------------------------------
@table('parallel_league')
def parallel_league(r: Records) -> List[str]:
    summary = r.get('parallel_league', 'summary')
    seeds = summary['serial']['seeds']
    body = []
    for mode, text in (('serial', 'serial'), ('parallel', 'parallel (commander, 2 collectors, 1 learner, 1 evaluator)')):
        runs = [r.get('parallel_league', 'runs', f'{mode}_seed{s}') for s in seeds]
        body.append([text] + [pct(w) for w in summary[mode]['win_vs_heuristic']]
                    + [pct(summary[mode]['win_vs_heuristic_mean']),
                       num(summary[mode]['env_steps_per_second_mean']),
                       ', '.join(num(run['env_steps_per_second']) for run in runs)])
    return rows(['mode'] + [f'seed {s}' for s in seeds] + ['mean', 'env steps/s, mean', 'env steps/s by seed'], body)


@table('transport')
def transport(r: Records) -> List[str]:
    chunks = r.get('transport', 'chunks')
    names = dict(connect_four_chunk='connect four', tictactoe_chunk='tic-tac-toe')
    modes = dict(framed='sparring', **{'framed+hmac': 'signed with HMAC-SHA256', 'framed+curve': 'encrypted with CURVE',
                                       'framed+hmac+curve': 'signed and encrypted'})
    body = []
    for key, chunk in chunks.items():
        bare = chunk['modes']['bare']['chunks_per_second']
        size = chunk['bytes']
        size_text = f'{size / 1e6:.1f} MB' if size >= 1e6 else f'{size / 1e3:.0f} kB'
        for mode, text in modes.items():
            figures = chunk['modes'][mode]
            body.append([f'{names.get(key, key)} ({size_text}, {chunk["arrays"]} arrays)', text,
                         num(figures['chunks_per_second']), num(figures['mb_per_second']),
                         pct(figures['chunks_per_second'] / bare, 0)])
    return rows(['chunk', 'sparring transport', 'chunks/s', 'MB/s', 'of bare pyzmq PUSH/PULL'], body)


def _soak_killed(entry: dict) -> str:
    killed = entry.get('commander_killed')
    if not isinstance(killed, dict):
        return '-'
    return (f'resumed in {killed["resumed_seconds"]:.1f} s; {num(killed["games_recorded"])} games, '
            f'{num(killed["games_lost"])} lost, {num(killed["games_doubled"])} doubled')


def _kills(entry: dict) -> str:
    kills = entry.get('kills', entry.get('restarts'))
    return num(sum(kills.values())) if isinstance(kills, dict) else num(kills)


@table('soak')
def soak(r: Records) -> List[str]:
    body = []
    for key, entry in r.record('soak').items():
        if key.startswith('_'):
            continue

        def rss(role: str, entry: dict = entry) -> str:
            idle, peak = entry.get(f'{role}_rss_idle_mb'), entry.get(f'{role}_rss_peak_mb')
            return '-' if idle is None else f'{idle:.0f} -> {peak:.0f}'
        hostile = (f'{num(entry["hostile_sent"])} / {entry["hostile_accepted"]}' if 'hostile_sent' in entry else '-')
        kinds = ', '.join(filter(None, ['LSTM' if entry.get('recurrent') else '',
                                        f'{entry["inference_workers"]} forward-pass' if entry.get('inference_workers')
                                        else '']))
        body.append([f'`{key}`' + (f' ({kinds})' if kinds else ''), f'{entry["seconds"]:.0f} s',
                     f'{entry["kill_every"]:.0f} s', f'{entry["flooders"]} ({entry["flood_mb"]:.0f} MB)',
                     f'{num(entry["games_recorded"])} / {entry["games_lost"]} / {entry["games_doubled"]}',
                     _kills(entry),
                     f'{entry["longest_collection_stall_seconds"]:.1f} s', rss('commander'), rss('learner'),
                     f'{entry["probe_p50_ms"]:.1f} / {entry["probe_p95_ms"]:.1f} ms', hostile, _soak_killed(entry),
                     span(entry['load_average'] if isinstance(entry['load_average'], list) else
                          [entry['load_average']])])
    return rows(['entry', 'length', 'a worker killed every', 'flooding connections', 'games recorded / lost / doubled',
                 'kills', 'longest stand-still of collection', 'commander RSS idle -> peak, MB',
                 'learner RSS idle -> peak, MB', 'probe p50 / p95', 'signed lies sent / accepted',
                 "after the commander's kill", 'load'], body)


def _mb(x: float) -> str:
    return f'{x / 1e6:.2f} MB' if x < 1e5 else f'{x / 1e6:.1f} MB' if x < 1e8 else f'{x / 1e6:.0f} MB'


def _latency(ms: float) -> str:
    return f'{ms:.1f} ms' if ms < 10 else f'{ms:.0f} ms'


@table('long_run_resume')
def long_run_resume(r: Records) -> List[str]:
    body = []
    for point in r.get('long_run', 'resume'):
        body.append([num(point['env_steps']), _mb(point['journal_bytes']), _mb(point['journal_bytes_written']),
                     _mb(point['journal_bytes_read_at_resume']), _mb(point['snapshot_bytes']),
                     f'{point["resume_seconds"]:.2f} s',
                     (f'{point["resume_peak_rss_mb"]:.0f} MB ({point["rss_before_mb"]:.0f} MB; '
                     f'{point["rss_held_by_resume_mb"]:.0f} MB held by the resumed state)')])
    x = r.get('long_run', 'resume_at_1e9_extrapolated')
    body.append(['1e9, extrapolated', f'at most {_mb(x["journal_bytes"])}', _mb(x['journal_bytes_written']),
                 f'at most {_mb(x["journal_bytes_read_at_resume"])}', _mb(x['snapshot_bytes']),
                 f'{x["resume_seconds"]:.1f} s', f'{x["resume_peak_rss_mb"]:.0f} MB'])
    return rows(['env steps', 'journal on the disk', 'written in all', 'read at resume', 'snapshot', 'resume',
                 'resume peak RSS (imports alone)'], body)


@table('long_run_capacity')
def long_run_capacity(r: Records) -> List[str]:
    return rows(['collectors', 'chunk reports/s', 'requests/s', 'reply p50', 'reply p99', 'commander CPU'], [
        [num(c['collectors']), num(c['chunk_reports_per_second']), num(c['requests_per_second']),
         _latency(c['reply_p50_ms']), _latency(c['reply_p99_ms']), f'{c["commander_cpu_share"]:.2f} cores']
        for c in r.get('long_run', 'capacity')])


@table('scale')
def scale(r: Records) -> List[str]:
    body = []
    for key, entry in r.record('scale').items():
        if key.startswith('_'):
            continue
        groups: Dict[tuple, Dict[str, List[dict]]] = {}
        for row in entry['rows']:
            groups.setdefault((row['collectors'], row['replicas']), {}).setdefault(row['launcher'], []).append(row)
        for (collectors, replicas), by_launcher in sorted(groups.items()):
            local, ray = by_launcher.get('local', []), by_launcher.get('ray', [])

            def median(runs: List[dict], figure: str) -> str:
                return short(statistics.median(run[figure] for run in runs)) if runs else '-'
            ratio = entry['ray_over_local_env_steps'].get(f'c{collectors}_r{replicas}')
            body.append([f'`{key}`', collectors, replicas, median(local, 'env_steps_per_second'),
                         median(ray, 'env_steps_per_second'), '-' if ratio is None else f'{ratio:.2f} x',
                         median(local, 'learner_samples_per_second'), len(local)])
    return rows(['entry', 'collectors', 'learner replicas', 'env steps/s, local', 'env steps/s, Ray', 'Ray / local',
                 'learner samples/s, local', 'repeats'], body)


FORWARD_CONFIGS = {'local_2_collectors': '2 local collectors',
                   'inference_1_collector_1_worker_single_buffer': '1 collector + 1 forward-pass worker, single-buffered',
                   'inference_1_collector_1_worker': '1 collector + 1 forward-pass worker, double-buffered',
                   'inference_2_collectors_1_worker_single_buffer': '2 collectors + 1 worker, single-buffered',
                   'inference_2_collectors_1_worker': '2 collectors + 1 worker, double-buffered'}


@table('forward_pass_league')
def forward_pass_league(r: Records) -> List[str]:
    entries = {'league_loaded_before_quiet_runs': 'loaded (load about 5)',
               'league_quiet_run_1': 'quiet (load 0.15 before)', 'league': 'after the thread fix (load 1.5-3)'}
    body = []
    for config, text in FORWARD_CONFIGS.items():
        row: List[object] = [text]
        for key in entries:
            run = r.get('forward_pass', key, config)
            row.append(f'{num(run["env_steps_per_second"])} ({run["throughput_vs_local"]:.2f} x); '
                       f'{num(run["env_steps_per_collector_second"])}')
        body.append(row)
    return rows(['configuration'] + [f'`{key}`: {text}' for key, text in entries.items()], body)


@table('forward_pass_rows')
def forward_pass_rows(r: Records) -> List[str]:
    before = r.get('forward_pass', 'rows_by_batch_size_loaded_before_fix')
    after = [r.get('forward_pass', key) for key in ('rows_by_batch_size_loaded',
                                                     'rows_by_batch_size_loaded_after_fix_repeat')]

    def ms(figures: dict, rows_: str) -> str:
        return f'{figures[rows_]["p50_ms"]:.2f}'
    body = []
    for n in ('1', '4', '16', '64'):
        body.append([n, f'{ms(before["server_in_thread"], n)} ms',
                     ' / '.join(ms(a['server_in_thread'], n) for a in after) + ' ms',
                     f'{ms(before["server_in_process"], n)} ms',
                     ' / '.join(ms(a['server_in_process'], n) for a in after) + ' ms',
                     ' / '.join(ms(a['in_process'], n) for a in [before] + after) + ' ms'])
    return rows(['rows', 'thread, before', 'thread, after (two runs)', 'process, before', 'process, after (two runs)',
                 'in process (the three runs)'], body)


@table('forward_pass_double_buffer')
def forward_pass_double_buffer(r: Records) -> List[str]:
    runs = r.get('forward_pass', 'league_double_buffer_before_after', 'runs')
    return rows(['run', 'side', '2 local collectors, env steps/s', '1 double-buffered collector + 1 worker',
                 'of local'], [
        [i + 1, run['side'], num(run['local_2_collectors']['env_steps_per_second']),
         num(run['inference_1_collector_1_worker']['env_steps_per_second']),
         f'{run["inference_1_collector_1_worker"]["throughput_vs_local"]:.2f}'] for i, run in enumerate(runs)])


# -- league operations, GPU, DI-engine ----------------------------------------------------------------------------
@table('league_ops')
def league_ops(r: Records) -> List[str]:
    finish, get = r.get('league_ops', 'finish_job_per_second'), r.get('league_ops', 'get_job_info_per_second')
    body = [['`finish_job`, 1 game', f'{short(finish["episodes_1"]["median"])} calls/s',
             short(finish['episodes_1']['best'])],
            ['`finish_job`, 8 games a call', f'{short(finish["episodes_8"]["median"])} calls/s',
             f'{short(finish["episodes_8"]["best"])} ({short(finish["episodes_8"]["games_per_second_best"])} games/s)'],
            ['`finish_job` with TrueSkill on', f'{short(finish["episodes_1_with_trueskill"]["median"])} calls/s',
             short(finish['episodes_1_with_trueskill']['best'])]]
    for role, figures in get.items():
        body.append([f'`get_job_info`, {role.replace("_", " ")}', f'{short(figures["median"])} calls/s',
                     short(figures['best'])])
    return rows(['operation', 'median', 'best'], body)


@table('league_ops_size')
def league_ops_size(r: Records) -> List[str]:
    league, memory, saved = (r.get('league_ops', k) for k in ('league', 'memory', 'persistence'))
    return rows(['league', 'payoff pairs', 'built in', 'payoff arrays', 'save / load', 'file'], [
        [f'{league["type"]}, {league["active"]} active and {num(league["historical"])} historical players',
         num(league['payoff_pairs']), f'{league["build_seconds"]:.1f} s', f'{memory["payoff_arrays_kb"]:.0f} kB',
         f'{saved["save_seconds"]:.2f} / {saved["load_seconds"]:.2f} s', f'{saved["file_kb"]:.0f} kB']])


@table('gpu_ppo_update')
def gpu_ppo_update(r: Records) -> List[str]:
    update = r.get('gpu_check_h200_graphed', 'ppo_update')
    variants = [('cpu:ready:threads16', 'CPU, 16 threads'), ('cpu:ready:threads1', 'CPU, 1 thread'),
                ('cuda:one_by_one', 'CUDA, steps one by one (`cuda_graph=False`, the path before)'),
                ('cuda:fused_adam', "CUDA, one by one with torch's fused Adam"),
                ('cuda:ready', '**CUDA, the policy as configured: its step replayed as a graph**'),
                ('cuda:bfloat16', 'the same with the bfloat16 trunk'),
                ('cuda:minibatches_2', 'the same with 2 minibatches an epoch (another update)'),
                ('cuda:minibatches_1', 'the same with 1 minibatch an epoch (another update)'),
                ('cuda:one_by_one_minibatches_1', 'one by one with 1 minibatch an epoch')]
    body = []
    for variant, text in variants:
        row: List[object] = [text]
        for size in ('ready_config_4096', 'large_16384'):
            figures = update[f'{size}:{variant}']
            base = update[f'{size}:cpu:ready:threads16']['samples_per_second']
            ratio = figures['samples_per_second'] / base
            bold = text.startswith('**')
            cell, times = f'{sig3(figures["samples_per_second"])} samples/s', (f'{ratio:.2f}' if ratio < 1 else f'{ratio:.1f}')
            row += [f'**{cell}**' if bold else cell, f'**{times}**' if bold else times]
        body.append(row)
    return rows(['', 'ready config: 8 minibatches of 512', 'x CPU', '8 minibatches of 2,048', 'x CPU'], body)


@table('gpu_serial')
def gpu_serial(r: Records) -> List[str]:
    serial = r.get('gpu_check_h200_serial', 'serial')
    names = dict(ppo_league='the PPO league (connect four)', dqn_league='the DQN league',
                 expert_iteration='expert iteration')
    return rows(['serial run, 20 s', 'CUDA, env steps/s', 'CPU, env steps/s', 'CUDA / CPU'], [
        [text, num(serial[f'{key}:cuda']['env_steps_per_second']), num(serial[f'{key}:cpu']['env_steps_per_second']),
         f'{serial[f"{key}:cuda"]["env_steps_per_second"] / serial[f"{key}:cpu"]["env_steps_per_second"]:.2f} x']
        for key, text in names.items()])


@table('gpu_also')
def gpu_also(r: Records) -> List[str]:
    sac, rows_, search = (r.get('gpu_check_h200_variants', k) for k in ('sac_update', 'forward_rows', 'search_selfplay'))
    compiled = r.get('gpu_check_h200_variants', 'ppo_update_compiled')
    in_process, socket_rows = rows_['in_process'], rows_['over_socket']['rows']
    sizes = ('1', '64', '1024', '4096')
    return rows(['also measured (the run before)', 'CUDA', 'CPU, 16 threads', 'CPU, 1 thread'], [
        ["SAC, gradient steps/s of batch 256: 128-128 networks (Pendulum's)",
         num(sac['pendulum_128:cuda']['gradient_steps_per_second']),
         num(sac['pendulum_128:cpu:threads16']['gradient_steps_per_second']),
         num(sac['pendulum_128:cpu:threads1']['gradient_steps_per_second'])],
        ["the same, 256-256 networks at Hopper's shapes", num(sac['hopper_256:cuda']['gradient_steps_per_second']),
         num(sac['hopper_256:cpu:threads16']['gradient_steps_per_second']),
         num(sac['hopper_256:cpu:threads1']['gradient_steps_per_second'])],
        [f"forward pass of the league's CNN in process, rows/s at {' / '.join(sizes)} rows",
         ' / '.join(sig3(in_process['cuda'][n]) for n in sizes), '',
         ' / '.join(sig3(in_process['cpu'][n]) for n in sizes)],
        ['the same through a forward-pass server (network on CUDA), round trip at 1 / 256 / 4,096 rows',
         ' / '.join(f'{socket_rows[n]["round_trip_ms"]:.1f}' for n in ('1', '256', '4096')) + ' ms', '', ''],
        ['search self-play, `connect_four_search_openings` as a serial run (learning included), env steps/s',
         num(search['cuda']['env_steps_per_second']), num(search['cpu']['env_steps_per_second']), ''],
        ['`torch.compile` of the network, PPO update: default / `reduce-overhead` mode, x CPU',
         (f'{compiled["ready_config_4096:cuda:compile"]["vs_cpu_all_threads"]:.2f} / '
         f'{compiled["ready_config_4096:cuda:compile_reduce_overhead"]["vs_cpu_all_threads"]:.2f}'), '1', '']])


@table('dizoo_peer_demo')
def dizoo_peer_demo(r: Records) -> List[str]:
    demo = r.get('dizoo_peer', 'demo')
    names = [('ding_demo', 'DI-engine demo'), ('sparring_demo_roles', "sparring, the demo's roster"),
             ('sparring_ready', 'sparring, ready league')]

    def speeds(key: str) -> str:
        values = [run['env_steps_per_second'] for run in demo['runs'][key]]
        return f'{num(demo["table"][key]["env_steps_per_second"])} ({num(min(values))}-{num(max(values))})'

    def within(key: str) -> str:
        t = demo['table'][key]
        reached, seeds = t['reached_within'].split('/')
        text = f'{reached} of {seeds}'
        if t['median_env_steps_to_within'] is not None:
            text += f', first at {short(t["median_env_steps_to_within"], 0)} env steps ({t["median_seconds_to_within"]} s)'
        return text

    def meta(key: str) -> str:
        finals = [run.get('final_meta') for run in demo['runs'][key]]
        if not all(finals):
            return 'not computed'
        return f'{statistics.median(f["exploitability"] for f in finals):.3f}'
    table_ = demo['table']
    return rows([''] + [text for _, text in names], [
        ['env steps/s'] + [speeds(key) for key, _ in names],
        ['main player, seat 0: largest distance from (3/8, 5/8)']
        + [f'{table_[key]["seat_0_distance_last_fifth"]:.2f}' for key, _ in names],
        ['main player, exploitability over both seats']
        + [f'{table_[key]["exploitability_last_fifth"]:.2f}' for key, _ in names],
        ['main player within 0.05 of the equilibrium in seat 0, ever'] + [within(key) for key, _ in names],
        ["the population's Nash mixture at the end: exploitability"] + [meta(key) for key, _ in names]])


@table('dizoo_peer_bookkeeping')
def dizoo_peer_bookkeeping(r: Records) -> List[str]:
    b = r.get('dizoo_peer', 'bookkeeping')
    ding = b['ding']
    pairs = [('`finish_job`, one game, the payoff alone', ding['finish_job_1_game_per_second'],
              b['sparring_finish_job_1_game_payoff_only_per_second']),
             ('`finish_job`, eight games, the payoff alone', ding['finish_job_8_games_per_second'],
              b['sparring_finish_job_8_games_payoff_only_per_second']),
             ('`finish_job`, one game, with TrueSkill (sparring: and Elo)', ding['finish_job_1_game_trueskill_per_second'],
              b['sparring_finish_job_1_game_payoff_elo_trueskill_per_second']),
             ('`get_job_info` for the main player (PFSP and self-play over the snapshots)',
              ding['get_job_info_main_player_per_second'], b['sparring_get_job_info_main_player_per_second'])]
    return rows(['', f'DI-engine {b["ding_version"]}', 'sparring', 'ratio'], [
        [text, sig3(theirs), sig3(ours), f'{ours / theirs:.1f}'] for text, theirs, ours in pairs])


# -- the page's top: at a glance, and the scripts -----------------------------------------------------------------
def _error(entry: dict, part: str = 'network') -> float:
    return (entry.get(part) or entry['alone'])['groups']['all']['error_rate']


@table('at_a_glance')
def at_a_glance(r: Records) -> List[str]:
    fresh30 = [value for key, value in r.record('cartpole_vs_sb3').items() if not key.startswith('_')]

    def cart_ratios(figure: str) -> str:
        return ' / '.join(f'{entry["ratios"][figure]["ratio"]:.2f}' for entry in fresh30) + ' x'
    cart_sets = ' / '.join(f'{entry["seeds"][0]}-{entry["seeds"][-1]}' for entry in fresh30)
    c4 = {label: r.get('connect_four_strength', label, 'final')
          for label in ('search_random25_60min', 'search_ready_seed1_60min', 'threads2_60min')}
    kuhn, leduc = r.get('strength', 'kuhn', 'result', 'final'), r.get('strength', 'leduc', 'result', 'final')
    soak_ = r.get('soak', '600s')
    sac_quiet, sac_20k = r.get('sac_vs_sb3', 'pendulum_to_target_quiet', 'pendulum'), r.get('sac_vs_sb3', 'pendulum_20k')
    hopper = r.get('sac_vs_sb3', 'hopper_100k', 'per_seed')
    pace = r.get('sac_vs_sb3', 'hopper_pace', 'hopper')
    vtrace = r.get('vtrace_staleness', 'cartpole_unweighted_seeds_120_135', 'means')
    cont = r.get('continuous_league', 'report', 'variants', 'continuous')
    perfect = r.record('perfect_play')
    levers = {seed: r.get('perfect_levers', f'seed2/{prefix}search_openings_0_30_minibatches32_tactics8_1638k')
              for seed, prefix in (('0', ''), ('100', 'seed100_'))}
    resume, capacity = r.get('long_run', 'resume'), r.get('long_run', 'capacity')
    x = r.get('long_run', 'resume_at_1e9_extrapolated')
    ops = r.get('league_ops', 'finish_job_per_second', 'episodes_1')
    pend_20k = sac_20k['pendulum']['per_seed']
    median_20k = {lib: statistics.median(s[lib]['final_eval'] for s in pend_20k.values()) for lib in ('sparring', 'sb3')}
    hopper_median = {lib: statistics.median(s[lib]['final_eval'] for s in hopper.values()) for lib in ('sparring', 'sb3')}
    draws = statistics.mean(s['against']['pong_duel_heuristic']['draw'] for s in cont['seeds'].values())
    reports = [c['chunk_reports_per_second'] for c in capacity]
    body = [
        [f'PPO, CartPole-v1 to an evaluation return of 475, {len(fresh30)} sets of 30 fresh seeds against SB3',
         (f"seeds {cart_sets}: sparring's CPU time {cart_ratios('cpu_seconds')} SB3's, its wall time "
          f"{cart_ratios('wall_seconds')}, its env steps to the target {cart_ratios('env_steps')}; a training step "
          f"costs {cart_ratios('train_cpu_ms_per_env_step')} SB3's CPU"),
         '[CartPole and SB3](#ppo-on-cartpole-and-pendulum-and-stable-baselines3-side-by-side)'],
        ['connect four, expert iteration, one hour',
         (f'{pct(c4["search_random25_60min"]["mcts_100"]["win"])} / {pct(c4["search_ready_seed1_60min"]["mcts_100"]["win"])} '
         f'(two seeds) against MCTS-100, {pct(c4["search_random25_60min"]["mcts_1000"]["win"])} / '
         f'{pct(c4["search_ready_seed1_60min"]["mcts_1000"]["win"])} against MCTS-1000'), '[expert iteration](#expert-iteration)'],
        ['connect four, PPO league, one hour', (f'{pct(c4["threads2_60min"]["mcts_100"]["win"])} against MCTS-100, '
         f'{pct(c4["threads2_60min"]["mcts_1000"]["win"])} against MCTS-1000'), '[PPO league](#the-ppo-league)'],
        [f'Kuhn poker, MMD, {kuhn["seconds"] / 60:.0f} minutes', (f'exploitability {kuhn["meta_exploitability"]:.4f} '
         f'(meta-strategy), {kuhn["player_exploitability"]:.4f} (network)'),
         '[poker](#poker-magnetic-mirror-descent-against-psro)'],
        [f'Leduc poker, MMD, {leduc["seconds"] / 60:.0f} minutes', (f'exploitability {leduc["meta_exploitability"]:.3f} '
         f'(meta-strategy), {leduc["player_exploitability"]:.3f} (network)'),
         '[poker](#poker-magnetic-mirror-descent-against-psro)'],
        [f'parallel mode under abuse, {soak_["seconds"] / 60:.0f} minutes',
         (f'{soak_["games_lost"]} lost, {soak_["games_doubled"]} doubled over {_kills(soak_)} worker kills, multi-frame '
         f'floods at the commander and a learner with RSS flat ({soak_["commander_rss_idle_mb"]:.0f} -> '
         f'{soak_["commander_rss_peak_mb"]:.0f} MB, {soak_["learner_rss_idle_mb"]:.0f} -> '
         f'{soak_["learner_rss_peak_mb"]:.0f} MB), probe p95 {soak_["probe_p95_ms"]:.0f} ms, longest stall '
         f'{soak_["longest_collection_stall_seconds"]:.1f} s'), '[soak](#soak-kills-and-a-forged-message-flood)'],
        ["SAC against SB3's SAC, Pendulum-v1 to -200 (seeds 100-102)",
         (f'the same env steps (median {sac_quiet["sparring"]["median_target_env_steps"]:,.0f}) in '
         f"{sac_quiet['target_seconds_ratio']:.2f} x SB3's wall time and {sac_quiet['target_cpu_seconds_ratio']:.2f} x "
         f'its CPU time (aim: at most 0.5 x); return at 20k steps {median_20k["sparring"]:.0f} against '
         f'{median_20k["sb3"]:.0f} (medians); Hopper-v5 while learning '
         f'{pace["sparring"]["median_late_steps_per_second"] / pace["sb3"]["median_late_steps_per_second"]:.2f} x its '
         f'env steps/s, return at 100k steps (medians of 3 seeds) {hopper_median["sparring"]:.0f} against '
         f'{hopper_median["sb3"]:.0f}'), '[SAC](#soft-actor-critic-sac_vs_sb3py-sac_tuningpy-sac_leaguepy)'],
        ['PPO from stale chunks, CartPole-v1 (fresh seeds 120-135)',
         (f'chunks 8 versions old: return {vtrace["vtrace_k8"]["mean"]:.0f} ± {vtrace["vtrace_k8"]["sem"]:.0f} with '
         f'V-trace, {vtrace["gae_k8"]["mean"]:.0f} ± {vtrace["gae_k8"]["sem"]:.0f} without, '
         f'{vtrace["gae_k0"]["mean"]:.0f} ± {vtrace["gae_k0"]["sem"]:.0f} on-policy; 16 versions old: '
         f'{vtrace["vtrace_k16"]["mean"]:.0f} against {vtrace["gae_k16"]["mean"]:.0f}'),
         '[V-trace](#stale-chunks-v-trace-vtrace_stalenesspy)'],
        [f'continuous Pong duel league, {short(98304, 0)} env steps',
         (f'{cont["over_seeds"]["random"]["win_mean"]:.2f} against random, '
         f'{cont["over_seeds"]["pong_duel_heuristic"]["win_mean"]:.2f} wins / {draws:.2f} draws against the tracker'),
         '[continuous battles](#continuous-battles-continuous_leaguepy)'],
        [f'connect four against perfect play ({num(perfect["bot:random"]["positions"])} labelled positions)',
         f'MCTS-1000 errs on {pct(_error(perfect["bot:connect_four_mcts?num_simulations=1000"]))}, MCTS-100 on '
         f'{pct(_error(perfect["bot:connect_four_mcts?num_simulations=100"]))}, the demo network (400k env steps) on '
         f'{pct(_error(perfect["connect_four_demo_400k_steps"]), 0)} '
         f'({pct(_error(perfect["connect_four_demo_400k_steps"], "search_100"), 0)} with its search); expert '
         f'iteration with random openings and the tactics weighed up (the ready config) after an hour, seeds 0 and 100: '
         + ' and '.join(pct(_error(levers[s])) for s in ('0', '100')) + ' alone, '
         + ' and '.join(pct(_error(levers[s], 'search_100')) for s in ('0', '100')) + ' with its search of 100',
         '[perfect play](perfect-play-levers.md#an-hour-with-the-tactics-weighed-up-the-ready-config)'],
        [f'league bookkeeping, {num(r.get("league_ops", "league", "historical"))} snapshots',
         f'{short(ops["median"])} `finish_job` calls/s (median)', '[league operations](#league-operations)'],
        ['resuming a parallel run of 1e6 / 1e7 / 1e8 env steps',
         ' / '.join(f'{p["resume_seconds"]:.2f}' for p in resume) + ' s, peak RSS '
         + ' / '.join(f'{p["resume_peak_rss_mb"]:.0f}' for p in resume) + f' MB; 1e9 extrapolated at most '
         f'{x["resume_seconds"]:.1f} s, {x["resume_peak_rss_mb"]:.0f} MB; one commander serves about '
         f'{min(reports):,.0f}-{max(reports):,.0f} chunk reports/s',
         '[long runs](#long-runs-and-the-commanders-capacity-long_runpy)'],
    ]
    return rows(['result', 'figure', 'section'], body)


def _scripts() -> Dict[str, str]:
    """``{script: the first sentence of its docstring}`` of every program in ``benchmarks/`` (a file run as one)."""
    import ast
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, 'benchmarks', '*.py'))):
        with open(path) as f:
            tree = ast.parse(f.read())
        if any(isinstance(node, ast.If) and '__main__' in ast.unparse(node.test) for node in tree.body):
            doc = (ast.get_docstring(tree) or '').split('\n\n')[0].replace('\n', ' ')
            out[os.path.basename(path)] = doc
    return out


def _writers(r: Records) -> Dict[str, List[str]]:
    """``{script: the records its stamped commands wrote}``, from every entry's stamp (and a record named like its
    script)."""
    import re
    out: Dict[str, List[str]] = {}
    for name in r.names():
        scripts = {m for stamp in r.record(name).get('_stamps', {}).values()
                   for m in re.findall(r'([a-z_0-9]+)\.py', str(stamp.get('command', '')))}
        scripts |= {name}
        for script in scripts:
            out.setdefault(f'{script}.py', [])
            if name not in out[f'{script}.py']:
                out[f'{script}.py'].append(name)
    return out


@table('scripts')
def scripts(r: Records) -> List[str]:
    writers = _writers(r)
    return rows(['script', 'measures', 'records'], [
        [f'`{script}`', doc.replace('``', '`').replace('|', '&#124;'), ', '.join(f'`{name}.json`' for name in writers.get(script, []))]
        for script, doc in _scripts().items()])


@table('journal_sync')
def journal_sync(r: Records) -> List[str]:
    entry = r.get('journal_sync', 'commits')
    names = {'flush only': 'flushed only (not durable)', 'sync every 1': 'synced after every commit'}
    return rows(['journal commits', 'commits per second'], [
        [names.get(mode['mode'], mode['mode'].replace('sync every', 'synced once per') + ' commits'),
         num(mode['commits_per_second'])] for mode in entry['modes']])



@table('pursuit_roles')
def pursuit_roles(r: Records) -> List[str]:
    body = []
    for key in r.record('pursuit_roles'):
        if key.startswith('_') or key == 'scripted_baseline':
            continue
        entry = r.get('pursuit_roles', key)
        curves, exploiters = entry['curves'], entry['exploiters']
        for role, bot in (('pursuer', '`pursuit_flee`'), ('evader', '`pursuit_chase`')):
            curve = curves[role]
            exploiter = exploiters[role]
            body.append([f'`{key}`', role, f'{short(entry["env_steps"], 0)} ({entry["train_wall_seconds"]:.0f} s)',
                         f'{curve[0]["win"]:.2f} -> {curve[-1]["win"]:.2f} against {bot}',
                         f'{pct(exploiter["initial"]["win"], 0)} / {pct(exploiter["final"]["win"], 0)}'])
    base = r.get('pursuit_roles', 'scripted_baseline')
    for role in ('pursuer', 'evader'):  # for scale: the role's own scripted bot in its place
        text = f'{base[f"{role}_bot_win"]:.2f}: `{base[f"{role}_bot"]}` itself, {base["games"]} games'
        body.append(['`scripted_baseline`', role, '-', text, '-'])
    return rows(['entry', 'role', 'env steps (training seconds)', ("win rate against the other role's bot, "
                 'start -> end'), "a fresh exploiter's wins against the initial / final player"], body)


@table('target_chase')
def target_chase(r: Records) -> List[str]:
    return _chase_table(r, 'target_chase', 'two opponents', 'ahead of one', '`target_chase_greedy` itself')


@table('target_chase_teams')
def target_chase_teams(r: Records) -> List[str]:
    return _chase_table(r, 'target_chase_teams', 'two rival teams', "team ahead of a rival's",
                        'a team of `target_chase_greedy`')


def _chase_table(r: Records, record: str, rivals: str, ahead: str, scripted: str) -> List[str]:
    """Each seed's player (its team) against the scripted and the random bots, first and ahead, start -> end; the
    scripted bot (its team) against random ones for scale."""
    body = []
    for key in r.record(record):
        if key.startswith('_') or key == 'scripted_baseline':
            continue
        entry = r.get(record, key)
        for bot in ('target_chase_greedy', 'random'):
            start, end = entry['initial'][bot], entry['final'][bot]
            body.append([f'`{key}`', f'`{bot}`', f'{short(entry["env_steps"], 0)} ({entry["train_wall_seconds"]:.0f} s)',
                         f'{pct(start["first"], 0)} -> {pct(end["first"], 0)}',
                         f'{pct(start["ahead"], 0)} -> {pct(end["ahead"], 0)}'])
    base = r.get(record, 'scripted_baseline')  # for scale: the scripted bot in the player's seats
    body.append(['`scripted_baseline`', '`random`', '-', f'{pct(base["first"], 0)}: {scripted}', f'{pct(base["ahead"], 0)}'])
    return rows(['entry', rivals, 'env steps (training seconds)', 'first, start -> end', f'{ahead}, start -> end'],
                body)


@table('sheriff_roles')
def sheriff_roles(r: Records) -> List[str]:
    """The sheriff league per seed (the live pair and the recent average) and OpenSpiel's solver in the same time."""
    def wins(curve, role: str, opponent: str) -> str:
        return f'{curve[0]["win"][role][opponent]:.2f} -> {curve[-1]["win"][role][opponent]:.2f}'
    body = []
    for key in r.record('sheriff_roles'):
        if key.startswith('_') or key.startswith('solver'):
            continue
        league = r.get('sheriff_roles', key, 'league')
        curve = league['curve']
        when = f'{short(league["env_steps"])} env steps, {league["seconds"]:.0f} s'
        body.append([f'`{key}`', 'league: the live pair', when,
                     (f'{league["initial_nash_conv"]:.2f} -> {league["final_nash_conv"]:.2f} '
                      f'(best {league["best_nash_conv"]:.2f})'),
                     ' / '.join(f'{curve[0]["gains"][other]:.2f} -> {curve[-1]["gains"][other]:.2f}'
                                for other in ('sheriff', 'smuggler')),
                     f'{wins(curve, "smuggler", "sheriff_inspector")} / {wins(curve, "smuggler", "random_sheriff")}',
                     f'{wins(curve, "sheriff", "sheriff_smuggler")} / {wins(curve, "sheriff", "random_smuggler")}'])
        body.append([f'`{key}`', "league: each role's recent average", when,
                     (f'{league["initial_nash_conv"]:.2f} -> {league["final_average_nash_conv"]:.2f} '
                      f'(best {league["best_average_nash_conv"]:.2f})'), '', '', ''])
    for key in r.record('sheriff_roles'):
        if key.startswith('solver'):
            solver = r.get('sheriff_roles', key)
            first = solver['curve'][0]['nash_conv']
            body.append([f'`{key}`', f'OpenSpiel {solver["solver"].replace("_plus", "+").upper()}',
                         f'{num(solver["iterations"])} iterations, {solver["seconds"]:.0f} s',
                         f'{first:.2f} -> {solver["final_nash_conv"]:.1e}', '', '', ''])
    return rows(['entry', 'player', 'spent', 'NashConv: start -> end',
                 "the smuggler's / the sheriff's exploitability (the other role's best-response gain), start -> end",
                 'smuggler wins against `sheriff_inspector` / the random sheriff, start -> end',
                 'sheriff wins against `sheriff_smuggler` / the random smuggler, start -> end'], body)


@table('sheriff_roles_exploit')
def sheriff_roles_exploit(r: Records) -> List[str]:
    """Fresh exploiters of the other role against each sheriff role's initial and final player, judged exactly."""
    body = []
    for key in r.record('sheriff_roles'):
        if key.startswith('_') or key.startswith('solver') or 'exploiters' not in r.get('sheriff_roles', key):
            continue
        entry = r.get('sheriff_roles', key)
        for role, figures in entry['exploiters'].items():
            start, end = figures['initial'], figures['final']
            body.append([f'`{key}`', role, short(entry['exploit_steps'], 0),
                         f'{start["exact_return"]:+.2f} -> {end["exact_return"]:+.2f}',
                         f'{start["best_response"]:+.2f} -> {end["best_response"]:+.2f}',
                         f'{start["win"]:.2f} -> {end["win"]:.2f}'])
    return rows(['entry', 'player', "exploiter's env steps",
                 "exploiter's exact return: against the initial -> the final player",
                 "a best response's (exact)", "exploiter's win rate (sampled games)"], body)


# -- connect four against perfect play (the levers page) ----------------------------------------------------------
PERFECT_GROUPS = ('end-easy', 'middle-easy', 'begin-easy', 'middle-medium', 'begin-medium', 'begin-hard', 'all')
MCTS = ('bot:connect_four_mcts?num_simulations=100', 'bot:connect_four_mcts?num_simulations=1000')


def _perfect_groups(r: Records, key, part: str) -> dict:
    """The error figures by group of a scored player: ``key`` an entry of ``perfect_levers.json``, or a
    ``(record, entry)`` pair."""
    record, entry = key if isinstance(key, tuple) else ('perfect_levers', key)
    return r.get(record, entry, part, 'groups')


def _perfect_table(r: Records, spec: List[tuple]) -> List[str]:
    """Error rates by group of scored players: ``spec`` rows of (text, env steps, entry, part, the ``vs_mcts/``
    entry of its wins from the empty board or None); the wins column only where some row has them."""
    sizes = _perfect_groups(r, spec[0][2], spec[0][3])
    with_wins = any(row[4] for row in spec)
    body = []
    for text, steps, key, part, vs_mcts in spec:
        groups = _perfect_groups(r, key, part)
        row = [text, steps] + [f'{100 * groups[g]["error_rate"]:.1f} %' for g in PERFECT_GROUPS]
        if with_wins:
            opponents = r.get('perfect_levers', vs_mcts, 'opponents') if vs_mcts else None
            row.append(' / '.join(pct(opponents[bot]['win']) for bot in MCTS) if opponents else '')
        body.append(row)
    return rows(['player', 'env steps'] + [f'{g} ({sizes[g]["positions"]})' for g in PERFECT_GROUPS]
                + (['wins vs MCTS-100 / 1000'] if with_wins else []), body)


def _with_search(text: str, steps: str, key, search: str = 'search_100') -> List[tuple]:
    """A player's row and the row of the same player with its search."""
    return [(text, steps, key, 'network', None), ('the same with search 100', steps, key, search, None)]


@table('perfect_levers_probes')
def perfect_levers_probes(r: Records) -> List[str]:
    return _perfect_table(r, [
        *_with_search('none (the demo league)', '400k', 'seed1/baseline_demo_400k'),
        *_with_search('a. random openings, 0-30 plies', '400k', 'seed1/lever_a'),
        *_with_search('b. perfect player at depths 2, 4, 6 as reference players', '400k', 'seed1/lever_b'),
        ('none, at 200k of the 400k schedule', '200k', 'seed1/baseline_at_iter100', 'network', None),
        ('a, at 200k', '200k', 'seed1/lever_a_at_iter100', 'network', None),
        ('b, at 200k', '200k', 'seed1/lever_b_at_iter100', 'network', None),
        ('d. larger CNN (conv 128x4x4, 128x2x2; hidden 512), at 200k', '200k', 'seed1/lever_d_at_iter100', 'network',
         None)])


@table('perfect_levers_1m')
def perfect_levers_1m(r: Records) -> List[str]:
    return _perfect_table(r, [
        *_with_search('random openings 0-30 (`connect_four_perfect_levers.py`)', '1M', 'seed2/perfect_levers_1M'),
        *_with_search('the league without the lever (`connect_four_league.py`)', '1M', 'seed2/league_1M'),
        *_with_search('the demo league (figures above)', '400k', ('perfect_play', 'connect_four_demo_400k_steps'))])


@table('perfect_expert_iteration')
def perfect_expert_iteration(r: Records) -> List[str]:
    return _perfect_table(r, [
        *_with_search('expert iteration + random openings 0-30 (`connect_four_search_openings.py`)', '410k',
                      'seed2/search_openings_0_30_410k'),
        *_with_search('the same, at 205k of that run', '205k', 'seed2/search_openings_0_30_205k'),
        *_with_search('expert iteration without the openings (`connect_four_search.py`, same budget and seed), at 205k',
                      '205k', 'seed2/search_205k'),
        *_with_search('expert iteration without the openings, at the end', '410k', 'seed2/search_410k'),
        *_with_search('PPO league + random openings 0-30 (`connect_four_perfect_levers.py`, above)', '1M',
                      'seed2/perfect_levers_1M')])


@table('perfect_lever_c')
def perfect_lever_c(r: Records) -> List[str]:
    return _perfect_table(r, [
        *_with_search('openings 0-30 + solver values with at most 16 empty cells', '205k',
                      'seed1/search_openings_0_30_exact16_205k'),
        *_with_search('openings 0-30 alone (the run above at 205k)', '205k', 'seed1/search_openings_0_30_205k')])


@table('perfect_levers_fe')
def perfect_levers_fe(r: Records) -> List[str]:
    return _perfect_table(r, [
        *_with_search('openings 0-30 (the run above at 205k)', '205k', 'seed1/search_openings_0_30_205k'),
        *_with_search('c. openings 0-30 + solver values, at most 16 empty cells', '205k',
                      'seed1/search_openings_0_30_exact16_205k'),
        *_with_search('f. openings 0-40', '205k', 'seed1/search_openings_0_40_205k'),
        *_with_search('e. openings 0-30 + solver policy and values, at most 20 empty cells', '205k',
                      'seed1/search_openings_0_30_exact20_policy20_205k'),
        *_with_search('f + e by score: openings 0-40 + solver policy (best score) and values, at most 20 empty cells',
                      '205k', 'seed1/search_openings_0_40_exact20_policy20_score_205k')])


@table('perfect_levers_fe_reported')
def perfect_levers_fe_reported(r: Records) -> List[str]:
    return _perfect_table(r, [
        *_with_search('openings 0-30 (`connect_four_search_openings.py`)', '205k', 'seed2/search_openings_0_30_205k'),
        *_with_search('f. openings 0-40', '205k', 'seed2/search_openings_0_40_205k'),
        *_with_search('f. openings 0-40, its last checkpoint', '250k', 'seed2/search_openings_0_40_250k'),
        *_with_search('f + e by score', '205k', 'seed2/search_openings_0_40_exact20_policy20_score_205k'),
        *_with_search('openings 0-30 at 410k (above)', '410k', 'seed2/search_openings_0_30_410k')])


@table('perfect_missed_wins')
def perfect_missed_wins(r: Records) -> List[str]:
    spec = [('openings 0-30, 205k', 'seed1/search_openings_0_30_205k'),
            ('c (values, 16), 205k', 'seed1/search_openings_0_30_exact16_205k'),
            ('e (policy and values, 20), 205k', 'seed1/search_openings_0_30_exact20_policy20_205k'),
            ('f (openings 0-40), 205k', 'seed1/search_openings_0_40_205k'),
            ('f + e by score, 205k', 'seed1/search_openings_0_40_exact20_policy20_score_205k'),
            ('openings 0-30, 410k', 'seed1/search_openings_0_30_410k')]
    body = []
    for text, key in spec:
        groups = _perfect_groups(r, key, 'network')
        end, middle = groups['end-easy'], groups['middle-easy']

        def pair(figure: str, end: dict = end, middle: dict = middle) -> str:
            return f'{end[figure]} / {middle[figure]}'
        deeper = [g['errors'] - g['missed_wins'] - g['missed_blocks'] for g in (end, middle)]
        body.append([text, pair('errors'), pair('missed_wins'), pair('missed_blocks'), f'{deeper[0]} / {deeper[1]}'])
    return rows(['player', 'errors', 'missed wins in one', 'missed blocks', 'deeper'], body)


@table('perfect_hour_minibatches32')
def perfect_hour_minibatches32(r: Records) -> List[str]:
    run = 'seed2/search_openings_0_30_minibatches32_'
    spec = [('**32 minibatches, an hour**', '1.64M', run + '1638k', 'network', 'vs_mcts/search_openings_0_30_minibatches32_1638k'),
            ('the same with search 100', '1.64M', run + '1638k', 'search_100', None),
            ('the same run resumed to 2.05M (1.25 hours)', '2.05M', run + '2048k', 'network', None),
            ('with search 100', '2.05M', run + '2048k', 'search_100', None),
            ('the same run at 819k', '819k', run + '819k', 'network', None),
            ('with search 100', '819k', run + '819k', 'search_100', None),
            ('the same run at 410k', '410k', run + '410k', 'network', None),
            ('with search 100', '410k', run + '410k', 'search_100', None),
            ('8 minibatches (the config before), run again', '410k', 'seed2/search_openings_0_30_410k_rerun', 'network',
             None),
            ('the same with search 100', '410k', 'seed2/search_openings_0_30_410k_rerun', 'search_100', None)]
    return _perfect_table(r, spec)


@table('perfect_hour_tactics')
def perfect_hour_tactics(r: Records) -> List[str]:
    seed0, seed100 = ('seed2/search_openings_0_30_minibatches32_tactics8_',
                      'seed2/seed100_search_openings_0_30_minibatches32_tactics8_')
    spec = [('**tactics w = 8 + 32 minibatches (the ready config), seed 0, an hour**', '1.64M', seed0 + '1638k',
             'network', 'vs_mcts/search_openings_0_30_minibatches32_tactics8_1638k'),
            ('the same with search 100', '1.64M', seed0 + '1638k', 'search_100', None),
            ('**the same, seed 100 (no probe used it), an hour**', '1.64M', seed100 + '1638k', 'network',
             'vs_mcts/seed100_search_openings_0_30_minibatches32_tactics8_1638k'),
            ('the same with search 100', '1.64M', seed100 + '1638k', 'search_100', None),
            ('seed 0 with search 400', '1.64M', seed0 + '1638k_search400', 'search_400', None),
            ('seed 100 with search 400', '1.64M', seed100 + '1638k_search400', 'search_400', None),
            ('seed 100 at 819k', '819k', seed100 + '819k', 'network', None),
            ('with search 100', '819k', seed100 + '819k', 'search_100', None),
            ('seed 0 at 819k', '819k', seed0 + '819k', 'network', None),
            ('with search 100', '819k', seed0 + '819k', 'search_100', None),
            ('seed 0 at 410k', '410k', seed0 + '410k', 'network', None),
            ('with search 100', '410k', seed0 + '410k', 'search_100', None),
            ('32 minibatches without the tactics weight, seed 0, an hour (above)', '1.64M',
             'seed2/search_openings_0_30_minibatches32_1638k', 'network', 'vs_mcts/search_openings_0_30_minibatches32_1638k'),
            ('with search 100', '1.64M', 'seed2/search_openings_0_30_minibatches32_1638k', 'search_100', None)]
    return _perfect_table(r, spec)


@table('perfect_tactics_probes')
def perfect_tactics_probes(r: Records) -> List[str]:
    run = 'seed1/search_openings_0_30_'
    spec = [('openings 0-30 (above)', run + '205k', 'network'),
            ('the same config and seed, run again', run + '205k_rerun', 'network'),
            ('g. tactics, w = 8', run + 'tactics8_205k', 'network'),
            ('the same with search 100', run + 'tactics8_205k', 'search_100'),
            ('g. tactics, w = 32', run + 'tactics32_205k', 'network'),
            ('the same with search 100', run + 'tactics32_205k', 'search_100'),
            ('h + g. tactical openings 0.5, tactics w = 8', run + 'tactical50_tactics8_205k', 'network'),
            ('the same with search 100', run + 'tactical50_tactics8_205k', 'search_100'),
            ('i. 32 minibatches', run + 'minibatches32_205k', 'network'),
            ('the same with search 100', run + 'minibatches32_205k', 'search_100'),
            ('i. 64 minibatches', run + 'minibatches64_205k', 'network'),
            ('the same with search 100', run + 'minibatches64_205k', 'search_100')]
    sizes = _perfect_groups(r, spec[0][1], 'network')
    body = []
    for text, key, part in spec:
        groups = _perfect_groups(r, key, part)
        missed = (f'{groups["end-easy"]["missed_wins"]} / {groups["middle-easy"]["missed_wins"]}'
                  if part == 'network' else '')
        body.append([text] + [f'{100 * groups[g]["error_rate"]:.1f} %' for g in PERFECT_GROUPS] + [missed])
    return rows(['player, 205k env steps'] + [f'{g} ({sizes[g]["positions"]})' for g in PERFECT_GROUPS]
                + ['missed wins (end / middle-easy)'], body)


@table('search_selfplay')
def search_selfplay(r: Records) -> List[str]:
    body = []
    for key in r.record('search_selfplay'):
        if key.startswith('_'):
            continue
        entry = r.get('search_selfplay', key)
        collect, run = entry['collect'], entry.get('run')
        label = f'`{key}` (load {entry["load_start"][0]:.1f}, {entry["repeats"]} pairs)'
        for side, text in (('this', 'this checkout'), ('against', 'the checkout before')):
            runs = collect['runs'][side]
            body.append([label if side == 'this' else '', text, num(collect['median_env_steps_per_second'][side]),
                         num(collect['median_env_steps_per_cpu_second'][side]),
                         f'{statistics.median(x["evaluations_per_cpu_second"] for x in runs):,.0f}',
                         f'{statistics.median(x["mean_batch"] for x in runs):.0f}',
                         pct(statistics.median(x['forward_share'] for x in runs), 0),
                         pct(collect['median_share_of_roofline'][side], 0),
                         num(run['median_env_steps_per_second'][side]) if run else '-'])
        body.append(['', 'this / before', f'{collect["ratio"]:.2f}', f'{collect["cpu_ratio"]:.2f}', '', '', '', '',
                     f'{run["ratio"]:.2f}' if run else '-'])
    return rows(['entry', 'expert iteration self-play (medians of the repeats)', 'collection env steps/s',
                 'collection env steps per CPU second', 'network evaluations per CPU second', 'positions a pass',
                 'CPU time in forward passes', 'of the forward roofline at that batch', 'whole run env steps/s'],
                body)


@table('league_speed_against')
def league_speed_against(r: Records) -> List[str]:
    entry = r.get('league_speed', 'against')
    per_second = entry['env_steps_per_second']
    return rows([f'`{entry["variant"]}`, {entry["seconds"]:.0f} s runs, {entry["repeats"]} interleaved pairs',
                 'this checkout', 'the checkout before', 'this / before'], [
        ['env steps/s, median (range)', f'{num(entry["median"]["this"])} ({num(min(per_second["this"]))}-{num(max(per_second["this"]))})',
         f'{num(entry["median"]["against"])} ({num(min(per_second["against"]))}-{num(max(per_second["against"]))})', f'{entry["ratio"]:.2f}'],
        ['env steps per CPU second, median', num(entry['cpu_median']['this']), num(entry['cpu_median']['against']),
         f'{entry["cpu_ratio"]:.2f}']])


@table('perfect_label_cost')
def perfect_label_cost(r: Records) -> List[str]:
    by_empty = r.get('perfect_label_cost', 'label_cost', 'by_empty_cells')
    sizes = sorted(by_empty, key=int)

    def ms(x: float) -> str:
        return f'{x:.3f}' if x < 0.1 else f'{x:.2f}' if x < 10 else f'{x:.1f}'
    return rows(['empty cells'] + sizes, [
        ['value only (lever c), ms a position'] + [ms(by_empty[n]['value']['cpu_ms_per_position']) for n in sizes],
        ["value and policy (every move's score), ms a position"]
        + [ms(by_empty[n]['value+policy']['cpu_ms_per_position']) for n in sizes]])


@table('kuhn3')
def kuhn3(r: Records) -> List[str]:
    def reached(point) -> str:
        if point is None:
            return 'not reached'
        seconds = point['seconds']
        where = f', {short(point["env_steps"])} env steps' if 'env_steps' in point else f', {num(point["iterations"])} iterations'
        return (f'at {seconds:.1f} s' if seconds >= 1 else f'at {seconds:.3f} s') + where
    body = []
    for key in r.record('kuhn3'):
        if key.startswith('_'):
            continue
        entry = r.get('kuhn3', key)
        league, solver = entry['league'], entry['solver']
        for what, final, best, hit in (('the live network', 'final_nash_conv', 'best_nash_conv', 'reached_target'),
                                       ('the meta-strategy', 'final_meta_nash_conv', 'best_meta_nash_conv',
                                        'meta_reached_target'),
                                       ('the newest eight snapshots, averaged', 'final_average_nash_conv',
                                        'best_average_nash_conv', 'average_reached_target')):
            mode = (f'in parallel mode, {league["collectors"]} collector{"s" if league["collectors"] > 1 else ""}, '
                    if league.get('mode') == 'parallel' else '')
            body.append([f'`{key}`', (f'league ({mode}{short(league["env_steps"])} env steps in '
                                      f'{league["seconds"]:.0f} s): {what}'),
                         f'{league[final]:.4f}', f'{league[best]:.4f}', reached(league[hit])])
        body.append([f'`{key}`', (f'OpenSpiel {solver["solver"].replace("_plus", "+").upper()} '
                     f'({num(solver["iterations"])} iterations in {solver["seconds"]:.0f} s)'),
                     f'{solver["final_nash_conv"]:.1e}', '', reached(solver['reached_target'])])
    target = next(r.get('kuhn3', k, 'target') for k in r.record('kuhn3') if not k.startswith('_'))
    return rows(['entry', 'player', 'NashConv at the end', 'best', f'NashConv <= {target}, first'], body)


@table('forward_pass_ab')
def forward_pass_ab(r: Records) -> List[str]:
    """The no-slowdown check of a change to the forward-pass path: pairs ``abN`` run before and after, alternated."""
    record = r.record('forward_pass')
    pairs = sorted({key.split('_ab')[1].split('_')[0] for key in record if key.startswith('rows_by_batch_size_ab')},
                   key=int)
    where = [('in_process', 'in process'), ('server_in_thread', 'server in a thread'),
             ('server_in_process', 'server process')]
    body = []
    figures: Dict[str, Dict[str, List[float]]] = {w: {'before': [], 'after': []} for w, _ in where}
    for n in pairs:
        sides = {side: r.get('forward_pass', f'rows_by_batch_size_ab{n}_{side}') for side in ('before', 'after')}
        row: List[object] = [f'`ab{n}` (load {sides["before"]["load_average_measured"][0]:.1f})']
        for w, _ in where:
            for side in sides:
                figures[w][side].append(sides[side][w]['64']['rows_per_second'])
            row.append(f'{sides["before"][w]["64"]["rows_per_second"] / 1e3:.1f}k / '
                       f'{sides["after"][w]["64"]["rows_per_second"] / 1e3:.1f}k')
        body.append(row)
    body.append(['after / before, ratio of the medians']
                + [f'{statistics.median(figures[w]["after"]) / statistics.median(figures[w]["before"]):.2f}'
                   for w, _ in where])
    return rows(['pair: rows/s at 64 rows, before / after'] + [text for _, text in where], body)


@table('forward_pass_against')
def forward_pass_against(r: Records) -> List[str]:
    """``forward_pass.py --against``: this checkout's idle rows per second against another's, pairs alternated, and
    the path's own work per request (socket and pass left out)."""
    entry = r.get('forward_pass', 'rows_against')
    runs = entry['runs']
    where = [('in_process', 'in process'), ('server_in_thread', 'server in a thread'),
             ('server_in_process', 'server process')]
    header = ['this / against: rows per second (k), or microseconds'] + [
        f'pair {i + 1} (load {this["load_average_measured"][0]:.1f} / {other["load_average_measured"][0]:.1f})'
        for i, (this, other) in enumerate(zip(runs['this'], runs['against']))] + ['ratio of the medians']
    body = []
    for key, text in where:
        for size in entry['sizes']:
            body.append([f'{text}, {size} rows'] + [
                f'{this[key][str(size)]["rows_per_second"] / 1e3:.1f}k / '
                f'{other[key][str(size)]["rows_per_second"] / 1e3:.1f}k'
                for this, other in zip(runs['this'], runs['against'])] + [f'{entry["ratio"][key][str(size)]:.2f}'])
    costs = entry['median_request_costs_us']
    for key, text in (('server_take_us', 'server: a request into its batch, us'),
                      ('client_forward_us', 'client: a request around a canned reply, us')):
        body.append([text] + [f'{this["request_costs"][key]:.2f} / {other["request_costs"][key]:.2f}'
                              for this, other in zip(runs['this'], runs['against'])]
                    + [f'{costs["this"][key] / costs["against"][key]:.2f}'])
    return rows(header, body)
