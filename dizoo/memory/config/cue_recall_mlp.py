"""The feed-forward baseline of ``cue_recall_lstm.py``: the same run with an MLP, which can only guess the cue."""
import copy

from sparring.dizoo.memory.config.cue_recall_lstm import config as _lstm_config

config = copy.deepcopy(_lstm_config)
config['exp_name'] = 'runs/cue_recall_mlp'
config['policy']['model'] = dict(type='mlp', hidden_sizes=[64, 64])
