"""Turn a user's plain config dict into a complete, validated, saved EasyDict.

``compile_config`` deep-merges the user's values over the defaults of every class the config
names (``env.type``, ``policy.type``, ``policy.model.type``, ``league.type`` ...), rejects keys
that no default knows (suggesting the closest), checks each value's type against its default
and each class's ``config_constraints``, and writes the result to ``<exp_name>/config.json``,
from which :func:`load_config` rebuilds it to repeat or resume a run.
"""
from __future__ import annotations

import ast
import copy
import difflib
import json
import os
import tempfile
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

from easydict import EasyDict

from sparring.config.schema import ConfigError, all_of, in_range, of_type, one_of
from sparring.config.synonyms import synonym_hint
from sparring.config import registry as reg

CONFIG_FILENAME = 'config.json'

# Sections whose ``type`` key picks a registered class that supplies the section's defaults.
TYPED_SECTIONS: Dict[str, reg.Registry] = {
    'env': reg.ENV_REGISTRY,
    'env.manager': reg.ENV_MANAGER_REGISTRY,
    'policy': reg.POLICY_REGISTRY,
    'policy.model': reg.MODEL_REGISTRY,
    'league': reg.LEAGUE_REGISTRY,
}


def ray_role_resources() -> dict:
    """The Ray resources one worker of a role asks for (``parallel.ray_resources.<role>``)."""
    return dict(
        num_cpus=1.0,  # CPUs Ray reserves for the worker
        num_gpus=0.0,  # GPUs Ray reserves for the worker (a fraction shares one)
        resources={},  # custom Ray resources by name, e.g. {'env_machine': 1}, to place the worker on chosen nodes
    )


