"""Encoding single messages, decoding a byte stream that may be torn, noisy or newer."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, cast

import msgspec

from tile_protocol._errors import DecodeError, VersionError
from tile_protocol._messages import PROTOCOL_VERSION, CacheEvent, Hello, InputFile, Log, Message

__all__ = [
    "MAX_DEPTH",
    "BadLine",
    "Event",
    "StreamDecoder",
    "UnknownMessage",
    "check_version",
    "decode",
    "encode",
    "json_schema",
    "upgrade",
]

_encoder = msgspec.json.Encoder()
_decoder: msgspec.json.Decoder[Message] = msgspec.json.Decoder(Message)
_raw_decoder = msgspec.json.Decoder()

MAX_LINE_BYTES = 64 * 1024 * 1024
"""A longer line is dropped and reported; it protects the CLI from a runaway writer."""
MAX_DEPTH = 64
"""Deepest nesting of arrays and objects a line may have. The deepest message nests 4 levels;
the limit keeps a hostile line (`[[[[...`) far below the interpreter's recursion limit, which
msgspec would otherwise hit with a RecursionError in the reader thread."""
_BRACKETS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def encode(message: Message) -> bytes:
    """One message as a single JSON line, newline included."""
    return _encoder.encode(message) + b"\n"


def decode(line: bytes | str) -> Message:
    """Decode one line into its message type; raise DecodeError for anything else."""
    data = line.encode("utf-8", "surrogateescape") if isinstance(line, str) else line
    if too_deep(data):
        raise DecodeError(f"not a protocol message: nested deeper than {MAX_DEPTH} levels")
    try:
        return _decoder.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise DecodeError(f"not a protocol message: {exc}") from None


def too_deep(line: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether arrays and objects in `line` nest deeper than `limit` (brackets inside strings
    do not count); cheap for ordinary lines, which hold fewer brackets than the limit."""
    if line.count(b"[") + line.count(b"{") <= limit:
        return False
    depth = 0
    for match in _BRACKETS.finditer(line):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        elif token in (b"]", b"}"):
            depth -= 1
    return False


def check_version(hello: Hello) -> None:
    """Refuse a stream from a runner that speaks a newer major protocol version."""
    if hello.protocol_version > PROTOCOL_VERSION:
        raise VersionError(
            f"the runner speaks tile protocol {hello.protocol_version}.{hello.protocol_minor}, "
            f"this CLI understands only major version {PROTOCOL_VERSION}",
            hint="upgrade the CLI (`pip install -U tile-cli`) or install a matching tile-runner",
        )


_LEGACY_INPUT_FILE = "input_file "
"""How runners before minor 7 reported a data file: a `log` line `input_file NAME PATH`."""
_LEGACY_CACHE_EVENT = "jax_cache "
"""How runners before minor 9 reported a compile-cache event: a `log` line `jax_cache {json}`
holding the fields of `CacheEvent` but `case_id`, which was the line's."""
_legacy_cache_decoder = msgspec.json.Decoder(CacheEvent)


def upgrade(message: Message, minor: int) -> Message:
    """A message from a runner that speaks minor version `minor`, as this version says it.

    A reader passes every message through this, so that the rest of it knows one form only.
    A legacy line that does not parse stays the `log` line it was.
    """
    if minor >= 9 or not isinstance(message, Log):
        return message
    text = message.message
    if minor < 7 and text.startswith(_LEGACY_INPUT_FILE):
        _, name, path = [*text.split(" ", 2), "", ""][:3]
        if name and path:
            return InputFile(name=name, path=path, case_id=message.case_id)
    elif text.startswith(_LEGACY_CACHE_EVENT):
        # The JSON inside a string escaped the line's depth check: check it on its own.
        payload = text.removeprefix(_LEGACY_CACHE_EVENT).encode("utf-8", "surrogatepass")
        try:
            if too_deep(payload):
                return message
            event = _legacy_cache_decoder.decode(payload)
        except (msgspec.DecodeError, RecursionError):
            return message
        return msgspec.structs.replace(event, case_id=message.case_id, pid=message.pid,
                                       seq=message.seq, token=message.token)  # fmt: skip
    return message


def json_schema() -> dict[str, Any]:
    """JSON Schema of every message, for `tile protocol schema`."""
    return msgspec.json.schema(Message)


