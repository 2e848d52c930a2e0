"""Forward-pass workers in one process: batched passes equal per-row ones, remote acting equals local acting,
bad requests are dropped and counted, the batcher's bound holds, and a silent worker's requests go elsewhere."""
import threading

import numpy as np
import pytest
import torch
import zmq

from sparring.config import compile_config
from sparring.config.registry import POLICY_REGISTRY
from sparring.worker.inference_client import ForwardClient, RemoteActingPolicy
from sparring.worker.chunk import Chunk
from sparring.worker.inference_forward import Batcher, Pending, forward_rows, split_out, stack_group
from sparring.worker.inference_halves import join_chunks
from sparring.worker.remote.inference import INFERENCE_PROTOCOL, InferenceServer, VersionGone
from sparring.worker.remote.schema import INT, STR, Schema, field
from sparring.worker.remote.security import Security
from sparring.worker.remote.transport import RequestClient
from sparring.worker.remote.wire import MessageError, Signer
from sparring.worker.run_kind import run_kind

pytestmark = pytest.mark.usefixtures('one_torch_thread')
SECRET = Signer(b'inference-test-secret-of-enough-length')

CONNECT_FOUR = dict(env=dict(type='connect_four', collector_env_num=4),
                    policy=dict(type='ppo', model=dict(type='cnn', conv_layers=[[16, 4, 1]], hidden_size=32)))
TICTACTOE = dict(env=dict(type='tictactoe', collector_env_num=4),
                 policy=dict(type='ppo', model=dict(hidden_sizes=[16])))


def _policy(config, seed=3, version=7):
    cfg = compile_config(dict(config, league=dict(type='one_vs_one')), save=False)
    obs_space, act_space = run_kind(cfg).spaces()
    policy = POLICY_REGISTRY.get('ppo')(cfg.policy, obs_space, act_space, seed=seed)
    params = {k: v + 0.05 * torch.randn_like(v) if v.is_floating_point() else v for k, v in policy.get_params().items()}
    policy.set_params(params, version)
    return cfg, policy


def _shapes(policy):
    """A symmetric game's observation shapes, as a forward-pass server takes them: its one shape, under no role."""
    return {None: policy.observation_space.shape}


def _observations(policy, n, seed=0):
    space = policy.observation_space
    rng = np.random.default_rng(seed)
    obs = rng.integers(-1, 2, size=(n, *space.shape)).astype(space.dtype)
    mask = rng.random((n, policy.action_space.n)) < 0.7
    mask[:, 0] = True
    return obs, mask


class Networks:
    """The ``networks`` of a forward-pass worker, from policies in hand."""

    def __init__(self, **policies):
        self.policies = policies

    def sync(self, ref, role=None):
        if ref not in self.policies:
            raise MessageError('schema', f'no {ref!r}')
        return self.policies[ref].version

    def get(self, ref, version, role=None):
        policy = self.policies[ref]
        if policy.version != version:
            raise VersionGone(f'{ref} is {policy.version}')
        return policy


@pytest.fixture
def serving():
    """``start(networks, **kw) -> server``: forward-pass servers answering in a thread each, closed at the end."""
    context = zmq.Context()
    started = []

    def start(networks, shape, max_batch=64, max_wait_ms=1.0, delay=0.0):
        server = InferenceServer(context, Security(SECRET), '127.0.0.1', networks, max_batch, max_wait_ms, shape)
        stop = threading.Event()
        if delay:
            run_batch = server.run_batch

            def slow_batch():
                stop.wait(delay)
                run_batch()
            server.run_batch = slow_batch

        def loop():
            while not stop.is_set():
                server.serve(0.02)
        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        started.append((server, stop, thread))
        return server

    yield context, start
    for server, stop, thread in started:
        stop.set()
        thread.join(5.0)
        server.close()
    context.destroy(linger=0)


@pytest.mark.parametrize('config', [CONNECT_FOUR, TICTACTOE], ids=['connect_four_cnn', 'tictactoe_mlp'])
def test_a_batched_forward_pass_equals_per_row_passes(config):
    _, policy = _policy(config)
    obs, _ = _observations(policy, 24)
    whole = forward_rows(policy, obs)
    for i in range(len(obs)):
        row = forward_rows(policy, obs[i:i + 1])
        np.testing.assert_allclose(whole.head[i:i + 1], row.head, atol=1e-5)
        np.testing.assert_allclose(whole.value[i:i + 1], row.value, atol=1e-5)
    # requests stacked into a batch and cut back out get their own rows
    group = [Pending(None, ('p', 7, None), obs[:5]), Pending(None, ('p', 7, None), obs[5:6]), Pending(None, ('p', 7, None), obs[6:])]
    stacked, _ = stack_group(group)
    parts = split_out(forward_rows(policy, stacked), group)
    np.testing.assert_allclose(np.concatenate([p.head for p in parts]), whole.head, atol=1e-5)
    assert [len(p.value) for p in parts] == [5, 1, 18]


