"""Redaction: make a report safe to paste into a public issue.

Environment variables are already read from an allowlist (secret-looking names never), so what
remains is identity and stray credentials inside allowed values: the home folder becomes ``~``,
the user and host names are replaced wherever they appear as a word or path component, GPU UUIDs
and serial numbers are dropped, and credential-shaped strings (URL passwords, API tokens,
``password=…``) are masked. The report records *that* it was redacted and by which rules, never
the original values; ``--show-redactions`` lists the originals on stderr for the local user.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from bnbdoctor.hosts.base import OsInfo

USER = "<user>"
HOST = "<host>"
#: Names too generic to replace blindly as words (their home folders are still replaced).
_GENERIC_NAMES = {
    "root",
    "user",
    "admin",
    "ubuntu",
    "debian",
    "runner",
    "jovyan",
    "vscode",
    "localhost",
    "administrator",
    "builder",
    "ec2-user",
    "centos",
    "python",
    "conda",
    "app",
}
_SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "url-credentials",
        re.compile(r"(?P<keep>\b[a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@", re.IGNORECASE),
        r"\g<keep><redacted>@",
    ),
    (
        "token",
        re.compile(
            r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}\b|\bgithub_pat_[A-Za-z0-9_]{20,}\b"
            r"|\bhf_[A-Za-z0-9]{20,}\b|\bsk-[A-Za-z0-9_-]{20,}\b|\bxox[abprs]-[A-Za-z0-9-]{10,}\b"
            r"|\bAKIA[0-9A-Z]{16}\b"
        ),
        "<redacted-token>",
    ),
    (
        "key-value",
        re.compile(
            r"(?P<keep>\b(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key)\s*[=:]\s*)"
            r"[^\s:;,'\"]+",
            re.IGNORECASE,
        ),
        r"\g<keep><redacted>",
    ),
    ("gpu-uuid", re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b"), r"\1-<uuid>"),
)
#: Fact fields dropped outright: identifiers that help nobody debug bitsandbytes.
_DROPPED_KEYS = {"uuid", "serial"}


@dataclass
class Redactor:
    """Replaces identity and secrets in every string of a JSON-ready report."""

    home: str | None = None
    user: str | None = None
    host: str | None = None
    applied: dict[str, int] = field(default_factory=dict)  # rule -> replacements made
    originals: dict[str, set[str]] = field(default_factory=dict)  # rule -> what was replaced (stderr only)

    @classmethod
    def for_machine(cls, info: OsInfo) -> Redactor:
        return cls(home=info.home, user=info.username, host=info.hostname)

    @classmethod
    def for_text(cls, text: str) -> Redactor:
        """For a pasted log: the home folder that its paths show most often is the user's."""
        homes = re.findall(r"(/home/|/Users/|[A-Za-z]:\\Users\\)([A-Za-z0-9._-]{3,})", text)
        if not homes:
            return cls()
        counts: dict[tuple[str, str], int] = {}
        for prefix, name in homes:
            counts[(prefix, name)] = counts.get((prefix, name), 0) + 1
        prefix, name = max(counts, key=lambda key: counts[key])
        return cls(home=prefix + name, user=name)

    def _note(self, rule: str, original: str) -> None:
        self.applied[rule] = self.applied.get(rule, 0) + 1
        self.originals.setdefault(rule, set()).add(original)

    def text(self, value: str) -> str:
        out = value
        home = (self.home or "").rstrip("/\\")
        if len(home) > 1 and home in out:
            self._note("home", home)
            # only where a path starts: not inside /System/Volumes/.../Users/x (macOS cryptexes)
            out = re.sub(r"(?<![^\s'\"=:(\[,;])" + re.escape(home) + r"(?=$|[/\\\s:;'\")\]])", "~", out)
        for rule, pattern, replacement in _SECRET_PATTERNS:
            out, count = pattern.subn(replacement, out)
            if count:
                self._note(rule, f"{count} match(es)")
        for rule, name, marker in (("user", self.user, USER), ("host", self.host, HOST)):
            if not name or len(name) < 3 or name.lower() in _GENERIC_NAMES:
                continue
            word = re.compile(r"(?<![A-Za-z0-9_.-])" + re.escape(name) + r"(?![A-Za-z0-9_-])")
            out, count = word.subn(marker, out)
            if count:
                self._note(rule, name)
        return out

    def walk(self, value: Any, layout: frozenset[str] = frozenset()) -> Any:
        """A redacted copy of JSON-ready data. Keys named in ``layout`` are the document's structure
        (field names) and are kept: a user called ``arch`` must not rename the ``arch`` field."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.walk(v, layout) for v in value]
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if key in _DROPPED_KEYS and item is not None:
                    self._note("gpu-id", str(item))
                    out[key] = None
                elif isinstance(key, str) and key not in layout:
                    out[self.text(key)] = self.walk(item, layout)
                else:
                    out[key] = self.walk(item, layout)
            return out
        return value

    def summary(self) -> dict[str, int]:
        return dict(sorted(self.applied.items()))
