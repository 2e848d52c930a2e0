"""The ``sparring`` command line (also ``python -m sparring``): ``sparring train path/to/config.py [--seed N]
[--exp-name X] [--resume] [--mode serial|parallel] [--max-env-steps N] [--max-wall-seconds S]
[--set dotted.key=value ...]``, ``sparring list [envs|policies|models|players|leagues|bots|configs]``
(what is registered, and the ready configs), ``sparring --version``, ``sparring worker --role collector
--commander tcp://HOST:PORT`` (join a parallel run), ``sparring surgery --checkpoint RUN --config
new_config.py --out NEW_RUN`` and ``sparring check-env (ENV_TYPE | CONFIG.py)`` (play random games of a
two-player env, or of one of three or more seats, and check that it keeps its protocol). ``list``, ``check-env`` and the commands that
use a run take ``--import MODULE``: a module of the user's (from the current folder or the import path) to
import first, so that the classes it registers can be named.

Using what a run trained: ``sparring eval RUN --against bot:random RUN2:player_id ...`` (win / draw /
loss with standard errors and an Elo difference, and how many distinct games were played; a single-agent
run: ``sparring eval RUN``, greedy and sampled returns with standard errors), ``sparring play RUN [--seat first|second | --role ROLE]`` (a person
against the trained player in the terminal; exit 0 also when quit with ``q``), ``sparring export RUN --format onnx|torchscript --out FILE``,
``sparring report RUN`` (write ``RUN/report.html`` again: a league's page, or a single agent's return curve) and ``sparring exploit RUN --budget-steps N``
(train a fresh exploiter against a frozen player: approximate exploitability). These commands and surgery
import a run's own modules only from this environment and from recorded folders outside the run directory;
``--trust-run-code`` allows a run's modules from inside its directory (its author's code runs).

A config file is a Python file that defines ``config`` (a plain dict); ``main_config`` is accepted
too, as DI-engine users name it so. The config file's folder is importable while it runs and during
the run (in every process the run starts on this machine), so ``import_names`` may name modules that
sit next to it.

A mistake a user can make (a config error, a reused experiment directory, a refused surgery, a
module in ``import_names`` that cannot be imported, a missing file) ends the command with one line on
stderr and exit code 2; ``--debug`` prints the traceback as well. A run stopped by Ctrl-C exits 130, by
SIGTERM 143 (128 + the signal, as shells report it), after the same clean stop: what was done is saved and
the line to continue it is printed.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import runpy
import shlex
import sys
import traceback
import warnings
from typing import List, Optional, Tuple

from sparring.config.registry import RegistryError
from sparring.config.compile import apply_overrides, parse_override
from sparring.config.schema import ConfigError
from sparring.framework.run_imports import make_importable
from sparring.worker.run_files import StorageFailure

CONFIG_NAMES = ('config', 'main_config')
USAGE_ERROR = 2  # the exit code of argparse's usage errors: the command was given something it cannot use
# A run directory may come from someone else: its own modules are imported only when the user says so.
TRUST_HELP = ('import the run\'s own modules even from inside its directory (its author\'s code runs); by default '
              'only modules of this environment and recorded folders outside the run')


def user_errors() -> tuple:
    """What a user's input can cause, reported in one line (SurgeryError is a ConfigError). ImportError covers
    import_names and the optional extras, whose messages name the module or the extra to install. A damaged
    checkpoint or parameter file of a run a command reads is named by StateFileError / CheckpointError.

    Imported when an error is caught, not with this module: ``sparring --version`` and ``--help`` never import
    torch, which the modules of most of these classes need.
    """
    from sparring.framework.journal import JournalDamaged
    from sparring.league.errors import LeagueError
    from sparring.worker.checkpoint import CheckpointError
    from sparring.worker.env.errors import EnvError
    from sparring.worker.state_file import StateFileError
    return (ConfigError, LeagueError, EnvError, RegistryError, FileExistsError, FileNotFoundError, ImportError,
            StateFileError, CheckpointError, JournalDamaged, StorageFailure, ConfigFileError)


class ConfigFileError(ValueError):
    """A config file that cannot be run or defines no config dict."""


def load_config_file(path: str) -> dict:
    """The config dict a Python config file defines (the command line makes its folder importable first)."""
    if os.path.isdir(path):
        raise ConfigFileError(f'{path} is a directory; expected a config file (a Python file defining `config`)')
    if not os.path.isfile(path):
        raise FileNotFoundError(f'config file not found: {path}')
    try:
        namespace = runpy.run_path(path, run_name='sparring_config')
    except SyntaxError as err:
        raise ConfigFileError(f'{path}, line {err.lineno}: {err.msg}') from err
    except Exception as err:
        frames = [f for f in traceback.extract_tb(err.__traceback__) if os.path.abspath(f.filename) == os.path.abspath(path)]
        where = f', line {frames[-1].lineno}' if frames else ''
        raise ConfigFileError(f'{path}{where}: {type(err).__name__}: {err}') from err
    for name in CONFIG_NAMES:
        if name in namespace:
            config = namespace[name]
            if not isinstance(config, dict):
                raise ConfigFileError(f'{path}: {name} must be a dict, got {type(config).__name__}')
            return config
    raise ConfigFileError(f'{path}: defines none of {", ".join(CONFIG_NAMES)}; a config file must assign a dict '
                          f'to one of them')


def package_version() -> str:
    """The installed distribution's version, else (run from a checkout) the package's own ``__version__``,
    which pyproject.toml reads too."""
    from importlib import metadata
    try:
        return metadata.version('sparring')
    except metadata.PackageNotFoundError:
        from sparring import __version__
        return __version__


def _override(text: str) -> Tuple[str, object]:
    """argparse's type for ``--set``: a usage error names the argument when the form is wrong."""
    try:
        return parse_override(text)
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def train_overrides(args: argparse.Namespace) -> List[Tuple[str, object]]:
    """The ``(dotted key, value)`` pairs a ``train`` command line sets: ``--set`` in order, then the budgets."""
    overrides = list(args.set or [])
    if args.max_env_steps is not None:
        if args.max_env_steps < 1:
            raise ConfigError(f'max_env_steps (--max-env-steps) = {args.max_env_steps}: expected a positive whole '
                              f'number of env steps')
        overrides.append(('train.max_env_steps', args.max_env_steps))
    if args.max_wall_seconds is not None:
        overrides.append(('train.max_wall_seconds', args.max_wall_seconds))
    return overrides


