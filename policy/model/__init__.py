"""Networks used by the policies, registered in MODEL_REGISTRY."""
from sparring.policy.model.mlp import MLPActorCritic, orthogonal_init
