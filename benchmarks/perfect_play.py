"""Connect four judged by perfect play: make a labelled position set, and score a player's errors on it.

``generate`` plays uniformly random games from ``--seed``, labels positions with the solver
(:mod:`sparring.dizoo.board_games.solver`, numba) and keeps up to ``--per-group`` of each of the six groups
(stones played 0-14 / 15-28 / 29-42 x plies until decided < 14 / 14-27 / 28+), with the labelling speed per
group in the file's ``meta``. ``score`` plays a run's player (the network alone, then with each ``--search``
N: its guided search) or a bot (``bot:<name>[?options]``) on every position and reports the share of moves
whose outcome is worse than the best move's, per group, into ``benchmarks/results/perfect_play.json`` (or
``--results perfect_levers``: the training levers' probes of docs/guides/perfect-play.md).

``take-wins`` shows whether a run's network has learnt what its search teaches where a win in one is on the
board; ``fit-wins`` whether the CNN can learn that pattern when trained on nothing else (``--from RUN``: whether a
run's network can learn it beside what it knows, fine-tuned on wins in one and its own policy elsewhere). ``label-cost`` measures what expert iteration's solver labels near the end cost (``battle.collect_search``'s
``exact_value_empty_cells`` and ``exact_policy_empty_cells``): CPU ms per position of random play, by empty cells.

Seed 1's set is for tuning; the reported figures come from seed 2's (:data:`REPORT_SET`), which no tuning saw.

    .venv/bin/python benchmarks/perfect_play.py generate --seed 2 --out benchmarks/data/connect_four_positions_2.npz
    .venv/bin/python benchmarks/perfect_play.py score RUN [--player ID] [--search 100] --positions FILE
    .venv/bin/python benchmarks/perfect_play.py score "bot:connect_four_mcts?num_simulations=100" --positions FILE
    flock /tmp/sparring-bench.lock .venv/bin/python benchmarks/perfect_play.py label-cost --per 300
    .venv/bin/python benchmarks/perfect_play.py take-wins RUN --openings 0 40
    .venv/bin/python benchmarks/perfect_play.py fit-wins [--from RUN]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from results_file import add_smoke, apply_smoke, cpu_model, merge_results

BOT_PREFIX = 'bot:'


def generate(args) -> None:
    from sparring.dizoo.board_games.solver.testset import generate as generate_set
    load = os.getloadavg()
    positions = generate_set(args.seed, args.per_group, max_nodes=args.max_nodes, max_seconds=args.max_seconds,
                             max_attempts=args.max_attempts, begin_from=args.begin_from,
                             log=lambda line: print(line, flush=True))
    positions.meta.update(cpu=cpu_model(), load_start=load, load_end=os.getloadavg())
    positions.save(args.out)
    meta = positions.meta
    print(f'wrote {args.out}: {len(positions)} positions in {meta["seconds"]} s (load {load[0]:.2f})')
    for name, count in meta['labelled'].items():
        solved, cpu = meta['solved'][name], meta['label_cpu_seconds'][name]
        speed = f'{solved / cpu:8.1f} positions/s CPU' if cpu > 0 else 'none labelled'
        print(f'  {name:14s} {count:5d} kept, {solved:5d} labelled: {speed}')
    print(f'  skipped over {args.max_nodes:,} nodes, by stones played: {meta["skipped_over_budget"]}')


def players(args):
    """(label, player) pairs to score: a bot, or a run's network alone and with each search size."""
    if args.player_ref.startswith(BOT_PREFIX):
        from gymnasium import spaces

        import sparring.dizoo  # noqa: F401  (registers the bots)
        from sparring.config.registry import BOT_REGISTRY
        from sparring.policy.bot import parse_bot_ref
        name, options = parse_bot_ref(args.player_ref[len(BOT_PREFIX):])
        bot = BOT_REGISTRY.get(name)(options, spaces.Box(0.0, 1.0, (3, 6, 7), np.float32), spaces.Discrete(7),
                                     seed=args.seed)
        yield 'alone', bot
        return
    from sparring.dizoo.board_games.guided_search import guided_search_player
    from sparring.framework.player_loader import TrainedRun
    run = TrainedRun(args.player_ref)
    policy = run.policy(args.player, seed=args.seed)
    yield 'network', policy
    for n in args.search:
        yield f'search_{n}', guided_search_player(run.cfg.env, policy, n, seed=args.seed)