@pytest.mark.parametrize('config', [CONNECT_FOUR, TICTACTOE], ids=['connect_four_cnn', 'tictactoe_mlp'])
def test_remote_acting_gives_local_probabilities_values_and_the_same_draws(serving, config):
    context, start = serving
    cfg, policy = _policy(config)
    server = start(Networks(p=policy), _shapes(policy))
    client = ForwardClient(context, Security(SECRET), 'collector-0', lambda: [server.address])
    shell = POLICY_REGISTRY.get('ppo')(cfg.policy, policy.observation_space, policy.action_space, seed=11)
    local = POLICY_REGISTRY.get('ppo')(cfg.policy, policy.observation_space, policy.action_space, seed=11)
    local.set_params(policy.get_params(), policy.version)
    remote = RemoteActingPolicy(shell, 'p', client)
    try:
        assert remote.version == 7
        obs, mask = _observations(policy, 16, seed=1)
        np.testing.assert_allclose(remote.action_probabilities(obs, mask), local.action_probabilities(obs, mask),
                                   atol=1e-5)
        np.testing.assert_allclose(remote.value(obs), local.value(obs), atol=1e-5)
        for _ in range(5):  # the shell's generator draws what the local policy's draws
            mine, theirs = remote.act(obs, action_mask=mask), local.act(obs, action_mask=mask)
            np.testing.assert_array_equal(mine.action, theirs.action)
            np.testing.assert_allclose(mine.log_prob, theirs.log_prob, atol=1e-5)
            assert mask[np.arange(len(obs)), mine.action].all()
    finally:
        client.close()


def _raw_client(context, server) -> RequestClient:
    """A client that sends whatever a test writes, signed as a rollout worker's would be."""
    return RequestClient(context, server.address, Security(SECRET, protocol=INFERENCE_PROTOCOL), 'x', timeout=5.0)


def test_malformed_and_unknown_requests_are_dropped_counted_and_the_worker_goes_on(serving):
    context, start = serving
    _, policy = _policy(TICTACTOE)
    server = start(Networks(p=policy), _shapes(policy))
    raw = _raw_client(context, server)
    obs, _ = _observations(policy, 3)
    try:
        with pytest.raises(MessageError, match='obs must be 3 rows'):  # rows that do not fit the network
            raw.request('forward', dict(ref='p', version=7, rows=3), dict(obs=obs[:, :-1]))
        with pytest.raises(MessageError, match='no .q.'):  # a reference nobody holds
            raw.request('sync', dict(ref='q'))
        with pytest.raises(MessageError) as gone:  # a version not held: the collector syncs again
            raw.request('forward', dict(ref='p', version=6, rows=3), dict(obs=obs))
        assert gone.value.reason == 'version'
        # a body beyond the schema never reaches the worker's code: the transport drops and counts it
        forged = Schema(dict(ref=field(STR), rows=field(INT)))  # what the worker's schema refuses
        hostile = Security(SECRET, protocol=dict(INFERENCE_PROTOCOL, forward=forged))
        intruder = RequestClient(context, server.address, hostile, 'y', timeout=5.0)
        with pytest.raises(MessageError, match='missing field .version.'):
            intruder.request('forward', dict(ref='p', rows=5))
        intruder.close()
        good = raw.request('forward', dict(ref='p', version=7, rows=3), dict(obs=obs))
        np.testing.assert_allclose(good.arrays['value'], policy.value(obs), atol=1e-5)
        stats = server.stats()
        assert stats['malformed'] == 2 and stats['version_gone'] == 1 and stats['rejected'] >= 3
        # the version not held is refused before it joins a batch: only the good request was taken
        assert stats['requests'] == 1 and stats['rows'] == 3
        assert stats['dropped/observation'] == 1 and stats['dropped/schema'] == 1
    finally:
        raw.close()


def test_the_batcher_holds_at_most_max_batch_rows_and_is_due_by_size_or_wait():
    now = [0.0]
    batcher = Batcher(max_batch=8, max_wait_ms=5.0, clock=lambda: now[0])
    assert batcher.due_in() is None
    batcher.add(Pending(None, ('a', 1, None), np.zeros((3, 2))))
    assert batcher.due_in() == pytest.approx(0.005)
    now[0] = 0.004
    batcher.add(Pending(None, ('b', 1, None), np.zeros((4, 2))))
    assert batcher.has_room() and batcher.due_in() == pytest.approx(0.001)
    batcher.add(Pending(None, ('a', 1, None), np.zeros((2, 2))))
    assert not batcher.has_room() and batcher.due_in() == 0.0
    with pytest.raises(RuntimeError, match='max_batch is 8'):
        batcher.add(Pending(None, ('a', 1, None), np.zeros((1, 2))))
    groups = batcher.take()
    assert [[len(r.obs) for r in g] for g in groups] == [[3, 2], [4]] and batcher.rows == 0


def test_a_slow_worker_slows_its_clients_and_holds_no_more_than_a_batch(serving):
    context, start = serving
    _, policy = _policy(TICTACTOE)
    server = start(Networks(p=policy), _shapes(policy), max_batch=8, max_wait_ms=50.0, delay=0.02)
    obs, _ = _observations(policy, 3)
    answered = []

    def client_loop(i):
        client = ForwardClient(context, Security(SECRET), f'c{i}', lambda: [server.address])
        remote = RemoteActingPolicy(policy, 'p', client)
        for _ in range(6):
            answered.append(len(remote.value(obs)))
        client.close()
    threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60.0)
    assert answered == [3] * 36
    # never more than a batch's rows held (the last request in may overshoot by its own rows), the rest queued
    assert server.batcher.most_rows <= 8 - 1 + 3
    assert server.stats()['mean_batch'] > 3  # requests of several clients shared passes


