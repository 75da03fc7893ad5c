"""The state of live objects (a run's agent, environment and `live` state) as data: a JSON tree and
numeric arrays, written by `encode` and read back by `Restore` INTO fresh objects of the same
structure, so a checkpoint holds numbers and names, never code (the mid-run checkpoints).

The walk follows each object's attributes. Leaves are None, bool, int, float, str, NumPy numeric
scalars, dtypes and arrays; containers are lists, tuples and dicts of those; NumPy Generators and
RandomStates are kept as their `bit_generator.state` / `get_state()`. An object (an instance of
a plain Python class) is never made from the file: its state is restored into the fresh object
at the same place, which must be of the same class with the same attributes; generators likewise.
Shared references (a buffer and an agent holding one generator, a cycle back to the agent) are
kept as aliases. Anything else is refused with the path where it was found.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

SCALARS = (type(None), bool, int, float, str)
NUMERIC = "biuf"                          # dtype kinds kept: bool, signed, unsigned, float


class Unsupported(TypeError):
    """An attribute whose state cannot be written as data (the message names its path)."""


class Mismatch(ValueError):
    """The file's state does not fit the fresh objects (the message names the path)."""


class _Plain:
    pass


PLAIN_SIZE = _Plain.__basicsize__        # an instance of a Python class with no C-level state


def class_name(obj) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def is_plain_object(obj) -> bool:
    """An instance of a Python class whose whole state is its __dict__ (no slots, no builtin base)."""
    cls = type(obj)
    return (hasattr(obj, "__dict__") and cls.__basicsize__ == PLAIN_SIZE and cls.__itemsize__ == 0
            and not isinstance(obj, type) and cls.__module__ != "builtins"
            and all(set(vars(c).get("__slots__", ())) <= {"__dict__", "__weakref__"} for c in cls.__mro__))


def numeric(dtype: np.dtype) -> bool:
    return dtype.kind in NUMERIC and dtype.fields is None and dtype.subdtype is None


def encode(root) -> tuple[object, list[np.ndarray]]:
    """(JSON tree, arrays) of `root`'s state; Unsupported names the first attribute that is not data."""
    arrays: list[np.ndarray] = []
    seen: dict[int, int] = {}
    keep = []                             # the objects numbered in `seen`, alive until the walk ends

    def walk(x, path: str, tracked: bool = True):
        t = type(x)
        if t in SCALARS:
            return x
        if isinstance(x, np.generic) and numeric(x.dtype):
            return {"@scalar": [x.dtype.str, x.item()]}
        if isinstance(x, np.dtype) and numeric(x):
            return {"@dtype": x.str}
        if t is tuple:
            return {"@tuple": [walk(v, f"{path}[{i}]", tracked) for i, v in enumerate(x)]}
        if tracked:
            if id(x) in seen:
                return {"@alias": seen[id(x)]}
            seen[id(x)] = len(seen)
            keep.append(x)
        if t is np.ndarray and numeric(x.dtype):
            arrays.append(x)
            return {"@array": len(arrays) - 1}
        if t is list:
            return [walk(v, f"{path}[{i}]", tracked) for i, v in enumerate(x)]
        if t is dict:
            return {"@dict": [[walk(k, path, False), walk(v, f"{path}[{k!r}]", tracked)] for k, v in x.items()]}
        if t is np.random.Generator:
            return {"@generator": walk(x.bit_generator.state, f"{path}.bit_generator.state", False)}
        if t is np.random.RandomState:
            return {"@random_state": walk(x.get_state(legacy=False), f"{path}.get_state()", False)}
        if is_plain_object(x):
            return {"@object": class_name(x), "@attrs": {k: walk(v, f"{path}.{k}") for k, v in vars(x).items()}}
        raise Unsupported(f"{path}: a {class_name(x)} is not data")

    return walk(root, "root"), arrays


MISSING = object()                        # no fresh value at this place
OBJECT_TAGS = {"@object", "@generator", "@random_state", "@alias"}   # what may stand where a fresh object is


