"""The example league run whose pictures the ratings and experiment-directory pages show.

``docs/gen/example_league/`` keeps what ``sparring report`` needs to draw a finished league run again: its
``config.json``, ``league_state.npz`` and ``report_data.json`` (50 kB), taken from a real run of the ready
config ``dizoo/board_games/config/tictactoe_league.py`` for 90 seconds. At docs build,
:func:`render_example` rebuilds ``report.html``, ``ratings.svg`` and ``payoff.svg`` from them with the
current code (so the pictures follow the code that draws them) and cuts the report page's charts out as
SVG files of their own.

To record a new example run (a minute and a half on two cores)::

    python docs/gen/example_run.py
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Dict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA_DIR = os.path.join(HERE, 'example_league')
KEPT = ('config.json', 'league_state.npz', 'report_data.json')
RUN_NAME = 'runs/tictactoe_league'  # the name the pages show, as a user's run of the ready config has
CONFIG = os.path.join(ROOT, 'dizoo', 'board_games', 'config', 'tictactoe_league.py')
SECONDS = 90
# The report page's charts, in the order of its sections, by the names the pages link to.
REPORT_CHARTS = ('report-payoff.svg', 'report-ratings.svg', 'report-lineage.svg', 'report-evaluations.svg')


def render_example() -> Dict[str, str]:
    """``{file name: text}``: the example run's report page, its pictures and the page's charts one by one."""
    from sparring.framework.player_loader import TrainedRun
    from sparring.framework.report_page import write_final_report
    from sparring.league.svg_chart import svg_file

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = os.path.join(tmp, RUN_NAME)
        os.makedirs(run_dir)
        for name in KEPT:
            shutil.copy(os.path.join(DATA_DIR, name), run_dir)
        run = TrainedRun(run_dir)
        out = {}
        report = write_final_report(run_dir, run.league, {'env': run.cfg.env.type})
        if report is None:
            raise RuntimeError(f'{DATA_DIR}: report_data.json holds no evaluation to draw')
        out['report.html'] = _read(report).replace(run_dir, RUN_NAME)
        out['ratings.svg'] = _read(run.league.plot_ratings(os.path.join(run_dir, 'ratings.svg')))
        out['payoff.svg'] = _read(run.league.plot_payoff(os.path.join(run_dir, 'payoff.svg')))
    charts = re.findall(r'<svg\b.*?</svg>', out['report.html'], flags=re.S)
    if len(charts) != len(REPORT_CHARTS):
        raise RuntimeError(f'the report page drew {len(charts)} charts; the docs show {len(REPORT_CHARTS)} '
                           f'({", ".join(REPORT_CHARTS)}): update REPORT_CHARTS in {__file__}')
    out.update({name: svg_file(chart) for name, chart in zip(REPORT_CHARTS, charts)})
    return out


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def record() -> None:
    """Train the example run again and keep its files in ``docs/gen/example_league/``."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = os.path.join(tmp, 'run')
        subprocess.run([sys.executable, '-m', 'sparring.framework.cli', 'train', CONFIG, '--exp-name', run_dir,
                        '--set', f'train.max_wall_seconds={SECONDS}', '--set', 'train.eval_every_iters=40'],
                       check=True, cwd=tmp)
        os.makedirs(DATA_DIR, exist_ok=True)
        for name in KEPT:
            shutil.copy(os.path.join(run_dir, name), DATA_DIR)
    for name in ('config.json', 'report_data.json'):  # the run's name as the pages show it, not a temporary folder
        path = os.path.join(DATA_DIR, name)
        with open(path) as f:
            text = f.read()
        with open(path, 'w') as f:
            f.write(text.replace(run_dir, RUN_NAME))
    print(f'kept {", ".join(KEPT)} in {DATA_DIR}')


if __name__ == '__main__':
    record()
