"""Environments: the Gymnasium adapter, battle (multi-agent) envs and the vectorised env managers."""
from sparring.worker.env.errors import EnvError, EnvWorkerDiedError
