"""PPO's config section: the options with their defaults, their constraints, and the checks across keys.

The policy itself is :class:`sparring.policy.ppo.PPOPolicy`; each objective's own keys, constraints and
checks come from its file under :mod:`sparring.policy.objectives`, through the registry there.
"""
from __future__ import annotations

from sparring.config.schema import ConfigError, in_range, of_type, one_of
from sparring.config.registry import MODEL_REGISTRY
from sparring.policy.average_policy import AVERAGE_CONSTRAINTS, AVERAGE_DEFAULTS
from sparring.policy.augment import check_mirror
from sparring.policy.device import check_device_spec
from sparring.policy.objectives import (OBJECTIVE_CONSTRAINTS, OBJECTIVE_DEFAULTS, OBJECTIVES,
                                        check_objective_config)

GRAD_CLIPS = ('none', 'five')


def ppo_default_config() -> dict:
    """PPO's options and their defaults (a new dict each call)."""
    return dict(
        model=dict(type='mlp'),
        device='cpu',  # the learner's: 'cpu', 'cuda', 'cuda:N' or 'auto' (CUDA where torch has it)
        obs_norm=False,  # running mean/variance normalisation of observations
        average=dict(AVERAGE_DEFAULTS),  # an NFSP-style average-policy network (sparring.policy.average_policy)
        collect=dict(
            n_steps=128,  # rollout length T per env per iteration
            device='cpu',  # where collectors, evaluators and snapshots act (same choices)
        ),
        learn=dict(
            # 'clip': clipped surrogate; 'kl_penalty': adaptive KL penalty; 'mmd': magnetic mirror descent;
            # 'search': towards the visit counts of the search it collects by (battle.collect_search)
            objective='clip',
            epochs=4,  # passes over each chunk's samples per update
            num_minibatches=4,  # a recurrent model's minibatches are made of whole windows
            lr=3e-4,  # Adam's learning rate (the start of its schedule when anneal_lr)
            anneal_lr=True,  # linearly to 0 over the run
            adam_eps=1e-5,  # Adam's epsilon (the term that keeps its step finite)
            clip_range=0.2,  # 'clip' only
            anneal_clip_range=False,  # linearly to 0 over the run
            value_clip_range=0.2,  # None: unclipped value loss
            value_coef=0.5,  # the weight of the value loss beside the policy loss
            entropy_coef=0.0,  # the weight of the entropy bonus, which keeps the policy exploring
            gamma=0.99,  # the discount of future rewards
            gae_lambda=0.95,  # GAE's lambda: 1 gives Monte-Carlo returns, 0 one-step TD errors
            normalize_advantage=True,  # scale each minibatch's advantages to zero mean and unit variance
            max_grad_norm=0.5,  # clip the global gradient norm (None: no norm clip)
            grad_clip='none',  # 'five': also clip each element to +-grad_clip_sigmas * sqrt(v) first
            grad_clip_sigmas=5.0,  # 'five': the bound in running RMS of the unclipped gradient
            target_kl=None,  # 'clip' (and 'mmd', 'search'): stop the epoch loop early once approx-KL exceeds this
            value_replay=None,  # also fit the value on the previous chunk; None: only for 'kl_penalty'
            # None: GAE from the values recorded at collection; 'vtrace': V-trace targets and advantages from the
            # current network, importance-weighted by the recorded log-probabilities (chunks of older versions),
            # with gae_lambda as V-trace's lambda
            off_policy=None,
            vtrace_rho_bar=1.0,  # 'vtrace': the clip on the importance weight of each step's own TD error
            vtrace_c_bar=1.0,  # 'vtrace': the clip on the weights that carry later TD errors back (trace cutting)
            **OBJECTIVE_DEFAULTS,  # each objective's own keys, from its file in policy/objectives/
            threads=None,  # torch threads during the update (None: the process's torch_threads)
            cuda_graph=True,  # on CUDA, capture the minibatch step as a graph and replay it (policy/graphed_steps.py)
            mirror=None,  # dict(obs_axis, actions): also train on each step's mirror image (policy/augment.py)
        ),
    )


PPO_CONSTRAINTS = {
    'device': check_device_spec,
    'collect.device': check_device_spec,
    'collect.n_steps': in_range(1, None),
    'learn.objective': one_of(*OBJECTIVES),
    'learn.epochs': in_range(1, None),
    'learn.num_minibatches': in_range(1, None),
    'learn.lr': in_range(0.0, None, open_lo=True),
    'learn.adam_eps': in_range(0.0, None, open_lo=True),
    'learn.clip_range': in_range(0.0, None, open_lo=True),
    'learn.value_clip_range': in_range(0.0, None, open_lo=True, allow_none=True),
    'learn.value_coef': in_range(0.0, None),
    'learn.entropy_coef': in_range(0.0, None),
    'learn.gamma': in_range(0.0, 1.0),
    'learn.gae_lambda': in_range(0.0, 1.0),
    'learn.max_grad_norm': in_range(0.0, None, open_lo=True, allow_none=True),
    'learn.grad_clip': one_of(*GRAD_CLIPS),
    'learn.grad_clip_sigmas': in_range(0.0, None, open_lo=True),
    'learn.target_kl': in_range(0.0, None, open_lo=True, allow_none=True),
    'learn.value_replay': of_type(bool, allow_none=True),
    'learn.off_policy': one_of(None, 'vtrace'),
    'learn.vtrace_rho_bar': in_range(0.0, None, open_lo=True),
    'learn.vtrace_c_bar': in_range(0.0, None, open_lo=True),
    **OBJECTIVE_CONSTRAINTS,
    **AVERAGE_CONSTRAINTS,
    'learn.threads': in_range(1, None, allow_none=True),
    'learn.mirror': check_mirror,
}


def validate_ppo_config(section: dict) -> None:
    """Checks across keys, once the section is complete."""
    check_objective_config(section['learn'])
    model_cls = MODEL_REGISTRY.get(section['model']['type'])
    if section['learn']['off_policy'] == 'vtrace':
        if getattr(model_cls, 'recurrent', False):
            raise ConfigError('config key "policy.learn.off_policy": \'vtrace\' needs a feed-forward model; '
                              f'"policy.model.type" {section["model"]["type"]!r} is recurrent')
        if section['learn']['objective'] == 'search':
            raise ConfigError('config key "policy.learn.off_policy": \'vtrace\' corrects policy-gradient '
                              'advantages; the \'search\' objective learns from visit counts instead; expected None')
    if getattr(model_cls, 'recurrent', False):
        n_steps, bptt_len = section['collect']['n_steps'], section['model']['bptt_len']
        if n_steps % bptt_len:
            raise ConfigError(f'config key "policy.collect.n_steps": {n_steps} is not a multiple of '
                              f'"policy.model.bptt_len" = {bptt_len}; a chunk must hold whole BPTT windows')
