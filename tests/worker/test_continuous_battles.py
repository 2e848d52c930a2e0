"""Battles with Box actions: single games in the loop, the vectorised action checks, the arena, collector and evaluator."""
import numpy as np
import pytest
import torch
from gymnasium import spaces

import sparring.dizoo  # noqa: F401  (registers the games and bots)
from sparring.config import compile_section
from sparring.config.registry import BOT_REGISTRY, ENV_REGISTRY, POLICY_REGISTRY
from sparring.policy import distributions as D
from sparring.worker.battle_collector import BattleCollector
from sparring.worker.battle_evaluator import BattleEvaluator
from sparring.worker.env.battle import DictBattleVecEnv, SingleGameView, make_battle_env
from sparring.worker.env.battle_api import BattleEnv, NativeVecBattleEnv
from sparring.worker.env.errors import EnvError

ROUNDS = 3


class GuessGame(BattleEnv):
    """Both seats name a number in [-1, 1] for ``ROUNDS`` rounds; the one nearer the round's target (which
    both see) gets +1, the other -1. It keeps the actions it received, to check what the loop passed on."""

    def __init__(self, cfg=None) -> None:
        super().__init__(cfg)
        self.rng = np.random.default_rng(0)
        self.received = []

    def observation_space(self, agent):
        return spaces.Box(-1.0, 1.0, (2,), np.float32)

    def action_space(self, agent):
        return spaces.Box(-1.0, 1.0, (1,), np.float32)

    def _observe(self):
        obs = np.array([self.target, self.round / ROUNDS], np.float32)
        return {a: obs for a in self.possible_agents}

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents, self.round, self.totals = list(self.possible_agents), 0, 0.0
        self.target = float(self.rng.uniform(-1, 1))
        return self._observe(), {a: {} for a in self.agents}

    def step(self, actions):
        self.received.append({a: np.array(v) for a, v in actions.items()})
        gaps = [abs(float(actions[a][0]) - self.target) for a in self.possible_agents]
        first = float(np.sign(gaps[1] - gaps[0]))
        self.totals += first
        self.round += 1
        self.target = float(self.rng.uniform(-1, 1))
        over = self.round == ROUNDS
        infos = {a: {} for a in self.possible_agents}
        if over:
            sign = int(np.sign(self.totals))
            names = {1: 'win', 0: 'draw', -1: 'loss'}
            infos = {'player_0': {'result': names[sign]}, 'player_1': {'result': names[-sign]}}
            self.agents = []
        rewards = {'player_0': first, 'player_1': -first}
        flags = {a: over for a in self.possible_agents}
        return self._observe(), rewards, flags, {a: False for a in self.possible_agents}, infos


class TakeTurnsGame(NativeVecBattleEnv):
    """A natively vectorised turn-based game with Box actions: seat 0 moves on even steps, seat 1 on odd ones."""

    turn_based = True

    def __init__(self, num_envs) -> None:
        super().__init__({}, num_envs, 0)
        self.observation_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = spaces.Box(-2.0, 2.0, (2,), np.float32)
        self.steps = np.zeros(num_envs, np.int64)
        self.received = []

    def _reset_games(self, rows):
        self.steps[rows] = 0

    def _advance(self, actions):
        self.received.append(actions.copy())
        self.steps += 1
        zeros = np.zeros((self.num_envs, 2))
        return zeros.astype(np.float32), self.steps >= 4, np.zeros(self.num_envs, bool), zeros.astype(np.int8)

    def _observe(self, rows):
        to_move = np.stack([self.steps[rows] % 2 == 0, self.steps[rows] % 2 == 1], axis=1)
        return np.zeros((len(rows), 2, 1), np.float32), to_move[:, :, None].copy(), to_move


if 'test_take_turns_box' not in ENV_REGISTRY:
    ENV_REGISTRY.register('test_take_turns_box', TakeTurnsGame)


def _ppo(env, seed=0):
    cfg = compile_section('policy', dict(type='ppo', model=dict(hidden_sizes=[16]),
                                         learn=dict(epochs=1, num_minibatches=1)))
    return POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=seed)


