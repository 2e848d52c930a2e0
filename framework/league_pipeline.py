"""The serial league run is :mod:`sparring.framework.serial_run` (one coordinator for every kind of run);
these names stay for user code."""
from sparring.framework.coordinator import INIT_REF  # noqa: F401
from sparring.framework.run_setup import (LEAGUE_STATE_FILE, closing_report, complete_league_config,  # noqa: F401
                                          evaluation_opponents)
from sparring.framework.serial_run import LeagueRun  # noqa: F401
from sparring.worker.evaluation import min_score  # noqa: F401
