"""Atari games via Gymnasium and ale-py: the ``'atari'`` env with the standard preprocessing; ``config/`` holds ready configs."""
from sparring.dizoo.atari.atari_env import AtariEnv
from sparring.dizoo.atari.wrappers import wrap_atari
