"""The rollout side of forward-pass workers: policies whose network runs elsewhere, and whose draws stay here.

:class:`RemoteActingPolicy` is the seam between local and remote acting: it is what a collector's policy
pool hands the unchanged collectors (single-agent and battle) in place of a policy. Its ``act`` sends the
observations (and recurrent states) to a forward-pass worker (:mod:`sparring.worker.remote.inference`) and
draws the actions from the returned distribution with the generator of its *shell* -- the policy the
collector would have built to act itself, same seed, never given parameters -- so a chunk holds what it
would hold had the collector acted (:func:`~sparring.worker.inference_forward.act_from_forward`). Remote
policies sharing a client act together through its :class:`ForwardWave`: a battle step's home network and
opponent networks in one ``forward_wave`` request (:func:`~sparring.worker.inference_wave.act_together`).

A chunk's version: :meth:`RemoteActingPolicy.sync` (a collector calls it before each chunk, where it would
fetch parameters) asks the newest version, and every forward pass of the chunk names it. Should the
forward-pass worker no longer hold it (it was restarted), the policy syncs again and goes on with the newer
version; the chunk keeps the version it started with, so its staleness is overstated, never understated.

In a game whose seats have roles each remote policy plays the role of its shell (built for that role's spaces), and
its requests name that role, so the forward-pass worker serves that role's network (:class:`RemotePlayerPolicies`
keeps one pool per role, as a collector acting itself does).

A request the forward-pass worker refuses for another reason (an error reply: its checks found the request
wrong, or its pass failed) is that request's failure, not the collector's: it is sent once more (another
sender's request may have failed the pass it was in), and refused again, the policy acts locally, with a network
holding the reference's parameters (``local``: the collector's own copy, fetched from the commander on first
need) and its own draws as ever, until its next :meth:`RemoteActingPolicy.sync`. Without ``local`` the refusal is
raised.

:class:`ForwardClient` sends requests to the run's forward-pass workers: one at a time, to the first that
answers; a worker that does not answer within ``attempt_seconds`` is left for the next (a killed one is
restarted at a new address, re-read from the address files: a failed address is tried again only when no
other shows up within ``attempt_seconds``), and the request is sent again -- a forward
pass changes nothing, so asking twice is harmless. It gives up after ``give_up_seconds`` without any answer.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import logging
import time
from collections import OrderedDict
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union, cast

import numpy as np

from sparring.config.registry import POLICY_REGISTRY
from sparring.policy.base import Policy
from sparring.worker.inference_forward import (ForwardOut, act_from_forward, forward_rows, forwards_remotely,
                                               probabilities_from_forward)
from sparring.worker.policy_pool import BOT_PREFIX, PolicyPool, RolePools
from sparring.worker.remote.base import PlayerPolicies, RemoteParamStore
from sparring.worker.remote.inference_protocol import (INFERENCE_PROTOCOL, MAX_ROWS, MAX_SEGMENTS, STATE_NAMES,
                                                       segment_array, segment_obs)
from sparring.worker.remote.transport import RequestClient
from sparring.worker.remote.wire import MessageError, RequestTimeout
from sparring.worker.run_kind import run_kind
from sparring.worker.seeds import player_seed

log = logging.getLogger('sparring.worker')


class InferenceUnavailable(RuntimeError):
    """No forward-pass worker answered for ``give_up_seconds``."""


class ForwardClient:
    def __init__(self, context, security, sender: str, addresses: Callable[[], List[str]],
                 attempt_seconds: float = 5.0, give_up_seconds: float = 60.0,
                 check_alive: Callable[[], None] = lambda: None) -> None:
        self.context = context
        self.security = dataclasses.replace(security, protocol=INFERENCE_PROTOCOL)
        self.sender = sender
        self.addresses = addresses
        self.attempt_seconds = attempt_seconds
        self.give_up_seconds = give_up_seconds
        self.check_alive = check_alive
        self.client: Optional[RequestClient] = None
        self.turn = 0
        self.resends = 0  # requests sent again after a forward-pass worker did not answer
        self.round_trips = 0
        self.round_trip_seconds = 0.0
        self.wave = ForwardWave(self)  # the policies acting through this client, in one round trip a step

    def _next_client(self) -> RequestClient:
        """A client of the next forward-pass worker: another than the one that failed, if one is there or its
        file shows a new address within ``attempt_seconds`` (a killed worker's restart writes one)."""
        failed = None
        if self.client is not None:
            failed = self.client.address
            self.client.close()
            self.client = None
        deadline = time.monotonic() + self.give_up_seconds
        patience = time.monotonic() + (self.attempt_seconds if failed else 0.0)
        while True:
            addresses = self.addresses()
            others = [a for a in addresses if a != failed]
            if others or (addresses and time.monotonic() >= patience):
                choices = others or addresses
                address = choices[self.turn % len(choices)]
                self.turn += 1
                self.client = RequestClient(self.context, address, self.security, self.sender,
                                            timeout=self.attempt_seconds)
                return self.client
            if time.monotonic() > deadline:
                raise InferenceUnavailable(f'{self.sender}: no forward-pass worker address appeared in '
                                           f'{self.give_up_seconds:.0f} s (parallel.inference.workers > 0 starts '
                                           f'them; each writes <exp_name>/inference/<id>.address)')
            self.check_alive()
            time.sleep(0.05)

    def request(self, kind: str, body: dict, arrays=None):
        started = time.monotonic()
        while True:
            client = self.client or self._next_client()
            try:
                reply = client.request(kind, body, arrays, timeout=self.attempt_seconds)
            except RequestTimeout:
                self.resends += 1
                if time.monotonic() - started > self.give_up_seconds:
                    raise InferenceUnavailable(f'{self.sender}: no forward-pass worker answered {kind!r} for '
                                               f'{self.give_up_seconds:.0f} s') from None
                self.check_alive()
                log.warning('%s: %s did not answer %r in %.1f s; asking another forward-pass worker', self.sender,
                            client.address, kind, self.attempt_seconds)
                self._next_client()
                continue
            self.round_trips += 1
            self.round_trip_seconds += time.monotonic() - started
            return reply

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None


def refused(err: MessageError) -> bool:
    """Whether an error raised by a request is the forward-pass worker refusing that request (retried, then acted
    on locally), rather than a version it no longer holds (synced again) or keys it does not share (raised)."""
    return err.reason not in ('version', 'unauthenticated')


class RemoteActingPolicy:
    """A policy for collectors whose forward pass runs on a forward-pass worker (see the module).

    Anything else a collector asks of a policy (``recurrent``, ``initial_state``, ``needs_next_obs``, its
    config) is the shell's, and so is its ``role`` (None in a symmetric game), which its requests name. ``local``
    (optional) returns a network holding this reference's parameters, to act with when the forward-pass worker
    refuses a request twice."""

    def __init__(self, shell, ref: str, client: ForwardClient, local: Optional[Callable[[], object]] = None) -> None:
        self.shell = shell
        self.ref = ref
        self.role: Optional[str] = getattr(shell, 'role', None)
        self.client = client
        self.local = local
        self._version: Optional[int] = None
        self.resyncs = 0
        self.refusals = 0  # requests the forward-pass worker refused (not for their version)
        self.local_forwards = 0  # forward passes made here after a refusal
        self.acting_locally = False  # until the next sync: the forward-pass worker refused this reference twice
        self._local_network: Optional[Any] = None  # what acts meanwhile, asked of ``local`` once per chunk

    def __getattr__(self, name):
        return getattr(self.shell, name)

    @property
    def version(self) -> int:
        return self.sync() if self._version is None else self._version

    def sync(self) -> int:
        """Pin the newest version for what follows (the next chunk)."""
        self.acting_locally, self._local_network = False, None
        for attempt in range(2):
            try:
                self._version = int(self.client.request('sync', self._named(dict(ref=self.ref))).body['version'])
                return self._version
            except MessageError as err:
                if not refused(err):
                    raise
                self._refused(err, attempt)
        self.acting_locally = True  # refused twice (and acting locally is possible): this chunk acts here
        self._version = int(self._local().version)
        return self._version

    def _named(self, body: dict) -> dict:
        """``body`` naming this policy's role, in a game whose seats have roles."""
        if self.role is not None:
            body['role'] = self.role
        return body

    def _refused(self, err: MessageError, attempt: int) -> None:
        """Count a refusal; the second of one request is raised unless this policy can act locally."""
        self.refusals += 1
        if attempt and self.local is None:
            raise err
        log.warning('%s: the forward-pass worker refused a request for %r%s: %s', self.client.sender, self.ref,
                    ' again; acting locally until the next chunk' if attempt else '; sending it once more', err)

    def _local(self):
        if self._local_network is None:
            if self.local is None:
                raise RuntimeError(f'{self.ref!r}: no local network to act with after the forward-pass worker '
                                   f'refused it')
            network = self.local()
            if not forwards_remotely(network):
                raise RuntimeError(f'{self.ref!r}: its local network {type(network).__name__} has no forward pass '
                                   f'to act with after the forward-pass worker refused it')
            self._local_network = network
        return self._local_network

    def forward(self, obs: np.ndarray, state=None) -> ForwardOut:
        if self.acting_locally:
            self.local_forwards += 1
            return forward_rows(self._local(), obs, state)
        arrays = dict(obs=np.ascontiguousarray(obs))
        for i, part in enumerate(state or ()):
            arrays[STATE_NAMES[i]] = np.ascontiguousarray(part, dtype=np.float32)
        refusals = 0
        for _ in range(4):
            version = self.version
            if self.acting_locally:  # its sync was refused twice
                return self.forward(obs, state)
            try:
                reply = self.client.request('forward', self._named(dict(ref=self.ref, version=version, rows=len(obs))),
                                            arrays)
            except MessageError as err:
                if refused(err):
                    self._refused(err, refusals)
                    refusals += 1
                    if refusals == 2:
                        self.acting_locally = True
                        return self.forward(obs, state)
                    continue
                if err.reason != 'version':
                    raise
                self.resyncs += 1  # the worker restarted, or moved past this version: go on with the newest
                self.sync()
                continue
            a = reply.arrays
            parts = tuple(a[n] for n in STATE_NAMES if n in a)
            return ForwardOut(a['head'], a['value'], parts or None, a.get('log_std'))
        raise RuntimeError(f'forward pass of {self.ref!r}: no forward-pass worker holds its version')

    @property
    def forward_wave(self) -> 'ForwardWave':
        """What acts for this policy and the others of its socket in one round trip (see
        :func:`~sparring.worker.inference_wave.act_together`)."""
        return self.client.wave

    def act(self, obs: np.ndarray, state=None, deterministic: bool = False, action_mask=None):
        return act_from_forward(self.shell, self.forward(obs, state), deterministic, action_mask)

    def value(self, obs: np.ndarray, state=None) -> np.ndarray:
        return np.asarray(self.forward(obs, state).value, dtype=np.float32)

    def action_probabilities(self, obs: np.ndarray, action_mask=None, state=None) -> np.ndarray:
        return probabilities_from_forward(self.forward(obs, state), action_mask)

    def probabilities_and_value(self, obs: np.ndarray, action_mask=None):
        out = self.forward(obs)
        return probabilities_from_forward(out, action_mask), np.asarray(out.value, dtype=np.float32)


class ForwardWave:
    """Forward passes of several remote policies of one :class:`ForwardClient` in one ``forward_wave`` request
    (at most :data:`~sparring.worker.remote.inference_protocol.MAX_SEGMENTS` networks and ``MAX_ROWS`` rows a
    request; a step with more makes several), and their draws, each with its own policy's generator."""

    def __init__(self, client: ForwardClient) -> None:
        self.client = client

    def act(self, calls: Sequence) -> list:
        """:class:`~sparring.worker.inference_wave.ActCall` s of policies with this wave -> their ``ActOutput`` s."""
        outs = self.forward([(call.policy, call.obs, call.state) for call in calls])
        return [act_from_forward(call.policy.shell, out, call.deterministic, call.action_mask)
                for call, out in zip(calls, outs)]

    def forward(self, items: Sequence[Tuple['RemoteActingPolicy', np.ndarray, object]]) -> List[ForwardOut]:
        """``(policy, obs, state)`` -> each one's :class:`ForwardOut`, in as few round trips as the bounds allow."""
        outs: List[ForwardOut] = []
        start = 0
        while start < len(items):
            stop, rows = start, 0
            while stop < len(items) and stop - start < MAX_SEGMENTS and rows + len(items[stop][1]) <= MAX_ROWS:
                rows += len(items[stop][1])
                stop += 1
            stop = max(stop, start + 1)  # a segment of more than MAX_ROWS goes alone (and is refused, as before)
            part = items[start:stop]
            outs += [part[0][0].forward(part[0][1], part[0][2])] if len(part) == 1 else self._one_wave(part)
            start = stop
        return outs

    def _one_wave(self, items) -> List[ForwardOut]:
        arrays = {}
        for s, (_, obs, state) in enumerate(items):
            arrays[segment_obs(s)] = np.ascontiguousarray(obs)
            for i, state_part in enumerate(state or ()):
                arrays[segment_array(STATE_NAMES[i], s)] = np.ascontiguousarray(state_part, dtype=np.float32)
        if any(p.acting_locally for p, _, _ in items):
            return [p.forward(obs, state) for p, obs, state in items]
        refusals = 0
        for _ in range(4):
            body = dict(refs=[p.ref for p, _, _ in items], versions=[p.version for p, _, _ in items],
                        rows=[len(obs) for _, obs, _ in items])
            if items[0][0].role is not None:  # a game whose seats have roles: each segment's
                body['roles'] = [p.role for p, _, _ in items]
            if any(p.acting_locally for p, _, _ in items):  # a sync was refused twice
                return [p.forward(obs, state) for p, obs, state in items]
            try:
                reply = self.client.request('forward_wave', body, arrays)
            except MessageError as err:
                if refused(err):
                    refusals += 1
                    log.warning('%s: the forward-pass worker refused a wave of %s%s: %s', self.client.sender,
                                [p.ref for p, _, _ in items], ' again; asking for each network alone'
                                if refusals == 2 else '; sending it once more', err)
                    if refusals == 2:  # each network's own request, retried or acted on locally as it needs
                        return [p.forward(obs, state) for p, obs, state in items]
                    continue
                if err.reason != 'version':
                    raise
                for policy, _, _ in items:  # the worker restarted, or moved past a version: go on with the newest
                    policy.resyncs += 1
                    policy.sync()
                continue
            a = reply.arrays
            outs = []
            for s in range(len(items)):
                parts = tuple(a[segment_array(n, s)] for n in STATE_NAMES if segment_array(n, s) in a)
                outs.append(ForwardOut(a[segment_array('head', s)], a[segment_array('value', s)], parts or None,
                                       a.get(segment_array('log_std', s))))
            return outs
        raise RuntimeError(f'forward passes of {[p.ref for p, _, _ in items]}: no forward-pass worker holds their '
                           f'versions')


class RemotePolicyPool(PolicyPool):
    """A :class:`~sparring.worker.policy_pool.PolicyPool` whose stored snapshots act through forward-pass workers
    (bots and learning players as before: the latter are registered as remote policies by the caller); in a game
    with roles, one role's (``role``), its shells built for that role's spaces by ``make_shell``."""

    def __init__(self, make_shell: Callable[[], object], client: ForwardClient, *args,
                 local: Optional[Callable[[str, Optional[str]], object]] = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.make_shell = make_shell
        self.client = client
        self.local = local  # (reference, role) -> a network of its parameters here, for requests refused twice
        self._remote: 'OrderedDict[str, RemoteActingPolicy]' = OrderedDict()

    def get(self, ref: str, role: Optional[str] = None):
        if ref in self._live or ref.startswith(BOT_PREFIX):
            return super().get(ref, role)
        self.check_role(ref, role)
        if ref not in self._remote:
            local = None if self.local is None else functools.partial(self.local, ref, self.role)
            self._remote[ref] = RemoteActingPolicy(self.make_shell(), ref, self.client, local)
            if len(self._remote) > self.max_cached:
                self._remote.popitem(last=False)
        self._remote.move_to_end(ref)
        return self._remote[ref]

    def forget(self, ref: str) -> None:
        super().forget(ref)
        self._remote.pop(ref, None)

    def remote_policies(self) -> List[RemoteActingPolicy]:
        return list(self._remote.values())


class RemotePlayerPolicies:
    """What :class:`~sparring.worker.remote.base.PlayerPolicies` is to a collector, with every network acting on
    forward-pass workers: ``get(player_id)``, ``refresh()`` (pins each player's newest version) and ``pool`` (in a
    game whose seats have roles, one :class:`RemotePolicyPool` per role behind
    :class:`~sparring.worker.policy_pool.RolePools`, as the run's kind gives a collector acting itself)."""

    def __init__(self, worker, seed: int, client: ForwardClient) -> None:
        self.worker = worker
        self.seed = seed
        self.client = client
        # Snapshots' shells are built as the local pool builds snapshots: the pool's seed.
        # Shells only draw: they stay on the CPU whatever policy.collect.device says (that places the networks
        # on the forward-pass workers).
        self.shell_cfg = copy.deepcopy(worker.cfg.policy)
        self.shell_cfg.collect.device = 'cpu'
        store = RemoteParamStore(worker)
        roles = run_kind(worker.cfg).roles
        self.pools = {role: RemotePolicyPool(functools.partial(self._shell, seed, role), client, store,
                                             *self._spaces(role), seed=seed, env_cfg=worker.cfg.env,
                                             local=self.local, role=role)
                      for role in (dict.fromkeys(roles) if roles is not None else (None,))}
        self.pool: Union[RemotePolicyPool, RolePools] = self.pools[None] if roles is None else \
            RolePools(cast(Dict[str, PolicyPool], self.pools))
        self.policies: Dict[str, RemoteActingPolicy] = {}
        self._local: Optional[PlayerPolicies] = None  # networks here, built on a refusal's first need

    def _spaces(self, role: Optional[str]) -> tuple:
        return (self.worker.observation_space, self.worker.action_space) if role is None else \
            self.worker.spaces(role)

    def local(self, ref: str, role: Optional[str] = None):
        """A network of ``ref``'s parameters in this process (a learning player's newest, fetched from the
        commander; a snapshot built for ``role``), for a request the forward-pass workers refused twice."""
        if self._local is None:
            self._local = PlayerPolicies(self.worker, self.seed)
        if ref in self.worker.player_ids:
            return self._local.get(ref, refresh=True)
        return self._local.pool.get(ref, role)

    def get(self, player_id: str, refresh: bool = False) -> RemoteActingPolicy:
        policy = self.policies.get(player_id)
        if policy is None:
            role = self.worker.player_roles.get(player_id)
            shell = self._shell(player_seed(self.seed, self.worker.player_ids.index(player_id)), role)
            if not forwards_remotely(shell):
                raise ValueError(f'parallel.inference: {type(shell).__name__} acts whole (no separate forward pass '
                                 f'and draw); set parallel.inference.workers=0 for it')
            policy = self.policies[player_id] = RemoteActingPolicy(shell, player_id, self.client,
                                                                   functools.partial(self.local, player_id, role))
            self.pool.add_live(player_id, cast(Policy, policy))  # it acts as a policy does (the shell's surface)
            policy.sync()
        elif refresh:
            policy.sync()
        return policy

    def refresh(self) -> None:
        for policy in self.policies.values():
            policy.sync()

    def refusal_counts(self) -> Dict[str, float]:
        """Requests of this collector's policies the forward-pass workers refused, and the passes made here since."""
        policies = [*self.policies.values(), *(p for pool in self.pools.values() for p in pool.remote_policies())]
        return dict(forward_refusals=float(sum(p.refusals for p in policies)),
                    local_forwards=float(sum(p.local_forwards for p in policies)))

    def _shell(self, seed: int, role: Optional[str] = None):
        """A policy that draws for one of ``role``'s networks (never given parameters)."""
        shell = POLICY_REGISTRY.get(self.shell_cfg.type)(self.shell_cfg, *self._spaces(role), seed=seed)
        shell.role = role
        return shell