def test_a_request_to_a_silent_worker_is_sent_again_to_another(serving):
    context, start = serving
    _, policy = _policy(TICTACTOE)
    silent = context.socket(zmq.ROUTER)  # takes requests in and never answers, as a worker killed mid-batch
    port = silent.bind_to_random_port('tcp://127.0.0.1')
    server = start(Networks(p=policy), _shapes(policy))
    client = ForwardClient(context, Security(SECRET), 'c', lambda: [f'tcp://127.0.0.1:{port}', server.address],
                           attempt_seconds=0.5, give_up_seconds=10.0)
    try:
        obs, _ = _observations(policy, 4)
        value = RemoteActingPolicy(policy, 'p', client).value(obs)
        np.testing.assert_allclose(value, policy.value(obs), atol=1e-5)
        assert client.resends == 1
    finally:
        client.close()
        silent.close(linger=0)


def test_the_halves_chunks_join_column_by_column_with_the_older_version():
    def chunk(version, columns, results):
        data = {k: np.full((3, columns), version, np.float32) for k in ('obs', 'reward', 'value')}
        return Chunk(data=data, version=version, player_id='p', results=results, episode_returns=[float(version)])
    joined = join_chunks(chunk(5, 4, [('a', 'win')]), chunk(4, 2, [('b', 'loss'), ('c', 'draw')]))
    assert joined.version == 4 and joined.env_steps == 18 and joined.data['reward'].shape == (3, 6)
    np.testing.assert_array_equal(joined.data['obs'][0], [5, 5, 5, 5, 4, 4])
    assert joined.results == [('a', 'win'), ('b', 'loss'), ('c', 'draw')] and joined.episode_returns == [5.0, 4.0]
    with pytest.raises(ValueError, match='differ in arrays or player'):
        join_chunks(chunk(1, 2, []), Chunk(data=dict(reward=np.zeros((3, 2))), version=1, player_id='p'))


def test_expert_iterations_search_evaluates_through_a_forward_pass_worker_as_it_does_locally(serving):
    """The search asks ``probabilities_and_value`` of the policy at every simulation: a remote policy sends
    those batched evaluations to the forward-pass worker, and the search comes out the same."""
    from sparring.worker.env.battle import battle_env_class
    context, start = serving
    cfg, policy = _policy(TICTACTOE)
    server = start(Networks(p=policy), _shapes(policy))
    client = ForwardClient(context, Security(SECRET), 'c', lambda: [server.address])
    remote = RemoteActingPolicy(policy, 'p', client)
    searches = [battle_env_class('tictactoe').search_acting(cfg.env, dict(num_simulations=12), 5) for _ in range(2)]
    obs, mask = _observations(policy, 6, seed=2)
    obs[:, 2] = 1.0  # the to-move plane
    obs[:, :2] = (obs[:, :2] > 0) & (np.arange(2)[:, None, None] == 0)  # a few own stones, none overlapping
    mask = ~obs[:, :2].any(axis=1).reshape(len(obs), -1)
    try:
        (here, target_here, value_here), (there, target_there, value_there) = (
            searches[0].act(policy, obs, mask), searches[1].act(remote, obs, mask))
        np.testing.assert_array_equal(here.action, there.action)
        np.testing.assert_allclose(target_here, target_there, atol=1e-6)
        np.testing.assert_allclose(value_here, value_there, atol=1e-5)
        assert server.stats()['forward_passes'] >= 12  # a batch per simulation, at least
    finally:
        client.close()


def test_a_batch_runs_at_once_when_every_asking_socket_has_its_request_in_it(serving):
    context, start = serving
    _, policy = _policy(TICTACTOE)
    server = start(Networks(p=policy), _shapes(policy), max_batch=64, max_wait_ms=600_000.0)
    client = ForwardClient(context, Security(SECRET), 'c', lambda: [server.address], attempt_seconds=30.0,
                           give_up_seconds=30.0)
    try:  # a wait of ten minutes for others would outlast the attempt: the lone asker is answered instead
        obs, _ = _observations(policy, 2)
        remote = RemoteActingPolicy(policy, 'p', client)
        for _ in range(3):
            np.testing.assert_allclose(remote.value(obs), policy.value(obs), atol=1e-5)
        assert client.resends == 0 and server.stats()['batches'] == 3
    finally:
        client.close()


