"""Forward-pass workers in a game whose seats have roles (pursuit: a pursuer sees 6 numbers, an evader 8): each
request names its role and is served by that role's network; rows shaped for the other role, a player asked as the
other role, an unknown role or none are refused alone and counted, and the honest requests of the same batch are
answered. The collector's side keeps a pool per role whose policies name their role."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from sparring.config import compile_config
from sparring.config.registry import POLICY_REGISTRY
from sparring.worker.inference_client import ForwardClient, RemotePlayerPolicies
from sparring.worker.remote.inference import CommanderNetworks
from sparring.worker.remote.security import Security
from sparring.worker.remote.wire import MessageError, params_to_arrays
from sparring.worker.run_kind import run_kind
from tests.worker import test_inference
from tests.worker.test_inference import (SECRET, Networks, _in_one_batch, _observations, _policy, _raw_client,
                                         _shapes)

pytestmark = pytest.mark.usefixtures('one_torch_thread')
driven = test_inference.driven  # the fixture of forward-pass servers driven by the test, shared

PURSUIT = dict(env=dict(type='pursuit', collector_env_num=4), policy=dict(type='ppo', model=dict(hidden_sizes=[16])))
SHAPES = {'pursuer': (6,), 'evader': (8,)}


def _role_policy(cfg, role, seed, version):
    policy = POLICY_REGISTRY.get('ppo')(cfg.policy, *run_kind(cfg).spaces(role), seed=seed)
    policy.role = role
    params = {k: v + 0.05 * torch.randn_like(v) if v.is_floating_point() else v for k, v in policy.get_params().items()}
    policy.set_params(params, version)
    return policy


class _RoleWorker:
    """What :class:`CommanderNetworks` and :class:`RemotePlayerPolicies` ask of their worker in a game with roles:
    the players and their roles, each role's spaces, and the commander's parameters (the players' and a snapshot's)."""

    def __init__(self, cfg, players, snapshots):
        self.cfg, self.players, self.snapshots = cfg, players, snapshots
        self.player_ids = list(players)
        self.player_roles = {pid: policy.role for pid, policy in players.items()}
        self.observation_space = self.action_space = None  # no seat's spaces are every player's

    def spaces(self, role=None):
        return run_kind(self.cfg).spaces(role)

    def fetch_params(self, ref, have_version=None):
        policy = self.players.get(ref) or self.snapshots.get(ref)
        if policy is None:
            raise MessageError('schema', f'parameter store: no parameters under {ref!r}')
        return SimpleNamespace(body=dict(unchanged=have_version == policy.version, version=policy.version,
                                         policy_cfg=dict(self.cfg.policy)),
                               arrays=params_to_arrays(policy.get_params()))

    def new_policy(self, seed, player_id=None):
        role = self.player_roles.get(player_id)
        policy = POLICY_REGISTRY.get('ppo')(self.cfg.policy, *self.spaces(role), seed=seed)
        policy.role = role
        return policy


@pytest.fixture
def role_game():
    cfg = compile_config(PURSUIT, save=False)
    players = dict(pur=_role_policy(cfg, 'pursuer', 3, 7), eva=_role_policy(cfg, 'evader', 4, 5))
    return cfg, _RoleWorker(cfg, players, dict(eva_old=_role_policy(cfg, 'evader', 5, 2)))


def test_each_role_is_served_its_own_network_and_a_request_for_the_other_role_is_refused_alone(driven, role_game):
    context, start = driven
    cfg, worker = role_game
    server = start(CommanderNetworks(worker, seed=0), SHAPES)
    client = ForwardClient(context, Security(SECRET), 'honest', lambda: [server.address])
    collector = RemotePlayerPolicies(worker, 5, client)
    raws = [_raw_client(context, server) for _ in range(6)]
    rng = np.random.default_rng(0)
    pursuer_rows, evader_rows = (rng.uniform(-1, 1, (3, *SHAPES[r])).astype(np.float32) for r in SHAPES)
    try:
        [pursuer], [evader] = (_in_one_batch(server, [lambda pid=pid: collector.get(pid)]) for pid in ('pur', 'eva'))
        old = collector.pool.get('eva_old', 'evader')  # a snapshot of the evader, drawn as a job's opponent
        assert (pursuer.role, evader.role, old.role) == ('pursuer', 'evader', 'evader')
        assert old.shell.observation_space.shape == SHAPES['evader']
        with pytest.raises(ValueError, match="role 'seeker'"):
            collector.pool.get('eva_old', 'seeker')
        assert _in_one_batch(server, [old.sync]) == [2]
        got = _in_one_batch(server, [
            lambda: raws[0].request('forward', dict(ref='pur', version=7, rows=3, role='pursuer'),
                                    dict(obs=evader_rows)),  # the evader's rows for the pursuer's network
            lambda: raws[1].request('forward', dict(ref='pur', version=7, rows=3, role='evader'),
                                    dict(obs=evader_rows)),  # the pursuer asked as an evader
            lambda: raws[2].request('forward', dict(ref='pur', version=7, rows=3), dict(obs=pursuer_rows)),
            lambda: raws[3].request('forward_wave', dict(refs=['pur'], versions=[7], rows=[3], roles=['seeker']),
                                    dict(obs_0=pursuer_rows)),
            lambda: raws[4].request('sync', dict(ref='eva', role='pursuer')),
            lambda: raws[5].request('forward_wave', dict(refs=['pur'], versions=[7], rows=[3],
                                                         roles=['pursuer', 'evader']), dict(obs_0=pursuer_rows)),
            # the honest collector's battle step: both roles' players and the snapshot in one wave
            lambda: client.wave.forward([(pursuer, pursuer_rows, None), (evader, evader_rows, None),
                                         (old, evader_rows, None)])])
        assert all(isinstance(err, MessageError) and err.reason == 'schema' for err in got[:6]), got
        assert 'obs must be 3 rows of shape (6,)' in str(got[0])
        assert "'pur' plays the role 'pursuer', not 'evader'" in str(got[1])
        assert "a request naming no role in a game whose seats have the roles ['pursuer', 'evader']" in str(got[2])
        assert "role 'seeker' is not one of this game's roles" in str(got[3])
        assert "'eva' plays the role 'evader', not 'pursuer'" in str(got[4])
        assert 'refs, versions, rows (and roles) must be as long as each other, got 1, 1, 1 and 2' in str(got[5])
        for out, policy, rows in zip(got[6], (worker.players['pur'], worker.players['eva'],
                                              worker.snapshots['eva_old']), (pursuer_rows, evader_rows, evader_rows)):
            np.testing.assert_allclose(out.value, policy.value(rows), atol=1e-5)
        stats = server.stats()
        assert (stats['dropped/observation'], stats['dropped/role'], stats['dropped/wave']) == (1, 4, 1)
        assert stats['forward_passes'] == 3 and stats['rows'] == 9
        assert collector.refusal_counts() == dict(forward_refusals=0.0, local_forwards=0.0)
    finally:
        client.close()
        for raw in raws:
            raw.close()


def test_a_symmetric_games_worker_refuses_a_request_naming_a_role(driven):
    context, start = driven
    _, policy = _policy(dict(env=dict(type='tictactoe', collector_env_num=4),
                             policy=dict(type='ppo', model=dict(hidden_sizes=[16]))))
    server = start(Networks(p=policy), _shapes(policy))
    raw = _raw_client(context, server)
    obs, _ = _observations(policy, 2)
    try:
        got = _in_one_batch(server, [lambda: raw.request('forward', dict(ref='p', version=7, rows=2, role='pursuer'),
                                                         dict(obs=obs))])
        assert "role 'pursuer': this game's seats have no roles; expected a request naming none" in str(got[0])
        assert server.stats()['dropped/role'] == 1
    finally:
        raw.close()
