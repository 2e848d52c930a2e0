"""Draw the site's figures from the committed benchmark records (``benchmarks/results/*.json``).

Each figure is a function of the records, registered in :data:`FIGURES` under the file name the pages
link to (``figures/<name>``): the docs hook (``docs/hooks/figures.py``) calls :func:`render_all` at build
time and adds the SVGs to the site, so a figure is never older than the record it is drawn from and
nothing generated is committed. A record that is missing or lacks the entry a figure reads fails the
build with the figure's name and the missing key.
"""
from __future__ import annotations

import io
import json
import os
from typing import Callable, Dict, List, Sequence, Tuple

import matplotlib

matplotlib.use('Agg')  # no display at docs build
import matplotlib.pyplot as plt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS_DIR = os.path.join(ROOT, 'benchmarks', 'results')

Records = Callable[[str], dict]
FIGURES: Dict[str, Callable[[Records], 'plt.Figure']] = {}

# One colour per role, the same on every figure: sparring, its peer, and the opponents' bots.
OURS, PEER = '#3f51b5', '#ff7043'
PALETTE = ['#3f51b5', '#ff7043', '#43a047', '#8e24aa', '#fbc02d', '#00897b', '#6d4c41']


class FigureDataError(RuntimeError):
    """A figure's record lacks what it draws."""


def figure(name: str):
    def register(fn):
        FIGURES[name] = fn
        return fn
    return register


def _axes(width: float = 7.0, height: float = 3.6, ncols: int = 1):
    fig, axes = plt.subplots(1, ncols, figsize=(width, height), constrained_layout=True)
    for ax in (axes if ncols > 1 else [axes]):
        ax.grid(True, alpha=0.3)
        ax.spines[['top', 'right']].set_visible(False)
    return fig, axes


def _bot_label(name: str) -> str:
    return name.replace('connect_four_mcts?num_simulations=', 'MCTS-')


# -- learning curves ------------------------------------------------------------------------------

@figure('ppo-cartpole-vs-sb3.svg')
def ppo_cartpole_vs_sb3(records: Records):
    """Seconds to an evaluation return of 475 on CartPole-v1, per seed, sparring beside SB3."""
    per_seed = records('vs_sb3')['cartpole']['per_seed']
    seeds = sorted(per_seed, key=int)
    fig, ax = _axes(6.0, 3.2)
    xs = range(len(seeds))
    ours = [per_seed[s]['sparring']['seconds'] for s in seeds]
    peer = [per_seed[s]['sb3']['seconds'] for s in seeds]
    ax.bar([x - 0.2 for x in xs], ours, 0.4, label='sparring PPO', color=OURS)
    ax.bar([x + 0.2 for x in xs], peer, 0.4, label='Stable-Baselines3 PPO', color=PEER)
    ax.set_xticks(list(xs), [f'seed {s}' for s in seeds])
    ax.set_ylabel('seconds to return 475')
    ax.set_title('CartPole-v1: wall time to solve, same machine, one thread')
    ax.legend(frameon=False)
    return fig


@figure('sac-pendulum.svg')
def sac_pendulum(records: Records):
    """Evaluation return over env steps on Pendulum-v1, SAC of sparring and of SB3, three seeds."""
    run = records('sac_vs_sb3')['pendulum_20k']
    fig, ax = _axes(6.5, 3.4)
    for who, colour, label in (('sparring', OURS, 'sparring SAC'), ('sb3', PEER, 'Stable-Baselines3 SAC')):
        for i, seed in enumerate(sorted(run['pendulum']['per_seed'], key=int)):
            curve = run['pendulum']['per_seed'][seed][who]['curve']
            ax.plot([c[0] for c in curve], [c[1] for c in curve], color=colour, alpha=0.8,
                    label=label if i == 0 else None)
    ax.set_xlabel('env steps')
    ax.set_ylabel('evaluation return')
    ax.set_title(f'Pendulum-v1, seeds {", ".join(map(str, run["seeds"]))}')
    ax.legend(frameon=False, loc='lower right')
    return fig


@figure('sac-hopper.svg')
def sac_hopper(records: Records):
    """Evaluation return over env steps on Hopper-v5, SAC of sparring and of SB3, one panel per seed."""
    run = records('sac_vs_sb3')['hopper_100k']
    seeds = sorted(run['per_seed'], key=int)
    fig, axes = _axes(9.0, 3.0, ncols=len(seeds))
    for ax, seed in zip(axes, seeds):
        for who, colour, label in (('sparring', OURS, 'sparring SAC'), ('sb3', PEER, 'Stable-Baselines3 SAC')):
            curve = run['per_seed'][seed][who]['curve']
            ax.plot([c[0] / 1000 for c in curve], [c[1] for c in curve], color=colour, marker='.', label=label)
        ax.set_title(f'seed {seed}')
        ax.set_xlabel('env steps (thousands)')
    axes[0].set_ylabel('evaluation return')
    axes[0].legend(frameon=False, fontsize=8)
    fig.suptitle('Hopper-v5: SAC beside Stable-Baselines3', fontsize=10)
    return fig