def test_only_ppo_policies_forward_remotely_sac_acts_in_its_collector():
    """SAC also has ``model``, ``continuous`` and a ``_step``, but its ``_step`` is a gradient step: a forward-pass
    worker must never call it as a forward pass, so SAC (like DQN and the bots) acts whole in its collector."""
    from sparring.worker.inference_forward import forwards_remotely
    _, ppo = _policy(TICTACTOE)
    cfg = compile_config(dict(TICTACTOE, policy=dict(type='sac', model=dict(hidden_sizes=[16])),
                              league=dict(type='one_vs_one')), save=False)
    sac = POLICY_REGISTRY.get('sac')(cfg.policy, *run_kind(cfg).spaces(), seed=0)
    assert forwards_remotely(ppo) and not forwards_remotely(sac)


def _pair(serving, config=CONNECT_FOUR):
    """A server holding networks ``p`` (version 7) and ``q`` (version 3), and a client's remote policies of both
    with local twins (same parameters, same seeds)."""
    context, start = serving
    cfg, p = _policy(config, seed=3, version=7)
    _, q = _policy(config, seed=4, version=3)
    server = start(Networks(p=p, q=q), _shapes(p))
    client = ForwardClient(context, Security(SECRET), 'c', lambda: [server.address])
    make = POLICY_REGISTRY.get('ppo')
    remote, local = {}, {}
    for name, net, seed in (('p', p, 11), ('q', q, 12)):
        remote[name] = RemoteActingPolicy(make(cfg.policy, p.observation_space, p.action_space, seed=seed), name,
                                          client)
        local[name] = make(cfg.policy, p.observation_space, p.action_space, seed=seed)
        local[name].set_params(net.get_params(), net.version)
    return server, client, remote, local


def test_a_wave_acts_for_several_networks_in_one_round_trip_as_they_act_locally(serving):
    import sparring.dizoo  # noqa: F401  (registers the bots)
    from sparring.config.registry import BOT_REGISTRY
    from sparring.worker.inference_wave import ActCall, act_together
    server, client, remote, local = _pair(serving)
    try:
        obs, mask = _observations(local['p'], 10, seed=5)
        for name in remote:
            remote[name].sync()
        before = client.round_trips
        bot = BOT_REGISTRY.get('random')({}, local['p'].observation_space, local['p'].action_space, seed=0)
        for _ in range(3):  # a bot (local) between two remote networks: the networks go in one request
            calls = [ActCall(remote['p'], obs[:6], None, mask[:6]), ActCall(bot, obs[6:8], None, mask[6:8]),
                     ActCall(remote['q'], obs[8:], None, mask[8:])]
            mine = act_together(calls)
            theirs = [local['p'].act(obs[:6], action_mask=mask[:6]), local['q'].act(obs[8:], action_mask=mask[8:])]
            for got, want in zip((mine[0], mine[2]), theirs):
                np.testing.assert_array_equal(got.action, want.action)
                np.testing.assert_allclose(got.log_prob, want.log_prob, atol=1e-5)
                np.testing.assert_allclose(got.value, want.value, atol=1e-5)
            assert mine[1].action.shape == (2,)
        assert client.round_trips - before == 3
        stats = server.stats()
        assert stats['requests'] == 3 and stats['forward_passes'] == 6 and stats['malformed'] == 0
    finally:
        client.close()


def test_a_wave_whose_version_is_gone_syncs_every_network_and_acts_again(serving):
    server, client, remote, local = _pair(serving)
    try:
        obs, _ = _observations(local['p'], 4, seed=6)
        remote['q'].sync()
        remote['p']._version = 5  # pinned to a version the worker no longer holds
        outs = client.wave.forward([(remote['p'], obs[:2], None), (remote['q'], obs[2:], None)])
        assert remote['p'].version == 7 and remote['p'].resyncs == 1
        np.testing.assert_allclose(outs[0].value, local['p'].value(obs[:2]), atol=1e-5)
        np.testing.assert_allclose(outs[1].value, local['q'].value(obs[2:]), atol=1e-5)
        assert server.stats()['version_gone'] == 1
    finally:
        client.close()