def base_config() -> dict:
    """Top-level keys every run has; sections are filled in from the classes they name."""
    return dict(
        exp_name='experiment',  # the experiment directory: everything the run writes goes under it
        seed=0,  # seeds the envs, the networks' initialisation and every random draw of the run
        # Modules to import before anything is looked up, so user code registers itself.
        import_names=[],
        # Intra-op threads per process: the small networks of RL run many times faster with one than with torch's
        # default of one per core, above all on a busy machine; parallel workers use it too, so they never
        # oversubscribe the cores.
        torch_threads=1,
        env=dict(type='gym'),
        policy=dict(type='ppo'),
        league=None,  # a league section makes a battle (multi-agent) run; see sparring.league
        battle=dict(
            train_both_sides=True,  # in self-play games learn from both seats' moves
            eval_deterministic=False,  # greedy actions in evaluation games (False: sample)
            eval_opponents=[],  # extra evaluation opponents (param refs, e.g. 'bot:random') beside reference players
            # small zero-sum games (matrix games, Kuhn/Leduc poker): evaluate exploitability exactly and
            # give the league's ``nash`` branch the exact meta-game instead of win rates
            exact_analysis=False,
            # serial mode: dict(every_evaluations=K, budget_steps=N[, eval_games=G]) trains an exploiter against
            # the first player at every K-th periodic evaluation (framework/exploit_schedule.py)
            exploit=None,
            # expert iteration: dict(num_simulations=N[, c_puct, sample_moves]) makes each learning player choose
            # its collected moves by a search over the game's rules guided by its own network, recording the
            # search's visit counts for policy.learn.objective='search' (an env that offers one: tictactoe,
            # connect_four; dizoo/board_games/search_acting.py)
            collect_search=None,
        ),
        train=dict(
            max_env_steps=1_000_000,  # the env-step budget: collection stops once the run has made this many
            max_wall_seconds=0.0,  # stop after this much training time (0: no limit)
            eval_every_iters=10,  # 0 disables periodic evaluation
            # serial mode: play each evaluation in a child process beside training, its result recorded
            # eval_every_iters rounds later (the same rounds on every machine, so a run stays reproducible)
            eval_in_background=False,
            checkpoint_every_iters=50,  # 0 keeps only the final checkpoint
            progress_bar=True,  # a progress bar on a terminal (log lines only when off, or when not a terminal)
            tensorboard=True,  # write TensorBoard event files under <exp_name>/tb/
        ),
        # Parallel mode (sparring.framework.parallel): a commander and worker processes over ZeroMQ.
        parallel=dict(
            collectors=2,  # local collector processes
            evaluators=1,  # local evaluator processes (0: the commander runs the final evaluation itself)
            local_learners=True,  # start a learner process per active player here (False: join them by hand)
            learner_replicas=1,  # learner processes per player, averaging gradients (torch.distributed)
            launcher='local',  # 'local': forked processes here; 'ray': Ray actors (placement, GPUs, restarts)
            ray_address=None,  # the Ray cluster to use (None: $RAY_ADDRESS, else one started for the run)
            # what Ray reserves for one worker of each role (launcher='ray')
            ray_resources=dict(learner=ray_role_resources(), collector=ray_role_resources(),
                               evaluator=ray_role_resources(), inference=ray_role_resources()),
            chunk_len=None,  # env steps per chunk and env (None: policy.collect.n_steps)
            publish_every=1,  # a learner publishes its parameters every this many updates
            max_chunks_ahead=None,  # chunks a player's learner may have waiting before collectors wait (None: one per collector, at least 2 with forward-pass workers)
            max_staleness=8,  # chunks made by parameters this many versions old are dropped (None: keep all)
            target_sample_reuse=0.0,  # re-train recent chunks while waiting for data, up to this reuse (0: off)
            replay_chunks=4,  # recent chunks kept for that
            host='127.0.0.1',  # where the commander and learners listen; another host needs authentication
            port=0,  # the commander's port (0: any free one)
            advertise_host=None,  # the name other machines reach this one by (default: host, or the hostname)
            auth='hmac',  # 'hmac' (shared secret; a local run makes one up), 'curve', or 'none' (loopback only)
            key_file=None,  # file holding the shared secret when $SPARRING_SECRET is not set
            curve_dir=None,  # CURVE keys (messaging.create_curve_keys) when auth='curve'
            heartbeat_seconds=1.0,  # how often every worker tells the commander it is alive
            worker_timeout_seconds=20.0,  # a worker (or the commander) silent this long is gone
            request_timeout_seconds=30.0,  # how long a worker resends a request without an answer before it gives up
            collector_queue=2,  # chunks a collector may queue towards a learner before it blocks
            learner_queue=4,  # chunks waiting at a learner before its collectors block
            max_restarts=5,  # restarts of one local worker before the run gives up
            save_every_seconds=30.0,  # the commander's state snapshot (the journal is written at once)
            journal_segment_mb=16.0,  # the journal is sealed in segments of about this size, recycled after snapshots
            journal_audit_mb=64.0,  # sealed segments kept for audits once no snapshot needs them (0: none)
            log_every_seconds=10.0,  # the commander's progress line (and TensorBoard's run scalars) every this often
            drain_timeout_seconds=60.0,  # at the end, how long a learner waits for chunks still on their way
            shutdown_seconds=20.0,  # how long workers get to exit before they are killed
            max_message_mb=1024,  # the largest message a socket accepts; a larger one is refused unread
            audit_reports=False,  # collectors keep a line per chunk report in workers/<id>/reports.jsonl (audits)
            # Forward-pass workers (OpenAI Five's fourth machine): networks that act for many collectors, in batches.
            inference=dict(
                workers=0,  # forward-pass worker processes; collectors keep envs and draws, they run networks (0: off)
                max_batch=256,  # rows one forward pass gathers at most, from all its collectors' requests
                max_wait_ms=2.0,  # how long a batch's first request waits for others before the pass runs
                # a collector steps half its envs while the other half waits for its actions (two threads); off by
                # default: on two cores the threads' switches cost more than they hide (forward_pass.py, 1,875
                # against 1,450 env steps/s quiet, 1,428 against 1,368 loaded); worth trying where cores are
                # spare or the forward-pass worker is on another machine
                double_buffer=False,
            ),
        ),
    )