@dataclass(frozen=True, slots=True)
class UnknownMessage:
    """A well-formed JSON object whose `type` this reader does not know (a newer peer)."""

    type: str
    raw: bytes
    line_no: int


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that is not a protocol message (stray output, a torn write, bad fields)."""

    raw: bytes
    error: str
    line_no: int


Event = Message | UnknownMessage | BadLine


class StreamDecoder:
    """Turns chunks of bytes into events; never raises on what the peer sends.

    Chunks may split lines anywhere. Incomplete trailing data is held until more arrives or
    `close()` is called.
    """

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._buffer = bytearray()
        self._line_no = 0
        self._max = max_line_bytes
        self._discarding = False

    def feed(self, data: bytes) -> list[Event]:
        """Add bytes; return the events of every line completed by them."""
        if b"\n" not in data:
            self._buffer += data
            return self._overflow()
        # Split every completed line at once: deleting each from the front of the buffer
        # would copy the rest of the chunk once per line.
        self._buffer += data
        *lines, rest = bytes(self._buffer).split(b"\n")
        self._buffer = bytearray(rest)
        events: list[Event] = []
        for line in lines:
            if self._discarding:
                self._discarding = False
                continue
            events.extend(self._line(line))
        events.extend(self._overflow())
        return events

    def _overflow(self) -> list[Event]:
        """Drop a line that grew past the limit (reported once) and the rest of it as it comes."""
        if self._discarding:
            self._buffer.clear()
        elif len(self._buffer) > self._max:
            self._line_no += 1
            head = bytes(self._buffer[:200])
            self._buffer.clear()
            self._discarding = True
            return [BadLine(head, f"line longer than {self._max} bytes", self._line_no)]
        return []

    def close(self) -> list[Event]:
        """End of stream: decode what is left as a final line without newline."""
        rest = bytes(self._buffer)
        self._buffer.clear()
        if self._discarding or not rest.strip():
            return []
        return self._line(rest)

    def _line(self, line: bytes) -> list[Event]:
        self._line_no += 1
        if not line.strip():
            return []
        if too_deep(line):
            return [BadLine(line[:200], f"nested deeper than {MAX_DEPTH} levels", self._line_no)]
        try:
            return [_decoder.decode(line)]
        except (msgspec.DecodeError, RecursionError) as exc:
            error = str(exc)
        return [_not_a_message(line, error, self._line_no)]


def _not_a_message(line: bytes, error: str, line_no: int) -> Event:
    """What a line that decodes as no message is: not JSON, a message type this reader does not
    know, a newer major version's hello, or else a bad line with the decoder's `error`."""
    try:
        obj = _raw_decoder.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return BadLine(line, "not JSON", line_no)
    if isinstance(obj, dict):
        fields = cast("dict[str, Any]", obj)
        kind = fields.get("type")
        if isinstance(kind, str) and kind not in _KNOWN_TYPES:
            return UnknownMessage(kind, line, line_no)
        newer = _newer_hello(fields)
        if newer is not None:
            return newer
    return BadLine(line, error, line_no)


def _newer_hello(obj: dict[str, Any]) -> Hello | None:
    """A `hello` of a newer major version whose other fields changed shape, reduced to what
    `check_version` needs, so that the reader says "newer protocol", not "bad line"."""
    version, minor = _version(obj.get("protocol_version")), obj.get("protocol_minor")
    if obj.get("type") != "hello" or version is None or version[0] <= PROTOCOL_VERSION:
        return None
    if version[1] is not None:  # "2.3": the minor is in the string
        minor = version[1]
    runner = obj.get("runner_version")
    return Hello(
        protocol_version=version[0],
        protocol_minor=minor if type(minor) is int else 0,
        runner_version=runner if isinstance(runner, str) else "unknown",
        python_version="unknown",
    )


def _version(value: object) -> tuple[int, int | None] | None:
    """(major, minor if said) of a `protocol_version` in any shape: `2`, `2.0`, `"2.0"`, `"2"`."""
    if type(value) is int:
        return value, None
    text = repr(value) if type(value) is float else value
    if isinstance(text, str):
        major, _, minor = text.strip().partition(".")
        if _digits(major) and (not minor or _digits(minor)):
            return int(major), int(minor) if minor else None
    return None


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _known_types() -> frozenset[str]:
    tags: set[str] = set()
    for cls in Message.__args__:
        tags.add(cls.__struct_config__.tag)
    return frozenset(tags)


_KNOWN_TYPES = _known_types()
