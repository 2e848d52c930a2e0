"""Forward-pass workers in games of three or more seats (three-player Kuhn poker, target chase's teams with Box
moves): a multi-seat collector whose home network and opponent networks run on a forward-pass worker collects the
chunks it collects acting itself, with one round trip a step for all of them; a double-buffered collector's two halves join their rankings, and each half's
games go back to its own job feed."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from sparring.config import compile_section
from sparring.config.registry import BOT_REGISTRY, POLICY_REGISTRY
from sparring.worker.inference_client import ForwardClient, RemoteActingPolicy
from sparring.worker.inference_halves import Halves
from sparring.worker.multiseat_collector import MultiSeatCollector
from sparring.worker.remote.collector import FeedPair, JobFeed
from sparring.worker.remote.security import Security
from tests.worker import test_inference
from tests.worker.test_inference import SECRET, Networks

pytest.importorskip('pyspiel')
from sparring.dizoo.openspiel.multiseat_env import OpenSpielMultiSeatEnv

pytestmark = pytest.mark.usefixtures('one_torch_thread')
serving = test_inference.serving  # the fixture of forward-pass servers answering in threads, shared

S = 3
N_STEPS = 6
MLP = dict(hidden_sizes=[16])
LSTM = dict(type='lstm', hidden_size=8, encoder_sizes=[8], bptt_len=3)  # two windows a chunk of N_STEPS


def _env(num_envs, seed=0):
    return OpenSpielMultiSeatEnv(dict(game='kuhn_poker', game_params=dict(players=S)), num_envs, seed)


def _chase(num_envs, seed=0):
    """Target chase: Box moves, games of four steps, two teams of two seats."""
    from sparring.dizoo.target_chase.target_chase_env import TargetChaseEnv
    return TargetChaseEnv(dict(seats=4, team_size=2, max_steps=4), num_envs, seed)


def _policy(env, seed, version=None, model=MLP):
    cfg = compile_section('policy', dict(type='ppo', model=model, collect=dict(n_steps=N_STEPS),
                                         learn=dict(epochs=1, num_minibatches=1)))
    policy = POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=seed)
    if version is not None:
        params = {k: v + 0.3 * torch.randn_like(v) if v.is_floating_point() else v
                  for k, v in policy.get_params().items()}
        policy.set_params(params, version)
    return policy


def _collect(make_env, home, opponent, chunks=2):
    """Chunks of a home player against ``opponent`` in every other seat (even slots) or in the first, the home
    player itself in the others (odd slots: self-play, several seats held)."""
    env = make_env(4)
    others = env.num_seats - 1

    def sample(slot):
        if slot % 2 == 0:
            return ['p'] + ['q'] * others, [opponent] * others
        return ['p', 'q'] + ['p'] * (others - 1), [opponent] + [home] * (others - 1)
    collector = MultiSeatCollector(env, home, N_STEPS, sample, player_id='p')
    try:
        return [collector.collect() for _ in range(chunks)]
    finally:
        collector.close()


@pytest.mark.parametrize('make_env, model', [(_env, MLP), (_env, LSTM), (_chase, MLP)],
                         ids=['kuhn3_mlp', 'kuhn3_lstm', 'chase_teams_box'])
def test_a_multiseat_step_acts_through_the_forward_pass_worker_in_one_round_trip_as_it_acts_locally(serving, make_env,
                                                                                                    model):
    """The chunks (a recurrent one's window states, a Gaussian one's Box moves) are those of the same policies
    acting in the collector."""
    context, start = serving
    env = make_env(1)
    torch.manual_seed(0)
    p, q = _policy(env, 3, version=7, model=model), _policy(env, 4, version=3, model=model)
    server = start(Networks(p=p, q=q), {None: env.observation_space.shape})
    client = ForwardClient(context, Security(SECRET), 'c', lambda: [server.address])
    remote, local = {}, {}
    for name, net, seed in (('p', p, 11), ('q', q, 12)):  # remote policies and local twins: same parameters, seeds
        remote[name] = RemoteActingPolicy(_policy(env, seed, model=model), name, client)
        local[name] = _policy(env, seed, model=model)
        local[name].set_params(net.get_params(), net.version)
    try:
        for policy in remote.values():  # each pins its version first (a collector does so before each chunk)
            policy.sync()
        before = client.round_trips
        mine = _collect(make_env, remote['p'], remote['q'])
        # one wave a step for the home network and the opponent's, and one for the last observation's values
        assert client.round_trips - before == 2 * (N_STEPS + 1)
        theirs = _collect(make_env, local['p'], local['q'])
        for got, want in zip(mine, theirs):
            assert got.version == want.version == 7 and got.rankings == want.rankings and got.rankings
            assert set(got.data) == set(want.data)
            for name in want.data:
                np.testing.assert_allclose(got.data[name], want.data[name], atol=1e-5, err_msg=name)
        stats = server.stats()
        assert stats['malformed'] == 0 and stats['version_gone'] == 0
        assert stats['forward_passes'] > stats['requests'] > 0  # waves of both networks
    finally:
        env.close()
        client.close()


class _Commander:
    """The commander's side of a job feed: numbered jobs of three-player Kuhn poker against two random bots."""

    def __init__(self):
        self.issued = 0

    def __call__(self, kind, body):
        assert kind == 'jobs'
        jobs = []
        for _ in range(body['count']):
            self.issued += 1
            jobs.append(dict(job_id=f'j{self.issued}', kind='historical', opponent_id='bot_a', param_ref='bot_a',
                             more=[dict(kind='historical', opponent_id='bot_b', param_ref='bot_b')]))
        return SimpleNamespace(body=dict(jobs=jobs))


