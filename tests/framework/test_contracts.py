"""The typed contracts: a message body declared once (a TypedDict) gives the wire schema, and the commander
answers exactly the requests the catalogue declares, from its handler table."""
from typing import Annotated, Dict, List, NotRequired, Optional, TypedDict

import pytest

from sparring.framework.commander import Commander
from sparring.worker.remote.protocol import PROTOCOL
from sparring.worker.remote.schema import non_negative, schema_of
from sparring.worker.remote.wire import MessageError
from tests.scripts import load_script

helpers = load_script('tests/framework/test_parallel_commander.py', 'commander_helpers')


class Offer(TypedDict):
    job_id: int


class Body(TypedDict):
    name: str
    count: Annotated[int, non_negative]
    ref: Optional[str]
    ids: List[str]
    offers: List[Offer]
    stats: Dict[str, float]
    note: NotRequired[str]


def test_a_typed_body_gives_its_wire_schema():
    schema = schema_of(Body)
    assert list(schema.body) == ['name', 'count', 'ref', 'ids', 'offers', 'stats', 'note']
    fields = schema.body
    assert fields['name'].types == (str,) and fields['name'].required
    assert fields['count'].check is non_negative
    assert fields['ref'].types == (str, type(None))
    assert fields['ids'].types == (list,) and fields['ids'].items == (str,)
    assert fields['offers'].items == (dict,)  # a TypedDict travels as a JSON object
    assert fields['stats'].types == (dict,) and fields['stats'].items is None
    assert not fields['note'].required
    good = dict(name='a', count=1, ref=None, ids=['x'], offers=[dict(job_id=1)], stats={})
    schema.validate('body', good, {})
    with pytest.raises(MessageError, match="field 'count' must be >= 0"):
        schema.validate('body', dict(good, count=-1), {})
    with pytest.raises(MessageError, match=r"ids\[0\] must be str"):
        schema.validate('body', dict(good, ids=[3]), {})
    with pytest.raises(MessageError, match="missing field 'name'"):
        schema.validate('body', {k: v for k, v in good.items() if k != 'name'}, {})


def test_a_type_a_json_body_cannot_hold_is_refused_when_declared():
    class Odd(TypedDict):
        when: complex

    with pytest.raises(TypeError, match='not a type a JSON body holds'):
        schema_of(Odd)


def test_the_commander_answers_exactly_the_requests_of_the_catalogue(tmp_path):
    commander = Commander(helpers._cfg(tmp_path), clock=helpers.Clock())
    try:
        requests = {'register', 'heartbeat', 'goodbye', 'collect_task', 'jobs', 'chunk_report', 'params_request',
                    'publish', 'eval_task', 'eval_report'}
        assert requests <= set(PROTOCOL)
        assert set(commander.handlers) | {'register'} == requests  # register comes before a session exists
    finally:
        commander.close()