class Restore:
    """Phase 1 reads a tree against fresh objects, changing nothing, and raises Mismatch where they
    differ; `apply()` then writes the state into them. `read_array(i, like, path)` returns array
    i of the file; `like` is the fresh array it replaces (or None), whose dtype and shape it must have."""

    def __init__(self, read_array: Callable[[int, np.ndarray | None, str], np.ndarray]):
        self.read_array = read_array
        self.seen: list = []              # restored values, numbered as `encode` numbered them
        self.claimed: set[int] = set()    # ids of fresh objects restored into
        self.keep: list = []
        self.actions: list[Callable[[], None]] = []
        self.arrays: set[int] = set()
        self.tracking = True              # off inside a generator's state and dict keys, as in `encode`

    def apply(self) -> None:
        for action in self.actions:
            action()

    def _claim(self, fresh) -> bool:
        if id(fresh) in self.claimed:
            return False
        self.claimed.add(id(fresh))
        self.keep.append(fresh)
        return True

    def _register(self, value):
        if self.tracking:
            self.seen.append(value)
        return value

    def _data(self, node, path: str):
        """`node` as data that `encode` did not number (a generator's state, a dict key)."""
        tracking, self.tracking = self.tracking, False
        try:
            return self.value(node, MISSING, path)
        finally:
            self.tracking = tracking

    def value(self, node, fresh, path: str):
        """The value the tree `node` gives at `path`, where the fresh objects hold `fresh`."""
        if self._is_object(fresh) and not (type(node) is dict and set(node) & OBJECT_TAGS):
            kind = "None" if node is None else f"a {type(node).__name__}" if type(node) is not dict else (
                f"a {next(iter(node), '?').lstrip('@')}")
            raise Mismatch(f"{path}: {kind} in the checkpoint, {_describe(fresh)} in a fresh run")
        if type(node) in SCALARS:
            return node
        if type(node) is list:
            return self._list(node, fresh, path)
        if type(node) is not dict or len(node) not in (1, 2):
            raise Mismatch(f"{path}: not a state node")
        return self._tagged(node, fresh, path)

    def _tagged(self, node: dict, fresh, path: str):
        """The value of a tagged node: a NumPy scalar or dtype, a tuple, an alias of a value seen before,
        an array, a dict, a generator or an object."""
        tag = next(iter(node))
        body = node[tag]
        if tag == "@scalar":
            return self._scalar(body, path)
        if tag == "@dtype":
            return self._dtype(body, path)
        if tag == "@tuple" and type(body) is list:
            return self._tuple(body, fresh, path)
        if tag == "@alias" and type(body) is int and 0 <= body < len(self.seen):
            return self._alias(body, fresh, path)
        if tag == "@array" and type(body) is int:
            return self._array(body, fresh, path)
        if tag == "@dict" and type(body) is list:
            return self._dict(body, fresh, path)
        if tag in ("@generator", "@random_state"):
            return self._generator(tag, body, fresh, path)
        if tag == "@object" and type(body) is str and type(node.get("@attrs")) is dict:
            return self._object(body, node["@attrs"], fresh, path)
        raise Mismatch(f"{path}: not a state node")

    @staticmethod
    def _dtype(body, path: str) -> np.dtype:
        dtype = np.dtype(body) if type(body) is str else None
        if dtype is None or not numeric(dtype):
            raise Mismatch(f"{path}: not a numeric dtype")
        return dtype

    def _tuple(self, body: list, fresh, path: str) -> tuple:
        like = fresh if type(fresh) is tuple and len(fresh) == len(body) else ()
        return tuple(self.value(n, like[i] if like else MISSING, f"{path}[{i}]") for i, n in enumerate(body))

    def _alias(self, index: int, fresh, path: str):
        """The value seen `index`-th, which a fresh object there must be too."""
        value = self.seen[index]
        if fresh is not MISSING and fresh is not value and self._is_object(fresh):
            raise Mismatch(f"{path}: shared in the checkpoint, not in a fresh run")
        return value

    @staticmethod
    def _is_object(x) -> bool:
        return type(x) in (np.random.Generator, np.random.RandomState) or is_plain_object(x)

    def _scalar(self, body, path: str):
        if type(body) is not list or len(body) != 2 or type(body[0]) is not str:
            raise Mismatch(f"{path}: not a scalar")
        dtype = np.dtype(body[0])
        kinds = {"b": (bool,), "i": (int,), "u": (int,), "f": (float,)}
        if not numeric(dtype) or type(body[1]) not in kinds[dtype.kind]:
            raise Mismatch(f"{path}: not a {dtype} scalar")
        try:
            return dtype.type(body[1])
        except OverflowError:
            raise Mismatch(f"{path}: {body[1]} overflows {dtype}") from None

    def _list(self, node: list, fresh, path: str):
        in_place = type(fresh) is list and self._claim(fresh)
        new = self._register(fresh if in_place else [])
        items = [self.value(n, fresh[i] if in_place and i < len(fresh) else MISSING, f"{path}[{i}]")
                 for i, n in enumerate(node)]
        if in_place:
            self.actions.append(lambda: fresh.__setitem__(slice(None), items))
        else:
            new.extend(items)
        return new

    def _dict(self, body: list, fresh, path: str):
        in_place = type(fresh) is dict and self._claim(fresh)
        new = self._register(fresh if in_place else {})
        items = {}
        for pair in body:
            if type(pair) is not list or len(pair) != 2:
                raise Mismatch(f"{path}: not a dict item")
            key = self._data(pair[0], path)
            if not _hashable(key):
                raise Mismatch(f"{path}: a key of type {type(key).__name__}")
            items[key] = self.value(pair[1], fresh.get(key, MISSING) if in_place else MISSING, f"{path}[{key!r}]")
        if in_place:
            self.actions.append(lambda: (fresh.clear(), fresh.update(items)))
        else:
            new.update(items)
        return new

    def _array(self, index: int, fresh, path: str) -> np.ndarray:
        if index in self.arrays:
            raise Mismatch(f"{path}: array {index} read twice")
        self.arrays.add(index)
        like = fresh if type(fresh) is np.ndarray else None
        data = self.read_array(index, like, path)
        if like is not None and like.flags.writeable and self._claim(like):
            self.actions.append(lambda: np.copyto(like, data))
            return self._register(like)
        return self._register(data)

    def _generator(self, tag: str, body, fresh, path: str):
        kind = np.random.Generator if tag == "@generator" else np.random.RandomState
        if type(fresh) is not kind:
            raise Mismatch(f"{path}: a {kind.__name__} in the checkpoint, {_describe(fresh)} in a fresh run")
        if not self._claim(fresh):
            raise Mismatch(f"{path}: shared in a fresh run, not in the checkpoint")
        self._register(fresh)
        state = self._data(body, path)
        try:                              # checked on a probe of the same kind, so that apply() cannot fail
            if kind is np.random.Generator:
                type(fresh.bit_generator)().state = state
            else:
                np.random.RandomState().set_state(state)
        except (TypeError, ValueError, KeyError) as err:
            raise Mismatch(f"{path}: not a state of its generator ({err})") from None
        if kind is np.random.Generator:
            self.actions.append(lambda: setattr(fresh.bit_generator, "state", state))
        else:
            self.actions.append(lambda: fresh.set_state(state))
        return fresh

    def _object(self, name: str, attrs: dict, fresh, path: str):
        if fresh is MISSING or not is_plain_object(fresh) or class_name(fresh) != name:
            raise Mismatch(f"{path}: a {name} in the checkpoint, {_describe(fresh)} in a fresh run")
        if not self._claim(fresh):
            raise Mismatch(f"{path}: shared in a fresh run, not in the checkpoint")
        self._register(fresh)
        current = vars(fresh)
        if set(attrs) != set(current):
            extra, missing = sorted(set(attrs) - set(current)), sorted(set(current) - set(attrs))
            raise Mismatch(f"{path}: attributes differ (checkpoint only: {extra}, fresh run only: {missing})")
        for name_, node in attrs.items():
            old = current[name_]
            new = self.value(node, old, f"{path}.{name_}")
            if new is not old:
                self.actions.append(lambda k=name_, v=new: current.__setitem__(k, v))
        return fresh


def _hashable(key) -> bool:
    if type(key) is tuple:
        return all(_hashable(k) for k in key)
    return type(key) in SCALARS or isinstance(key, np.generic)


def _describe(x) -> str:
    return "nothing" if x is MISSING else "None" if x is None else f"a {class_name(x)}"
