"""Pure loss and advantage functions shared by the policies: GAE, PPO's clipped and KL-penalty losses.

DQN's pieces too: n-step transitions between a player's own decisions, (double, masked) bootstrap
values, the TD loss and epsilon-greedy probabilities. Everything here is a function of arrays, so
each piece is testable against a hand computation.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np
import torch


def gae(reward: np.ndarray, value: np.ndarray, next_value: np.ndarray, terminated: np.ndarray,
        truncated: np.ndarray, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimation over a ``[T, B]`` chunk; returns (advantages, returns).

    ``next_value[t]`` is the value of the state after step t: the next row's value within an
    episode, the value of the *final* observation where the episode was truncated (so a
    time-limit is bootstrapped, not treated as death), and anything where it terminated (it is
    masked out). The recursion stops at every episode end, terminated or truncated.
    """
    reward = np.asarray(reward, dtype=np.float64)
    value = np.asarray(value, dtype=np.float64)
    alive = 1.0 - np.asarray(terminated, dtype=np.float64)
    cont = 1.0 - np.logical_or(terminated, truncated).astype(np.float64)
    delta = reward + gamma * alive * np.asarray(next_value, dtype=np.float64) - value
    advantages = np.zeros_like(delta)
    running = np.zeros(delta.shape[1:], dtype=np.float64)
    decay = gamma * lam
    for t in range(delta.shape[0] - 1, -1, -1):
        running = delta[t] + decay * cont[t] * running
        advantages[t] = running
    returns = advantages + value
    return advantages.astype(np.float32), returns.astype(np.float32)


