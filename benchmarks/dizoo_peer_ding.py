"""DI-engine's side of ``dizoo_peer.py``: run by the Python of DI-engine's own venv, never imported by sparring.

* ``demo SEED ENV_STEPS SECONDS``: DI-engine's league demo (``dizoo/league_demo/league_demo_ppo_main.py``) on its
  zero-sum 2x2 game, as shipped (its config, its three evaluators), except that its stop values, which are the
  prisoner's dilemma's and end a zero-sum run at its first evaluation, are set out of reach: the run stops after
  ``ENV_STEPS`` env steps of all its players or ``SECONDS`` wall seconds. After every job of the main player the
  main player's action probabilities in each seat are recorded, with the env steps and seconds so far.
* ``bookkeeping HISTORICAL CALLS``: the demo's league with ``HISTORICAL`` snapshots of the main player: calls per
  second of ``finish_job`` (the payoff update; with and without its TrueSkill update) and of ``get_job_info`` for
  the main player (its PFSP and self-play branches over the snapshots).

Prints one line ``DING_RESULT <json>``. ``--smoke``: the bookkeeping with 5 snapshots and 50 calls; under a Python
without DI-engine (sparring's own venv, CI) it says in one line that DI-engine's side is skipped.
"""
import json
import os
import sys
import tempfile
import time

PLAYED = ('wins', 'losses', 'draws')


class Done(Exception):
    """The run's budget is spent."""


def demo(seed: int, env_steps: int, seconds: float) -> dict:
    import numpy as np
    import torch
    from ding.model import VAC
    from dizoo.league_demo import league_demo_ppo_main as demo_main
    from dizoo.league_demo.demo_league import DemoLeague
    from dizoo.league_demo.league_demo_ppo_config import league_demo_ppo_config

    torch.set_num_threads(1)
    os.chdir(tempfile.mkdtemp(prefix='ding_league_demo_'))
    cfg = league_demo_ppo_config
    cfg.env.env_type = 'zero_sum'
    cfg.env.stop_value = [1e9, 1e9]  # out of reach: the budget stops the run
    model = VAC(**cfg.policy.model)
    seat_obs = torch.tensor([[0.0, 1.0], [1.0, 0.0]])  # what the game shows seat 0 and seat 1
    curve, played = [], [0]
    started = time.perf_counter()
    finish_job = DemoLeague.finish_job

    def recording_finish_job(league, job_info):
        finish_job(league, job_info)
        played[0] += len(job_info['result'])  # one env step per game: both seats move once
        if not job_info['launch_player'].startswith('main_player'):
            return
        main = league.active_players_ids.index(job_info['launch_player'])
        state = torch.load(league.active_players_ckpts[main], map_location='cpu')
        model.load_state_dict(state['model'])
        with torch.no_grad():
            probs = torch.softmax(model(seat_obs, mode='compute_actor')['logit'], -1).numpy()
        curve.append(dict(seconds=round(time.perf_counter() - started, 3), env_steps=played[0],
                          seat_probs=np.round(probs.astype(float), 5).tolist()))
        if played[0] >= env_steps or time.perf_counter() - started >= seconds:
            raise Done()

    DemoLeague.finish_job = recording_finish_job
    try:
        demo_main.main(cfg, seed=seed)
    except Done:
        pass
    return dict(seed=seed, wall_seconds=round(time.perf_counter() - started, 2), env_steps=played[0], curve=curve)


def _rate(call, items, rounds: int = 3) -> float:
    """Calls per second of ``call`` over ``items``: the best of ``rounds`` passes (the least disturbed)."""
    best = 0.0
    for _ in range(rounds):
        started = time.perf_counter()
        for item in items:
            call(item)
        best = max(best, len(items) / (time.perf_counter() - started))
    return best


def bookkeeping(historical: int, calls: int) -> dict:
    import random
    import torch
    from ding.config import compile_config
    from ding.envs import BaseEnvManager
    from ding.policy import PPOPolicy
    from ding.worker import BaseLearner, BattleInteractionSerialEvaluator, NaiveReplayBuffer
    from dizoo.league_demo.demo_league import DemoLeague
    from dizoo.league_demo.league_demo_collector import LeagueDemoCollector
    from dizoo.league_demo.league_demo_ppo_config import league_demo_ppo_config

    os.chdir(tempfile.mkdtemp(prefix='ding_league_ops_'))
    cfg = compile_config(league_demo_ppo_config, BaseEnvManager, PPOPolicy, BaseLearner, LeagueDemoCollector,
                         BattleInteractionSerialEvaluator, NaiveReplayBuffer, save_cfg=False)
    os.makedirs(os.path.dirname(cfg.policy.other.league.path_policy), exist_ok=True)
    league = DemoLeague(cfg.policy.other.league)
    league.load_checkpoint = lambda player_id, path: None
    for path in league.active_players_ckpts + [league.reset_checkpoint_path]:
        torch.save({}, path)
    main_id = league.active_players_ids[0]
    started = time.perf_counter()
    while len(league.historical_players) < historical:
        league.judge_snapshot(main_id, force=True)
    build_seconds = time.perf_counter() - started
    rng = random.Random(0)
    jobs = [league.get_job_info(main_id) for _ in range(min(calls, 2000))]

    def result(job, episodes, eval_flag):
        return dict(eval_flag=eval_flag, launch_player=job['launch_player'], player_id=job['player_id'],
                    result=[rng.choice(PLAYED) for _ in range(episodes)])

    out = dict(historical_players=len(league.historical_players), build_seconds=round(build_seconds, 2))
    for name, episodes, eval_flag in (('finish_job_1_game', 1, False), ('finish_job_1_game_trueskill', 1, True),
                                      ('finish_job_8_games', 8, False)):
        items = [result(jobs[i % len(jobs)], episodes, eval_flag) for i in range(calls)]
        out[f'{name}_per_second'] = round(_rate(league.finish_job, items))
    out['get_job_info_main_player_per_second'] = round(_rate(lambda _: league.get_job_info(main_id),
                                                             range(max(calls // 10, 10))))
    return out


if __name__ == '__main__':
    kind = sys.argv[1] if len(sys.argv) > 1 else ''
    if kind == '--smoke':
        import importlib.util
        if importlib.util.find_spec('ding') is None:
            print("DI-engine's side skipped: ding is not installed in this Python (python benchmarks/dizoo_peer.py "
                  "--setup makes a venv with it)")
            sys.exit(0)
        kind, sys.argv[2:] = 'bookkeeping', ['5', '50']
    if kind not in ('demo', 'bookkeeping'):
        sys.exit(f'dizoo_peer_ding.py: expected demo SEED ENV_STEPS SECONDS, bookkeeping HISTORICAL CALLS or --smoke, '
                 f'got {sys.argv[1:]}')
    if kind == 'demo':
        result = demo(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    else:
        result = bookkeeping(int(sys.argv[2]), int(sys.argv[3]))
    import ding
    import torch
    result.update(ding=ding.__version__, torch=torch.__version__)
    print('DING_RESULT ' + json.dumps(result), flush=True)
