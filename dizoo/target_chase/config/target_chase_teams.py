"""A league of three teams of two on target chase: six players chase one moving target, each team ranked by how
close its two members kept on average.

The free-for-all league (``target_chase_league.py``) with ``env.team_size=2`` and six seats. Each job seats the
player and five opponents its branches draw one by one, its teammate among them: itself by self-play, one of its
snapshots by PFSP, so the player is often its own teammate and its own rival in the same game. It learns from every
seat it holds, each paid its team's reward, and each finished game is recorded as a ranking of the six seats with
their teams: teammates share their rank, and only players of different teams meet in the payoff. The evaluation
games seat the random bot and the scripted ``target_chase_greedy`` in the other five seats in turn (teammate
included); the summary's ``eval`` says how often the player's team finished ahead of each when it was a rival.
"""
import copy
from typing import Any, Dict

from sparring.dizoo.target_chase.config.target_chase_league import config as free_for_all

config: Dict[str, Any] = copy.deepcopy(free_for_all)
config['exp_name'] = 'runs/target_chase_teams'
config['env'].update(seats=6, team_size=2)
config['league']['seats'] = 6
