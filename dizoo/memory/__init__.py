"""Memory tasks: what a policy must remember across steps; ``config/`` holds ready LSTM and MLP configs."""
from sparring.dizoo.memory.cue_recall_env import CueRecallEnv