def _win_curves(ax, curve: Sequence[dict], opponents: Sequence[str]) -> None:
    unit, scale = ('millions', 1e6) if max(c['env_steps'] for c in curve) >= 2e6 else ('thousands', 1e3)
    for i, name in enumerate(opponents):
        points = [(c['env_steps'] / scale, c['win'][name]) for c in curve if name in c['win']]
        ax.plot([p[0] for p in points], [100 * p[1] for p in points], color=PALETTE[i % len(PALETTE)],
                label=_bot_label(name), marker='.', markersize=3, linewidth=1)
    ax.set_xlabel(f'env steps ({unit})')
    ax.set_ylabel('wins (%)')
    ax.set_ylim(0, 100)


@figure('dqn-connect-four.svg')
def dqn_connect_four(records: Records):
    """Win rate of a DQN league player on connect four against each evaluation bot."""
    league = records('dqn')['connect_four_league']
    fig, ax = _axes(6.5, 3.4)
    _win_curves(ax, league['curve'], list(league['curve'][-1]['win']))
    ax.set_title('DQN league on connect four: wins against each bot')
    ax.legend(frameon=False, fontsize=8, ncol=2)
    return fig


@figure('connect-four-league.svg')
def connect_four_league(records: Records):
    """Win rate of the PPO connect-four league against its evaluation bots over a run."""
    curve = records('league_games')['connect_four']['result']['curve']
    fig, ax = _axes(6.5, 3.4)
    _win_curves(ax, curve, list(curve[-1]['win']))
    ax.set_title('PPO league on connect four: wins against each bot')
    ax.legend(frameon=False, fontsize=8, ncol=2)
    return fig


@figure('expert-iteration.svg')
def expert_iteration(records: Records):
    """Wins against MCTS-100 and MCTS-1000 over an hour: the PPO league and expert iteration."""
    runs = records('connect_four_strength')
    shown = [('threads2_60min', 'PPO league'), ('search_random25_60min', 'expert iteration, seed 0'),
             ('search_ready_seed1_60min', 'expert iteration, seed 1')]
    fig, axes = _axes(9.0, 3.4, ncols=2)
    for ax, bot in zip(axes, ('connect_four_mcts?num_simulations=100', 'connect_four_mcts?num_simulations=1000')):
        for i, (key, label) in enumerate(shown):
            curve = runs[key]['curve']
            points = [(c['seconds'] / 60, c['win'][bot]) for c in curve if bot in c['win']]
            ax.plot([p[0] for p in points], [100 * p[1] for p in points], color=PALETTE[i], label=label)
        ax.set_xlabel('minutes of training (2 cores)')
        ax.set_ylabel('wins (%)')
        ax.set_ylim(0, 100)
        ax.set_title(f'against {_bot_label(bot)}')
    axes[0].legend(frameon=False, fontsize=8)
    return fig


@figure('poker-exploitability.svg')
def poker_exploitability(records: Records):
    """Exact exploitability over training time on Kuhn and Leduc poker (magnetic mirror descent)."""
    runs = records('strength')
    fig, axes = _axes(9.0, 3.4, ncols=2)
    for ax, game in zip(axes, ('kuhn', 'leduc')):
        curve = runs[game]['result']['curve']
        seconds = [c['seconds'] / 60 for c in curve]
        ax.plot(seconds, [c['meta_exploitability'] for c in curve], color=OURS, label='meta-strategy')
        ax.plot(seconds, [c['player_exploitability'] for c in curve], color=PEER, label='the network')
        ax.set_yscale('log')
        ax.set_xlabel('minutes of training (2 cores)')
        ax.set_ylabel('exploitability')
        ax.set_title(f'{game.capitalize()} poker')
    axes[0].legend(frameon=False)
    return fig


# -- games of three seats and games with roles --------------------------------------------------------

# One colour per measure of a league, the same on the Kuhn-3 and the sheriff figures; CFR+ in the peer's colour.
LIVE, META, AVERAGE = OURS, PALETTE[3], PALETTE[2]
SEED_STYLES = ('-', '--', ':', '-.')


def _seed_style(i: int) -> str:
    return SEED_STYLES[i % len(SEED_STYLES)]


def _seed_label(label: str, seed: str, seeds: Sequence[str]) -> str:
    return f'{label}, {seed}' if len(seeds) > 1 else label


