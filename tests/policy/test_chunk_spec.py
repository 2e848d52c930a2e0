"""Each policy declares the fields it learns from, and a chunk is checked against that spec field by field."""
import numpy as np
import pytest

from sparring.policy.base import Policy
from sparring.policy.chunk_spec import PER_WINDOW, ChunkError, ChunkField, ChunkSpaces, ChunkSpec
from tests.chunk_cases import CASES, OBS, B, T, every_spoilt_field, honest_chunk, spec_of, spoilt_chunk


@pytest.mark.parametrize('case', CASES)
def test_an_honest_chunk_fits_its_policy_s_spec(case):
    spec = spec_of(case)
    spec.validate(honest_chunk(spec))
    required = {f.name: f for f in spec if f.required}
    spec.validate({k: v for k, v in honest_chunk(spec).items() if k in required})  # the optional ones may be absent


@pytest.mark.parametrize('case,name,how', every_spoilt_field())
def test_a_field_of_the_wrong_shape_dtype_or_values_is_refused_naming_it(case, name, how):
    spec = spec_of(case)
    with pytest.raises(ChunkError, match=f"chunk: field '{name}' must ") as err:
        spec.validate(spoilt_chunk(case, name, how, spec))
    assert '\n' not in str(err.value)


@pytest.mark.parametrize('case,name', [(case, f.name) for case in CASES for f in spec_of(case) if f.required])
def test_a_chunk_without_a_required_field_is_refused(case, name):
    spec = spec_of(case)
    data = honest_chunk(spec)
    del data[name]
    with pytest.raises(ChunkError, match=f"missing field '{name}'"):
        spec.validate(data)


@pytest.mark.parametrize('case', CASES)
def test_a_field_the_spec_does_not_name_is_refused(case):
    spec = spec_of(case)
    with pytest.raises(ChunkError, match="unexpected field 'smuggled'"):
        spec.validate(dict(honest_chunk(spec), smuggled=np.zeros((T, B), np.float32)))


def test_the_issue_s_chunks_are_refused_a_value_of_T_B_2_and_a_behaviour_log_prob_of_T_B_9():
    spec = spec_of('ppo_clip')
    with pytest.raises(ChunkError, match=r"field 'value' must be float32 \[8, 4\], got shape \[8, 4, 2\]"):
        spec.validate(dict(honest_chunk(spec), value=np.zeros((T, B, 2), np.float32)))
    spec = spec_of('ppo_vtrace')
    with pytest.raises(ChunkError, match=r"field 'log_prob' must be float32 \[8, 4\], got shape \[8, 4, 9\]"):
        spec.validate(dict(honest_chunk(spec), log_prob=np.zeros((T, B, 9), np.float32)))


def test_policies_declare_what_they_learn_from():
    names = {case: set(spec_of(case).names) for case in CASES}
    every = {'obs', 'action', 'log_prob', 'value', 'reward', 'terminated', 'truncated', 'next_value'}
    battle = every | {'train_mask', 'value_mask', 'action_mask'}
    assert names['ppo_clip_single_agent'] == every
    assert names['ppo_clip'] == names['ppo_mmd'] == names['ppo_vtrace'] == battle
    assert names['ppo_box'] == battle - {'action_mask'}  # every Box action is legal: no mask
    assert names['dqn'] == battle | {'next_obs'}
    assert names['sac_box'] == every | {'next_obs'}
    assert names['sac_discrete'] == battle | {'next_obs', 'opponent', 'opponent_version'}
    assert names['ppo_search'] == battle | {'search_policy', 'search_value', 'value_target', 'value_labelled',
                                            'policy_target', 'policy_labelled', 'policy_weight'}
    recurrent = spec_of('ppo_recurrent')
    assert names['ppo_recurrent'] == battle | {'window_state_0', 'window_state_1'}
    assert recurrent.window_len == 4 and recurrent['window_state_0'] == ChunkField(
        'window_state_0', np.float32, (8,), finite=True, per=PER_WINDOW)


def test_no_policy_carries_the_old_flags():
    from sparring.policy.dqn import DQNPolicy
    from sparring.policy.ppo import PPOPolicy
    from sparring.policy.sac import SACPolicy
    for cls in (Policy, PPOPolicy, SACPolicy, DQNPolicy):
        assert not hasattr(cls, 'needs_next_obs') and not hasattr(cls, 'records_opponents')


def test_a_recurrent_chunk_must_hold_whole_windows():
    spec = spec_of('ppo_recurrent')
    data = honest_chunk(spec)
    with pytest.raises(ChunkError, match=r"field 'window_state_0' must be float32 \[2, 4, 8\], got shape \[3, 4, 8\]"):
        spec.validate(dict(data, window_state_0=np.zeros((3, B, 8), np.float32)))
    short = {k: v[:6] if k.startswith('window_') is False else v for k, v in data.items()}
    with pytest.raises(ChunkError, match='T = 6 steps must be whole windows of 4'):
        spec.validate(short)


def test_a_spec_refuses_fields_declared_twice_and_misnamed_window_fields():
    with pytest.raises(ValueError, match=r"fields \['obs'\] are declared twice"):
        ChunkSpec((ChunkField('obs', np.float32), ChunkField('obs', np.float32)))
    with pytest.raises(ValueError, match='per-window fields, and they alone'):
        ChunkField('state', np.float32, per=PER_WINDOW)


def test_the_spec_sizes_a_column_step_and_allocates_buffers():
    spec = spec_of('dqn')
    # obs and next_obs (4 float32 each), action (int64), mask (3 bools), 4 float32 and 4 bool scalars
    assert spec.column_step_bytes() == 2 * 16 + 8 + 3 + 4 * 4 + 4
    buffers = spec.allocate((T, B), ('obs', 'next_obs', 'search_policy'))
    assert set(buffers) == {'obs', 'next_obs'}  # a field the spec does not name is not allocated
    assert buffers['obs'].shape == (T, B, 4) and buffers['obs'].dtype == np.float32


def test_battle_observations_are_float32_whatever_the_space():
    import gymnasium as gym
    images = gym.spaces.Box(0, 255, (2, 2), np.uint8)
    assert ChunkSpaces(images, gym.spaces.Discrete(2)).observation_layout[1] == np.uint8
    assert ChunkSpaces(images, gym.spaces.Discrete(2), battle=True).observation_layout[1] == np.float32
    assert ChunkSpaces(OBS, gym.spaces.Discrete(2)).num_actions == 2


def test_the_spec_lays_out_observations_and_actions_as_the_envs_batch_them():
    import gymnasium as gym
    from sparring.policy.chunk_spec import action_layout, observation_layout
    from sparring.worker.env.battle_step import action_layout as battle_action_layout
    from sparring.worker.env.spaces import batch_obs_dtype
    for space in (gym.spaces.Box(-1.0, 1.0, (3,), np.float64), gym.spaces.Box(0, 255, (2, 2), np.uint8),
                  gym.spaces.Discrete(4), gym.spaces.MultiDiscrete([2, 3]), gym.spaces.MultiBinary(3)):
        assert observation_layout(space) == (space.shape, batch_obs_dtype(space))
    for space in (gym.spaces.Discrete(4), gym.spaces.Box(-1.0, 1.0, (2,), np.float64)):
        assert action_layout(space) == battle_action_layout(space)
