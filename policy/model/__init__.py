"""Networks used by the policies, registered in MODEL_REGISTRY."""
from sparring.policy.model.mlp import MLPActorCritic, orthogonal_init
from sparring.policy.model.q_mlp import QMLP
from sparring.policy.model.task_mlp import TaskSizedMLP
from sparring.policy.model.cnn import NatureCNNActorCritic
from sparring.policy.model.lstm import LSTMActorCritic