def _check_exploit_spec(value) -> None:
    """``battle.exploit``: None or dict(every_evaluations, budget_steps[, eval_games]), each an int >= 1."""
    if value is None:
        return
    if not isinstance(value, dict) or not {'every_evaluations', 'budget_steps'} <= set(value) <= {
            'every_evaluations', 'budget_steps', 'eval_games'}:
        raise ConfigError(f'expected None or dict(every_evaluations=<int>, budget_steps=<int>[, eval_games=<int>]), '
                          f'got {value!r}')
    for key in sorted(value):
        if isinstance(value[key], bool) or not isinstance(value[key], int) or value[key] < 1:
            raise ConfigError(f'"{key}": expected an int >= 1, got {value[key]!r}')


BASE_CONSTRAINTS = {
    'exp_name': of_type(str),
    'seed': in_range(0, 2 ** 32 - 1),
    'torch_threads': in_range(1, None),
    'train.max_env_steps': in_range(1, None),
    'train.max_wall_seconds': in_range(0.0, None),
    'train.eval_every_iters': in_range(0, None),
    'train.eval_in_background': of_type(bool),
    'battle.exploit': _check_exploit_spec,
    'battle.collect_search': of_type(dict, allow_none=True),
    'train.checkpoint_every_iters': in_range(0, None),
    'parallel.collectors': in_range(0, None),
    'parallel.evaluators': in_range(0, None),
    'parallel.chunk_len': all_of(of_type(int, allow_none=True), in_range(1, None, allow_none=True)),
    'parallel.publish_every': in_range(1, None),
    'parallel.max_chunks_ahead': all_of(of_type(int, allow_none=True), in_range(1, None, allow_none=True)),
    'parallel.max_staleness': all_of(of_type(int, allow_none=True), in_range(0, None, allow_none=True)),
    'parallel.target_sample_reuse': in_range(0.0, None),
    'parallel.replay_chunks': in_range(1, None),
    'parallel.port': in_range(0, 65535),
    'parallel.advertise_host': of_type(str, allow_none=True),
    'parallel.auth': one_of('hmac', 'curve', 'none'),
    'parallel.key_file': of_type(str, allow_none=True),
    'parallel.curve_dir': of_type(str, allow_none=True),
    'parallel.heartbeat_seconds': in_range(0.0, None, open_lo=True),
    'parallel.worker_timeout_seconds': in_range(0.0, None, open_lo=True),
    'parallel.request_timeout_seconds': in_range(0.0, None, open_lo=True),
    'parallel.collector_queue': in_range(1, None),
    'parallel.learner_queue': in_range(1, None),
    'parallel.max_restarts': in_range(0, None),
    'parallel.save_every_seconds': in_range(0.0, None, open_lo=True),
    'parallel.journal_segment_mb': in_range(0.0, None, open_lo=True),
    'parallel.journal_audit_mb': in_range(0.0, None),
    'parallel.log_every_seconds': in_range(0.0, None, open_lo=True),
    'parallel.drain_timeout_seconds': in_range(0.0, None),
    'parallel.shutdown_seconds': in_range(0.0, None),
    'parallel.max_message_mb': in_range(1, None),
    'parallel.audit_reports': of_type(bool),
    'parallel.learner_replicas': in_range(1, None),
    'parallel.launcher': one_of('local', 'ray'),
    'parallel.ray_address': of_type(str, allow_none=True),
    'parallel.inference.workers': in_range(0, None),
    'parallel.inference.max_batch': all_of(of_type(int), in_range(1, 4096)),
    'parallel.inference.max_wait_ms': in_range(0.0, 1000.0),
    'parallel.inference.double_buffer': of_type(bool),
}