def vtrace(reward: np.ndarray, value: np.ndarray, next_value: np.ndarray, terminated: np.ndarray,
           truncated: np.ndarray, log_ratio: np.ndarray, gamma: float, rho_bar: float = 1.0, c_bar: float = 1.0,
           lam: float = 1.0, weight_advantages: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """V-trace (IMPALA, Espeholt et al. 2018) over a ``[T, B]`` chunk; returns (advantages, value targets).

    ``log_ratio`` is log pi(a|x) - log mu(a|x): the current policy's log-probability of each taken
    action minus the behaviour policy's, recorded when the chunk was collected. With
    ``rho = min(rho_bar, exp(log_ratio))`` and ``c = lam * min(c_bar, exp(log_ratio))`` the value
    targets follow the paper's recursion ``v_t - V(x_t) = rho_t * delta_t + gamma * c_t * (v_{t+1} - V(x_{t+1}))``
    with ``delta_t = r_t + gamma * V(x_{t+1}) - V(x_t)``, and the policy-gradient advantage is
    ``rho_t * (r_t + gamma * v_{t+1} - V(x_t))``; with ``weight_advantages=False`` it is returned without the
    ``rho_t``, for an objective that applies its own importance ratio (PPO's clipped surrogate multiplies
    by pi/mu already, so a second weight would count the same correction twice). Episode ends are treated as in :func:`gae`:
    ``next_value`` is bootstrapped where an episode was truncated, ignored where it terminated, and the
    recursion stops at both. On-policy (``log_ratio`` 0, ``rho_bar``, ``c_bar`` >= 1) with ``lam`` 1
    the advantages and targets equal GAE's with lambda 1.
    """
    reward = np.asarray(reward, dtype=np.float64)
    value = np.asarray(value, dtype=np.float64)
    next_value = np.asarray(next_value, dtype=np.float64)
    ratio = np.exp(np.asarray(log_ratio, dtype=np.float64))
    rho = np.minimum(rho_bar, ratio)
    c = lam * np.minimum(c_bar, ratio)
    alive = 1.0 - np.asarray(terminated, dtype=np.float64)
    cont = 1.0 - np.logical_or(terminated, truncated).astype(np.float64)
    delta = reward + gamma * alive * next_value - value
    correction = np.zeros_like(delta)  # v_t - V(x_t)
    after = np.zeros(delta.shape[1:], dtype=np.float64)  # v_{t+1} - V(x_{t+1}) within the episode; 0 at its end
    next_target = np.zeros_like(delta)  # v_{t+1}: the next state's value target (0 past a terminal state)
    for t in range(delta.shape[0] - 1, -1, -1):
        after = cont[t] * after
        next_target[t] = alive[t] * next_value[t] + after
        after = rho[t] * delta[t] + gamma * c[t] * after
        correction[t] = after
    targets = value + correction
    advantages = reward + gamma * next_target - value
    if weight_advantages:
        advantages = rho * advantages
    return advantages.astype(np.float32), targets.astype(np.float32)


def normalize_advantages(adv: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    if adv.numel() < 2:
        return adv
    return (adv - adv.mean()) / (adv.std() + eps)


def clipped_surrogate_loss(log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor,
                           clip_range: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO's clipped policy objective, as a loss to minimise; returns (loss, approx_kl, clip_fraction)."""
    log_ratio = log_prob - old_log_prob
    ratio = log_ratio.exp()
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1.0 - clip_range, 1.0 + clip_range)
    loss = torch.maximum(unclipped, clipped).mean()
    approx_kl, clip_fraction = ratio_statistics(log_ratio, clip_range)
    return loss, approx_kl, clip_fraction


@torch.no_grad()
def ratio_statistics(log_ratio: torch.Tensor, clip_range: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(approx-KL, clip fraction) of the probability ratios new/old, for logging."""
    ratio = log_ratio.exp()
    # The low-variance, always non-negative estimator of KL(old || new).
    approx_kl = ((ratio - 1.0) - log_ratio).mean()
    clip_fraction = ((ratio - 1.0).abs() > clip_range).float().mean()
    return approx_kl, clip_fraction


def search_target_loss(log_probs: torch.Tensor, target: torch.Tensor, log_prob: torch.Tensor,
                       old_log_prob: torch.Tensor, weight: Optional[torch.Tensor] = None
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Expert iteration's policy loss: the cross-entropy from a search's visit distribution ``target``
    ``[N, A]`` to the policy's ``log_probs`` ``[N, A]`` (actions the search never visited, illegal ones
    among them, count nothing), averaged over the steps, or with ``weight`` ``[N]`` their weighted mean (as
    if step i were drawn ``weight[i]`` times as often); returns (loss, approx-KL of the taken actions'
    ratios, clip fraction 0)."""
    visited = target > 0
    cross_entropy = -torch.where(visited, target * log_probs, torch.zeros_like(log_probs)).sum(-1)
    loss = cross_entropy.mean() if weight is None else (weight * cross_entropy).sum() / weight.sum().clamp_min(1e-8)
    approx_kl, _ = ratio_statistics(log_prob - old_log_prob, float('inf'))
    return loss, approx_kl, torch.zeros_like(approx_kl)


def kl_penalty_loss(log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor,
                    kl: torch.Tensor, beta: float, eta: float, kl_target: float) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO's adaptive-KL objective as a loss; returns (loss, mean KL).

    ``-mean(A * ratio) + beta * KL + eta * max(0, KL - 2 * kl_target)^2`` with ``KL`` the mean of
    the per-sample ``kl`` (old || new). The hinge adds a steep wall once the KL overshoots twice
    its target, which beta alone (adapted only between updates) cannot provide within one.
    """
    surrogate = (advantages * (log_prob - old_log_prob).exp()).mean()
    kl_mean = kl.mean()
    hinge = torch.clamp(kl_mean - 2.0 * kl_target, min=0.0).pow(2)
    return -surrogate + beta * kl_mean + eta * hinge, kl_mean


# beta is kept within these bounds; past the narrower LR_ADAPT_BETA_RANGE the penalty alone is
# judged unable to steer the KL, so the learning rate is adapted as well, within its own bounds.
KL_BETA_BOUNDS = (1.0 / 35.0, 35.0)
LR_ADAPT_BETA_RANGE = (1.0 / 30.0, 30.0)
LR_MULTIPLIER_BOUNDS = (0.1, 10.0)


class KLPenaltyState(NamedTuple):
    beta: float
    lr_multiplier: float


def adapt_kl_penalty(kl: float, kl_target: float, beta: float, lr_multiplier: float,
                     factor: float = 1.5) -> KLPenaltyState:
    """The adaptive-KL rule, applied once per update with the KL the update ended with.

    KL above ``2 * kl_target``: beta grows by ``factor`` (and once beta is above 30, the
    learning-rate multiplier shrinks by it). KL below ``kl_target / 2``: beta shrinks (and below
    1/30, the multiplier grows). In between nothing changes.
    """
    if kl > 2.0 * kl_target:
        beta = min(beta * factor, KL_BETA_BOUNDS[1])
        if beta > LR_ADAPT_BETA_RANGE[1] and lr_multiplier > LR_MULTIPLIER_BOUNDS[0]:
            lr_multiplier = max(lr_multiplier / factor, LR_MULTIPLIER_BOUNDS[0])
    elif kl < 0.5 * kl_target:
        beta = max(beta / factor, KL_BETA_BOUNDS[0])
        if beta < LR_ADAPT_BETA_RANGE[0] and lr_multiplier < LR_MULTIPLIER_BOUNDS[1]:
            lr_multiplier = min(lr_multiplier * factor, LR_MULTIPLIER_BOUNDS[1])
    return KLPenaltyState(float(beta), float(lr_multiplier))


def value_loss(value: torch.Tensor, old_value: torch.Tensor, returns: torch.Tensor,
               clip_range: float | None) -> torch.Tensor:
    """Half squared error; with ``clip_range`` the pessimistic max of clipped and unclipped errors."""
    error = (value - returns).pow(2)
    if clip_range is not None:
        clipped_value = old_value + (value - old_value).clamp(-clip_range, clip_range)
        error = torch.maximum(error, (clipped_value - returns).pow(2))
    return 0.5 * error.mean()


def explained_variance(prediction: np.ndarray, target: np.ndarray) -> float:
    """1 - Var[target - prediction] / Var[target]; NaN when the target is constant."""
    var_target = np.var(target)
    if var_target == 0:
        return float('nan')
    return float(1.0 - np.var(target - prediction) / var_target)


class LinearSchedule(NamedTuple):
    """A value annealed linearly from ``start`` (progress 0) to ``end`` (progress 1)."""
    start: float
    end: float

    def __call__(self, progress: float) -> float:
        progress = min(max(progress, 0.0), 1.0)
        return self.start + (self.end - self.start) * progress


# -- Q-learning: n-step transitions, bootstrap targets, TD loss -----------------------------------

# How the state a transition bootstraps from is found (``NStepTransitions.boot_kind``).
BOOT_NONE = 0  # terminated before the n-th decision: no bootstrap (discount 0)
BOOT_DECISION = 1  # a later decision in the chunk: ``obs[boot_row]`` with ``action_mask[boot_row]``
BOOT_NEXT_OBS = 2  # ``next_obs[boot_row]``: a truncated episode's final observation, or the state after the chunk


class NStepTransitions(NamedTuple):
    """One n-step transition per decision that has a usable successor; all arrays are ``[N]``."""
    row: np.ndarray  # the decision's row t ...
    col: np.ndarray  # ... and column b in the chunk
    ret: np.ndarray  # discounted reward collected before the bootstrap (or the episode's end)
    discount: np.ndarray  # gamma ** (decisions spanned) where bootstrapped, 0 where terminated
    boot_row: np.ndarray  # row of the bootstrap state in the same column (see ``boot_kind``)
    boot_kind: np.ndarray  # BOOT_NONE, BOOT_DECISION or BOOT_NEXT_OBS


def nstep_transitions(reward: np.ndarray, terminated: np.ndarray, truncated: np.ndarray,
                      decision: Optional[np.ndarray], gamma: float, n: int,
                      bootstrap_tail: bool) -> NStepTransitions:
    """n-step Q-learning transitions of a ``[T, B]`` chunk, per column, between the policy's own decisions.

    ``decision[t, b]`` marks the steps where the policy chose the action (None: every step, as
    in single-agent chunks). A turn-based player's transition goes from one of its moves to its
    next move: the rewards of the steps in between (the opponent's moves) are summed into the
    move's reward, and gamma discounts once per own move. A transition stops at the episode's
    end: a terminated one is not bootstrapped; a truncated one is, from the final observation
    (``next_obs`` of that row). Past the chunk's last row, the next state is ``next_obs[T-1]``
    when ``bootstrap_tail`` (every step a decision, so that state is one); otherwise it is
    unknown, the return is shortened to the decisions inside the chunk, and a decision with no
    later decision inside the chunk yields no transition.
    """
    reward = np.asarray(reward, dtype=np.float64)
    terminated = np.asarray(terminated, dtype=bool)
    done = terminated | np.asarray(truncated, dtype=bool)
    T, B = reward.shape
    decision = np.ones((T, B), dtype=bool) if decision is None else np.asarray(decision, dtype=bool)
    # Per row t: the reward from t up to the next decision or the episode's end (``segment``),
    # and what ends that stretch (``succ_kind``, at row ``succ_row``): a decision, the episode's
    # end (terminated or truncated), or the chunk's end.
    DECISION, TERMINATED, TRUNCATED, TAIL = 0, 1, 2, 3
    segment = np.zeros((T, B))
    succ_kind = np.zeros((T, B), dtype=np.int64)
    succ_row = np.zeros((T, B), dtype=np.int64)
    for t in range(T - 1, -1, -1):
        if t == T - 1:
            kind, row, carried = np.full(B, TAIL), np.full(B, t), np.zeros(B)
        else:
            nxt = decision[t + 1]
            kind = np.where(nxt, DECISION, succ_kind[t + 1])
            row = np.where(nxt, t + 1, succ_row[t + 1])
            carried = np.where(nxt, 0.0, segment[t + 1])
        kind = np.where(done[t], np.where(terminated[t], TERMINATED, TRUNCATED), kind)
        row = np.where(done[t], t, row)
        segment[t] = reward[t] + np.where(done[t], 0.0, carried)
        succ_kind[t], succ_row[t] = kind, row

    rows, cols = np.nonzero(decision)
    ret = np.zeros(len(rows))
    discount = np.zeros(len(rows))
    boot_row = np.zeros(len(rows), dtype=np.int64)
    boot_kind = np.full(len(rows), BOOT_NONE, dtype=np.int64)
    keep = np.ones(len(rows), dtype=bool)
    current = rows.copy()
    open_ = np.ones(len(rows), dtype=bool)  # still walking from decision to decision
    for k in range(n):
        kind, row = succ_kind[current, cols], succ_row[current, cols]
        # The chunk ends before the next decision and the state there is unknown: stop at the
        # current decision (bootstrap from it) or, on the very first step, drop the transition.
        cut = open_ & (kind == TAIL) & (not bootstrap_tail)
        if k == 0:
            keep &= ~cut
        else:
            boot_row[cut], boot_kind[cut], discount[cut] = current[cut], BOOT_DECISION, gamma ** k
        open_ &= ~cut
        ret[open_] += gamma ** k * segment[current[open_], cols[open_]]
        ended = open_ & (kind != DECISION)
        from_next = ended & (kind != TERMINATED)
        boot_row[from_next], boot_kind[from_next], discount[from_next] = row[from_next], BOOT_NEXT_OBS, gamma ** (k + 1)
        open_ &= ~ended
        last = open_ & (k == n - 1)
        boot_row[last], boot_kind[last], discount[last] = row[last], BOOT_DECISION, gamma ** n
        current = np.where(open_, row, current)
    return NStepTransitions(rows[keep], cols[keep], ret[keep].astype(np.float32), discount[keep].astype(np.float32),
                            boot_row[keep], boot_kind[keep])


def masked_argmax(q: torch.Tensor, action_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The best legal action per row; a row with no legal action at all (a seat not to move) is unmasked."""
    if action_mask is None:
        return q.argmax(-1)
    usable = action_mask | ~action_mask.any(-1, keepdim=True)
    return q.masked_fill(~usable, float('-inf')).argmax(-1)


def q_bootstrap(next_q_target: torch.Tensor, next_q_online: Optional[torch.Tensor] = None,
                next_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Value of the bootstrap states: max over legal actions of the target network's Q, or, for
    double DQN (``next_q_online`` given), the target's Q of the online network's best legal action."""
    chooser = next_q_target if next_q_online is None else next_q_online
    best = masked_argmax(chooser, next_mask)
    return next_q_target.gather(-1, best.unsqueeze(-1)).squeeze(-1)


def td_loss(q_taken: torch.Tensor, target: torch.Tensor, weights: Optional[torch.Tensor] = None,
            kind: str = 'huber', huber_delta: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Weighted mean TD loss and the TD errors ``target - q``; ``kind`` 'huber' or 'mse' (half squared error)."""
    error = target.detach() - q_taken
    if kind == 'huber':
        per_sample = torch.nn.functional.huber_loss(q_taken, target.detach(), reduction='none', delta=huber_delta)
    elif kind == 'mse':
        per_sample = 0.5 * error.pow(2)
    else:
        raise ValueError(f"td_loss: kind must be 'huber' or 'mse', got {kind!r}")
    if weights is not None:
        per_sample = per_sample * weights
    return per_sample.mean(), error.detach()


def epsilon_greedy_probs(greedy: torch.Tensor, num_actions: int, action_mask: Optional[torch.Tensor],
                         epsilon: float) -> torch.Tensor:
    """``[B, A]`` probabilities of epsilon-greedy: 1 - epsilon on the greedy action, epsilon spread evenly
    over the legal actions (illegal ones get exactly 0; a row with none legal counts all as legal)."""
    if action_mask is None:
        legal = torch.ones(greedy.shape[0], num_actions, dtype=torch.float32, device=greedy.device)
    else:
        legal = (action_mask | ~action_mask.any(-1, keepdim=True)).float()
    probs = epsilon * legal / legal.sum(-1, keepdim=True)
    probs[torch.arange(greedy.shape[0], device=greedy.device), greedy] += 1.0 - epsilon
    return probs
