"""Environments: the Gymnasium adapter, battle (multi-agent) envs and the vectorised env managers."""
from sparring.worker.env.errors import EnvError, EnvWorkerDiedError
from sparring.worker.env.gym_env import GymEnv, make_env
from sparring.worker.env.env_group import StepResult
from sparring.worker.env.manager import BaseEnvManager, EnvManager, make_env_manager
from sparring.worker.env.subprocess_manager import SubprocessEnvManager
from sparring.worker.env.battle import DictBattleVecEnv, is_battle_env, make_battle_env
from sparring.worker.env.battle_api import BattleEnv, NativeVecBattleEnv, VecBattleEnv
from sparring.worker.env.battle_step import BattleStep
from sparring.worker.env.check import EnvCheckReport, check_env
