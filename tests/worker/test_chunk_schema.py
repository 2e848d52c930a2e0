"""A learner's chunk socket checks each chunk against its policy's chunk spec: a field the spec does not name, of
another dtype or shape, or a required one missing is refused at the transport and counted, for every policy."""
import pytest
import zmq

from tests.chunk_cases import CASES, honest_chunk, spec_of, spoilers, spoilt_chunk
from sparring.framework.messaging import Security
from sparring.worker.remote.protocol import PROTOCOL
from sparring.worker.remote.learner import chunk_security
from sparring.worker.remote.transport import DataPuller, DataPusher
from sparring.worker.remote.wire import MessageError, Signer, decode, encode

SECRET = b'0123456789abcdef0123456789abcdef'
BODY = dict(chunk_id='c1', player_id='p0', version=1, env_steps=32)


def _through_the_wire(arrays, spec):
    signer = Signer(SECRET)
    frames = encode('chunk', BODY, arrays, signer=signer, sender='collector-0', schemas=PROTOCOL)
    security = chunk_security(Security(signer, protocol=PROTOCOL), spec)
    return decode([bytes(f) for f in frames], signer=signer, schemas=security.schemas)


@pytest.mark.parametrize('case', sorted(CASES))
def test_an_honest_chunk_of_every_policy_passes(case):
    spec = spec_of(case)
    message = _through_the_wire(honest_chunk(spec), spec)
    assert sorted(message.arrays) == sorted(spec.names)


def _layout_spoilt():
    """(case, field, how) for every field of every case, spoilt in its dtype or its shape."""
    return [(case, f.name, how) for case in CASES for f in spec_of(case) for how, _ in spoilers(f)
            if how in ('shape', 'dtype')]


@pytest.mark.parametrize('case, name, how', _layout_spoilt())
def test_a_field_of_the_wrong_dtype_or_shape_is_refused_at_the_wire(case, name, how):
    spec = spec_of(case)
    with pytest.raises(MessageError, match=f"field '{name}' must be") as refused:
        _through_the_wire(spoilt_chunk(case, name, how, spec), spec)
    assert refused.value.reason == 'schema'


@pytest.mark.parametrize('case', sorted(CASES))
def test_a_field_the_spec_does_not_name_is_refused_at_the_wire(case):
    spec = spec_of(case)
    data = dict(honest_chunk(spec), extra=honest_chunk(spec)['reward'])
    with pytest.raises(MessageError, match="unexpected field 'extra'") as refused:
        _through_the_wire(data, spec)
    assert refused.value.reason == 'schema'


@pytest.mark.parametrize('case', [c for c in sorted(CASES) if any(f.required and f.name not in PROTOCOL['chunk']
                                                                  .required_arrays for f in spec_of(c))])
def test_a_missing_field_the_spec_requires_is_refused_at_the_wire(case):
    spec = spec_of(case)
    name = next(f.name for f in spec if f.required and f.name not in PROTOCOL['chunk'].required_arrays)
    data = honest_chunk(spec)
    del data[name]
    with pytest.raises(MessageError, match=f"missing field '{name}'") as refused:
        _through_the_wire(data, spec)
    assert refused.value.reason == 'schema'


def test_values_are_left_to_the_learner():
    """The wire reads the layout only: a NaN passes it, and the learner's own check (tested with the learners)
    refuses it."""
    spec = spec_of('ppo_clip')
    message = _through_the_wire(spoilt_chunk('ppo_clip', 'value', 'nan', spec), spec)
    assert 'value' in message.arrays


def test_the_learners_socket_refuses_and_counts_what_does_not_fit_and_takes_the_rest():
    spec = spec_of('ppo_vtrace')
    honest = honest_chunk(spec)
    bad = [dict(honest, extra=honest['reward']), spoilt_chunk('ppo_vtrace', 'log_prob', 'shape', spec),
           spoilt_chunk('ppo_vtrace', 'value', 'dtype', spec), {k: v for k, v in honest.items() if k != 'action_mask'}]
    security = Security(Signer(SECRET), protocol=PROTOCOL)
    context = zmq.Context()
    try:
        puller = DataPuller(context, '127.0.0.1', chunk_security(security, spec), name='learner data', queue=8)
        pusher = DataPusher(context, puller.address, security, sender='collector-0', queue=8)
        for i, arrays in enumerate(bad + [honest]):
            assert pusher.send('chunk', dict(BODY, chunk_id=str(i)), arrays, timeout=5.0)
        got = puller.recv(5.0)
        assert got is not None and got.body['chunk_id'] == str(len(bad))
        assert puller.rejected.counts == {'schema': len(bad)}
        pusher.close(linger=0)
        puller.close()
    finally:
        context.destroy(linger=0)