def _bot(env, name='random', seed=1):
    return BOT_REGISTRY.get(name)({}, env.observation_space, env.action_space, seed=seed)


# -- the env side ------------------------------------------------------------------------------

def test_a_box_single_game_runs_in_the_loop_with_clipped_actions_and_no_mask():
    env = DictBattleVecEnv(GuessGame, 3, 0)
    assert env.action_space == spaces.Box(-1.0, 1.0, (1,), np.float32) and not env.turn_based
    step = env.reset()
    # The placeholder column: every seat may act, as to_move says.
    assert step.action_mask.shape == (3, 2, 1) and step.action_mask.all() and step.to_move.all()
    actions = np.array([[[0.5], [3.0]], [[-7.0], [0.0]], [[0.1], [-0.1]]], np.float64)
    env.step(actions)
    seen = env.envs[1].received[0]
    assert seen['player_0'].tolist() == [-1.0] and seen['player_1'].tolist() == [0.0]
    assert env.envs[0].received[0]['player_1'].tolist() == [1.0]  # 3.0 clipped to the box
    assert env.envs[0].received[0]['player_0'].dtype == np.float32
    assert actions[0, 1, 0] == 3.0  # the caller's array is untouched
    for _ in range(ROUNDS - 1):
        step = env.step(np.zeros((3, 2, 1), np.float32))
    assert step.terminated.all() and (step.result.sum(axis=1) == 0).all()
    env.close()


def test_box_actions_and_games_are_checked_with_one_clear_line():
    env = DictBattleVecEnv(GuessGame, 3, 0)
    env.reset()
    with pytest.raises(EnvError, match=r'actions of shape \(3, 2\); expected shape \(3, 2, 1\) \(num_envs, '
                                       r'seats, \*action_shape\)'):
        env.step(np.zeros((3, 2)))
    with pytest.raises(EnvError, match='actions of dtype <U1; expected numbers'):
        env.step(np.full((3, 2, 1), 'x'))
    bad = np.zeros((3, 2, 1))
    bad[2, 1] = np.nan
    with pytest.raises(EnvError, match=r"env 2, seat 1 \(player_1\) played action \[nan\]; expected finite"):
        env.step(bad)
    assert all(not game.received for game in env.envs)  # refused before any game moved
    env.close()

    class MaskedGuess(GuessGame):
        def reset(self, seed=None, options=None):
            obs, infos = super().reset(seed)
            return obs, {a: {'action_mask': np.ones(1, bool)} for a in obs}

    with pytest.raises(EnvError, match=r'returned infos\[\'player_0\'\]\["action_mask"\] for the Box actions'):
        DictBattleVecEnv(MaskedGuess, 1, 0).reset()

    class TurnBasedGuess(GuessGame):
        turn_based = True

    with pytest.raises(EnvError, match='a turn-based game with Box.*expected turn_based False'):
        DictBattleVecEnv(TurnBasedGuess, 1)

    class MultiDiscreteGuess(GuessGame):
        def action_space(self, agent):
            return spaces.MultiDiscrete([2, 2])

    with pytest.raises(EnvError, match=r'expected Discrete\(n\) starting at 0, or a Box \(continuous actions\)'):
        DictBattleVecEnv(MultiDiscreteGuess, 1)


def test_the_old_refusal_of_box_actions_is_gone():
    try:
        DictBattleVecEnv(GuessGame, 1).close()
    except EnvError as err:  # pragma: no cover - the failure this guards against
        pytest.fail(f'a Box battle game was refused: {err}')


def test_seats_not_to_move_get_zeros_and_may_send_anything():
    env = TakeTurnsGame(2)
    step = env.reset()
    assert step.to_move[:, 0].all() and not step.to_move[:, 1].any()
    actions = np.full((2, 2, 2), 5.0)
    actions[:, 1] = np.nan  # seat 1 is not to move: its NaN is ignored, as a discrete game ignores its action
    env.step(actions)
    np.testing.assert_array_equal(env.received[0][:, 0], np.full((2, 2), 2.0))  # clipped to the box
    np.testing.assert_array_equal(env.received[0][:, 1], np.zeros((2, 2)))