class CompiledConfig(EasyDict):
    """A compiled config: an EasyDict that prints one key per line (:func:`format_config`), so that
    ``print(compile_config(config))`` can be read; ``repr`` stays the dict's. Its sections are plain
    EasyDicts. (Only dunder methods here: EasyDict copies any other class attribute into the dict.)"""

    def __str__(self) -> str:
        return format_config(self)


def compile_config(user_config: dict, *, seed: Optional[int] = None, exp_name: Optional[str] = None,
                   save: bool = True) -> EasyDict:
    """Merge, validate and (optionally) save a config; returns an EasyDict (a :class:`CompiledConfig`, which
    prints readably).

    ``seed`` and ``exp_name`` override the config's own values (the CLI's ``--seed`` and
    ``--exp-name``).
    """
    if not isinstance(user_config, dict):
        raise ConfigError(f'config: expected a dict, got {type(user_config).__name__}')
    user_config = copy.deepcopy(dict(user_config))
    if seed is not None:
        user_config['seed'] = seed
    if exp_name is not None:
        user_config['exp_name'] = exp_name
    imports = user_config.get('import_names', [])
    if not isinstance(imports, (list, tuple)):
        raise ConfigError(f'config key "import_names": expected a list of module names, got {imports!r}')
    reg.ensure_builtins()
    reg.import_modules(imports)

    merged = _merge(base_config(), user_config, path='')
    _check_constraints(BASE_CONSTRAINTS, merged, '')
    cfg = CompiledConfig(merged)
    if save:
        save_config(cfg, cfg.exp_name)
    return cfg


def _merge(default: Any, user: Any, path: str, resolve_type: bool = True, nullable: frozenset = frozenset()) -> Any:
    """Merge ``user`` over ``default`` at ``path`` (dotted, '' for the root), validating.

    ``resolve_type=False`` merges a typed section whose class defaults are already in ``default``.
    ``nullable`` holds the dotted paths whose constraint accepts ``None`` although the default
    is a value (e.g. a clip range that ``None`` switches off).
    """
    if resolve_type and path in TYPED_SECTIONS:
        return _merge_typed_section(default, user, path)
    if isinstance(default, dict):
        if not isinstance(user, dict):
            raise ConfigError(f'config key "{path}": expected a dict, got {type(user).__name__} {user!r}')
        if not default:  # an empty default dict is free-form: kwargs passed through untouched
            return copy.deepcopy(user)
        out = copy.deepcopy(default)
        for key, value in user.items():
            if key not in default:
                raise ConfigError(_unknown_key_message(key, default, path))
            out[key] = _merge(default[key], value, _join(path, key), nullable=nullable)
        for key, value in default.items():
            sub = _join(path, key)
            if key not in user and sub in TYPED_SECTIONS and value is not None:
                out[key] = _merge_typed_section(value, {}, sub)
        return out
    if user is None and path in nullable:
        return None
    return _check_type(default, user, path)


def compile_section(path: str, section: Mapping) -> EasyDict:
    """One typed section (``'env'``, ``'env.manager'``, ``'policy'`` ...) completed and checked.

    The compiler's own rule for a section, so a partial dict (a test, a script that skips
    ``compile_config``) gets exactly the defaults and errors of a full config; a compiled
    section passes through unchanged.
    """
    if path not in TYPED_SECTIONS:
        raise ConfigError(f'compile_section: {path!r} is not a typed section; one of {sorted(TYPED_SECTIONS)}')
    if not isinstance(section, dict):
        raise ConfigError(f'config section "{path}": expected a dict, got {type(section).__name__} {section!r}')
    return EasyDict(_merge_typed_section(None, dict(section), path))