def resume_command(args: argparse.Namespace) -> str:
    """The command that continues an interrupted ``train``: the same file, mode, directory and overrides."""
    words = ['sparring', 'train', args.config, '--mode', args.mode, '--resume']
    if args.exp_name:
        words += ['--exp-name', args.exp_name]
    if args.seed is not None:
        words += ['--seed', str(args.seed)]
    if args.max_env_steps is not None:
        words += ['--max-env-steps', str(args.max_env_steps)]
    if args.max_wall_seconds is not None:
        words += ['--max-wall-seconds', f'{args.max_wall_seconds:g}']
    for key, value in args.set or []:
        bare = f'{key}={value}'  # a string as typed, unless it would read back as something else ('123')
        words += ['--set', bare if isinstance(value, str) and parse_override(bare)[1] == value else f'{key}={value!r}']
    return ' '.join(shlex.quote(w) for w in words)


def _build_parser() -> argparse.ArgumentParser:
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument('--debug', action='store_true', default=argparse.SUPPRESS,
                       help='show the traceback of an error, not only its message')
    parser = argparse.ArgumentParser(prog='sparring', description='Reinforcement learning by self-play in a league.',
                                     parents=[debug])
    parser.add_argument('--version', action='version', version=f'sparring {package_version()}')
    sub = parser.add_subparsers(dest='command', required=True)
    train = sub.add_parser('train', help='train from a config file', parents=[debug])
    train.add_argument('config', help='a Python file defining `config = dict(...)`')
    train.add_argument('--seed', type=int, default=None, help='override the config seed')
    train.add_argument('--exp-name', default=None, help='override the experiment directory')
    train.add_argument('--resume', action='store_true', help='continue from the newest checkpoint of the run')
    train.add_argument('--max-env-steps', type=int, default=None,
                       help='override train.max_env_steps (recorded in the run\'s config.json)')
    train.add_argument('--max-wall-seconds', type=float, default=None, metavar='S',
                       help='stop collecting once the run has trained S seconds (counted across resumes), then '
                            'evaluate and save as at the end of its budget: train.max_wall_seconds')
    train.add_argument('--set', action='append', type=_override, default=None, metavar='KEY=VALUE',
                       help='set any config key, e.g. --set policy.learn.lr=3e-4 (repeatable); the value is read '
                            'as a Python literal, else taken as a string, then checked like the config file\'s; '
                            'recorded in the run\'s config.json')
    train.add_argument('--mode', choices=('serial', 'parallel'), default='serial',
                       help='serial: one process; parallel: a commander and worker processes over ZeroMQ')
    worker = sub.add_parser('worker', help='join a parallel run (started elsewhere) as a worker', parents=[debug])
    from sparring.framework.worker_arguments import add_worker_arguments
    add_worker_arguments(worker)
    surgery = sub.add_parser('surgery', help='turn a checkpoint into one for a new config (wider network, '
                                             'more observation features or actions), keeping what it computes',
                             parents=[debug])
    surgery.add_argument('--checkpoint', required=True, help='a ckpt/iter_<n>.pt file or an experiment directory')
    surgery.add_argument('--config', required=True, help='the new config file (a Python file defining `config`)')
    surgery.add_argument('--out', required=True, help='the new experiment directory (resume training there)')
    surgery.add_argument('--widen', choices=('zero', 'split'), default=None,
                         help="new hidden units: 'zero' outgoing weights (default) or Net2Net 'split' copies")
    surgery.add_argument('--split-jitter', type=float, default=None, help="'split': jitter of the 1/k fractions")
    surgery.add_argument('--new-action-offset', type=float, default=None,
                         help='a new action\'s logit = mean old logit + this (default -30)')
    surgery.add_argument('--new-action-prior', type=float, default=None,
                         help='instead: each new action\'s mean probability, calibrated on recorded observations')
    surgery.add_argument('--obs-map', type=json.loads, default=None,
                         help='JSON list: the old index of each new observation feature (-1: new), where the env '
                              'has no observation_names')
    surgery.add_argument('--action-map', type=json.loads, default=None,
                         help='JSON list: the old index of each new action (-1: new)')
    surgery.add_argument('--record-steps', type=int, default=64, help='env steps recorded for the report')
    surgery.add_argument('--trust-run-code', action='store_true', help=TRUST_HELP)
    reading = argparse.ArgumentParser(add_help=False, parents=[debug])  # the commands that look things up by name
    reading.add_argument('--import', dest='imports', action='append', default=None, metavar='MODULE',
                         help='import this module first (from the current folder or the import path), so that '
                              'the envs, bots and other classes it registers can be named (repeatable)')
    _add_use_commands(sub, reading)
    listing = sub.add_parser('list', help='what can be named in a config: registered envs, policies, models, '
                                          'players, leagues and bots, and the ready configs', parents=[reading])
    from sparring.framework.listing import SECTIONS
    listing.add_argument('what', nargs='?', choices=SECTIONS, default=None, help='one section (default: all)')
    _add_check_env(sub, reading)
    return parser