def test_malformed_wave_requests_are_dropped_counted_and_the_worker_goes_on(serving):
    from sparring.worker.remote.inference_protocol import MAX_SEGMENTS
    context, start = serving
    _, policy = _policy(TICTACTOE)
    server = start(Networks(p=policy), _shapes(policy))
    raw = _raw_client(context, server)
    obs, _ = _observations(policy, 3)
    try:
        with pytest.raises(MessageError, match='as long as each other'):
            raw.request('forward_wave', dict(refs=['p', 'p'], versions=[7], rows=[2, 1]), dict(obs_0=obs[:2],
                                                                                             obs_1=obs[2:]))
        with pytest.raises(MessageError, match=r"belong to no segment"):  # an array of a third segment
            raw.request('forward_wave', dict(refs=['p', 'p'], versions=[7, 7], rows=[2, 1]),
                        dict(obs_0=obs[:2], obs_1=obs[2:], obs_2=obs[2:]))
        with pytest.raises(MessageError, match='obs_1 must be 2 rows'):  # the second segment's rows do not fit
            raw.request('forward_wave', dict(refs=['p', 'p'], versions=[7, 7], rows=[1, 2]),
                        dict(obs_0=obs[:1], obs_1=obs[1:, :-1]))
        # beyond the bound: a sender whose schema lets it through is refused by the worker's transport
        forged = Schema(dict(refs=field(list), versions=field(list), rows=field(list)), array_names=None)
        intruder = RequestClient(context, server.address, Security(SECRET, protocol=dict(
            INFERENCE_PROTOCOL, forward_wave=forged)), 'y', timeout=5.0)
        too_many = MAX_SEGMENTS + 1
        with pytest.raises(MessageError, match=f'1 to {MAX_SEGMENTS} networks'):
            intruder.request('forward_wave', dict(refs=['p'] * too_many, versions=[7] * too_many, rows=[1] * too_many),
                             {f'obs_{s}': obs[:1] for s in range(too_many)})
        intruder.close()
        with pytest.raises(MessageError) as gone:  # one segment's version not held: the whole wave is refused
            raw.request('forward_wave', dict(refs=['p', 'p'], versions=[7, 6], rows=[2, 1]),
                        dict(obs_0=obs[:2], obs_1=obs[2:]))
        assert gone.value.reason == 'version'
        good = raw.request('forward_wave', dict(refs=['p', 'p'], versions=[7, 7], rows=[2, 1]),
                           dict(obs_0=obs[:2], obs_1=obs[2:]))
        np.testing.assert_allclose(good.arrays['value_0'], policy.value(obs[:2]), atol=1e-5)
        np.testing.assert_allclose(good.arrays['value_1'], policy.value(obs[2:]), atol=1e-5)
        assert good.body['versions'] == [7, 7]
        stats = server.stats()
        assert stats['malformed'] == 3 and stats['version_gone'] == 1 and stats['rejected'] >= 4
        # the wave with a segment whose version is gone was refused before it joined a batch: only the good one ran
        assert stats['requests'] == 1 and stats['rows'] == 3
        assert stats['dropped/wave'] == 2 and stats['dropped/observation'] == 1
    finally:
        raw.close()


def test_a_battle_step_against_a_remote_snapshot_is_one_round_trip(serving):
    """The arena asks the home network and every opponent network of a step in one wave (it asked them one
    request each before)."""
    from sparring.worker.battle_arena import Arena
    from sparring.worker.env.battle import make_battle_env
    server, client, remote, _ = _pair(serving)
    env = make_battle_env(dict(type='connect_four'), 4, 0)
    arena = Arena(env, remote['p'])
    try:
        arena.reset()
        for slot, (oid, opponent) in enumerate([('p', remote['p']), ('q', remote['q']), ('q', remote['q']),
                                                ('p', remote['p'])]):
            arena.set_opponent(slot, oid, opponent)
        for policy in remote.values():  # each pins its version first (a collector does so before each chunk)
            policy.sync()
        before = client.round_trips
        for _ in range(6):
            actions, home = arena.act()
            arena.step(actions)
        assert client.round_trips - before == 6
        assert server.stats()['forward_passes'] >= 6 + 3  # the snapshot moves every other step
    finally:
        env.close()
        client.close()


# -- one request's mistake is its own: checked before it joins a batch ------------------------------------------

LSTM_TICTACTOE = dict(TICTACTOE, policy=dict(type='ppo', model=dict(type='lstm', hidden_size=8, encoder_sizes=[8],
                                                                      bptt_len=4)))


def _in_one_batch(server, calls):
    """Each of ``calls`` (a request, made in a thread of its own) taken in by ``server`` before one batch runs: what
    each call returned or raised, in order. The server is driven here, not by its loop, so the batch is certain."""
    results = [None] * len(calls)

    def run(i, call):
        try:
            results[i] = call()
        except Exception as err:  # noqa: BLE001  (what the request got is what the test looks at)
            results[i] = err
    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for _ in calls:
        got = server.server.recv(10.0)
        assert got is not None
        server.handle(*got)
    server.run_batch()
    for thread in threads:
        thread.join(10.0)
    return results


@pytest.fixture
def driven():
    """``start(networks, shape) -> server``: forward-pass servers with no loop of their own, closed at the end."""
    context = zmq.Context()
    servers = []

    def start(networks, shape):
        servers.append(InferenceServer(context, Security(SECRET), '127.0.0.1', networks, 64, 1000.0, shape))
        return servers[-1]
    yield context, start
    for server in servers:
        server.close()
    context.destroy(linger=0)


def test_a_state_of_the_wrong_width_is_refused_alone_and_its_batch_mates_are_answered(driven):
    """A recurrent player's request whose state is too wide fails no one else's: before, the whole group's pass
    failed and every requester (the honest collector too, which then exited) got an error."""
    context, start = driven
    _, policy = _policy(LSTM_TICTACTOE)
    server = start(Networks(p=policy), _shapes(policy))
    honest_client = ForwardClient(context, Security(SECRET), 'honest', lambda: [server.address])
    honest = RemoteActingPolicy(policy, 'p', honest_client)
    raw = _raw_client(context, server)
    obs, _ = _observations(policy, 4)
    state = policy.initial_state(4)
    wide = tuple(np.zeros((4, part.shape[1] + 3), np.float32) for part in state)
    try:
        assert _in_one_batch(server, [honest.sync]) == [7]
        got = _in_one_batch(server, [
            lambda: raw.request('forward', dict(ref='p', version=7, rows=4),
                                dict(obs=obs, state_0=wide[0], state_1=wide[1])),
            lambda: honest.forward(obs, state)])
        assert isinstance(got[0], MessageError) and 'state is 2 float32 arrays of shapes [(4, 8), (4, 8)]' in str(
            got[0])
        np.testing.assert_allclose(got[1].value, policy.network_output(obs, state).value, atol=1e-5)
        stats = server.stats()
        assert stats['dropped/state'] == 1 and stats['requests'] == 1 and stats['rows'] == 4
        assert honest.refusals == 0
    finally:
        honest_client.close()
        raw.close()


