"""What every run does before it starts and after it ends, in either mode.

* :func:`prepare_config`: compile the config (a resumed run reuses the saved one and says where
  the given one differs), complete a league run's config, refuse a directory holding an earlier run,
  save the compiled config and where its ``import_names`` were found
  (:mod:`sparring.framework.run_imports`).
* :func:`complete_league_config`: what a battle config may leave out (the league, the reference
  players that anchor the ratings, the evaluation opponents).
* :func:`evaluation_opponents` and :func:`closing_report` (the league table, ratings and pictures).
"""
from __future__ import annotations

import glob
import json
import numbers
import os
import warnings
from typing import Callable, Dict, List, Optional, Tuple

from easydict import EasyDict

from sparring.config import compile_config, compile_section, load_config, save_config
from sparring.config.compile import CONFIG_FILENAME, to_plain
from sparring.config.registry import BOT_REGISTRY, ENV_REGISTRY
from sparring.config.schema import ConfigError
from sparring.framework.journal import COMMANDER_DIR, JOURNAL_FILE, STATE_FILE
from sparring.framework.run_imports import record_import_folders
from sparring.policy.bot import parse_bot_ref
from sparring.worker.checkpoint import CheckpointManager
from sparring.league.job_protocol import stored_ref
from sparring.worker.policy_pool import BOT_PREFIX, ParamStore
from sparring.worker.run_files import refuse_linked_dirs
from sparring.league.player import DEFAULT_CATEGORY
from sparring.worker.run_kind import is_league_run, run_kind

LEAGUE_STATE_FILE = 'league_state.npz'
# What a resumed run may change (prefixes of dotted keys): budgets, evaluation and checkpoint settings, the
# learning rate, how the run is wired and logged. Everything else shaped the players and stays.
RESUME_MAY_CHANGE = ('train.', 'env.stop_value', 'env.n_evaluator_episodes', 'env.evaluator_env_num',
                     'battle.eval_opponents', 'battle.eval_deterministic', 'policy.learn.lr', 'torch_threads',
                     'parallel.')


def prepare_config(config: dict, seed: Optional[int] = None, exp_name: Optional[str] = None,
                   resume: bool = False, max_env_steps: Optional[int] = None) -> EasyDict:
    """Compile a config; on resume, reuse the compiled config saved in the experiment dir.

    A resumed run repeats the saved config; where the config given now differs, a warning names
    the keys, so a changed value is never dropped unnoticed. ``max_env_steps`` overrides the budget
    of this run (new or resumed); the pipelines record it in the run's ``config.json`` as they do a
    resumed run's other changed settings.
    """
    if max_env_steps is not None and (isinstance(max_env_steps, bool) or not isinstance(max_env_steps, numbers.Integral)
                                      or max_env_steps < 1):
        raise ConfigError(f'max_env_steps (--max-env-steps) = {max_env_steps!r}: expected a positive whole number of '
                          f'env steps')
    cfg = compile_config(config, seed=seed, exp_name=exp_name, save=False)
    refuse_linked_dirs(cfg.exp_name)
    saved = os.path.join(cfg.exp_name, CONFIG_FILENAME)
    if resume:
        if not os.path.exists(saved):
            raise FileNotFoundError(f'--resume: no compiled config at {saved}; was the run started with '
                                    f'exp_name={cfg.exp_name!r}?')
        given = cfg
        cfg = load_config(saved)
        # The directory given is the one resumed, even when the run was copied there from another one.
        cfg.exp_name = given.exp_name
        if is_league_run(given):
            complete_league_config(given)  # as the saved one was completed
        changed = config_differences(to_plain(given), to_plain(cfg))
        for key in [k for k in changed if not _has(cfg, k) or not _has(given, k)]:
            changed.remove(key)  # a setting this version added (its default) or dropped: not a change of the run's
            if _has(given, key):
                _set_dotted(cfg, key, _get_dotted(given, key))
        refused = [key for key in changed if not key.startswith(RESUME_MAY_CHANGE)]
        if refused:
            raise ConfigError(f'--resume: the config given differs from the saved one ({saved}) at '
                              f'{", ".join(refused[:8])}{" ..." if len(refused) > 8 else ""}; a resumed run keeps '
                              f'what shaped its players (env, model, league, seed ...). Expected the saved values, '
                              f'or a new run (another exp_name). On resume these may change: '
                              f'{", ".join(RESUME_MAY_CHANGE)}')
        for key in changed:  # budgets, evaluation and learning-rate settings: the new values are taken
            _set_dotted(cfg, key, _get_dotted(given, key))
        if changed:
            warnings.warn(f'--resume continues {saved} with changed {", ".join(changed)}', stacklevel=3)
    else:
        refuse_earlier_run(cfg.exp_name)
        if is_league_run(cfg):
            complete_league_config(cfg)
        save_config(cfg, cfg.exp_name)
    # Where import_names were found, so the commands that open the run find them from any folder.
    record_import_folders(cfg.import_names, cfg.exp_name)
    if max_env_steps is not None:
        cfg.train.max_env_steps = int(max_env_steps)
    return cfg


