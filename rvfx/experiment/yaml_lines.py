"""Strict YAML loading that remembers the line of every key.

PyYAML's defaults hide mistakes in specs: `1e-3` loads as a string, `no` as
False, and a repeated key silently wins. Here scalars follow YAML 1.2's core
schema (true/false only; any float literal), a repeated key is an error, and
`lines` maps each dotted key path to its line for error messages. Only a regular file of at
most MAX_BYTES is read, and non-printable characters and merge keys are refused at their line.
"""
from __future__ import annotations

import os
import re
import stat

import yaml

from rvfx.experiment.params import SpecError

_INT = re.compile(r"^[-+]?[0-9]+$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$|^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$")


def _scalar(node: yaml.ScalarNode):
    text = node.value
    if node.style:                        # quoted or block scalars stay strings (plain: None, or '' from libyaml)
        return text
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if text in ("null", "Null", "NULL", "~", ""):
        return None
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text.lower().replace(".inf", "inf").replace(".nan", "nan"))
    return text


MAX_BYTES = 256 * 1024         # a spec's size (the largest config is ~13 KB)
MAX_VALUES = 100_000            # values in one spec once aliases are expanded (the largest config has ~1,000)


def _to_python(node, prefix: str, lines: dict, file: str, seen: list | None = None):
    """Convert a composed node, recording each key's line and rejecting repeated keys, an alias
    inside its own anchor, and alias expansions beyond MAX_VALUES values."""
    seen = [0, set()] if seen is None else seen       # values converted, nodes on the current path
    seen[0] += 1
    if seen[0] > MAX_VALUES:
        raise SpecError(prefix, f"more than {MAX_VALUES:,} values once aliases are expanded", file=file,
                        line=node.start_mark.line + 1)
    if id(node) in seen[1]:
        raise SpecError(prefix, "an alias inside its own anchor (the value would contain itself)", file=file,
                        line=node.start_mark.line + 1)
    lines.setdefault(prefix, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen[1].add(id(node))
        out = {}
        for key_node, value_node in node.value:
            key = _scalar(key_node) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str):
                raise SpecError(prefix, f"keys must be strings, got {key!r}", file=file,
                                line=key_node.start_mark.line + 1)
            sub = f"{prefix}.{key}" if prefix else key
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise SpecError(sub, "merge keys (<<) are not supported; write the keys out (an alias *name "
                                     "may stand for a whole value)", file=file, line=key_node.start_mark.line + 1)
            if key in out:
                raise SpecError(sub, f"duplicate key (first on line {lines[sub]})", file=file,
                                line=key_node.start_mark.line + 1)
            lines[sub] = key_node.start_mark.line + 1
            out[key] = _to_python(value_node, sub, lines, file, seen)
        seen[1].discard(id(node))
        return out
    if isinstance(node, yaml.SequenceNode):
        seen[1].add(id(node))
        out = [_to_python(item, f"{prefix}[{i}]", lines, file, seen) for i, item in enumerate(node.value)]
        seen[1].discard(id(node))
        return out
    return _scalar(node)


def _compose(stream, file: str):
    """The node tree of `stream`. libyaml's parser (in PyYAML's wheels) composes the same nodes and
    marks ~15x faster; on any error the pure-Python parser reruns, whose messages and lines are kept."""
    if yaml.__with_libyaml__:
        try:
            return yaml.compose(stream, Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            pass
    try:
        return yaml.compose(stream, Loader=yaml.SafeLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = " ".join(str(getattr(err, "problem", None) or err).split())
        raise SpecError("", f"not valid YAML: {problem}", file=file,
                        line=mark.line + 1 if mark else None) from None
    except RecursionError:
        raise SpecError("", "nested too deeply to be a spec", file=file) from None


_KINDS = {stat.S_IFIFO: "a named pipe (FIFO)", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket"}


def _read(path: str) -> str:
    """The text of the regular file `path`, at most MAX_BYTES. It is opened without blocking (a
    FIFO would wait for a writer) and checked once open, so nothing but a regular file is read."""
    with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NONBLOCK)) as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
            raise SpecError("", f"is {kind}, not a spec file", file=path)
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise SpecError("", f"is {max(st.st_size, len(data)) / 1024:,.0f} KB, more than the "
                            f"{MAX_BYTES // 1024} KB a spec may hold", file=path)
    return data.decode("utf-8")


def _check_characters(text: str, file: str) -> None:
    """Refuse, at its line, a character YAML does not allow (control characters but tab, newline,
    carriage return and NEL; U+FFFE, U+FFFF), which PyYAML would report by offset alone."""
    bad = yaml.reader.Reader.NON_PRINTABLE.search(text)
    if bad:
        raise SpecError("", f"non-printable character {bad.group()!r} (U+{ord(bad.group()):04X}); a spec is plain "
                            f"text", file=file, line=text.count("\n", 0, bad.start()) + 1)


def load(path: str) -> tuple[object, dict[str, int]]:
    """Parse `path` (UTF-8 YAML); return (data, {dotted key path: line number}). A file that cannot
    be read raises SpecError naming it and why."""
    try:
        text = _read(path)
    except FileNotFoundError:
        raise SpecError("", "no such file", file=path) from None
    except IsADirectoryError:
        raise SpecError("", "is a directory, not a spec file", file=path) from None
    except UnicodeDecodeError as err:
        raise SpecError("", f"not a text file: {err.reason} (byte {err.object[err.start:err.start + 1]!r});"
                            f" a spec is UTF-8 YAML", file=path) from None
    except OSError as err:
        raise SpecError("", f"cannot be read: {err.strerror or err}", file=path) from None
    _check_characters(text, path)
    root = _compose(text, path)
    lines: dict[str, int] = {}
    return (_to_python(root, "", lines, path) if root is not None else None), lines


def parse_value(text: str):
    """A `--set` value read with the same rules as spec files (lists and mappings allowed)."""
    _check_characters(text, "--set")
    root = _compose(text, "--set")
    return None if root is None else _to_python(root, "", {}, "--set")