@figure('kuhn3-nashconv.svg')
def kuhn3_nashconv(records: Records):
    """Three-player Kuhn poker: NashConv of the league (live network, meta-strategy, recent average) and of CFR+
    against seconds, and the league's against env steps, from every ``*_600s`` entry of ``kuhn3.json``."""
    record = records('kuhn3')
    keys = [key for key in record if key.endswith('_600s')]
    entries = [record[key] for key in keys]
    seeds = [key[:-len('_600s')].replace('_', ' ') for key in keys]
    target = entries[0]['target']
    fig, (by_time, by_steps) = _axes(9.0, 3.6, ncols=2)
    measures = (('nash_conv', 'live network', LIVE), ('meta_nash_conv', 'meta-strategy', META),
                ('average_nash_conv', 'recent average', AVERAGE))
    for i, (seed, entry) in enumerate(zip(seeds, entries)):
        curve, solver = entry['league']['curve'], entry['solver']['curve']
        for field, label, colour in measures:
            name = _seed_label(f'league: {label}', seed, seeds)
            by_time.plot([c['seconds'] for c in curve], [c[field] for c in curve], color=colour,
                         linestyle=_seed_style(i), label=name)
            by_steps.plot([c['env_steps'] / 1e6 for c in curve], [c[field] for c in curve], color=colour,
                          linestyle=_seed_style(i), label=name)
        by_time.plot([c['seconds'] for c in solver], [c['nash_conv'] for c in solver], color=PEER,
                     linestyle=_seed_style(i), marker='.', markersize=3,
                     label=_seed_label('OpenSpiel CFR+', seed, seeds))
    for ax in (by_time, by_steps):
        ax.axhline(target, color='grey', linewidth=0.8, linestyle=':', label=f'target {target}')
        ax.set_yscale('log')
        ax.set_ylabel('NashConv')
    by_time.set_xscale('log')
    by_time.set_xlabel('seconds (log, 2 cores)')
    by_time.set_title(f'against wall time ({entries[0]["seconds_each"]:.0f} s each)')
    by_steps.set_xlabel('env steps (millions)')
    by_steps.set_title('the league against env steps')
    by_time.legend(frameon=False, fontsize=7)
    fig.suptitle('Three-player Kuhn poker: the league beside CFR+', fontsize=10)
    return fig


@figure('sheriff-nashconv.svg')
def sheriff_nashconv(records: Records):
    """Sheriff: NashConv of the live pair and of each role's recent average per seed, beside CFR+, against seconds,
    from ``sheriff_roles.json``."""
    record = records('sheriff_roles')
    seeds = [key for key in record if key.startswith('seed_')]
    solvers = [key for key in record if key.startswith('solver')]
    fig, ax = _axes(6.5, 3.4)
    for i, seed in enumerate(seeds):
        curve = record[seed]['league']['curve']
        label = seed.replace('_', ' ')
        ax.plot([c['seconds'] for c in curve], [c['nash_conv'] for c in curve], color=LIVE,
                linestyle=_seed_style(i), label=_seed_label('league: the live pair', label, seeds))
        ax.plot([c['seconds'] for c in curve], [c['average_nash_conv'] for c in curve], color=AVERAGE,
                linestyle=_seed_style(i), label=_seed_label("league: each role's recent average", label, seeds))
    for key in solvers:
        solver = record[key]
        ax.plot([c['seconds'] for c in solver['curve']], [c['nash_conv'] for c in solver['curve']], color=PEER,
                marker='.', markersize=3, label=f'OpenSpiel {solver["solver"].replace("_plus", "+").upper()}')
    ax.set_yscale('log')
    ax.set_xlabel('seconds (2 cores)')
    ax.set_ylabel('NashConv')
    ax.set_title("OpenSpiel's sheriff: a smuggler and a sheriff, each its own player")
    ax.legend(frameon=False, fontsize=7)
    return fig


@figure('pursuit-roles.svg')
def pursuit_roles(records: Records):
    """Pursuit: each role's win rate against the other role's scripted bot over env steps, per seed, with the role's
    own scripted bot in its place for scale, from ``pursuit_roles.json``."""
    record = records('pursuit_roles')
    seeds = [key for key in record if key.startswith('seed_')]
    base = record['scripted_baseline']
    fig, axes = _axes(9.0, 3.2, ncols=2)
    for ax, (role, rival) in zip(axes, (('pursuer', base['evader_bot']), ('evader', base['pursuer_bot']))):
        for i, seed in enumerate(seeds):
            curve = record[seed]['curves'][role]
            ax.plot([c['env_steps'] / 1e3 for c in curve], [100 * c['win'] for c in curve], color=PALETTE[i % 3 * 2],
                    marker='.', label=seed.replace('_', ' '))
        ax.axhline(100 * base[f'{role}_bot_win'], color='grey', linestyle='--', linewidth=1,
                   label=f'{base[f"{role}_bot"]} in its place')
        ax.set_ylim(0, 100)
        ax.set_xlabel('env steps (thousands)')
        ax.set_title(f'the {role} against {rival}')
        ax.legend(frameon=False, fontsize=7)
    axes[0].set_ylabel('wins (%)')
    fig.suptitle('Pursuit and evasion: each role against the other role\'s scripted bot', fontsize=10)
    return fig