def earlier_run(exp_dir: str) -> Optional[str]:
    """A file that shows an earlier run of either mode in ``exp_dir`` (its checkpoint, the commander's journal or
    state, a learner's checkpoint, stored parameters), or None."""
    found = CheckpointManager(exp_dir).latest()
    if found is not None:
        return found
    for pattern in (os.path.join(COMMANDER_DIR, JOURNAL_FILE), os.path.join(COMMANDER_DIR, STATE_FILE),
                    os.path.join('workers', '*', 'ckpt', '*.pt'), os.path.join('params', '*.pt')):
        matches = sorted(glob.glob(os.path.join(glob.escape(exp_dir), pattern)))
        if matches:
            return matches[0]
    return None


def refuse_earlier_run(exp_dir: str) -> None:
    """FileExistsError if ``exp_dir`` holds an earlier run: a new one would delete or mix with its files."""
    earlier = earlier_run(exp_dir)
    if earlier is not None:
        raise FileExistsError(f'experiment dir {exp_dir!r} holds an earlier run ({earlier}); expected a new '
                              f'directory: pass resume=True (--resume) to continue that run, or another exp_name '
                              f'(--exp-name), or delete the directory')


def _get_dotted(cfg, key: str):
    for part in key.split('.'):
        cfg = cfg[part]
    return cfg


def _has(cfg, key: str) -> bool:
    try:
        _get_dotted(cfg, key)
        return True
    except (KeyError, TypeError):
        return False


def _set_dotted(cfg, key: str, value) -> None:
    *parents, last = key.split('.')
    for part in parents:
        cfg = cfg[part]
    cfg[last] = value