class _StubWorker:
    """What :class:`CommanderNetworks` asks of its worker: the run's players, spaces and the commander's
    parameters (player ``p``'s, version 7; nothing else is stored)."""

    def __init__(self, cfg, policy):
        self.cfg, self.policy = cfg, policy
        self.player_ids = ['p']
        self.player_roles = {}
        self.observation_space, self.action_space = policy.observation_space, policy.action_space

    def fetch_params(self, ref, have_version=None):
        from types import SimpleNamespace
        from sparring.worker.remote.wire import params_to_arrays
        if ref != 'p':
            raise MessageError('schema', f'parameter store: no parameters under {ref!r}')
        return SimpleNamespace(body=dict(unchanged=have_version == 7, version=7),
                               arrays=params_to_arrays(self.policy.get_params()))

    def new_policy(self, seed, player_id=None):
        return POLICY_REGISTRY.get('ppo')(self.cfg.policy, self.observation_space, self.action_space, seed=seed)


def test_unknown_references_mixed_waves_and_bad_values_are_refused_alone_and_the_worker_stays_up(driven):
    """Each of these stopped the forward-pass worker, or failed the honest requests of its batch: a bot's reference
    (the bot registry's error escaped the batch loop), a reference nothing stores, a wave with two segments of
    one recurrent network of which only one carries its state (the stacking raised), NaN observations."""
    from sparring.worker.remote.inference import CommanderNetworks
    context, start = driven
    cfg, policy = _policy(LSTM_TICTACTOE)
    server = start(CommanderNetworks(_StubWorker(cfg, policy), seed=0), _shapes(policy))
    honest_client = ForwardClient(context, Security(SECRET), 'honest', lambda: [server.address])
    honest = RemoteActingPolicy(policy, 'p', honest_client)
    raws = [_raw_client(context, server) for _ in range(4)]
    obs, _ = _observations(policy, 3)
    state = policy.initial_state(3)
    nan = obs.astype(np.float32)
    nan[1, 0, 0, 0] = np.nan
    try:
        assert _in_one_batch(server, [honest.sync]) == [7]
        got = _in_one_batch(server, [
            lambda: raws[0].request('forward', dict(ref='bot:no_such_bot', version=0, rows=3), dict(obs=obs)),
            lambda: raws[1].request('forward', dict(ref='nobody_stored_this', version=0, rows=3), dict(obs=obs)),
            lambda: raws[2].request('forward_wave', dict(refs=['p', 'p'], versions=[7, 7], rows=[2, 1]),
                                    dict(obs_0=obs[:2], state_0_0=state[0][:2], state_1_0=state[1][:2],
                                         obs_1=obs[2:])),
            lambda: raws[3].request('forward', dict(ref='p', version=7, rows=3),
                                    dict(obs=nan, state_0=state[0], state_1=state[1])),
            lambda: honest.forward(obs, state)])
        assert all(isinstance(err, MessageError) and err.reason == 'schema' for err in got[:4]), got
        assert 'is a bot' in str(got[0]) and 'names no network' in str(got[1])
        assert 'obs_1: this recurrent network' in str(got[2]) and 'NaN' in str(got[3])
        np.testing.assert_allclose(got[4].value, policy.network_output(obs, state).value, atol=1e-5)
        stats = server.stats()
        assert (stats['dropped/bot'], stats['dropped/unknown_ref'], stats['dropped/state'],
                stats['dropped/non_finite']) == (1, 1, 1, 1)
        assert stats['requests'] == 1 and stats['malformed'] == 4
        # and the worker serves on: the next batch answers the honest collector again
        again = _in_one_batch(server, [lambda: honest.forward(obs, state)])
        np.testing.assert_allclose(again[0].value, got[4].value, atol=1e-6)
    finally:
        honest_client.close()
        for raw in raws:
            raw.close()