def test_the_single_game_view_of_a_box_game_speaks_the_parallel_api():
    view = SingleGameView(make_battle_env(dict(type='pong_duel', continuous=True), 1, 0))
    assert view.action_space('player_0') == spaces.Box(-1.0, 1.0, (1,), np.float32)
    obs, infos = view.reset(seed=3)
    assert infos == {'player_0': {}, 'player_1': {}}  # no action mask in a Box game
    for _ in range(5):
        obs, rewards, terms, truncs, infos = view.step({'player_0': np.array([1.0]), 'player_1': np.array([-1.0])})
    # both paddles moved five full steps, the left one up and the right one down
    paddle = view.vec_env.paddle_y[0]
    assert paddle.tolist() == pytest.approx([0.5 + 5 * 0.04, 0.5 - 5 * 0.04])


# -- arena, collector, evaluator -----------------------------------------------------------------

def test_the_collector_stores_sampled_float_actions_and_no_mask_and_ppo_learns_from_them():
    env = make_battle_env(dict(type='pong_duel', continuous=True), 4, 0)
    policy = _ppo(env)
    bot = _bot(env)
    collector = BattleCollector(env, policy, 16, lambda slot: ('random', bot), player_id='me')
    chunk = collector.collect()
    chunk.validate(collector.spec)
    d = chunk.data
    assert 'action_mask' not in d
    assert d['action'].shape == (16, 8, 1) and d['action'].dtype == np.float32
    assert np.abs(d['action']).max() > 1.0  # as sampled: a Gaussian with std 1 leaves the box; the env clips
    # the stored log-probabilities are those of the stored (unclipped) actions under the acting policy
    t, c = np.nonzero(d['train_mask'])
    obs = torch.as_tensor(d['obs'][t, c])
    with torch.no_grad():
        head, _ = policy.model(policy.net.prepare(obs))
        expected = D.gaussian_log_prob(head, policy.model.log_std, torch.as_tensor(d['action'][t, c]))
    np.testing.assert_allclose(d['log_prob'][t, c], expected.numpy(), rtol=1e-5, atol=1e-5)
    # only the home seat learns against a bot; the bot's seat is in the chunk with action 0
    assert (d['value_mask'].reshape(16, 4, 2).sum(-1) == 1).all()
    assert not d['action'][~d['value_mask']].any()
    before = {k: v.clone() for k, v in policy.get_params().items()}
    stats = policy.learn(d)
    assert np.isfinite(stats['policy_loss'])
    assert any(not torch.equal(before[k], v) for k, v in policy.get_params().items())


def test_self_play_learns_from_both_seats_in_a_box_game():
    env = make_battle_env(dict(type='pong_duel', continuous=True), 2, 1)
    policy = _ppo(env)
    collector = BattleCollector(env, policy, 8, lambda slot: ('me', policy), player_id='me')
    d = collector.collect().data
    assert d['value_mask'].all() and d['train_mask'].all()  # simultaneous: every seat moves every step
    assert d['action'].shape == (8, 4, 1) and d['action'].any(axis=(0, 2)).all()


def test_the_evaluator_plays_box_games_to_their_quota_and_the_tracker_beats_random():
    evaluator = BattleEvaluator(lambda: make_battle_env(dict(type='pong_duel', continuous=True, points_to_win=2),
                                                        8, 5), n_episodes=12)
    env = make_battle_env(dict(type='pong_duel', continuous=True), 1, 0)
    tracker = _bot(env, 'pong_duel_heuristic')
    [result] = evaluator.evaluate(tracker, [('random', _bot(env))])
    assert result.games == 12 and sorted(set(result.seats)) == [0, 1]
    assert result.win_rate >= 0.9


def test_a_search_refuses_box_games():
    from sparring.worker.battle_arena import Arena
    env = make_battle_env(dict(type='pong_duel', continuous=True), 1, 0)
    with pytest.raises(ValueError, match='discrete actions; this game has teams or Box actions'):
        Arena(env, _ppo(env), search=object())
