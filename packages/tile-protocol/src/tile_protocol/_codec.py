"""Encoding single messages, decoding a byte stream that may be torn, noisy or newer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from tile_protocol._errors import DecodeError, VersionError
from tile_protocol._messages import PROTOCOL_VERSION, Hello, InputFile, Log, Message

__all__ = [
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
_decoder: msgspec.json.Decoder[Message] = msgspec.json.Decoder(Message)  # pyright: ignore[reportArgumentType]
_raw_decoder = msgspec.json.Decoder()

MAX_LINE_BYTES = 64 * 1024 * 1024
"""A longer line is dropped and reported; it protects the CLI from a runaway writer."""


def encode(message: Message) -> bytes:
    """One message as a single JSON line, newline included."""
    return _encoder.encode(message) + b"\n"


def decode(line: bytes | str) -> Message:
    """Decode one line into its message type; raise DecodeError for anything else."""
    try:
        return _decoder.decode(line)
    except msgspec.DecodeError as exc:
        raise DecodeError(f"not a protocol message: {exc}") from None


def check_version(hello: Hello) -> None:
    """Refuse a stream from a runner that speaks a newer major protocol version."""
    if hello.protocol_version > PROTOCOL_VERSION:
        raise VersionError(
            f"the runner speaks tile protocol {hello.protocol_version}.{hello.protocol_minor}, "
            f"this CLI understands only major version {PROTOCOL_VERSION}",
            hint="upgrade the CLI (`pip install -U tile-cli`) or install a matching tile-runner",
        )


_LEGACY_INPUT_FILE = "input_file "
"""How runners before minor 6 reported a data file: a `log` line `input_file NAME PATH`."""


def upgrade(message: Message, minor: int) -> Message:
    """A message from a runner that speaks minor version `minor`, as this version says it.

    A reader passes every message through this, so that the rest of it knows one form only.
    """
    if minor < 6 and isinstance(message, Log) and message.message.startswith(_LEGACY_INPUT_FILE):
        _, name, path = [*message.message.split(" ", 2), "", ""][:3]
        if name and path:
            return InputFile(name=name, path=path, case_id=message.case_id)
    return message


def json_schema() -> dict[str, Any]:
    """JSON Schema of every message, for `tile protocol schema`."""
    return msgspec.json.schema(Message)  # pyright: ignore[reportArgumentType]


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
        self._buffer += data
        events: list[Event] = []
        while (end := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            if self._discarding:
                self._discarding = False
                continue
            events.extend(self._line(line))
        if len(self._buffer) > self._max and not self._discarding:
            self._line_no += 1
            events.append(
                BadLine(
                    bytes(self._buffer[:200]), f"line longer than {self._max} bytes", self._line_no
                )
            )
            self._buffer.clear()
            self._discarding = True
        elif self._discarding:
            self._buffer.clear()
        return events

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
        try:
            return [_decoder.decode(line)]
        except msgspec.DecodeError as exc:
            error = str(exc)
        try:
            obj = _raw_decoder.decode(line)
        except msgspec.DecodeError:
            return [BadLine(line, "not JSON", self._line_no)]
        if isinstance(obj, dict):
            kind = obj.get("type")  # pyright: ignore[reportUnknownMemberType]
            if isinstance(kind, str) and kind not in _KNOWN_TYPES:
                return [UnknownMessage(kind, line, self._line_no)]
        return [BadLine(line, error, self._line_no)]


def _known_types() -> frozenset[str]:
    tags: set[str] = set()
    for cls in Message.__args__:  # pyright: ignore[reportAttributeAccessIssue]
        tags.add(cls.__struct_config__.tag)
    return frozenset(tags)


_KNOWN_TYPES = _known_types()
