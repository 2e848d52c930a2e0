"""Search at play time: PUCT tree search guided by a trained player's policy and value, in lockstep with numpy.

The AlphaZero search (Silver et al. 2017) over the rules of a k-in-a-row game: each simulation
descends by PUCT, ``Q + c_puct * P * sqrt(N_parent) / (1 + N_child)``, from the view of the player
to move (an unvisited child counts ``Q = 0``), adds the node it reaches, and backs up the player's
value of that node (the game's result where the game is over), its sign flipping at each level. A
node's priors ``P`` are the player's action probabilities there; after ``num_simulations``
simulations the most visited root action is played. Where the player's value is unreliable, the
search still sees every win and loss within its tree.

Every game of a batch has its own tree and gets the same simulations; what is shared is the numpy
call and the network's forward pass, one batch per simulation. Nodes live in flat arrays indexed
``tree * nodes_per_tree + node`` (a tree adds at most one node per simulation), children by action.

:class:`GuidedSearchPlayer` wraps a trained policy as a player for the evaluator (``sparring eval
RUN --search N``); the figures for the network alone and with search are reported apart.
"""
from __future__ import annotations

from typing import Callable, Optional, Tuple

import numpy as np

from sparring.config.schema import ConfigError, in_range
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.bots import LineGameBot
from sparring.policy.bot import choose_best, given_mask

# (own stones, opponent stones, legal [n, A]) of positions with ``own`` to move -> (priors [n, A], values [n])
Evaluate = Callable[[np.ndarray, np.ndarray, np.ndarray], Tuple[np.ndarray, np.ndarray]]