def _add_player_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('run', help='the experiment directory of a run')
    parser.add_argument('--trust-run-code', action='store_true', help=TRUST_HELP)
    which = parser.add_mutually_exclusive_group()
    which.add_argument('--player', default=None, help='a player id (default: the first active player, newest)')
    which.add_argument('--snapshot', default=None, help='a snapshot (historical player) id')


def _add_use_commands(sub, common: argparse.ArgumentParser) -> None:
    """The subcommands that use a trained run: eval, play, export, report."""
    evaluate = sub.add_parser('eval', help='play a trained player against bots or other players (a single agent: its '
                                           'episode returns)', parents=[common])
    _add_player_arguments(evaluate)
    evaluate.add_argument('--against', nargs='+', default=None, metavar='OPPONENT',
                          help='bot:<name>[?options], RUN2:player_id, or a player / snapshot id of RUN (a league '
                               'run needs one; a single-agent run has none: its greedy and sampled episode returns '
                               'are reported)')
    evaluate.add_argument('--games', type=int, default=None, help='games per opponent, or episodes (default: the '
                                                                 'run\'s env.n_evaluator_episodes)')
    evaluate.add_argument('--sampled', action='store_true', help='sample actions (default: greedy; a single agent: '
                                                                  'both, sampled alone with this)')
    evaluate.add_argument('--search', type=int, default=None, metavar='SIMULATIONS',
                          help='choose the player\'s moves by a tree search of this many simulations guided by its '
                               'policy and value (tictactoe, connect_four; default: the network alone)')
    evaluate.add_argument('--seed', type=int, default=None, help='default: the run\'s seed, which replays the '
                                                                 'league\'s own evaluation games')
    evaluate.add_argument('--perfect', nargs='?', const='', default=None, metavar='POSITIONS',
                          help='connect four: the error rate against perfect play on labelled positions (default: '
                               'benchmarks/data/connect_four_positions_2.npz), alone or with --search; --against '
                               'may then be left out')
    evaluate.add_argument('--out', default=None, help='also write the report as JSON to this file')
    play = sub.add_parser('play', help='play a turn-based game against a trained player in the terminal',
                          parents=[common])
    _add_player_arguments(play)
    play.add_argument('--seat', choices=('first', 'second'), default='first', help='your seat (first moves first)')
    play.add_argument('--role', default=None, help='a game whose seats have roles: the role you play (its seat), '
                                                   'against a player of the other role')
    play.add_argument('--seed', type=int, default=None, help='the game\'s seed (chance moves)')
    export = sub.add_parser('export', help='write a trained player\'s network as ONNX or TorchScript',
                            parents=[common])
    _add_player_arguments(export)
    export.add_argument('--format', choices=('onnx', 'torchscript'), default='onnx',
                        help='the file format (default: onnx)')
    export.add_argument('--out', required=True, help='the file to write, with its extension (.onnx, .pt)')
    report = sub.add_parser('report', help='write RUN/report.html from the run\'s saved state (a league\'s table, '
                                           'payoff, ratings and lineage; a single agent\'s return curve)',
                            parents=[common])
    report.add_argument('run', help='the experiment directory of a run')
    report.add_argument('--trust-run-code', action='store_true', help=TRUST_HELP)
    exploit = sub.add_parser('exploit', help='train a fresh exploiter against a frozen player of a run and report '
                                             'its win rate and return over its training (approximate '
                                             'exploitability)', parents=[common])
    _add_player_arguments(exploit)
    exploit.add_argument('--budget-steps', type=int, required=True, help='env steps of the exploiter\'s training')
    exploit.add_argument('--seed', type=int, default=None, help='the exploiter\'s seed (default: the run\'s)')
    exploit.add_argument('--eval-games', type=int, default=None, help='evaluation games per checkpoint (default 400)')
    exploit.add_argument('--eval-every', type=int, default=None, metavar='STEPS',
                         help='env steps between checkpoints (default: a tenth of the budget)')
    exploit.add_argument('--no-exact', action='store_true', help='skip the exact analysis where the game offers one')
    exploit.add_argument('--json', default=None, metavar='OUT', help='also write the report as JSON to this file')


