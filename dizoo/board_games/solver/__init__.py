"""A perfect connect-four player (:mod:`.solver`, compiled by numba: the ``perfect`` extra) and the labelled
positions that judge a player against it (:mod:`.testset`, which needs only numpy).

Importing this package needs no numba; making a :class:`Solver` does, and says so in one ImportError.
"""
from sparring.dizoo.board_games.solver.solver import (ILLEGAL, SearchBudgetExceeded, Solver, moves_to_end, outcome,
                                                      require_engine)