def score(args) -> None:
    from sparring.dizoo.board_games.solver.testset import load, score_policy
    torch.set_num_threads(1)
    positions = load(args.positions)
    repository = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = dict(player=args.player_ref, player_id=args.player,
                  positions_file=os.path.relpath(os.path.abspath(args.positions), repository),
                  positions_seed=positions.meta.get('seed'), positions=len(positions), cpu=cpu_model(),
                  load_start=os.getloadavg())
    for label, player in players(args):
        started = time.perf_counter()
        groups = score_policy(player, positions, batch=args.batch)
        result[label] = dict(groups=groups, seconds=round(time.perf_counter() - started, 1))
        print(f'{args.player_ref} {label}: ' + ', '.join(f'{name} {g["error_rate"]:.1%} ({g["positions"]})'
                                                         for name, g in groups.items()), flush=True)
        print('  of its errors, missed wins in one / missed blocks: '
              + ', '.join(f'{name} {g["missed_wins"]}/{g["missed_blocks"]}' for name, g in groups.items()), flush=True)
    result['load_end'] = os.getloadavg()
    merge_results(args.results, {args.label or args.player_ref: result})


def label_cost(args) -> None:
    """CPU ms per position of the solver's labels, value only and value with policy, by empty cells: positions of
    random play, the solver's table kept between them as in the collector."""
    from sparring.dizoo.board_games.bitboard import BoardGeometry
    from sparring.dizoo.board_games.search_acting import SearchActing
    from sparring.dizoo.board_games.solver.testset import random_position
    g, rng = BoardGeometry(6, 7, 4, gravity=True), np.random.default_rng(args.seed)

    def seat_view(empty: int, count: int):
        positions = []
        while len(positions) < count:
            position = random_position(rng, g, g.num_cells - empty)
            if position is not None:
                positions.append(position)
        stones = np.array(positions, np.uint64)
        obs = np.zeros((count, 3, g.rows, g.cols), np.float32)
        obs[:, :2], obs[:, 2] = g.planes(stones), 1.0
        return obs, g.legal_mask(stones[:, 0] | stones[:, 1])

    warm = seat_view(12, 4)  # the kernels compile on first use, outside the timings
    for cfg in (dict(exact_value_empty_cells=42), dict(exact_policy_empty_cells=42)):
        SearchActing(cfg, g).exact_labels(*warm)
    print(f'load {os.getloadavg()[0]:.2f}, {cpu_model()}')
    by_empty = {}
    for empty in args.empty:
        obs, mask = seat_view(empty, args.per)
        row, figures = [f'{empty:2d} empty cells'], {}
        for name, cfg in (('value', dict(exact_value_empty_cells=empty)),
                          ('value+policy', dict(exact_value_empty_cells=empty, exact_policy_empty_cells=empty))):
            acting = SearchActing(cfg, g)
            started = time.process_time()
            labels = acting.exact_labels(obs, mask)
            ms = (time.process_time() - started) * 1000 / args.per
            figures[name] = dict(cpu_ms_per_position=round(ms, 4), labelled=float(labels['value_labelled'].mean()))
            row.append(f'{name} {ms:.3f} ms/position ({labels["value_labelled"].mean():.0%} labelled)')
        by_empty[str(empty)] = figures
        print(', '.join(row), flush=True)
    print(f'load {os.getloadavg()[0]:.2f}')
    merge_results('perfect_label_cost', {'label_cost': dict(positions_per_size=args.per, seed=args.seed,
                                                            by_empty_cells=by_empty)})


def _starts(count: int, openings, seed: int, win_in_one_only: bool = True):
    """Training starts of the env (``openings`` random plies): observations, legal moves and the winning moves, of
    those that offer the mover a win in one (or of all of them)."""
    from sparring.dizoo.board_games.board_game_env import ConnectFourEnv
    env = ConnectFourEnv(dict(random_opening_plies=list(openings)), count, seed=seed)
    env.reset()
    g, rows = env.geometry, np.arange(count)
    own, opp = env.stones[rows, env.mover], env.stones[rows, 1 - env.mover]
    legal = g.legal_mask(own | opp)
    wins = g.completing_moves(own, own | opp)
    kept = wins.any(axis=1) if win_in_one_only else np.ones(count, bool)
    obs = np.zeros((int(kept.sum()), 3, g.rows, g.cols), np.float32)
    obs[:, :2], obs[:, 2] = g.planes(np.stack([own[kept], opp[kept]], axis=1)), 1.0
    return obs, legal[kept], wins[kept]