def test_a_forward_pass_that_fails_is_run_again_request_by_request(driven):
    """Should a pass over a group raise anyway (a value no check foresaw), each request is run alone: only the
    one that fails it hears an error."""
    context, start = driven
    _, policy = _policy(TICTACTOE)
    network_output = policy.network_output

    def fussy(obs, state=None):
        if (obs == 7).any():
            raise RuntimeError('a value no check foresaw')
        return network_output(obs, state)
    policy.network_output = fussy
    server = start(Networks(p=policy), _shapes(policy))
    clients = [ForwardClient(context, Security(SECRET), f'c{i}', lambda: [server.address]) for i in range(2)]
    remotes = [RemoteActingPolicy(policy, 'p', client) for client in clients]
    raw = _raw_client(context, server)
    obs, _ = _observations(policy, 2)
    poisoned = obs.copy()
    poisoned[0, 0, 0, 0] = 7
    try:
        assert _in_one_batch(server, [remote.sync for remote in remotes]) == [7, 7]
        got = _in_one_batch(server, [lambda: remotes[0].forward(obs),
                                     lambda: raw.request('forward', dict(ref='p', version=7, rows=2),
                                                         dict(obs=poisoned)),
                                     lambda: remotes[1].forward(obs[:1])])
        np.testing.assert_allclose(got[0].value, network_output(obs).value, atol=1e-5)
        np.testing.assert_allclose(got[2].value, network_output(obs[:1]).value, atol=1e-5)
        assert isinstance(got[1], MessageError) and got[1].reason == 'failed' and 'no check foresaw' in str(got[1])
        assert server.stats()['dropped/failed'] == 1 and server.stats()['forward_passes'] == 2  # the two alone
    finally:
        raw.close()
        for client in clients:
            client.close()


class _Refusing(Networks):
    """Networks whose forward requests for ``p`` are refused ``times`` times (as when another sender's request
    failed the batch they were in), then served."""

    def __init__(self, times, **policies):
        super().__init__(**policies)
        self.times = times

    def get(self, ref, version, role=None):
        if self.times:
            self.times -= 1
            raise RuntimeError('this batch failed')
        return super().get(ref, version, role)


@pytest.mark.parametrize('refusals', [1, 1000], ids=['refused_once_retried', 'refused_always_acts_locally'])
def test_a_collector_whose_requests_are_refused_keeps_collecting(serving, refusals):
    """An error reply about a collector's own request is that request's failure: sent again once, and refused
    again, acted on locally (with the collector's own copy of the network, its own draws) until the next chunk;
    before, any error but 'version' ended the collector."""
    context, start = serving
    cfg, policy = _policy(TICTACTOE)
    server = start(_Refusing(refusals, p=policy), _shapes(policy))
    client = ForwardClient(context, Security(SECRET), 'c', lambda: [server.address])
    shell = POLICY_REGISTRY.get('ppo')(cfg.policy, policy.observation_space, policy.action_space, seed=11)
    remote = RemoteActingPolicy(shell, 'p', client, local=lambda: policy)
    collector = run_kind(cfg).collector(remote, 8, 0, 'p', 0, lambda slot: (['p', 'p'], [remote]))
    try:
        remote.sync()
        chunk = collector.collect()
        assert chunk.env_steps == 8 * 4 and chunk.version == 7
        if refusals == 1:
            assert remote.refusals == 1 and remote.local_forwards == 0
        else:
            assert remote.refusals == 2 and remote.local_forwards > 0 and remote.acting_locally
            remote.sync()  # the next chunk asks the forward-pass worker again
            assert not remote.acting_locally
    finally:
        collector.close()
        client.close()


def _openmp_threads_here():
    """OpenMP's thread count for the calling thread (torch's own getter answers the process's setting)."""
    import ctypes
    import os
    path = os.path.join(os.path.dirname(torch.__file__), 'lib', 'libgomp.so.1')
    if not os.path.exists(path) or (os.cpu_count() or 1) < 2:
        pytest.skip('needs torch built with libgomp and two cores (a new thread defaults to every core)')
    return ctypes.CDLL(path).omp_get_max_threads()


def test_threads_that_run_forward_passes_or_a_half_use_the_process_torch_threads(serving):
    """OpenMP counts threads per thread: a thread left at its default runs each op with a team of every core, whose
    members wait for each other behind busy neighbours (a one-row pass took 48 ms instead of 0.15 ms under load)."""
    from concurrent.futures import ThreadPoolExecutor
    from sparring.worker.inference_halves import Halves
    assert torch.get_num_threads() == 1 and _openmp_threads_here() == 1

    class Half:
        def close(self):
            pass
    halves = Halves(Half(), Half())
    try:
        assert halves.pool.submit(_openmp_threads_here).result() == 1
    finally:
        halves.close()
    context, _ = serving
    _, policy = _policy(TICTACTOE)
    server = InferenceServer(context, Security(SECRET), '127.0.0.1', Networks(p=policy), 8, 1.0,
                             _shapes(policy))

    def serve_then_count():
        server.serve(0.0)
        return _openmp_threads_here()
    try:
        with ThreadPoolExecutor(1) as pool:
            assert pool.submit(_openmp_threads_here).result() > 1  # what a thread gets by default: every core
            assert pool.submit(serve_then_count).result() == 1
    finally:
        server.close()