def config_differences(a, b, path: str = '') -> list:
    """Dotted keys where two plain configs differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: List[str] = []
        for key in sorted(set(a) | set(b)):
            sub = f'{path}.{key}' if path else key
            out += [sub] if key not in a or key not in b else config_differences(a[key], b[key], sub)
        return out
    return [] if a == b else [path]


def complete_league_config(cfg) -> bool:
    """Fill in what a battle config may leave out; True if anything changed.

    No league section: one naive self-play player. No reference players: the env's random bot,
    which anchors the ratings. No evaluation opponents: the env's other reference bots.
    """
    changed = False
    if cfg.league is None:
        cfg.league = compile_section('league', dict(type='one_vs_one'))
        changed = True
    roles = run_kind(cfg).roles  # None in a game of three or more seats: its seats share one role
    if roles is not None:
        league, eval_opponents = role_league(cfg, roles)
        if league is not None:
            cfg.league = league
        if eval_opponents is not None:
            cfg.battle.eval_opponents = eval_opponents
        return changed or league is not None or eval_opponents is not None
    bots = list(getattr(ENV_REGISTRY.get(cfg.env.type), 'reference_bots', ('random',)))
    if not cfg.league.reference_players:
        # The random bot anchors the rating scale: a fixed point every run shares.
        anchor = 'random' if 'random' in bots else bots[0]
        cfg.league.reference_players = [dict(player_id=anchor, param_ref=BOT_PREFIX + anchor, model={}, elo=None,
                                             trueskill=None, anchor=True)]
        changed = True
    if not cfg.battle.eval_opponents:
        # The game's other bots are evaluation opponents too (reported, not rated).
        references = {same_opponent(r['param_ref']) for r in cfg.league.reference_players if r['param_ref']}
        cfg.battle.eval_opponents = [BOT_PREFIX + b for b in bots if same_opponent(BOT_PREFIX + b) not in references]
        changed = changed or bool(cfg.battle.eval_opponents)
    return changed


def role_league(cfg, roles: Tuple[str, ...]) -> Tuple[Optional[EasyDict], Optional[List[str]]]:
    """What a game whose seats have roles completes: ``(league section, evaluation opponents)``, each None where the
    config's stands. The league's categories are the roles (``league.roles``), each role's random bot is a reference
    player of that role, and the game's bots that play one role are evaluation opponents. What a config sets is
    checked: categories other than the roles, a search (a symmetric game's tool) or an exact analysis the env does not
    offer are refused with the key that asks for them. Forward-pass workers serve each role's networks, as in a
    symmetric game."""
    distinct = list(dict.fromkeys(roles))
    categories = list(cfg.league.player_category)
    if categories != [DEFAULT_CATEGORY] and sorted(categories) != sorted(distinct):
        raise ConfigError(f'config key "league.player_category": {categories} in a game whose seats have the roles '
                          f'{distinct}; expected the roles (or leave it out)')
    if cfg.battle.collect_search:
        raise ConfigError(f'config key "battle.collect_search": a search evaluates both seats\' positions with one '
                          f'network over the rules of a symmetric perfect-information game (the env\'s '
                          f'search_acting); a game whose seats have roles ({", ".join(distinct)}) has a network per '
                          f'role and no such rules: expected it off')
    if cfg.battle.exact_analysis and getattr(ENV_REGISTRY.get(cfg.env.type), 'exact_analysis', None) is None:
        raise ConfigError(f'config key "battle.exact_analysis": env {cfg.env.type!r} offers no exact analysis of its '
                          f'roles ({", ".join(distinct)}); expected it off, or a small OpenSpiel game declared with '
                          f'roles (type=\'openspiel\', roles=[...])')
    league = dict(cfg.league, roles=True, player_category=distinct if categories == [DEFAULT_CATEGORY] else categories)
    changed = not cfg.league.get('roles') or league['player_category'] != categories
    bot_classes = {name: BOT_REGISTRY.get(name) for name in getattr(ENV_REGISTRY.get(cfg.env.type), 'reference_bots',
                                                                     ('random',))}
    if not league['reference_players']:
        anchor = 'random' if 'random' in bot_classes else next(iter(bot_classes))
        league['reference_players'] = [dict(player_id=f'{anchor}_{role}', param_ref=BOT_PREFIX + anchor, category=role)
                                       for role in distinct]
        changed = True
    section = compile_section('league', league) if changed else None
    eval_opponents = None
    if not cfg.battle.eval_opponents:
        references = {same_opponent(r['param_ref']) for r in league['reference_players'] if r['param_ref']}
        eval_opponents = [BOT_PREFIX + name for name, cls in bot_classes.items()
                          if getattr(cls, 'roles', None) and same_opponent(BOT_PREFIX + name) not in references] or None
    return section, eval_opponents


def evaluation_opponents(league, cfg) -> List[Tuple[str, str]]:
    """``(opponent_id, param_ref)`` of every evaluation opponent: the league's reference players,
    then the config's extra ``battle.eval_opponents`` (none in a single-agent run).

    An opponent named twice (a reference player's bot again in ``battle.eval_opponents``, with its options in
    any order) is evaluated once, under its first name, with a warning: two names would give two different
    figures for the same bot at every evaluation."""
    opponents = [(p['player_id'], p['param_ref']) for p in league.eval_opponents()]
    named = {same_opponent(ref): oid for oid, ref in opponents if ref}
    for ref in cfg.battle.eval_opponents:
        oid = ref[len(BOT_PREFIX):] if ref.startswith(BOT_PREFIX) else ref
        if same_opponent(ref) in named:
            first = named[same_opponent(ref)]
            warnings.warn(f'battle.eval_opponents: {ref!r} is the opponent {first!r} again; it is evaluated once, as '
                          f'{first!r} (remove one of the two)', stacklevel=2)
            continue
        named[same_opponent(ref)] = oid
        opponents.append((oid, ref))
    return opponents


def same_opponent(ref: str) -> str:
    """A key equal for two references to the same opponent: a bot's name and its options in a fixed order."""
    if not ref.startswith(BOT_PREFIX):
        return ref
    name, options = parse_bot_ref(ref[len(BOT_PREFIX):])
    return BOT_PREFIX + name + '?' + json.dumps(options, sort_keys=True)


def closing_report(league, last_eval: Dict[str, dict], exp_dir: str, line: Callable[[str], None],
                   rates_of: Callable[[dict], Optional[Dict[str, dict]]]) -> List[str]:
    """Save the league state, write the report page, draw the payoff and rating pictures, then print the
    league table, the last evaluation (:func:`opponent_lines`; ``rates_of`` is the run's evaluation's
    ``opponent_rates``) and the pages' and pictures' paths; returns the pictures (SVG files; none without a payoff)."""
    from sparring.framework.report_page import write_final_report  # here: loading a player needs no page
    league.save(os.path.join(exp_dir, LEAGUE_STATE_FILE))
    page = write_final_report(exp_dir, league, {'phase': 'done'})
    pictures = [league.plot_payoff(os.path.join(exp_dir, 'payoff.svg')),
                league.plot_ratings(os.path.join(exp_dir, 'ratings.svg'))]
    if getattr(getattr(league, 'ratings', None), 'trueskill', None) is not None:
        pictures.append(league.plot_ratings(os.path.join(exp_dir, 'ratings_trueskill.svg'), system='trueskill'))
    pictures = [p for p in pictures if p is not None]
    table = league.table()
    if table:
        line('league table:\n' + table)
    for text in opponent_lines(last_eval, rates_of, ranked=getattr(league, 'cfg', {}).get('seats', 2) > 2):
        line(text)
    if page is not None:
        line(f'report: {page}')
    for picture in pictures:
        line(f'picture: {picture}')
    return pictures


def opponent_lines(last_eval: Dict[str, dict], rates_of: Callable[[dict], Optional[Dict[str, dict]]],
                   ranked: bool = False) -> List[str]:
    """One line per evaluated player: its win, draw and loss rates against each evaluation opponent, read from its
    last report by ``rates_of`` (none for a single agent's returns). In a game of three or more seats (``ranked``)
    those are the pairwise games in the rankings, and each opponent's rate of the player finishing ahead of it (a
    tie counting half) comes first."""
    lines = []
    for pid, report in last_eval.items():
        rates = rates_of(report) if report else None
        if not rates:
            continue
        lines.append(f'{pid} vs ' + ', '.join(
            f'{oid}: ' + (f'ahead {s["win"] + 0.5 * s["draw"]:.1%} (' if ranked else '')
            + f'win {s["win"]:.1%} draw {s["draw"]:.1%} loss {s["loss"]:.1%}' + (')' if ranked else '')
            for oid, s in rates.items()))
    return lines


def reset_from_verdict(store: ParamStore, policy, verdict, player_id: str) -> None:
    """Carry out a snapshot verdict's reset (``verdict['reset']``) on ``policy``: the parameters stored under
    ``verdict['reset_param_ref']`` and a fresh optimiser. Versions keep counting upward, so staleness stays
    meaningful across a reset."""
    if not verdict['reset']:
        return
    reset_to = stored_ref(verdict['reset_param_ref'], f'the reset of {player_id!r}')
    policy.set_params(store.get(reset_to)['params'], policy.version)
    policy.reset_optimizer()