def fit_wins(args) -> None:
    """Whether the ready config's CNN can learn to take a win in one: supervised cross-entropy towards the winning
    moves of training starts with a win in one, then how often it takes one on held-out starts and on the positions
    of ``--positions`` that offer one. From scratch it is trained on those starts alone; with ``--from RUN`` the
    run's network is trained on every start, towards the winning moves where one is offered and towards its own
    (frozen) policy elsewhere, so it keeps what it knew; its error rates on ``--positions`` come before and after."""
    import sparring.dizoo  # noqa: F401  (registers the game)
    from sparring.config import compile_section
    from sparring.config.registry import POLICY_REGISTRY
    from sparring.dizoo.board_games.board_game_env import ConnectFourEnv
    from sparring.dizoo.board_games.solver.testset import load, observations, score_policy
    torch.set_num_threads(1)
    torch.manual_seed(0)
    positions = load(args.positions)
    set_obs, set_legal = observations(positions)
    g = ConnectFourEnv({}, 1, seed=0).geometry
    set_wins = g.completing_moves(positions.own, positions.own | positions.opp)
    offer = set_wins.any(axis=1)
    if args.from_run:
        from sparring.framework.player_loader import TrainedRun
        policy = TrainedRun(args.from_run).policy(None, seed=0)
        model, prepare = policy.model, policy.net.prepare
    else:
        env = ConnectFourEnv({}, 1, seed=0)
        cfg = compile_section('policy', dict(type='ppo', model=dict(type='cnn', conv_layers=[[64, 4, 1]],
                                                                        hidden_size=256)))
        model, prepare = POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=0).model, None
    obs, legal, wins = _starts(args.starts, args.openings, seed=1, win_in_one_only=not args.from_run)
    held_out = _starts(4000, args.openings, seed=2)
    as_input = (lambda o: prepare(torch.as_tensor(o))) if prepare else torch.as_tensor
    x, mask = as_input(obs), torch.as_tensor(legal)
    target = torch.as_tensor(wins, dtype=torch.float32)
    has_win = target.sum(dim=1, keepdim=True) > 0
    target = target / target.sum(dim=1, keepdim=True).clamp_min(1.0)
    if args.from_run:  # elsewhere its own policy: it learns the wins without forgetting the rest
        with torch.no_grad():
            own_policy = torch.softmax(model(x)[0].masked_fill(~mask, -1e9), dim=1)
        target = torch.where(has_win, target, own_policy)

    @torch.no_grad()
    def take_rate(o, lg, w) -> float:
        head, _ = model(as_input(o))
        taken = w[np.arange(len(o)), head.masked_fill(~torch.as_tensor(lg), -1e9).argmax(1).numpy()]
        return float(np.mean(taken[w.any(axis=1)]))

    def errors(when: str) -> None:
        if args.from_run:
            groups = score_policy(policy, positions)
            print(f'{when}: errors ' + ', '.join(f'{name} {100 * g["error_rate"]:.1f}% ({g["missed_wins"]} missed wins)'
                                                 for name, g in groups.items() if name.endswith('easy') or name == 'all'),
                  flush=True)

    print(f'{int(has_win.sum())} training starts with a win in one (of {len(obs)}); before training it takes '
          f'{take_rate(*held_out):.0%} of the held-out ones')
    errors('before')
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    started = time.process_time()
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, len(x), (256,))
        head, _ = model(x[idx])
        loss = -(target[idx] * torch.log_softmax(head.masked_fill(~mask[idx], -1e9), dim=1)).sum(1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % (args.steps // 4) == 0:
            print(f'step {step} (minibatches of 256): takes {take_rate(*held_out):.1%} of the held-out starts\' wins '
                  f'in one, {take_rate(set_obs[offer], set_legal[offer], set_wins[offer]):.1%} of the '
                  f'{offer.sum()} in {os.path.basename(args.positions)} ({time.process_time() - started:.0f} s CPU)',
                  flush=True)
    errors('after')


def take_wins(args) -> None:
    """Whether a run's network has learnt what its search teaches where a win in one is on the board: training
    starts of ``--openings lo hi`` random plies (the env's own generator, ``--seed``) that offer the mover a win
    in one; the share of the search's visits (its policy target) and of the network's probability on the winning
    moves, and how often the network ranks one first."""
    from sparring.dizoo.board_games.board_game_env import ConnectFourEnv
    from sparring.dizoo.board_games.search_acting import SearchActing
    from sparring.framework.player_loader import TrainedRun
    torch.set_num_threads(1)
    run = TrainedRun(args.run)
    policy = run.policy(args.player, seed=0)
    obs, legal, wins = _starts(args.starts, args.openings, args.seed)
    g = ConnectFourEnv({}, 1, seed=0).geometry
    search = dict(run.cfg.battle.collect_search or {})
    search = {k: search[k] for k in ('num_simulations', 'c_puct', 'root_noise', 'noise_alpha') if k in search}
    _, target, _ = SearchActing(search, g, seed=0).act(policy, obs, legal)
    probs, _ = policy.probabilities_and_value(obs, action_mask=legal)
    on_wins = lambda dist: (dist * wins).sum(axis=1)  # noqa: E731
    first = wins[np.arange(len(obs)), probs.argmax(axis=1)]
    print(f'{args.run}: {len(obs)} of {args.starts} starts offer a win in one; the search\'s visits on the wins: '
          f'mean {on_wins(target).mean():.2f}, median {np.median(on_wins(target)):.2f}; the network\'s probability: '
          f'mean {on_wins(probs).mean():.2f}; a win ranked first: {first.mean():.0%}')


def smoke() -> None:
    """``--smoke``: a tiny position set generated and the random bot scored on it, the record in a temporary
    folder."""
    import tempfile
    apply_smoke(argparse.Namespace(smoke=True))
    out = os.path.join(tempfile.mkdtemp(prefix='perfect_play_smoke_'), 'positions.npz')
    generate(argparse.Namespace(seed=1, out=out, per_group=2, max_nodes=100_000, begin_from=9, max_seconds=20.0,
                                max_attempts=10))
    score(argparse.Namespace(player_ref='bot:random', player=None, search=[], positions=out, seed=0, batch=512,
                             label=None, results='perfect_play'))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_smoke(parser)
    commands = parser.add_subparsers(dest='command')
    gen = commands.add_parser('generate', help='random-play positions labelled by the solver')
    gen.add_argument('--seed', type=int, required=True)
    gen.add_argument('--out', required=True)
    gen.add_argument('--per-group', type=int, default=500)
    gen.add_argument('--max-nodes', type=int, default=1_000_000, help='skip a position whose labels take more')
    gen.add_argument('--begin-from', type=int, default=9, help='the fewest stones of a begin position')
    gen.add_argument('--max-seconds', type=float, default=240.0)
    gen.add_argument('--max-attempts', type=int, default=None,
                     help='positions labelled or skipped per stone group at most (the set then depends only on the seed)')
    sc = commands.add_parser('score', help='a player\'s error rate per group')
    sc.add_argument('player_ref', metavar='RUN', help='a connect-four run directory, or bot:<name>[?options]')
    sc.add_argument('--player', default=None, help='the run\'s player id (default: its first active player)')
    sc.add_argument('--search', type=int, nargs='*', default=[], help='also score the guided search of N simulations')
    sc.add_argument('--positions', required=True)
    sc.add_argument('--seed', type=int, default=0, help='the player\'s seed (tie-breaks, search)')
    sc.add_argument('--batch', type=int, default=512, help='positions per act call')
    sc.add_argument('--label', default=None, help='the entry\'s name in the results (default: RUN)')
    sc.add_argument('--results', default='perfect_play',
                    help='the results file under benchmarks/results/, without .json (the levers\' probes: perfect_levers)')
    cost = commands.add_parser('label-cost', help='the solver labels\' CPU ms per position, by empty cells '
                                                  '(benchmarks/results/perfect_label_cost.json)')
    cost.add_argument('--per', type=int, default=300, help='positions per number of empty cells')
    cost.add_argument('--empty', type=int, nargs='*', default=[8, 12, 16, 18, 20, 22, 24, 28])
    cost.add_argument('--seed', type=int, default=0)
    wins = commands.add_parser('take-wins', help='a run\'s network and search on training starts with a win in one')
    wins.add_argument('run', metavar='RUN')
    wins.add_argument('--player', default=None, help='the run\'s player id (default: its first active player)')
    wins.add_argument('--openings', type=int, nargs=2, default=[0, 40], metavar=('LO', 'HI'))
    wins.add_argument('--starts', type=int, default=1500)
    wins.add_argument('--seed', type=int, default=123)
    fit = commands.add_parser('fit-wins', help='the CNN trained on wins in one alone: does it learn to take them?')
    fit.add_argument('--openings', type=int, nargs=2, default=[0, 40], metavar=('LO', 'HI'))
    fit.add_argument('--starts', type=int, default=60000, help='training starts drawn (about half offer a win in one)')
    fit.add_argument('--steps', type=int, default=4000)
    fit.add_argument('--positions', default='benchmarks/data/connect_four_positions_1.npz')
    fit.add_argument('--from', dest='from_run', default=None, metavar='RUN',
                     help='fine-tune this run\'s network (wins in one, its own policy elsewhere) instead of a new one')
    args = parser.parse_args()
    if args.smoke:
        smoke()
        return
    if args.command is None:
        parser.error('expected a command: generate, score, label-cost, take-wins or fit-wins')
    commands_by_name = dict(generate=generate, score=score, label_cost=label_cost, take_wins=take_wins,
                            fit_wins=fit_wins)
    commands_by_name[args.command.replace('-', '_')](args)


if __name__ == '__main__':
    main()
