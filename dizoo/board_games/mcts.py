"""UCT searches of a batch of k-in-a-row positions, run in lockstep with numpy.

Every game of the batch gets its own tree and the same number of simulations, exactly as if
searched one by one: selection by UCB1, expansion of one untried action chosen uniformly at
random, a uniformly random playout (:mod:`.playout`), and backup of the playout's result. What
is shared is only the numpy call: simulation ``s`` of every tree is one pass of array
operations, so the cost of a call is spread over the batch.

The trees live in preallocated flat arrays, one entry per node (a tree has at most one node per
simulation plus its root), indexed ``tree * nodes_per_tree + node``; a node's children sit in
*slots* in the order they were expanded. Each node's legal actions are shuffled once when it is
made, and expansion takes them in that order, so the next untried action is uniformly random;
ties of UCB1 go to the earliest expanded child, as in a search that keeps children in insertion
order.
"""
from __future__ import annotations

import numpy as np

from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.playout import RandomPlayouts
from sparring.policy.bot import choose_best

# An untried slot points at this shared node; its value of -inf keeps it out of UCB1's choice.
_NO_CHILD_VALUE = -np.inf


class LockstepUCT:
    """UCT with random playouts for a batch of positions of one board geometry."""

    def __init__(self, geometry: BoardGeometry, num_simulations: int, exploration: float,
                 rng: np.random.Generator) -> None:
        self.geometry, self.num_simulations, self.exploration, self.rng = geometry, num_simulations, exploration, rng
        self.playouts = RandomPlayouts(geometry, rng)

    def search(self, own: np.ndarray, opp: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """The most visited root action of each position (``own`` to move; uint64 ``[n]``, legal ``[n, A]``)."""
        actions = np.empty(len(own), np.int64)
        forced = legal.sum(axis=1) == 1  # nothing to search
        actions[forced] = legal[forced].argmax(axis=1)
        searched = np.flatnonzero(~forced)
        if len(searched):
            actions[searched] = _Forest(self, own[searched], opp[searched], legal[searched]).run()
        return actions

    def shuffled_actions(self, legal: np.ndarray) -> np.ndarray:
        """Per row, the legal actions in a uniformly random order, then the illegal ones ``[n, A]``."""
        keys = np.where(legal, self.rng.random(legal.shape), 2.0)
        return np.argsort(keys, axis=1)


class _Forest:
    """The trees of one batched search and the arrays that hold them."""

    def __init__(self, uct: LockstepUCT, own: np.ndarray, opp: np.ndarray, legal: np.ndarray) -> None:
        self.uct = uct
        n, num_actions = legal.shape
        self.nodes_per_tree = uct.num_simulations + 1
        # Two shared nodes after the trees': ``no_child`` fills untried slots (visited once, valued
        # -inf, so UCB1 never picks it); ``end`` is where a descent goes after its leaf.
        size = n * self.nodes_per_tree + 2
        self.no_child, self.end = size - 2, size - 1
        self.roots = np.arange(n) * self.nodes_per_tree
        self.visits = np.zeros(size)
        self.value = np.zeros(size)  # summed results, from the view of the player who moved into the node
        self.visits[self.no_child], self.value[self.no_child] = 1.0, _NO_CHILD_VALUE
        self.mover = np.zeros(size, np.uint64)  # the player to move at the node ...
        self.other = np.zeros(size, np.uint64)  # ... and the one who just moved
        self.terminal = np.zeros(size, bool)
        self.terminal_value = np.zeros(size)  # 1 won by the move into the node, 0 a draw
        # Where selection stops: a node with an untried action, or a terminal one. Every node starts so.
        self.stops = np.ones(size, bool)
        # Where selection goes from each node: its UCB1 child, or ``end`` where it stops. Only the
        # nodes on a simulation's path change their statistics (or their children's), so this is
        # recomputed for them after each backup rather than at every step of every descent.
        self.next_node = np.full(size, self.end)
        self.num_legal = np.zeros(size, np.int64)
        self.num_expanded = np.zeros(size, np.int64)
        self.child = np.full((size, num_actions), self.no_child, np.int64)  # by slot
        self.slot_action = np.zeros((size, num_actions), np.int64)
        self.mover[self.roots], self.other[self.roots] = own, opp
        self.num_legal[self.roots] = legal.sum(axis=1)
        self.slot_action[self.roots] = uct.shuffled_actions(legal)
        # The nodes of each descent by depth, then ``end``; no game is longer than the board.
        self.paths = np.empty((uct.geometry.num_cells + 3, n), np.int64)
        self.paths[0] = self.roots
        self.trees = np.arange(n)

    def run(self) -> np.ndarray:
        for simulation in range(self.uct.num_simulations):
            paths = self._select()
            depth = (paths[1:] != self.end).sum(axis=0)
            leaf = paths[depth, self.trees]
            leaf_value, growing, new = self._expand_and_play_out(leaf, simulation)
            paths[depth[growing] + 1, growing] = new
            depth[growing] += 1
            self._back_up(paths, depth, leaf_value)
        return self._most_visited_actions()

    def _select(self) -> np.ndarray:
        """Descend every tree by UCB1 while its node is fully expanded and not terminal: the nodes
        visited by depth ``[levels, n]``, each tree's followed by ``end`` down to the last level."""
        node, level, next_node, paths = self.roots, 0, self.next_node, self.paths
        while True:
            level += 1
            node = next_node[node]
            paths[level] = node
            if node.min() == self.end:  # ``end`` is the highest index
                return paths[:level + 1]

    def _update_next_nodes(self, nodes: np.ndarray) -> None:
        """Recompute where selection goes from ``nodes``: the UCB1 choice among the children,
        ties to the earliest expanded. A node that stops keeps ``end``: it stops for good or until
        its last untried action is expanded, on a path that brings it back here."""
        nodes = nodes[~self.stops[nodes]]
        children = self.child[nodes]
        per_visit = 1.0 / self.visits[children]
        log_visits = np.log(self.visits[nodes])
        score = self.value[children] * per_visit + self.uct.exploration * np.sqrt(log_visits[:, None] * per_visit)
        self.next_node[nodes] = children[np.arange(len(nodes)), score.argmax(axis=1)]

    def _expand_and_play_out(self, leaf: np.ndarray, simulation: int):
        """Add one child below each non-terminal leaf and play it out: the value of the position
        reached, from the view of the player who moved into it; the trees that grew; their new nodes."""
        uct, g = self.uct, self.uct.geometry
        leaf_value = self.terminal_value[leaf]
        growing = np.flatnonzero(~self.terminal[leaf])
        if len(growing) == 0:
            return leaf_value, growing, growing
        parent = leaf[growing]
        slot = self.num_expanded[parent]
        action = self.slot_action[parent, slot]
        self.num_expanded[parent] = slot + 1
        self.stops[parent] = slot + 1 < self.num_legal[parent]
        new = self.roots[growing] + simulation + 1
        self.child[parent, slot] = new
        mover, other = self.mover[parent], self.other[parent]
        placed = mover | g.move_bits(mover | other, action)
        self.mover[new], self.other[new] = other, placed
        result, over = uct.playouts(other, placed)  # from the view of ``other``, now to move
        self.terminal[new] = over
        # Only read for terminal nodes (their playout is the game's result); legal moves and
        # their order only for the others.
        self.terminal_value[new] = leaf_value[growing] = -result
        legal = g.legal_mask(other | placed)
        self.num_legal[new] = legal.sum(axis=1)
        self.slot_action[new] = uct.shuffled_actions(legal)
        return leaf_value, growing, new

    def _back_up(self, paths: np.ndarray, leaf_depth: np.ndarray, leaf_value: np.ndarray) -> None:
        """Add a visit and the leaf's value, its sign flipping at each level, to every node on each
        path (``paths`` ``[levels, n]``, each tree's down to its ``leaf_depth``, then ``end``)."""
        levels_above_leaf = leaf_depth - np.arange(len(paths))[:, None]
        sign = 1.0 - 2.0 * (levels_above_leaf & 1)
        # ``end`` collects the updates below the leaves; its statistics are never read.
        self.visits[paths] += 1.0
        self.value[paths] += sign * leaf_value
        self._update_next_nodes(paths[levels_above_leaf >= 0])

    def _most_visited_actions(self) -> np.ndarray:
        root_children = self.child[self.roots]
        visits = np.where(root_children != self.no_child, self.visits[root_children], -1.0)
        slot = choose_best(visits, self.uct.rng)
        return self.slot_action[self.roots, slot]