class LockstepPUCT:
    """PUCT guided by ``evaluate`` for a batch of positions of one board geometry."""

    def __init__(self, geometry: BoardGeometry, evaluate: Evaluate, num_simulations: int, c_puct: float,
                 rng: np.random.Generator, root_noise: float = 0.0, noise_alpha: float = 1.0) -> None:
        self.geometry, self.evaluate, self.rng = geometry, evaluate, rng
        self.num_simulations, self.c_puct = int(num_simulations), float(c_puct)
        # Self-play's exploration (AlphaZero): the root's priors mixed with this share of Dirichlet(alpha)
        # noise over the legal actions, so the search also tries moves the network dismisses.
        self.root_noise, self.noise_alpha = float(root_noise), float(noise_alpha)

    def search(self, own: np.ndarray, opp: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """The most visited root action of each position (ties at random)."""
        return choose_best(self.root_visits(own, opp, legal), self.rng)

    def root_visits(self, own: np.ndarray, opp: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """Visits of each root action ``[n, A]`` after the search (``own`` to move; uint64 ``[n]``)."""
        return self.root_visits_and_values(own, opp, legal)[0]

    def root_visits_and_values(self, own: np.ndarray, opp: np.ndarray, legal: np.ndarray):
        """The root visits ``[n, A]`` and the searched value of each root ``[n]`` for the player to move."""
        forest = _Forest(self, np.asarray(own, np.uint64), np.asarray(opp, np.uint64), np.asarray(legal, bool))
        for simulation in range(self.num_simulations):
            forest.simulate(simulation)
        return forest.root_visits(), forest.root_values()


class _Forest:
    """The trees of one batched search.

    Every node keeps its children's statistics by action (``edge_visits``, ``edge_value``: 0 for a child not yet
    made), so choosing among a node's children reads its own rows only, and the PUCT prior term's factor
    ``c_puct * P`` (``-inf`` for an illegal action, which keeps it out of the choice). A simulation descends
    every tree level by level over the trees still walking, makes the new nodes of all trees at once, evaluates
    them in one batch and backs the values up along the recorded edges."""

    def __init__(self, puct: LockstepPUCT, own: np.ndarray, opp: np.ndarray, legal: np.ndarray) -> None:
        self.puct, self.geometry = puct, puct.geometry
        n, num_actions = legal.shape
        self.num_actions = num_actions
        self.nodes_per_tree = puct.num_simulations + 1
        size = n * self.nodes_per_tree
        self.roots = np.arange(n) * self.nodes_per_tree
        self.visits = np.zeros(size)
        # Per node and action: the child's visits and summed values (from the view of the player who moved into
        # the child, i.e. the node's player to move), 0 where the child is not made yet.
        self.edge_visits = np.zeros((size, num_actions))
        self.edge_value = np.zeros((size, num_actions))
        self.scaled_prior = np.zeros((size, num_actions))  # c_puct * prior; -inf where the action is illegal
        self.legal = np.zeros((size, num_actions), bool)
        self.child = np.full((size, num_actions), -1, np.int64)
        self.mover = np.zeros(size, np.uint64)  # the player to move at the node ...
        self.other = np.zeros(size, np.uint64)  # ... and the one who just moved
        self.terminal = np.zeros(size, bool)
        self.terminal_value = np.zeros(size)  # 1: won by the move into the node; 0: a draw
        self.mover[self.roots], self.other[self.roots] = own, opp
        self.legal[self.roots] = legal
        prior, _ = self._evaluate(self.roots)
        if puct.root_noise > 0:
            noise = np.where(legal, puct.rng.gamma(puct.noise_alpha, size=legal.shape), 0.0)
            noise /= np.maximum(noise.sum(axis=1, keepdims=True), np.finfo(np.float64).tiny)
            prior = (1.0 - puct.root_noise) * prior + puct.root_noise * noise
        self._set_priors(self.roots, prior)
        self.visits[self.roots] = 1.0

    def _evaluate(self, nodes: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """The player's priors at ``nodes`` (not over; 0 on illegal actions, uniform over the legal ones where the
        player gives none) and their values for the player who moved into them."""
        legal = self.legal[nodes]
        priors, values = self.puct.evaluate(self.mover[nodes], self.other[nodes], legal)
        priors = np.where(legal, np.asarray(priors, np.float64), 0.0)
        total = priors.sum(axis=1, keepdims=True)
        if (total > 0).all():
            return priors / total, -np.asarray(values, np.float64)
        uniform = legal / np.maximum(legal.sum(axis=1, keepdims=True), 1)
        return np.where(total > 0, priors / np.where(total > 0, total, 1.0), uniform), -np.asarray(values, np.float64)

    def _set_priors(self, nodes: np.ndarray, prior: np.ndarray) -> None:
        self.scaled_prior[nodes] = np.where(self.legal[nodes], self.puct.c_puct * prior, -np.inf)

    def simulate(self, simulation: int) -> None:
        n, num_actions = len(self.roots), self.num_actions
        child = self.child.reshape(-1)  # by edge
        trees, at = np.arange(n), self.roots
        # The edges each descent took, level by level: trees, flat edge index (node * A + action), child.
        edge_trees, edges, children = [], [], []
        fresh_trees, fresh_parents, fresh_actions = [], [], []
        leaf, leaf_depth = np.empty(n, np.int64), np.empty(n, np.int64)
        depth = 0
        while len(trees):
            depth += 1
            action = self._choose(at)
            edge = at * num_actions + action
            nxt = child[edge]
            fresh = nxt < 0
            if fresh.any():  # the child is made below: the descent ends at it
                fresh_trees.append(trees[fresh])
                fresh_parents.append(at[fresh])
                fresh_actions.append(action[fresh])
                nxt[fresh] = self.roots[trees[fresh]] + simulation + 1
            edge_trees.append(trees)
            edges.append(edge)
            children.append(nxt)
            ended = fresh | self.terminal[nxt]
            stopped = trees[ended]
            leaf[stopped], leaf_depth[stopped] = nxt[ended], depth
            walking = ~ended
            trees, at = trees[walking], nxt[walking]
        leaf_value = np.zeros(n)
        if fresh_trees:
            grown = np.concatenate(fresh_trees)
            created = self.roots[grown] + simulation + 1
            self._make(created, np.concatenate(fresh_parents), np.concatenate(fresh_actions))
        over = self.terminal[leaf]
        leaf_value[over] = self.terminal_value[leaf[over]]
        if fresh_trees:
            open_ = ~self.terminal[created]
            if open_.any():
                prior, leaf_value[grown[open_]] = self._evaluate(created[open_])
                self._set_priors(created[open_], prior)
        self._back_up(np.concatenate(edge_trees), np.concatenate(edges), np.concatenate(children),
                      [len(t) for t in edge_trees], leaf_depth, leaf_value)

    def _choose(self, nodes: np.ndarray) -> np.ndarray:
        child_visits = self.edge_visits[nodes]
        q = self.edge_value[nodes] / np.maximum(child_visits, 1.0)  # an unmade child: 0 / 1
        u = self.scaled_prior[nodes] * np.sqrt(self.visits[nodes])[:, None] / (1.0 + child_visits)
        return (q + u).argmax(axis=1)  # ties: the lowest action, so a search is reproducible without its rng

    def _make(self, nodes: np.ndarray, parents: np.ndarray, actions: np.ndarray) -> None:
        g = self.geometry
        mover, other = self.mover[parents], self.other[parents]
        placed = mover | g.move_bits(mover | other, actions)
        self.child[parents, actions] = nodes
        self.mover[nodes], self.other[nodes] = other, placed
        won = g.has_line(placed)
        occupied = other | placed
        self.terminal[nodes] = won | (occupied == np.uint64(g.full_board))
        self.terminal_value[nodes] = won
        self.legal[nodes] = g.legal_mask(occupied) & ~self.terminal[nodes][:, None]

    def _back_up(self, trees: np.ndarray, edges: np.ndarray, children: np.ndarray, per_level: list,
                 leaf_depth: np.ndarray, leaf_value: np.ndarray) -> None:
        """Add a visit and the leaf's value to every node on each path and to the edge into it, the sign flipping
        at each level (+ at the leaf). Within one simulation a node is on one path at most once, so plain indexed
        additions suffice."""
        level = np.repeat(np.arange(1, len(per_level) + 1), per_level)
        sign = 1.0 - 2.0 * ((leaf_depth[trees] - level) & 1)
        signed = sign * leaf_value[trees]
        self.visits[self.roots] += 1.0
        self.visits[children] += 1.0
        self.edge_visits.reshape(-1)[edges] += 1.0
        self.edge_value.reshape(-1)[edges] += signed

    def root_visits(self) -> np.ndarray:
        return self.edge_visits[self.roots].copy()

    def root_values(self) -> np.ndarray:
        """The mean value of every simulation below each root, for the player to move there (its children's
        values are from that player's view): the search's judgement of the position, in [-1, 1]."""
        visits = self.edge_visits[self.roots].sum(axis=1)
        return self.edge_value[self.roots].sum(axis=1) / np.maximum(visits, 1.0)


def policy_evaluator(policy, geometry: BoardGeometry) -> Evaluate:
    """An :data:`Evaluate` from a trained policy that reads the line games' observation (own stones,
    opponent stones, a to-move plane) and offers ``probabilities_and_value`` (one forward pass)."""
    def evaluate(own: np.ndarray, opp: np.ndarray, legal: np.ndarray):
        obs = np.empty((len(own), 3, geometry.rows, geometry.cols), np.float32)
        obs[:, 0], obs[:, 1], obs[:, 2] = geometry.planes(own), geometry.planes(opp), 1.0
        return policy.probabilities_and_value(obs, action_mask=legal)
    return evaluate


class GuidedSearchPlayer(LineGameBot):
    """A trained player choosing its moves by :class:`LockstepPUCT` over its own policy and value."""

    @classmethod
    def default_config(cls) -> dict:
        return dict(super().default_config(), num_simulations=100, c_puct=1.5)

    config_constraints = dict(LineGameBot.config_constraints, num_simulations=in_range(1, None),
                              c_puct=in_range(0.0, None, open_lo=True))

    def __init__(self, cfg, observation_space, action_space, guide, gravity: bool, seed: int = 0, env=None) -> None:
        self.gravity = gravity
        self.usual_win_length = 4 if gravity else 3
        super().__init__(cfg, observation_space, action_space, seed, env)
        for method in ('action_probabilities', 'value'):
            if not callable(getattr(guide, method, None)):
                raise TypeError(f'guided search: the player {type(guide).__name__} has no {method}(); expected a '
                                f'policy with discrete action probabilities and a value (PPO)')
        self.search = LockstepPUCT(self.geometry, policy_evaluator(guide, self.geometry), self.cfg['num_simulations'],
                                   self.cfg['c_puct'], self.rng)

    def _choose(self, obs: np.ndarray, action_mask: Optional[np.ndarray]) -> np.ndarray:
        own, opp = self._stones(obs)
        return self.search.search(own, opp, given_mask(action_mask, self.name))


def guided_search_player(env_cfg, policy, num_simulations: int, seed: int = 0, c_puct: float = 1.5):
    """``policy`` playing through :class:`GuidedSearchPlayer` on the board of ``env_cfg`` (a line game)."""
    from sparring.worker.env.battle import battle_env_class
    env_cls = battle_env_class(env_cfg.type)
    if not callable(getattr(env_cls, 'search_acting', None)):  # the line games, which offer a search over their rules
        raise ConfigError(f'--search: the search steps the rules of a k-in-a-row game (tictactoe, connect_four); '
                          f'this run plays {env_cfg.type!r}')
    geometry = BoardGeometry(env_cfg.rows, env_cfg.cols, env_cfg.win_length, env_cls.gravity)
    cfg = dict(win_length=geometry.win_length, num_simulations=int(num_simulations), c_puct=float(c_puct))
    return GuidedSearchPlayer(cfg, policy.observation_space, policy.action_space, policy, env_cls.gravity, seed=seed)