def _merge_typed_section(default: Optional[dict], user: Any, path: str) -> Optional[dict]:
    if user is None:
        return None if default is None else _merge_typed_section(default, {}, path)
    if not isinstance(user, dict):
        raise ConfigError(f'config key "{path}": expected a dict with a "type", got {user!r}')
    default = default or {}
    kind = user.get('type', default.get('type'))
    if kind is None:
        raise ConfigError(f'config section "{path}" needs a "type"; one of: '
                          f'{", ".join(TYPED_SECTIONS[path].names())}')
    registry = TYPED_SECTIONS[path]
    try:
        cls = registry.get(kind)
    except reg.RegistryError as err:
        raise ConfigError(f'config key "{path}.type": {err}') from None
    return merge_class_section(cls, user, path, enclosing_defaults=default, type_name=kind)


def merge_class_section(cls, user: Optional[dict], path: str, *, enclosing_defaults: Optional[dict] = None,
                        type_name: Optional[str] = None, replace_keys=(), validate: bool = True) -> dict:
    """``user`` merged over ``cls.default_config()`` at ``path``, type- and constraint-checked.

    The rule ``compile_config`` applies to every class-typed section, public so that a class
    with sub-sections of its own (a league's per-player configs) checks them the same way.
    ``enclosing_defaults`` are an enclosing class's defaults for this section; keys in
    ``replace_keys`` are taken whole from ``user`` (a dict of names is not merged key by key).
    ``validate`` runs the class's ``validate_config(section)`` hook last.
    """
    user = dict(user or {})
    constraints = getattr(cls, 'config_constraints', {})
    nullable = frozenset(_join(path, key) for key, check in constraints.items() if getattr(check, 'allow_none', False))
    own = copy.deepcopy(cls.default_config()) if hasattr(cls, 'default_config') else {}
    if type_name is not None:
        own['type'] = type_name
    # The enclosing class's defaults for this section refine the section class's own defaults,
    # but only where the keys still exist (the user may have switched to another type).
    for key, value in (enclosing_defaults or {}).items():
        if key != 'type' and key in own:
            own[key] = _merge(own[key], value, _join(path, key), nullable=nullable)
    for key in user:  # a class's own section is never free-form, even when it has no options
        if key not in own:
            raise ConfigError(_unknown_key_message(key, own, path))
    replaced = {k: copy.deepcopy(user.pop(k)) for k in replace_keys if k in user and k in own}
    merged = _merge(own, user, path, resolve_type=False, nullable=nullable) if own else {}
    merged.update(replaced)
    _check_constraints(constraints, merged, path)
    hook = getattr(cls, 'validate_config', None)
    if validate and hook is not None:
        hook(merged)
    return merged


def _join(path: str, key: str) -> str:
    return f'{path}.{key}' if path else str(key)


def _check_type(default: Any, value: Any, path: str) -> Any:
    if default is None:
        return copy.deepcopy(value)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f'config key "{path}": expected bool, got {type(value).__name__} {value!r}')
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53:
                return int(value)  # 1e6 written for a step count is still an integer
            raise ConfigError(f'config key "{path}": expected int, got {type(value).__name__} {value!r}')
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f'config key "{path}": expected a number, got {type(value).__name__} {value!r}')
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ConfigError(f'config key "{path}": expected str, got {type(value).__name__} {value!r}')
        return value
    if isinstance(default, (list, tuple)):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f'config key "{path}": expected a list, got {type(value).__name__} {value!r}')
        return list(copy.deepcopy(value))
    return copy.deepcopy(value)


def _unknown_key_message(key: Any, known: dict, path: str) -> str:
    where = f'"{path}"' if path else 'the top level'
    if not known:
        return f'config: unknown key {key!r} in {where}, which takes no options.'
    synonym = synonym_hint(key, path, known)  # another library's name: a spelling match would mislead
    close = [] if synonym else difflib.get_close_matches(str(key), [str(k) for k in known], n=3, cutoff=0.5)
    hint = f' {synonym}' if synonym else f' Did you mean {" or ".join(repr(c) for c in close)}?' if close else ''
    return (f'config: unknown key {key!r} in {where}.{hint} '
            f'Known keys there: {", ".join(sorted(map(str, known)))}.')


