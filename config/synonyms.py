"""Config keys users bring from DI-engine, Stable-Baselines3, ML-Agents and RLlib, and sparring's names for them.

When a config holds a key that no default knows, :func:`synonym_hint` names the sparring key that does
the same job, which a spelling match cannot find (``learning_rate`` is ``lr``, not ``clip_range``).
Each entry lists dotted paths from the config's root; where several fit (PPO and DQN name a setting
differently), the ones present in the section the key was written in are named, else all of them.
"""
from __future__ import annotations

from typing import Dict, Iterable, Optional, Tuple

LR = 'policy.learn.lr'
EPOCHS = 'policy.learn.epochs'
MINIBATCHES = 'policy.learn.num_minibatches'
N_STEPS = 'policy.collect.n_steps'
GAMMA = 'policy.learn.gamma'
GAE_LAMBDA = 'policy.learn.gae_lambda'
CLIP = 'policy.learn.clip_range'
VALUE_CLIP = 'policy.learn.value_clip_range'
ENTROPY = 'policy.learn.entropy_coef'
VALUE_COEF = 'policy.learn.value_coef'
HIDDEN = 'policy.model.hidden_sizes'
MAX_STEPS = 'train.max_env_steps'
EVAL_EVERY = 'train.eval_every_iters'
EVAL_EPISODES = 'env.n_evaluator_episodes'
NUM_ENVS = 'env.collector_env_num'

# foreign key -> (sparring keys, a note on how they relate or None)
SYNONYMS: Dict[str, Tuple[Tuple[str, ...], Optional[str]]] = {
    # optimisation
    'learning_rate': ((LR,), None),
    'learning_rate_schedule': (('policy.learn.anneal_lr',), 'True anneals the learning rate linearly to 0'),
    'n_epochs': ((EPOCHS,), None),
    'num_epoch': ((EPOCHS,), None),
    'num_sgd_iter': ((EPOCHS,), None),
    'epoch_per_collect': ((EPOCHS,), None),
    'update_per_collect': ((EPOCHS, MINIBATCHES, 'policy.learn.updates_per_chunk'),
                           'PPO takes epochs x num_minibatches gradient steps per collect, DQN updates_per_chunk'),
    'batch_size': ((MINIBATCHES, 'policy.learn.batch_size'), 'a PPO minibatch is n_steps x collector_env_num / num_minibatches samples'),
    'minibatch_size': ((MINIBATCHES,), 'a PPO minibatch is n_steps x collector_env_num / num_minibatches samples'),
    'sgd_minibatch_size': ((MINIBATCHES,), 'a PPO minibatch is n_steps x collector_env_num / num_minibatches samples'),
    'discount_factor': ((GAMMA,), None),
    'discount': ((GAMMA,), None),
    'lambd': ((GAE_LAMBDA,), None),
    'lambda': ((GAE_LAMBDA,), None),
    'gae_lambda': ((GAE_LAMBDA,), None),  # DI-engine puts it under collect
    'gamma': ((GAMMA,), None),
    'clip_ratio': ((CLIP,), None),
    'clip_param': ((CLIP,), None),
    'epsilon': ((CLIP, 'policy.collect.eps_start', 'policy.collect.eps_end'), None),
    'clip_range_vf': ((VALUE_CLIP,), None),
    'vf_clip_param': ((VALUE_CLIP,), None),
    'ent_coef': ((ENTROPY,), None),
    'entropy_coeff': ((ENTROPY,), None),
    'entropy_weight': ((ENTROPY,), None),
    'beta': ((ENTROPY,), None),  # ML-Agents' entropy regularisation (the KL penalty's start is beta_init)
    'vf_coef': ((VALUE_COEF,), None),
    'vf_loss_coeff': ((VALUE_COEF,), None),
    'value_weight': ((VALUE_COEF,), None),
    'adv_norm': (('policy.learn.normalize_advantage',), None),
    'normalize_advantages': (('policy.learn.normalize_advantage',), None),
    'grad_clip_value': (('policy.learn.max_grad_norm',), None),
    # collection
    'n_sample': ((N_STEPS,), 'n_steps is per env: a collect gathers n_steps x env.collector_env_num samples'),
    'train_batch_size': ((N_STEPS,), 'n_steps is per env: a collect gathers n_steps x env.collector_env_num samples'),
    'time_horizon': ((N_STEPS,), None),
    'rollout_fragment_length': ((N_STEPS,), None),
    # the run
    'total_timesteps': ((MAX_STEPS,), None),
    'max_env_step': ((MAX_STEPS,), None),
    'max_steps': ((MAX_STEPS, 'env.max_episode_steps'), None),  # ML-Agents: the run; elsewhere: an episode
    'eval_freq': ((EVAL_EVERY,), 'counted in training iterations'),
    'evaluation_interval': ((EVAL_EVERY,), 'counted in training iterations'),
    'checkpoint_interval': (('train.checkpoint_every_iters',), 'counted in training iterations'),
    'save_freq': (('train.checkpoint_every_iters',), 'counted in training iterations'),
    'n_evaluator_episode': ((EVAL_EPISODES,), None),
    'n_eval_episodes': ((EVAL_EPISODES,), None),
    'evaluation_duration': ((EVAL_EPISODES,), None),
    # environments and workers
    'env_manager': (('env.manager',), "e.g. env=dict(manager=dict(type='subprocess'))"),
    'env_id': (('env.id',), None),
    'env_name': (('env.id',), None),
    'n_envs': ((NUM_ENVS,), None),
    'num_envs': ((NUM_ENVS,), None),
    'num_envs_per_worker': ((NUM_ENVS,), None),
    'num_workers': (('parallel.collectors',), None),
    'num_rollout_workers': (('parallel.collectors',), None),
    # models
    'hidden_units': ((HIDDEN,), 'a list of layer widths'),
    'num_layers': ((HIDDEN,), 'a list of layer widths'),
    'net_arch': ((HIDDEN,), 'a list of layer widths'),
    'hidden_size_list': ((HIDDEN,), 'a list of layer widths'),
    'fcnet_hiddens': ((HIDDEN,), None),
    'obs_shape': ((), 'The observation shape comes from the env; leave it out'),
    'action_shape': ((), 'The action space comes from the env; leave it out'),
    'cuda': (('policy.device',), "'cpu', 'cuda', 'cuda:N' or 'auto'"),
    'use_gpu': (('policy.device',), "'cpu', 'cuda', 'cuda:N' or 'auto'"),
}


def synonym_hint(key, path: str, known: Iterable) -> Optional[str]:
    """A sentence naming sparring's key for ``key`` written at ``path`` (dotted, '' for the root), or None.

    ``known`` are the keys the section at ``path`` has; a candidate in that section is named only if it
    is one of them (an option of another policy type is not offered), and when some are, only they are.
    """
    entry = SYNONYMS.get(str(key))
    if entry is None:
        return None
    targets, note = entry
    known = {str(k) for k in known}
    here, elsewhere = [], []
    for target in targets:
        parent, _, name = target.rpartition('.')
        if parent == path:
            if name in known and name != key:
                here.append(name)
        else:
            elsewhere.append(target)
    named = here or elsewhere
    if not named:
        return f'{note}.' if note and not targets else None
    where = f' in "{path}"' if here and path else ''
    listing = ' or '.join(repr(n) for n in named)
    return f'In sparring that is {listing}{where}' + (f' ({note}).' if note else '.')
