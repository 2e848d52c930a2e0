"""The ``sparring`` command line: ``sparring train path/to/config.py [--seed N] [--exp-name X] [--resume]``.

A config file is a Python file that defines ``config`` (a plain dict); ``main_config`` is accepted
too, as DI-engine users name it so.
"""
from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
from typing import List, Optional

CONFIG_NAMES = ('config', 'main_config')


def load_config_file(path: str) -> dict:
    if not os.path.isfile(path):
        raise FileNotFoundError(f'config file not found: {path}')
    namespace = runpy.run_path(path, run_name='sparring_config')
    for name in CONFIG_NAMES:
        if name in namespace:
            config = namespace[name]
            if not isinstance(config, dict):
                raise TypeError(f'{path}: {name} must be a dict, got {type(config).__name__}')
            return config
    raise ValueError(f'{path}: defines none of {", ".join(CONFIG_NAMES)}; a config file must assign a dict '
                     f'to one of them')


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='sparring', description='Reinforcement learning by self-play in a league.')
    sub = parser.add_subparsers(dest='command', required=True)
    train = sub.add_parser('train', help='train from a config file')
    train.add_argument('config', help='a Python file defining `config = dict(...)`')
    train.add_argument('--seed', type=int, default=None, help='override the config seed')
    train.add_argument('--exp-name', default=None, help='override the experiment directory')
    train.add_argument('--resume', action='store_true', help='continue from the newest checkpoint of the run')
    train.add_argument('--max-env-steps', type=int, default=None, help='override train.max_env_steps')
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command == 'train':
        from sparring.framework.serial import serial_pipeline
        config = load_config_file(args.config)
        summary = serial_pipeline(config, seed=args.seed, exp_name=args.exp_name, resume=args.resume,
                                  max_env_steps=args.max_env_steps)
        summary.pop('league_table', None)  # already printed by the run, as a table
        print(json.dumps(summary, indent=2, default=str))
    return 0


if __name__ == '__main__':
    sys.exit(main())