def test_a_double_buffered_multiseat_collector_reports_each_halfs_rankings_to_its_own_job_feed():
    env = _env(1)
    bots = {name: BOT_REGISTRY.get('random')({}, env.observation_space, env.action_space, seed=k)
            for k, name in enumerate(('bot_a', 'bot_b'))}
    env.close()
    commander = _Commander()
    feeds, halves = [], []
    for seed, size in ((0, 3), (1, 2)):
        feed = JobFeed(commander, 'p', lambda job: bots[job['param_ref']], batch=size)
        halves.append(MultiSeatCollector(_env(size, seed), _policy(env, seed), N_STEPS, feed.sample, player_id='p'))
        feeds.append(feed)
    collector, pair = Halves(*halves), FeedPair(*feeds)
    try:
        reported = []
        for _ in range(3):
            pair.top_up()
            chunk = collector.collect()
            assert chunk.data['reward'].shape == (N_STEPS, S * 5)  # the halves' columns side by side
            results = pair.results_of(chunk)
            assert len(results) == len(chunk.rankings) > 0
            for (_, ranks), (player_ids, want, teams) in zip(results, chunk.rankings):
                assert player_ids == ('p', 'bot_a', 'bot_b') and tuple(ranks) == want and teams is None
            reported += [job_id for job_id, _ in results]
        assert len(reported) == len(set(reported))  # every game reported once, under its own job
        assert set(reported) <= {f'j{k}' for k in range(1, commander.issued + 1)}
    finally:
        collector.close()


@pytest.mark.parametrize('env, rows_a_game', [
    (dict(type='openspiel_multiseat', game='kuhn_poker', game_params=dict(players=3)), 3),
    (dict(type='target_chase', seats=8, team_size=2), 8),  # teams group seats: still a row a seat
], ids=['kuhn3', 'chase_of_eight'])
def test_the_socket_bound_counts_a_row_for_every_seat_of_a_game(env, rows_a_game):
    """A step of a game of S seats may ask S rows a game (self-play seats, recurrent opponents at every seat they
    play); the bound counted two seats of ``env.team_size`` agents, which left target chase's eight seats no margin."""
    from sparring.config import compile_config
    from sparring.worker.inference_forward import ForwardSpec
    from sparring.worker.remote.inference import ROWS_MARGIN, request_bytes_limit
    from sparring.worker.run_kind import run_kind
    cfg = compile_config(dict(env=dict(env, collector_env_num=4), policy=dict(type='ppo')), save=False)
    policy = POLICY_REGISTRY.get('ppo')(cfg.policy, *run_kind(cfg).spaces(), seed=0)
    spec = ForwardSpec.of(policy, policy.observation_space.shape)
    assert request_bytes_limit(cfg, spec) == ROWS_MARGIN * 4 * rows_a_game * spec.row_bytes() + (1 << 20)