@figure('vtrace-staleness.svg')
def vtrace_staleness(records: Records):
    """Final CartPole return when PPO learns from chunks k versions old, with and without V-trace."""
    run = records('vtrace_staleness')['cartpole_unweighted_seeds_120_135']
    means = run['means']
    ages = sorted({int(k.split('_k')[1]) for k in means})
    fig, ax = _axes(6.0, 3.2)
    for offset, (prefix, label, colour) in ((-0.2, ('gae', 'GAE (no correction)', PEER)),
                                            (0.2, ('vtrace', 'V-trace', OURS))):
        present = [a for a in ages if f'{prefix}_k{a}' in means]
        ax.bar([ages.index(a) + offset for a in present], [means[f'{prefix}_k{a}']['mean'] for a in present], 0.4,
               yerr=[means[f'{prefix}_k{a}']['sem'] for a in present], label=label, color=colour, capsize=3)
    ax.set_xticks(range(len(ages)), [f'{a} versions' for a in ages])
    ax.set_ylabel('final return (mean ± s.e.)')
    ax.set_title(f'CartPole-v1 from stale chunks, {means[next(iter(means))]["n"]} seeds each')
    ax.legend(frameon=False)
    return fig


@figure('perfect-play.svg')
def perfect_play(records: Records):
    """Share of labelled connect-four positions where a player's move loses against perfect play."""
    scored = records('perfect_play')
    shown: List[Tuple[str, str]] = [
        ('bot:random', 'random'), ('bot:connect_four_heuristic', 'heuristic'),
        ('connect_four_demo_400k_steps', 'demo network'),
        ('connect_four_demo_400k_steps/search_100', 'demo network, search 100'),
        ('bot:connect_four_mcts?num_simulations=100', 'MCTS-100'),
        ('bot:connect_four_mcts?num_simulations=1000', 'MCTS-1000')]
    fig, ax = _axes(6.5, 3.2)
    rates = [100 * _error_rate(scored, key) for key, _ in shown]
    ax.barh([label for _, label in shown], rates, color=[PALETTE[i % len(PALETTE)] for i in range(len(shown))])
    for y, rate in enumerate(rates):
        ax.text(rate + 0.5, y, f'{rate:.1f} %', va='center', fontsize=8)
    ax.set_xlabel('positions where the move chosen loses (%)')
    ax.set_title(f'Connect four against perfect play ({scored[shown[0][0]]["positions"]:,} positions)')
    ax.invert_yaxis()
    return fig


def _error_rate(scored: dict, key: str) -> float:
    """A bot's record scores it ``alone``; a network's scores the ``network`` and, after a ``/``, its search."""
    entry, _, part = key.partition('/')
    record = scored[entry]
    scored_part = record[part] if part else record['alone'] if 'alone' in record else record['network']
    return scored_part['groups']['all']['error_rate']


# -- building -------------------------------------------------------------------------------------

def load_records(results_dir: str = RESULTS_DIR) -> Records:
    cache: Dict[str, dict] = {}

    def records(name: str) -> dict:
        if name not in cache:
            with open(os.path.join(results_dir, f'{name}.json')) as f:
                cache[name] = json.load(f)
        return cache[name]
    return records


def render(name: str, records: Records) -> str:
    """The SVG text of one figure."""
    try:
        fig = FIGURES[name](records)
    except (KeyError, IndexError) as err:
        raise FigureDataError(f'figure {name}: its record lacks {err} (it draws: {FIGURES[name].__doc__})') from err
    except OSError as err:
        raise FigureDataError(f'figure {name}: cannot read its record ({err})') from err
    buffer = io.StringIO()
    fig.savefig(buffer, format='svg', metadata={'Date': None})  # no date: the same records, the same file
    plt.close(fig)
    return buffer.getvalue()


def render_all(results_dir: str = RESULTS_DIR) -> Dict[str, str]:
    """``{file name: SVG text}`` of every figure."""
    plt.rcParams.update({'font.size': 9, 'svg.hashsalt': 'sparring-docs', 'svg.fonttype': 'none'})
    records = load_records(results_dir)
    return {name: render(name, records) for name in FIGURES}
