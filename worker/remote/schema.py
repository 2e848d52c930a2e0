"""Schemas of message bodies: each message kind's fields, their types and checks, and its arrays.

A body is declared once, as a ``TypedDict`` (what the code that reads it is type-checked against), and
:func:`schema_of` derives the :class:`Schema` that checks it on the wire: a key's type gives the accepted
types (``Optional[...]`` adds null, ``List[X]`` checks its items), ``NotRequired[...]`` makes it optional and
``Annotated[T, check]`` adds a check. A learner's ``chunk`` messages are checked by :class:`ChunkSchema`, built
from its policy's chunk spec. A protocol is a mapping from message kind to :class:`Schema`; :func:`~sparring.worker.remote.wire.decode`
refuses a message whose body or arrays do not fit its kind's schema. Every number in a body is bounded:
integers (fields and list items) by :data:`MAX_INT`, so no count, step or version a peer sends can overflow
a sum, an int64 or a TensorBoard step later; floats are finite (the JSON parser refuses the rest).
"""
from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Callable, Mapping, Optional, Tuple

import numpy as np

from sparring.policy.chunk_spec import ChunkError, ChunkSpec
from sparring.worker.remote.wire import MessageError, short

# Integers in a body stay within +-2**53: exact as floats, and a run's sums of them stay far from int64's end.
MAX_INT = 2 ** 53
# Returns, rewards and other measured values of a sane run never come near this (1e30 made a value loss inf).
MAX_ABS_VALUE = 1e10


@dataclasses.dataclass(frozen=True)
class Field:
    """One body field: accepted Python types, whether required, element types of a list."""
    types: Tuple[type, ...]
    required: bool = True
    items: Optional[Tuple[type, ...]] = None
    check: Optional[Callable[[Any], Optional[str]]] = None  # returns an error text or None

    def validate(self, name: str, value: Any, kind: str) -> None:
        if not _is_instance(value, self.types):
            raise MessageError('schema', f'{kind!r} message: field {name!r} must be {_type_names(self.types)}, '
                                         f'got {type(value).__name__} {short(value)}')
        if _too_large(value):
            raise MessageError('schema', f'{kind!r} message: field {name!r} must be within +-{MAX_INT}, got '
                                         f'{short(value)}')
        if self.items is not None and isinstance(value, list):
            for i, item in enumerate(value):
                if not _is_instance(item, self.items) or _too_large(item):
                    raise MessageError('schema', f'{kind!r} message: {name}[{i}] must be {_type_names(self.items)}'
                                                 f' (integers within +-{MAX_INT}), got {type(item).__name__} '
                                                 f'{short(item)}')
        if self.check is not None and value is not None:
            problem = self.check(value)
            if problem:
                raise MessageError('schema', f'{kind!r} message: field {name!r} {problem}')


def field(*types: type, optional: bool = False, items: Optional[Tuple[type, ...]] = None,
          check: Optional[Callable[[Any], Optional[str]]] = None) -> Field:
    return Field(tuple(types), not optional, items, check)


@dataclasses.dataclass(frozen=True)
class Schema:
    """A message kind: its body fields and its arrays (``array_names`` None: any names)."""
    body: Mapping[str, Field] = dataclasses.field(default_factory=dict)
    required_arrays: Tuple[str, ...] = ()
    array_names: Optional[Tuple[str, ...]] = ()

    def validate(self, kind: str, body: Any, arrays: Mapping[str, np.ndarray]) -> None:
        if not isinstance(body, dict):
            raise MessageError('schema', f'{kind!r} message: body must be a JSON object, got {short(body)}')
        unknown = sorted(set(body) - set(self.body))
        if unknown:  # named, but never more than a few of them: the reply must not echo a flood back
            named = ', '.join(short(name, 40) for name in unknown[:5]) + (f' and {len(unknown) - 5} more'
                                                                         if len(unknown) > 5 else '')
            raise MessageError('schema', f'{kind!r} message: unknown field(s) {named}; expected among '
                                         f'{sorted(self.body)}')
        for name, spec in self.body.items():
            if name not in body:
                if spec.required:
                    raise MessageError('schema', f'{kind!r} message: missing field {name!r}')
                continue
            spec.validate(name, body[name], kind)
        missing = [n for n in self.required_arrays if n not in arrays]
        if missing:
            raise MessageError('schema', f'{kind!r} message: missing arrays {missing}')
        if self.array_names is not None:
            extra = sorted(set(arrays) - set(self.array_names) - set(self.required_arrays))
            if extra:
                expected = sorted(set(self.array_names) | set(self.required_arrays))
                raise MessageError('schema', f'{kind!r} message: unexpected arrays {extra}; '
                                             f'expected {expected or "none"}')


