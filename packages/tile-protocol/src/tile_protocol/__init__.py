"""tile-protocol: the versioned JSON-Lines protocol between the tile CLI and its runner.

One message per line, tagged by `type`. `encode`/`decode` handle single messages;
`StreamDecoder` turns a byte stream (torn lines, stray output, newer peers) into events;
`StreamValidator` says which of the decoded messages to believe (order, provenance, content).
"""

from __future__ import annotations

from tile_protocol._codec import (
    MAX_DEPTH,
    BadLine,
    Event,
    StreamDecoder,
    UnknownMessage,
    check_version,
    decode,
    encode,
    json_schema,
)
from tile_protocol._errors import DecodeError, ProtocolError, VersionError
from tile_protocol._messages import (
    PROTOCOL_MINOR,
    PROTOCOL_VERSION,
    Accounting,
    Artifact,
    BenchResult,
    BenchSettings,
    BuildResult,
    Calibration,
    CaseInfo,
    CaseStart,
    Check,
    ConfigInfo,
    ConfigSource,
    DeviceInfo,
    DeviceReport,
    Done,
    DownloadSpec,
    Failure,
    Hello,
    Inspect,
    Log,
    Message,
    Peaks,
    Phases,
    Plan,
    Reference,
    Roofline,
    RunRequest,
    StateChange,
    StateDiff,
    StateKind,
    Stats,
    TestResult,
    TestSettings,
    Throughput,
    Work,
)
from tile_protocol._tuning import (
    TUNING_SCHEMA,
    TuningEntry,
    TuningFile,
    decode_tuning,
    encode_tuning,
    split_unit,
    unit_id,
)
from tile_protocol._validate import ForgedLine, StreamValidator, Violation, result_problem

__all__ = [
    # versions
    "PROTOCOL_MINOR",
    "PROTOCOL_VERSION",
    # messages
    "Artifact",
    "BenchResult",
    "BuildResult",
    "CaseStart",
    "DeviceReport",
    "Done",
    "Failure",
    "Hello",
    "Inspect",
    "Log",
    "Message",
    "Plan",
    "RunRequest",
    "StateChange",
    "TestResult",
    # parts of messages
    "Accounting",
    "BenchSettings",
    "Calibration",
    "CaseInfo",
    "Check",
    "ConfigInfo",
    "ConfigSource",
    "DeviceInfo",
    "DownloadSpec",
    "Peaks",
    "Phases",
    "Reference",
    "Roofline",
    "StateDiff",
    "StateKind",
    "Stats",
    "TestSettings",
    "Throughput",
    "Work",
    # codec
    "MAX_DEPTH",
    "BadLine",
    "Event",
    "StreamDecoder",
    "UnknownMessage",
    "check_version",
    "decode",
    "encode",
    "json_schema",
    # the stream's rules
    "ForgedLine",
    "StreamValidator",
    "Violation",
    "result_problem",
    # tuning files
    "TUNING_SCHEMA",
    "TuningEntry",
    "TuningFile",
    "decode_tuning",
    "encode_tuning",
    "split_unit",
    "unit_id",
    # errors
    "DecodeError",
    "ProtocolError",
    "VersionError",
]
