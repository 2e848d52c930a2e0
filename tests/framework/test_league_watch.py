"""League metrics in TensorBoard and the report page, from a short league run (TrueSkill on, snapshots,
periodic evaluations); the page rendered by headless Chromium when it is installed."""
import glob
import html
import os
import re
import struct
import subprocess

import numpy as np
import pytest
import torch

from sparring.framework import serial_pipeline
from sparring.framework.cli import main
from sparring.framework.league_watch import payoff_image
from tests.configs import fast_parallel, tiny_league_config

CHROMIUM = '/usr/bin/chromium'


@pytest.fixture(scope='module')
def watched_run(tmp_path_factory, small_league_config):
    pytest.importorskip('trueskill')
    run_dir = str(tmp_path_factory.mktemp('watched') / 'tictactoe')
    config = small_league_config(run_dir, eval_every_iters=6, tensorboard=True, checkpoint_every_iters=12)
    config['league']['rating'] = dict(trueskill=dict(enabled=True))
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        summary = serial_pipeline(config)
    finally:
        torch.set_num_threads(before)
    return run_dir, summary


def read_events(path: str):
    """The events of one TensorBoard event file (TFRecord: length, its CRC, the bytes, their CRC)."""
    from tensorboardX.proto import event_pb2
    with open(path, 'rb') as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        (length,) = struct.unpack('<Q', data[pos:pos + 8])
        event = event_pb2.Event()
        event.ParseFromString(data[pos + 12:pos + 12 + length])
        pos += 12 + length + 4
        yield event


@pytest.mark.slow
def test_tensorboard_holds_elo_trueskill_win_rates_branches_snapshots_and_the_payoff_image(watched_run):
    run_dir, _ = watched_run
    tags, images = set(), 0
    for path in glob.glob(os.path.join(run_dir, 'tb', 'events.out.tfevents.*')):
        for event in read_events(path):
            for value in event.summary.value:
                tags.add(value.tag)
                images += value.HasField('image')
    pid = 'naive_sp_0'
    for tag in (f'league/{pid}/elo', f'league/{pid}/trueskill_mu', f'league/{pid}/trueskill_sigma',
                f'league/{pid}/win_rate/random', f'league/{pid}/win_rate/tictactoe_heuristic',
                f'league/{pid}/branch_games/sp', f'league/{pid}/snapshots', f'league/{pid}/resets', 'league/payoff'):
        assert tag in tags, f'{tag} not in {sorted(tags)}'
    assert images >= 2  # one payoff image per evaluation


def test_payoff_image_colours_known_and_unknown_pairs(watched_run):
    from sparring.framework.player_loader import TrainedRun
    league = TrainedRun(watched_run[0]).league
    image = payoff_image(league)
    assert image.dtype == np.uint8 and image.shape[2] == 3
    assert (image == 224).all(axis=-1).any()  # grey: pairs that never played


def test_report_page_shows_every_player_curves_lineage_and_bots(watched_run):
    run_dir, summary = watched_run
    page = open(os.path.join(run_dir, 'report.html'), encoding='utf-8').read()
    for player in summary['league_table'].splitlines()[2:]:
        assert f'<td>{html.escape(player.split()[0])}</td>' in page
    for heading in ('League table', 'Payoff', 'Ratings', 'Snapshot lineage', 'Against the evaluation opponents'):
        assert f'<h2>{heading}</h2>' in page
    assert 'TrueSkill mu' in page and '<polyline' in page and 'tictactoe_heuristic' in page
    assert re.search(r'<rect [^>]*fill="#[0-9a-f]{6}" [^>]*><title>[^<]+ games, win rate [^<]+</title></rect>'
                     r'<text [^>]*class="cell"[^>]*>\d\.\d\d</text>', page)  # payoff cells with their numbers
    assert 'http' not in page.replace('http://www.w3.org/2000/svg', '')  # nothing fetched
    os.remove(os.path.join(run_dir, 'report.html'))
    assert main(['report', run_dir]) == 0
    assert os.path.exists(os.path.join(run_dir, 'report.html'))


def _chromium(*args: str, profile: str) -> subprocess.CompletedProcess:
    flags = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
             '--disable-background-networking', '--disable-component-update', '--disable-sync',
             f'--user-data-dir={profile}']
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason='chromium is not installed (apt-get install chromium)')
@pytest.mark.slow
def test_report_renders_in_headless_chromium(watched_run, tmp_path):
    Image = pytest.importorskip('PIL.Image')
    run_dir, summary = watched_run
    url = 'file://' + os.path.abspath(os.path.join(run_dir, 'report.html'))
    shot = tmp_path / 'report.png'
    _chromium(f'--screenshot={shot}', '--window-size=1200,1600', url, profile=str(tmp_path / 'profile1'))
    pixels = np.asarray(Image.open(shot).convert('RGB'))
    assert pixels.shape[:2] == (1600, 1200)
    not_white = (pixels < 245).any(axis=-1).mean()
    colours = len(np.unique(pixels.reshape(-1, 3), axis=0))
    assert not_white > 0.02 and colours > 20, (not_white, colours)
    dom = _chromium('--dump-dom', url, profile=str(tmp_path / 'profile2')).stdout
    table = dom[dom.index('<table class="league">'):]
    table = table[:table.index('</table>')]
    listed = re.findall(r'<tr><td>([^<]+)</td>', table)
    expected = [line.split()[0] for line in summary['league_table'].splitlines()[2:]]
    assert sorted(listed) == sorted(expected) and len(listed) >= 3


@pytest.mark.slow
def test_a_parallel_run_logs_the_same_league_metrics_and_writes_the_page(tmp_path):
    """The watch sits in the run coordinator, so the commander's run gets it too; its players load from
    the learner workers' checkpoints."""
    from sparring.framework import parallel_pipeline
    from sparring.framework.player_loader import load_player
    run_dir = str(tmp_path / 'parallel')
    config = tiny_league_config(
        run_dir, battle=dict(eval_opponents=['bot:random']),
        train=dict(max_env_steps=1000, eval_every_iters=4, checkpoint_every_iters=5, tensorboard=True),
        parallel=fast_parallel(evaluators=1))
    summary = parallel_pipeline(config)
    tags = {value.tag for path in glob.glob(os.path.join(run_dir, 'tb', '*.league'))
            for event in read_events(path) for value in event.summary.value}
    assert {'league/naive_sp_0/elo', 'league/naive_sp_0/win_rate/random', 'league/payoff'} <= tags
    page = open(os.path.join(run_dir, 'report.html'), encoding='utf-8').read()
    assert '<td>naive_sp_0</td>' in page and 'Snapshot lineage' in page
    policy = load_player(run_dir)
    assert policy.version > 0 and summary['env_steps'] >= 1000


def test_a_resumed_course_forgets_what_came_after_its_checkpoint(tmp_path):
    from sparring.framework.report_page import load_course, write_report
    from sparring.league import OneVsOneLeague
    course = dict(evaluations=[dict(env_steps=s, player='p', results={}, ratings={}) for s in (10, 20, 30)],
                  snapshots=[dict(env_steps=25, player='p', snapshot='p_h0', iteration=2, reset=False)], exact=[])
    write_report(str(tmp_path), OneVsOneLeague(), course, {'env': 'tictactoe'})
    resumed = load_course(str(tmp_path), up_to_env_steps=20)
    assert [e['env_steps'] for e in resumed['evaluations']] == [10, 20] and resumed['snapshots'] == []
    assert resumed['facts']['env'] == 'tictactoe'
