"""Redaction: secret values never reach a file of a run directory, whichever file it is.

Hiding secrets by variable name (`API_TOKEN=<redacted>` in commands.jsonl) covers only the
places where the name travels with the value. A token written in tile.toml, passed on the
command line or interpolated into another setting turns up elsewhere: the config snapshot,
the argv in events and the report, a runner's stderr. So the writer knows the secret
*values* of the run and replaces each occurrence in everything it writes; names still
decide what is a secret. A URL carries its secrets without a name tile would see (a
`[downloads]` URL with `https://user:pass@host` or `?access_token=...`): in every URL the
userinfo and the values of secret-named query parameters are hidden, and those values are
secrets of the run wherever else they turn up.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import tempfile
import tomllib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final, cast
from urllib.parse import unquote

from pydantic import JsonValue

__all__ = [
    "REDACTED",
    "REDACT_PATTERNS",
    "Redactor",
    "is_secret_name",
    "redact_environment",
    "redact_urls",
]

REDACTED: Final = "<redacted>"
REDACT_PATTERNS: Final = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "KEY",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
    "PRIVATE",
)
MIN_SECRET_LENGTH: Final = 4
"""Shorter values are hidden only where their name is beside them: replacing `abc` in every
file would garble unrelated text."""
SCRUB_BLOCK: Final = 1 << 20
"""Bytes of a log read at a time when it is redacted in place."""
_LONGEST_LINE: Final = 8 << 20
"""A line longer than this (a progress bar redrawn with `\\r`) is cut where the block ends;
a URL that long could lose its redaction at the cut."""
STREAM_LINE: Final = 1 << 20
"""The longest unfinished line `Redactor.stream` holds back (a pipe's reader must stay small)."""
MIN_AMBIENT_LENGTH: Final = 8
"""The process environment holds many secret-named variables that are not secrets
(`XDG_SESSION_TYPE=x11`); their values are hidden everywhere only from this length on."""

# A URL as it appears in text: it ends where a quote, a space, a JSON escape or markup begins.
_URL = re.compile(r"""\b[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>\\`]+""")

# `NAME = value` in TOML, the key bare or quoted, the value one string or scalar token.
_TOML_VALUE = r"""("(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s,}\]#]+)"""


def is_secret_name(name: str) -> bool:
    """Whether a variable or key name looks like it holds a secret (`HF_TOKEN`, `db_password`)."""
    upper = name.upper()
    return any(pattern in upper for pattern in REDACT_PATTERNS)


def _is_secret_parameter(name: str) -> bool:
    """A query parameter that authorizes: secret by name, or a signature (S3's
    `X-Amz-Signature`, Azure's `sig`), which no secret-looking name gives away."""
    upper = unquote(name).upper()
    return is_secret_name(upper) or upper == "SIG" or "SIGNATURE" in upper


def _url_parts(url: str) -> tuple[str, str, str, str]:
    """(scheme and `://`, authority, path, query and fragment) of one URL, kept as written."""
    scheme, _, rest = url.partition("://")
    end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    path_end = min((i for i in map(rest.find, "?#") if i >= end), default=len(rest))
    return scheme + "://", rest[:end], rest[end:path_end], rest[path_end:]


def _secret_parameters(query: str) -> Iterator[tuple[str, str]]:
    """(name, value) of each secret-named parameter of `?a=1&token=v#frag`."""
    for pair in re.split(r"[&;]", query.lstrip("?").partition("#")[0]):
        name, sep, value = pair.partition("=")
        if sep and value and _is_secret_parameter(name):
            yield name, value


def _url_secrets(text: str) -> Iterator[str]:
    """The secret values in the URLs of `text`: passwords of userinfo and the values of
    secret-named query parameters, as written and percent-decoded."""
    for match in _URL.finditer(text):
        _, authority, _, query = _url_parts(match.group(0))
        userinfo = authority.rpartition("@")[0]
        found = [userinfo.partition(":")[2]] + [v for _, v in _secret_parameters(query)]
        for value in filter(None, found):
            yield value
            if unquote(value) != value:
                yield unquote(value)


def _secret_userinfo(userinfo: str) -> bool:
    """`user:password`, or a user name long enough to be a token (`https://TOKEN@host`);
    `git@` and other short plain names stay readable."""
    return ":" in userinfo or len(userinfo) >= MIN_AMBIENT_LENGTH


def _hide_in_url(match: re.Match[str]) -> str:
    scheme, authority, path, query = _url_parts(match.group(0))
    userinfo, at, host = authority.rpartition("@")
    if at and _secret_userinfo(userinfo):
        authority = REDACTED + at + host
    for name, value in _secret_parameters(query):
        query = query.replace(f"{name}={value}", f"{name}={REDACTED}")
    return scheme + authority + path + query


def redact_urls(text: str) -> str:
    """Every URL's userinfo and secret-named query values in `text` replaced by `<redacted>`."""
    return _URL.sub(_hide_in_url, text) if "://" in text else text


def redact_environment(env: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """Replace values whose variable name looks secret; return the copy and the redacted names."""
    redacted = {name: REDACTED if is_secret_name(name) else value for name, value in env.items()}
    return redacted, sorted(name for name in env if is_secret_name(name))


def _toml_secrets(value: object, name: str = "") -> Iterator[tuple[str, str]]:
    """(key, value text) of every scalar under a secret-named key, at any depth."""
    if isinstance(value, dict):
        for key, item in cast("dict[object, object]", value).items():
            yield from _toml_secrets(item, str(key))
    elif isinstance(value, list):
        for item in cast("list[object]", value):
            yield from _toml_secrets(item, name)
    elif is_secret_name(name) and not isinstance(value, bool):
        yield name, str(value)


def _argv_secrets(argv: Sequence[str]) -> Iterator[str]:
    """Values given to secret-named settings on a command line: `runner.env.HF_TOKEN=v`,
    `--api-key=v`, `--api-key v`."""
    for i, arg in enumerate(argv):
        key, sep, value = arg.partition("=")
        name = key.lstrip("-").rsplit(".", 1)[-1]
        if sep and is_secret_name(name):
            yield value
        elif not sep and arg.startswith("--") and is_secret_name(name) and i + 1 < len(argv):
            yield argv[i + 1]


class Redactor:
    """The secret values of one run, and the one place that hides them in text and data."""

    def __init__(self, secrets: Iterable[str] = (), *, keys: Iterable[str] = ()) -> None:
        values = {s for s in secrets if len(s) >= MIN_SECRET_LENGTH}
        # Longest first: a secret that contains another is replaced whole.
        self.secrets: tuple[str, ...] = tuple(sorted(values, key=lambda s: (-len(s), s)))
        self.keys: frozenset[str] = frozenset(keys)
        """Secret-named TOML keys, hidden in config snapshots whatever their value's length."""
        self._escaped = tuple(json.dumps(s, ensure_ascii=False)[1:-1] for s in self.secrets)
        self._multiline = any("\n" in s for s in self.secrets)

    @classmethod
    def for_run(
        cls,
        *,
        environ: Mapping[str, str] | None = None,
        settings: Mapping[str, str] | None = None,
        config_text: str | None = None,
        argv: Sequence[str] = (),
    ) -> Redactor:
        """Collect the secrets of a run: secret-named variables of `environ` (long, not paths),
        of `settings` (e.g. `[runner] env`), under secret-named keys of the config file, and
        given to secret-named settings on the command line."""
        env = os.environ if environ is None else environ
        values = [
            v
            for k, v in env.items()
            if is_secret_name(k) and len(v) >= MIN_AMBIENT_LENGTH and not v.startswith("/")
        ]
        values += [v for k, v in (settings or {}).items() if is_secret_name(k)]
        keys: set[str] = set()
        if config_text is not None:
            try:
                pairs = list(_toml_secrets(tomllib.loads(config_text)))
            except (tomllib.TOMLDecodeError, RecursionError):
                pairs = []
            values += [v for _, v in pairs]
            keys.update(k for k, _ in pairs)
        values += _argv_secrets(argv)
        sources = [config_text or "", *argv, *env.values(), *(settings or {}).values()]
        values += (secret for source in sources for secret in _url_secrets(source))
        return cls(values, keys=keys)

    def __or__(self, other: Redactor) -> Redactor:
        """The secrets of both (a campaign's and its project's)."""
        return Redactor([*self.secrets, *other.secrets], keys=self.keys | other.keys)

    def __bool__(self) -> bool:
        return bool(self.secrets or self.keys)

    def text(self, text: str) -> str:
        """Every secret in plain text (a log, Markdown, TOML) replaced by `<redacted>`, and
        every URL's credentials (`redact_urls`)."""
        # URLs first: once a password is `<redacted>`, its URL no longer reads as one.
        text = redact_urls(text)
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def data(self, value: JsonValue) -> JsonValue:
        """Every secret in the strings (and keys) of JSON data replaced; numbers left alone."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.data(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k): self.data(v) for k, v in value.items()}
        return value

    def json_text(self, text: str, *, indent: int | None = None) -> str:
        """A JSON document or line with the secrets in its strings replaced.

        Text without any secret is returned as it is (the common case, and byte-for-byte what
        the model wrote); otherwise it is redacted as data, so that a secret made of digits
        never turns a number into something that is not JSON.
        """
        if not any(e in text for e in self._escaped) and redact_urls(text) == text:
            return text
        data = self.data(json.loads(text))
        if indent is None:
            return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return json.dumps(data, ensure_ascii=False, indent=indent)

    def toml(self, text: str) -> str:
        """A config file's text with the value of every secret-named key hidden, however it is
        written (`KEY = "v"`, `env = { KEY = "v" }`, `runner.env.KEY = "v"`), and every
        known secret value hidden wherever else it appears."""
        for key in sorted(self.keys, key=len, reverse=True):
            pattern = re.compile(rf"""(?<![\w-])((["']?){re.escape(key)}\2\s*=\s*){_TOML_VALUE}""")
            text = pattern.sub(rf'\1"{REDACTED}"', text)
        return self.text(text)

    def scrub_file(self, path: str | os.PathLike[str], *, block: int = SCRUB_BLOCK) -> bool:
        """Redact a file another process wrote (a runner's stderr log) in place, atomically;
        True when it held a secret.

        The log is as large as a kernel makes it, so it is read in blocks and never held
        whole: a first pass looks for anything to hide, a second writes the redacted copy.
        """
        target = Path(path)
        try:
            if not any(changed for _, changed in self._scrubbed(target, block)):
                return False
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        except OSError:
            return False
        try:
            with os.fdopen(fd, "wb") as fh:
                for text, _ in self._scrubbed(target, block):
                    fh.write(text.encode("utf-8", "surrogateescape"))
            Path(tmp).chmod(target.stat().st_mode & 0o777)
            Path(tmp).replace(target)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            return False
        return True

    def stream(
        self, chunks: Iterable[bytes], *, longest_line: int = STREAM_LINE
    ) -> Iterator[bytes]:
        """The bytes of `chunks` (a pipe's reads) redacted, written out as soon as it is safe.

        After each chunk comes what can be hidden without the rest: every complete line and
        the words before the last space, so that a reader killed at any moment has written
        all it was given but a line's unfinished end. At most `longest_line` characters are
        held back (a line without end is cut there), so the memory does not follow the size
        of the stream.
        """
        for text, _ in self._pieces(chunks, longest_line):
            if text:
                yield text.encode("utf-8", "surrogateescape")

    def _scrubbed(self, path: Path, block: int) -> Iterator[tuple[str, bool]]:
        """The file's text redacted, in pieces of about `block` bytes; each with whether
        anything in it was hidden."""
        with path.open("rb") as fh:
            yield from self._pieces(iter(lambda: fh.read(block), b""), _LONGEST_LINE)

    def _pieces(self, chunks: Iterable[bytes], longest_line: int) -> Iterator[tuple[str, bool]]:
        """The text of `chunks` redacted, a piece for each chunk, with whether anything in it
        was hidden. What follows the last safe cut (`_safe_cut`) is carried, unredacted, into
        the next piece, so that a secret or URL a chunk cut is whole."""
        decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        carry = ""
        for chunk in chunks:
            text = carry + decoder.decode(chunk)
            cut = self._safe_cut(text, longest_line)
            clean = self.text(text[:cut])
            yield clean, clean != text[:cut]
            carry = text[cut:]
        text = carry + decoder.decode(b"", final=True)
        clean = self.text(text)
        yield clean, clean != text

    def _safe_cut(self, text: str, longest_line: int) -> int:
        """Where `text` can be cut with nothing to hide across the cut: after a space or line
        break (no URL holds one), a longest secret before the end (a secret the chunk cut may
        end there), or after the last line break when no secret holds one; and before any
        secret that holds a space itself."""
        end = len(text) - max((len(s) for s in self.secrets), default=1) + 1
        cut = max(text.rfind(c, 0, max(end, 0)) for c in " \t\r\n") + 1
        if not self._multiline:  # a whole line is whole for every secret and URL
            cut = max(cut, text.rfind("\n") + 1)
        if len(text) - cut > longest_line:
            cut = max(cut, end)  # a line without end: bound what is held
        moved = True
        while moved:  # a secret with a space in it (a PEM key) must not be cut in two
            moved = False
            for secret in self.secrets:
                i = text.find(secret, max(cut - len(secret) + 1, 0), cut + len(secret) - 1)
                if 0 <= i < cut:
                    cut, moved = i, True
        return cut