def main(argv: Optional[List[str]] = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            # A warning to the user (a resumed run's changed settings) reads as one line, as errors do, not as a
            # file name, line number and source line of the code that raised it.
            warnings.showwarning = lambda message, category, *rest: print(
                f'sparring {args.command}: warning: {message}', file=sys.stderr)
            return _run(args)
    except Exception as err:
        if not isinstance(err, user_errors()):
            raise
        from sparring.league.errors import LeagueError
        if getattr(args, 'debug', False):
            traceback.print_exc()
        text = err.args[0] if isinstance(err, KeyError) and err.args else str(err)  # a KeyError's str is a repr
        message = ' '.join(str(text).split()) or type(err).__name__
        if 'unknown ' in message and ' Registered ' in message:  # a registry's (or the config's) unknown name
            message += f' {_registration_hint(args.command)}'
        if not isinstance(err, (ConfigError, LeagueError, ConfigFileError)):
            message = f'{type(err).__name__}: {message}'
        hint = '' if getattr(args, 'debug', False) else ' (--debug shows the traceback)'
        print(f'sparring {args.command}: error: {message}{hint}', file=sys.stderr)
        return USAGE_ERROR


def _registration_hint(command: str) -> str:
    """What to do about a name no registry knows: a user's class is registered when its module is imported."""
    if command in ('train', 'surgery', 'worker'):
        return ('A class of your own is registered when its module is imported: name the module in the config\'s '
                'import_names.')
    return ('A class of your own is registered when its module is imported: pass --import MODULE (a run records '
            'the modules of its config\'s import_names, not those a training script imported itself).')


def import_user_modules(names: List[str]) -> None:
    """``--import``: the current folder made importable, then each module imported, registering its classes."""
    if not names:
        return
    folder = os.getcwd()
    make_importable(folder)
    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name is None or not (name == err.name or name.startswith(err.name + '.')):
                raise  # the module is there but imports something missing: its own message says what
            raise ModuleNotFoundError(f'--import {name}: no module named {name!r} in the current folder ({folder}) '
                                      f'or on the import path', name=name) from None


def _run(args: argparse.Namespace) -> int:
    import_user_modules(getattr(args, 'imports', None) or [])
    if args.command in ('train', 'surgery'):
        make_importable(os.path.dirname(os.path.abspath(args.config)))
    if args.command == 'train':
        # The overrides go into the config itself, so the run's config.json records what the run used.
        config = apply_overrides(load_config_file(args.config), train_overrides(args))
        if args.mode == 'parallel':
            from sparring.framework.parallel import parallel_pipeline as pipeline
        else:
            from sparring.framework.serial import serial_pipeline as pipeline
        from sparring.framework.interrupts import exit_status, stopping_signal
        try:
            summary = pipeline(config, seed=args.seed, exp_name=args.exp_name, resume=args.resume)
        except KeyboardInterrupt:
            # The run has saved its state by now (a parallel one has stopped its workers); say so, without a traceback.
            print(f'interrupted; continue with: {resume_command(args)}', file=sys.stderr)
            return exit_status(stopping_signal())
        except StorageFailure as err:  # a full disk: the run stopped with what it acknowledged on the disk
            print(f'sparring train: stopped: {err}: {resume_command(args)}', file=sys.stderr)
            return 1
        printed = ('league_table', 'history', 'eval', 'exact')  # the run printed these as it went
        print(json.dumps({k: v for k, v in summary.items() if k not in printed}, indent=2, default=str))
    elif args.command == 'worker':
        from sparring.framework.workers import check_commander_address, run_worker
        check_commander_address(args.commander)
        return run_worker(args)
    elif args.command == 'surgery':
        from sparring.framework.surgery import surgery
        options = {key: getattr(args, key) for key in ('widen', 'split_jitter', 'new_action_offset',
                                                       'new_action_prior') if getattr(args, key) is not None}
        surgery(args.checkpoint, load_config_file(args.config), args.out, options=options, obs_map=args.obs_map,
                act_map=args.action_map, record_steps=args.record_steps, trust_code=args.trust_run_code)
        print(f'resume with: sparring train {args.config} --exp-name {args.out} --resume')
    elif args.command in ('eval', 'play', 'export', 'report', 'exploit'):
        return _use_run(args)
    elif args.command == 'list':
        from sparring.framework.listing import listing
        print(listing(args.what))
    elif args.command == 'check-env':
        return _check_env(args)
    return 0


# -- sparring check-env ------------------------------------------------------------------------

def _add_check_env(sub, common: argparse.ArgumentParser) -> None:
    check = sub.add_parser('check-env', help='play random games of a two-player env (or one of three or more seats) '
                                             'and check it keeps its protocol (exit 0: passed, warnings printed; 2: '
                                             'problems listed)',
                           parents=[common])
    check.add_argument('env', metavar='ENV_TYPE | CONFIG.py', help='a registered env type (with its default options) '
                                                                   'or a config file (its env section and import_names)')
    check.add_argument('--games', type=int, default=20, help='random games in each form (default 20)')
    check.add_argument('--seed', type=int, default=0, help='seed of the games and of the random moves (default 0)')


def _check_env(args: argparse.Namespace) -> int:
    from sparring.worker.env.check_multiseat import check_any_env  # games of three or more seats too
    env, import_names = args.env, []
    if args.env.endswith('.py') or os.path.sep in args.env:  # a config file, not a registered name
        make_importable(os.path.dirname(os.path.abspath(args.env)))
        config = load_config_file(args.env)
        env, import_names = config.get('env', {}), config.get('import_names', [])
    report = check_any_env(env, games=args.games, seed=args.seed, import_names=import_names)
    print(report.format())
    return 0 if report.passed else USAGE_ERROR


def _use_run(args: argparse.Namespace) -> int:
    """The commands that use a trained run."""
    if args.command == 'eval':
        from sparring.framework.evaluate_player import (evaluate_player, format_perfect_play, format_report,
                                                        json_ready, perfect_play)
        report = {}
        if args.perfect is None or args.against:
            report = evaluate_player(args.run, args.against or [], player=args.player, snapshot=args.snapshot,
                                     games=args.games, sampled=args.sampled, seed=args.seed, search=args.search,
                                     trust_code=args.trust_run_code)
            print(format_report(report))
        if args.perfect is not None:
            report['perfect_play'] = perfect_play(args.run, args.perfect or None, player=args.player,
                                                  snapshot=args.snapshot, search=args.search, seed=args.seed,
                                                  trust_code=args.trust_run_code)
            print(format_perfect_play(report['perfect_play']))
        if args.out:
            with open(args.out, 'w') as f:
                json.dump(json_ready(report), f, indent=2)
            print(f'report: {args.out}')
    elif args.command == 'play':
        from sparring.framework.play import play_game
        # A game played to its end and one quit with q both did what the person asked for: exit 0.
        play_game(args.run, seat=args.seat, player=args.player, snapshot=args.snapshot, seed=args.seed, role=args.role,
                  trust_code=args.trust_run_code)
    elif args.command == 'export':
        from sparring.framework.export import export_player
        info = export_player(args.run, args.out, fmt=args.format, player=args.player, snapshot=args.snapshot,
                             trust_code=args.trust_run_code)
        print(f'{info["player"]} of {info["run"]} written to {info["path"]} ({info["format"]}): inputs '
              f'{", ".join(info["inputs"])}; outputs {", ".join(info["outputs"])}')
    elif args.command == 'report':
        from sparring.framework.player_loader import TrainedRun
        from sparring.framework.report_page import write_final_report
        run = TrainedRun(args.run, args.trust_run_code)
        env = run.cfg.env.type if run.league is not None else (run.cfg.env.get('id') or run.cfg.env.type)
        path = write_final_report(args.run, run.league, {'env': env})
        if path is None:
            raise FileNotFoundError(f'{args.run}: no evaluation recorded in report_data.json; a run writes it at '
                                    f'every evaluation (train.eval_every_iters) and at its end')
        print(f'report: {path}')
    elif args.command == 'exploit':
        from sparring.framework.exploit import exploit_player, format_report
        report = exploit_player(args.run, args.budget_steps, player=args.player, snapshot=args.snapshot,
                                seed=args.seed, eval_games=args.eval_games, eval_every_steps=args.eval_every,
                                exact=not args.no_exact, say=print, trust_code=args.trust_run_code)
        print(format_report(report))
        if args.json:
            with open(args.json, 'w') as f:
                json.dump(report, f, indent=2)
            print(f'report: {args.json}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