def _check_constraints(constraints: dict, section: dict, path: str) -> None:
    for dotted, check in constraints.items():
        node: Any = section
        for part in dotted.split('.'):
            if not isinstance(node, dict) or part not in node:
                node = _MISSING
                break
            node = node[part]
        if node is _MISSING:
            continue
        try:
            check(node)
        except (ConfigError, ValueError, TypeError) as err:
            raise ConfigError(f'config key "{_join(path, dotted)}": {err}') from None


_MISSING = object()


def to_plain(obj: Any) -> Any:
    """A deep copy made only of dicts (str keys), lists and Python scalars: what JSON can hold."""
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if hasattr(obj, 'item') and callable(obj.item):  # numpy scalars
        return obj.item()
    return obj


def save_config(cfg: dict, exp_dir: str) -> str:
    """Write a compiled config as JSON into ``exp_dir``, atomically; returns the file path."""
    os.makedirs(exp_dir, exist_ok=True)
    path = os.path.join(exp_dir, CONFIG_FILENAME)
    # A new temporary file (never an existing one, nor a link planted in the run directory) renamed into place.
    fd, tmp = tempfile.mkstemp(prefix='.' + CONFIG_FILENAME + '.', suffix='.tmp', dir=exp_dir)
    with os.fdopen(fd, 'w') as f:
        json.dump(to_plain(cfg), f, indent=2, sort_keys=True)
        f.write('\n')
    os.replace(tmp, path)
    return path


def parse_override(text: str) -> Tuple[str, Any]:
    """``'dotted.key=value'`` as ``(key, value)``: the value read as a Python literal (``3e-4``, ``True``,
    ``None``, ``[64, 64]``, ``'text'``), else taken as the string it is (``CartPole-v1``). Its type and range are
    checked later, by ``compile_config``, against the key's default and constraints."""
    key, sep, raw = text.partition('=')
    key = key.strip()
    if not sep or not key or any(not part for part in key.split('.')):
        raise ConfigError(f'--set {text!r}: expected dotted.key=value, e.g. --set policy.learn.lr=3e-4')
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = raw.strip()
    return key, value


def apply_overrides(config: dict, overrides: Iterable[Tuple[str, Any]]) -> dict:
    """A copy of the plain ``config`` with each ``(dotted key, value)`` set, sections created as needed; a
    key that passes through a value that is not a section is refused. Unknown keys and wrong types are left
    to ``compile_config``, which names them (with its did-you-mean)."""
    out = copy.deepcopy(dict(config))
    for key, value in overrides:
        node = out
        *parents, last = key.split('.')
        for depth, part in enumerate(parents):
            child = node.get(part)
            if child is None:  # an absent section, or one left at None (league=None): start it
                child = node[part] = {}
            elif not isinstance(child, dict):
                where = '.'.join(parents[:depth + 1])
                raise ConfigError(f'--set {key}: "{where}" is {child!r}, not a section; expected a key whose '
                                  f'parents are sections')
            node = child
        node[last] = value
    return out


def format_config(cfg: Any, indent: int = 2) -> str:
    """A compiled (or plain) config as indented text, one key per line, sections in their order (what
    ``print`` shows of a compiled config; ``print(format_config(cfg.policy))`` for one section)."""
    lines: list = []

    def walk(node: Any, depth: int) -> None:
        pad = ' ' * (indent * depth)
        for key, value in node.items():
            if isinstance(value, dict) and value:
                lines.append(f'{pad}{key}:')
                walk(value, depth + 1)
            else:
                lines.append(f'{pad}{key}: {to_plain(value)!r}')

    walk(cfg, 0)
    return '\n'.join(lines)


def load_config(path: str) -> EasyDict:
    """Load a compiled config saved by :func:`save_config` (a file or the experiment dir)."""
    if os.path.isdir(path):
        path = os.path.join(path, CONFIG_FILENAME)
    with open(path) as f:
        cfg = json.load(f)
    reg.ensure_builtins()
    reg.import_modules(cfg.get('import_names', []))
    return CompiledConfig(cfg)

