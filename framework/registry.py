"""The registries moved to :mod:`sparring.config.registry` (the ground floor); this name stays for user code."""
from sparring.config.registry import (BOT_REGISTRY, BUILTIN_MODULES, ENV_MANAGER_REGISTRY, ENV_REGISTRY,  # noqa: F401
                                      LEAGUE_REGISTRY, MODEL_REGISTRY, PLAYER_REGISTRY, POLICY_REGISTRY, Registry,
                                      RegistryError, ensure_builtins, import_modules)