def test_the_socket_bound_follows_the_run_and_a_request_beyond_it_is_dropped_unread(serving):
    """The bound was 64 MB whatever the run: eight signed connections held half a GB. It is now what this run's
    requests can hold (observations x rows of a step of every env, with a margin), and larger ones are let go
    of frame by frame, unanswered and counted."""
    from sparring.worker.inference_forward import ForwardSpec
    from sparring.worker.remote.inference import ROWS_MARGIN, request_bytes_limit
    from sparring.worker.remote.inference_protocol import MAX_ROWS
    cfg, policy = _policy(CONNECT_FOUR)
    spec = ForwardSpec.of(policy, policy.observation_space.shape)
    assert spec.row_bytes() == 8 * 3 * 6 * 7
    rows = ROWS_MARGIN * 4 * 2  # four envs, two seats
    assert request_bytes_limit(cfg, spec) == rows * spec.row_bytes() + (1 << 20) < 2 << 20
    more_envs = compile_config(dict(CONNECT_FOUR, env=dict(CONNECT_FOUR['env'], collector_env_num=4096),
                                    league=dict(type='one_vs_one')), save=False)
    assert request_bytes_limit(more_envs, spec) == MAX_ROWS * spec.row_bytes() + (1 << 20)  # the protocol's rows
    capped = compile_config(dict(more_envs, parallel=dict(max_message_mb=2)), save=False)
    assert request_bytes_limit(capped, spec) == 2 << 20
    _, lstm = _policy(LSTM_TICTACTOE)
    assert ForwardSpec.of(lstm, lstm.observation_space.shape).row_bytes() == 8 * 27 + 4 * (8 + 8)

    context, _ = serving
    server = InferenceServer(context, Security(SECRET), '127.0.0.1', Networks(p=policy), 8, 1.0,
                             _shapes(policy), max_message_bytes=request_bytes_limit(cfg, spec))
    stop = threading.Event()
    thread = threading.Thread(target=lambda: [server.serve(0.02) for _ in iter(stop.is_set, True)], daemon=True)
    thread.start()
    raw = RequestClient(context, server.address, Security(SECRET, protocol=INFERENCE_PROTOCOL), 'x', timeout=1.0)
    try:
        from sparring.worker.remote.wire import RequestTimeout
        obs, _ = _observations(policy, 4)
        half = np.zeros((1024, *policy.observation_space.shape), np.float64)  # 1 MB a frame, 2 MB in all
        with pytest.raises(RequestTimeout):  # frames within the bound, the message beyond it
            raw.request('forward_wave', dict(refs=['p', 'p'], versions=[7, 7], rows=[1024, 1024]),
                        dict(obs_0=half, obs_1=half))
        assert server.server.rejected.counts.get('oversized') == 1
        huge = np.zeros((2048, *policy.observation_space.shape), np.float64)
        with pytest.raises(RequestTimeout):  # one frame beyond it: ZeroMQ itself drops the connection
            raw.request('forward', dict(ref='p', version=7, rows=len(huge)), dict(obs=huge))
        good = raw.request('forward', dict(ref='p', version=7, rows=4), dict(obs=obs))
        np.testing.assert_allclose(good.arrays['value'], policy.value(obs), atol=1e-5)
    finally:
        stop.set()
        thread.join(5.0)
        raw.close()
        server.close()


def test_a_collectors_remote_policies_act_locally_with_the_commanders_parameters_when_refused(serving):
    """The collector's wiring: its remote policies' local networks hold the commander's parameters (a learning
    player's newest), fetched once a refused chunk needs them."""
    from sparring.worker.inference_client import RemotePlayerPolicies
    context, start = serving
    cfg, policy = _policy(TICTACTOE)
    server = start(_Refusing(1000, p=policy), _shapes(policy))
    client = ForwardClient(context, Security(SECRET), 'c', lambda: [server.address])
    worker = _StubWorker(cfg, policy)
    players = RemotePlayerPolicies(worker, 5, client)
    try:
        remote = players.get('p')
        obs, _ = _observations(policy, 3)
        np.testing.assert_allclose(remote.value(obs), policy.value(obs), atol=1e-5)
        assert remote.acting_locally and players.refusal_counts() == dict(forward_refusals=2.0, local_forwards=1.0)
    finally:
        client.close()


def test_a_wave_refused_twice_asks_for_each_network_alone(serving):
    """A wave is one request: refused once it is sent again, refused twice each network's rows go in a request of
    their own (each retried, or acted on locally, as it needs), and the step is acted on all the same."""
    context, start = serving
    cfg, p = _policy(CONNECT_FOUR, seed=3, version=7)
    _, q = _policy(CONNECT_FOUR, seed=4, version=3)
    server = start(_Refusing(0, p=p, q=q), _shapes(p))
    client = ForwardClient(context, Security(SECRET), 'c', lambda: [server.address])
    make = POLICY_REGISTRY.get('ppo')
    remote = {name: RemoteActingPolicy(make(cfg.policy, p.observation_space, p.action_space, seed=1), name, client)
              for name in ('p', 'q')}
    obs, _ = _observations(p, 5, seed=7)
    try:
        for policy in remote.values():
            policy.sync()
        server.networks.times = 2  # the wave's first segment, at its first and second sending
        before = client.round_trips
        outs = client.wave.forward([(remote['p'], obs[:3], None), (remote['q'], obs[3:], None)])
        np.testing.assert_allclose(outs[0].value, p.value(obs[:3]), atol=1e-5)
        np.testing.assert_allclose(outs[1].value, q.value(obs[3:]), atol=1e-5)
        assert client.round_trips - before == 2 and server.stats()['dropped/unknown_ref'] == 2
    finally:
        client.close()
