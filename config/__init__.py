"""Configs: defaults, ``compile_config`` (merge + validation), save and load of compiled configs."""
from sparring.config.schema import ConfigError, in_range, one_of, of_type, sequence_of, all_of
from sparring.config.compile import (compile_config, load_config, save_config, base_config, merge_class_section, compile_section,
                                     TYPED_SECTIONS, CONFIG_FILENAME)
