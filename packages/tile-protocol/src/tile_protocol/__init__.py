"""tile-protocol: the versioned JSON-Lines protocol between the tile CLI and its runner.

One message per line, tagged by `type`. `encode`/`decode` handle single messages;
`StreamDecoder` turns a byte stream (torn lines, stray output, newer peers) into events and
`upgrade` turns an older runner's message into today's form. Every contract the two sides
share lives here: the messages, their closed sets, the tuning files and `case_dirname`.
"""

from __future__ import annotations

from tile_protocol._codec import (
    BadLine,
    Event,
    StreamDecoder,
    UnknownMessage,
    check_version,
    decode,
    encode,
    json_schema,
    upgrade,
)
from tile_protocol._errors import DecodeError, ProtocolError, VersionError
from tile_protocol._messages import (
    PROTOCOL_MINOR,
    PROTOCOL_VERSION,
    Artifact,
    BenchResult,
    BuildResult,
    CaseStart,
    DeviceReport,
    Done,
    Failure,
    Hello,
    InputFile,
    Inspect,
    Log,
    Message,
    Plan,
    RunRequest,
    TestResult,
)
from tile_protocol._naming import case_dirname
from tile_protocol._parts import (
    Accounting,
    BenchSettings,
    Calibration,
    CaseInfo,
    Check,
    ConfigInfo,
    DeviceInfo,
    DownloadSpec,
    Peaks,
    Phases,
    Reference,
    Roofline,
    Shard,
    Stats,
    TestSettings,
    Throughput,
    Work,
)
from tile_protocol._sets import (
    COMMANDS,
    FAILURE_PHASES,
    INSPECT_KINDS,
    MEASURED_TIMERS,
    Bound,
    CaseStatus,
    Command,
    ConfigSource,
    InspectKind,
    LogLevel,
    MeasuredTimer,
    Phase,
    StopReason,
    Timer,
    WorkSource,
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
    "InputFile",
    "Inspect",
    "Log",
    "Message",
    "Plan",
    "RunRequest",
    "TestResult",
    # parts of messages
    "Accounting",
    "BenchSettings",
    "Calibration",
    "CaseInfo",
    "Check",
    "ConfigInfo",
    "DeviceInfo",
    "DownloadSpec",
    "Peaks",
    "Phases",
    "Reference",
    "Roofline",
    "Shard",
    "Stats",
    "TestSettings",
    "Throughput",
    "Work",
    # closed sets
    "COMMANDS",
    "FAILURE_PHASES",
    "INSPECT_KINDS",
    "MEASURED_TIMERS",
    "Bound",
    "CaseStatus",
    "Command",
    "ConfigSource",
    "InspectKind",
    "LogLevel",
    "MeasuredTimer",
    "Phase",
    "StopReason",
    "Timer",
    "WorkSource",
    # codec
    "BadLine",
    "Event",
    "StreamDecoder",
    "UnknownMessage",
    "check_version",
    "decode",
    "encode",
    "json_schema",
    "upgrade",
    # names both sides derive
    "case_dirname",
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