@dataclasses.dataclass(frozen=True)
class ChunkSchema:
    """The ``chunk`` message as one learner takes it: the catalogue's schema of its body and common arrays, and the
    arrays its policy's chunk spec names, each of the spec's dtype and shape (:meth:`ChunkSpec.validate` without
    reading the values, which the learner checks). A chunk with a field the spec does not name, of another dtype or
    shape, or lacking a required one is refused at the socket, counted as ``schema``; the socket's byte bound
    (:func:`~sparring.worker.remote.learner.chunk_bytes_limit`) comes from the same spec."""
    base: Schema
    spec: ChunkSpec

    def validate(self, kind: str, body: Any, arrays: Mapping[str, np.ndarray]) -> None:
        self.base.validate(kind, body, arrays)
        try:
            self.spec.validate(arrays, where=f'{kind!r} message', values=False)
        except ChunkError as err:
            raise MessageError('schema', str(err)) from None


def schema_of(body: type, required_arrays: Tuple[str, ...] = (), array_names: Optional[Tuple[str, ...]] = ()) -> Schema:
    """The :class:`Schema` of a body declared as the ``TypedDict`` ``body`` (see the module docstring)."""
    fields = {}
    for name, hint in typing.get_type_hints(body, include_extras=True).items():
        required = True
        if typing.get_origin(hint) in (typing.NotRequired, typing.Required):
            required, hint = typing.get_origin(hint) is typing.Required, typing.get_args(hint)[0]
        check = None
        if typing.get_origin(hint) is typing.Annotated:
            hint, check = hint.__origin__, hint.__metadata__[0]
        options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
        accepted = tuple(_json_type(option) for option in options)
        items = None
        if accepted == (list,) and typing.get_args(hint):
            items = (_json_type(typing.get_args(hint)[0]),)
        fields[name] = Field(accepted, required, items, check)
    return Schema(fields, required_arrays, array_names)


def _json_type(hint: Any) -> type:
    """The Python type a JSON body holds for a declared type: ``List[str]`` a list, a TypedDict a dict."""
    if hint is None or hint is type(None):
        return type(None)
    if typing.is_typeddict(hint):
        return dict
    origin = typing.get_origin(hint)
    if origin is not None:
        return origin
    if hint not in (str, int, float, bool, list, dict):
        raise TypeError(f'schema_of: {hint!r} is not a type a JSON body holds; expected str, int, float, bool, '
                        f'list, dict, a TypedDict or Optional/List/Dict of them')
    return hint


def _is_instance(value: Any, types: Tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in types
    if isinstance(value, int) and float in types:
        return True
    return isinstance(value, types)


def _too_large(value: Any) -> bool:
    return type(value) is int and not -MAX_INT <= value <= MAX_INT


def _type_names(types: Tuple[type, ...]) -> str:
    return ' or '.join('null' if t is type(None) else t.__name__ for t in types)


def non_negative(value) -> Optional[str]:
    """A field check: the number is >= 0."""
    return None if value >= 0 else f'must be >= 0, got {value!r}'


def numbers(value) -> Optional[str]:
    """A field check: every value of the dict is a number within +-:data:`MAX_INT` (a statistic)."""
    for key, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not -MAX_INT <= v <= MAX_INT:
            return f'[{short(key, 40)}] must be a number within +-{MAX_INT}, got {short(v)}'
    return None


def counts(value) -> Optional[str]:
    """A field check: every value of the dict is an integer from 0 to :data:`MAX_INT` (a count per key)."""
    for key, v in value.items():
        if type(v) is not int or not 0 <= v <= MAX_INT:
            return f'[{short(key, 40)}] must be an integer from 0 to {MAX_INT}, got {short(v)}'
    return None


def values_within(limit: float):
    """A field check: every number of the list is within +-``limit`` (a measured value, e.g. a return)."""
    def check(value) -> Optional[str]:
        for i, v in enumerate(value):
            if not -limit <= v <= limit:
                return f'[{i}] must be within +-{limit:g}, got {short(v)}'
        return None
    return check


# Shorthands for the types a JSON body holds.
STR, INT, FLOAT, BOOL, LIST, DICT, NONE = str, int, float, bool, list, dict, type(None)
