"""PPO's objectives, by the name ``learn.objective`` gives them: the registry, their config keys and checks.

    'clip'        the clipped surrogate (clip.py)
    'kl_penalty'  the adaptive KL penalty, the MuJoCo recipe (kl_penalty.py)
    'mmd'         magnetic mirror descent, for two-player zero-sum games (mmd.py)
    'search'      expert iteration: towards the visits of the search the player collects by (search.py)

:class:`~sparring.policy.ppo.PPOPolicy` builds the chosen one once (:func:`make_objective`) and calls it at
fixed points of its update (:mod:`sparring.policy.objectives.base` lists them). The NFSP-style average
policy is not an objective: it is fitted beside any of them (:mod:`sparring.policy.average_policy`).

A new objective is one new file and one line here. The file defines a subclass of
:class:`~sparring.policy.objectives.base.Objective` with ``policy_loss(minibatch) -> PolicyLoss`` and
overrides only the steps it changes, e.g. a "reverse-KL to the old policy" objective::

    class ReverseKLObjective(Objective):
        def before_update(self, batch, progress):
            keep_old_heads(self.parts, batch)
        def policy_loss(self, mb):
            ...  # from mb.head, mb.log_prob, mb.adv and mb.part.kept.old_head

and the line is its entry in ``OBJECTIVES`` below (the config's ``one_of`` check reads the names from
there). An objective with config keys of its own also declares ``<NAME>_DEFAULTS`` / ``<NAME>_CONSTRAINTS``
in its file (a comment beside each default, which the generated config reference reads) and names them in
``OBJECTIVE_DEFAULTS`` / ``OBJECTIVE_CONSTRAINTS`` on the same footing; checks across keys go in its
``check_config``. Nothing in ``policy/ppo.py`` changes.
"""
from __future__ import annotations

from typing import Dict, Type

from sparring.policy.objectives.base import Objective, PolicyParts
from sparring.policy.objectives.clip import ClipObjective
from sparring.policy.objectives.kl_penalty import KL_PENALTY_CONSTRAINTS, KL_PENALTY_DEFAULTS, KLPenaltyObjective
from sparring.policy.objectives.mmd import MMD_CONSTRAINTS, MMD_DEFAULTS, MMDObjective
from sparring.policy.objectives.search import SEARCH_CONSTRAINTS, SEARCH_DEFAULTS, SearchObjective

OBJECTIVES: Dict[str, Type[Objective]] = {
    'clip': ClipObjective,
    'kl_penalty': KLPenaltyObjective,
    'mmd': MMDObjective,
    'search': SearchObjective,
}

# The objectives' own ``learn`` keys, merged into PPO's defaults and constraints (policy/ppo_config.py).
OBJECTIVE_DEFAULTS = dict(**KL_PENALTY_DEFAULTS, **SEARCH_DEFAULTS, **MMD_DEFAULTS)
OBJECTIVE_CONSTRAINTS = {**KL_PENALTY_CONSTRAINTS, **SEARCH_CONSTRAINTS, **MMD_CONSTRAINTS}


def check_objective_config(learn: dict) -> None:
    """Every objective's checks across keys of a compiled ``learn`` section."""
    for objective in OBJECTIVES.values():
        objective.check_config(learn)


def make_objective(parts: PolicyParts) -> Objective:
    """The objective ``parts.learn['objective']`` names (the config has checked the name)."""
    return OBJECTIVES[parts.learn['objective']](parts)
