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
from functools import lru_cache
from typing import Any

from bnbdoctor.facts import OsInfo

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
#: An address or token may sit anywhere in a value: after a path separator, inside a word of a
#: distro name, in a URL. Patterns are anchored by look-behinds and bounded repeats so that each
#: runs in linear time on any string (a report string may hold 200,000 characters).
_NOT_WORD_BEFORE = r"(?<![A-Za-z0-9_])"
_NOT_WORD_AFTER = r"(?![A-Za-z0-9_])"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
#: (rule, pattern, replacement, needles): a pattern runs only on a string holding one of its
#: needles (lower case), a C-speed test that spares the regular expressions most strings.
_SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str], str, tuple[str, ...]], ...] = (
    (
        "url-credentials",
        re.compile(r"(?P<keep>\b[a-z][a-z0-9+.-]{0,30}://)[^/\s:@]{1,256}:[^/\s@]{1,256}@", re.IGNORECASE),
        r"\g<keep><redacted>@",
        ("://",),
    ),
    (
        "bearer",
        re.compile(
            r"(?P<keep>\bAuthorization:\s{0,4}(?:Bearer|Basic|Token)?\s{0,8}|\bBearer\s{1,8})[A-Za-z0-9._~+/=-]{8,4096}",
            re.IGNORECASE,
        ),
        r"\g<keep><redacted>",
        ("bearer", "authorization"),
    ),
    (
        "jwt",
        re.compile(_NOT_WORD_BEFORE + r"eyJ[A-Za-z0-9_-]{4,4096}\.[A-Za-z0-9_-]{4,4096}\.[A-Za-z0-9_-]{0,4096}"),
        "<redacted-token>",
        ("eyj",),
    ),
    (
        "token",
        re.compile(
            _NOT_WORD_BEFORE + r"(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255}"
            r"|hf_[A-Za-z0-9]{20,255}|sk-[A-Za-z0-9_-]{20,255}|xox[abprs]-[A-Za-z0-9-]{10,255}"
            r"|(?:AKIA|ASIA)[0-9A-Z]{16}|glpat-[A-Za-z0-9_-]{20,255}|npm_[A-Za-z0-9]{20,255}"
            r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,255}|AIza[0-9A-Za-z_-]{30,255})" + _NOT_WORD_AFTER
        ),
        "<redacted-token>",
        (
            *("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "hf_", "sk-", "xox", "akia", "asia"),
            *("glpat-", "npm_", "_live_", "_test_", "aiza"),
        ),
    ),
    (
        "private-key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----.{0,16384}?(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY-----|$)",
            re.DOTALL,
        ),
        "<redacted-private-key>",
        ("private key-----",),
    ),
    (
        "key-value",
        # any name that ends in a secret's word: password=, HF_TOKEN=, my_service_key:, x-api-key:
        re.compile(
            r"(?P<keep>(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]{0,64}?"
            r"(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|key|auth|credentials?)"
            r"(?P<q>[\"']?)\s{0,4}[=:]\s{0,4}(?P=q)[\"']?)(?!<redacted)[^\s:;,'\"&]{1,4096}",
            re.IGNORECASE,
        ),
        r"\g<keep><redacted>",
        ("=", ":"),
    ),
    (
        "email",
        re.compile(
            r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?"
            r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?){0,8}\.[A-Za-z]{2,24}" + _NOT_WORD_AFTER
        ),
        "<email>",
        ("@",),
    ),
    (
        "ip-address",
        # a dotted quad that is not a version: not part of a longer dotted run, not after ==, v or
        # "version ", not a kernel's 5.15.153.1-microsoft-standard-WSL2
        re.compile(
            r"(?<![A-Za-z0-9_.])(?<!==)(?<![<>~!]=)(?<!version )(?<!version: )"
            + _OCTET
            + r"(?:\."
            + _OCTET
            + r"){3}(?![A-Za-z0-9_-]|\.[0-9])",
            re.IGNORECASE,
        ),
        "<ip>",
        (".",),
    ),
    (
        "ipv6-address",
        # the full form, and the compressed one with two groups or more before its "::" (fd12:3456:789a::77),
        # never a C++ scope (c10::Error) or a slice ([::2])
        re.compile(
            r"(?<![A-Za-z0-9_:.])(?:(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}"
            r"|(?:[0-9a-fA-F]{1,4}:){2,6}:(?:[0-9a-fA-F]{1,4}(?::[0-9a-fA-F]{1,4}){0,4})?)(?![A-Za-z0-9_:])"
        ),
        "<ip>",
        (":",),
    ),
    (
        "other-home",
        # another user's home folder where a path starts (the user's own is ~): /home/bob, /Users/bob
        re.compile(
            r"(?<![^\s'\"`=:(\[,;])(?P<keep>/(?:home|Users)/)(?!<)[A-Za-z_][A-Za-z0-9_.-]{0,31}(?=/|$|[\s'\"`)\],;:])"
        ),
        r"\g<keep><user>",
        ("/home/", "/users/"),
    ),
    (
        "host-in-path",
        # a file server's name as a folder of a path (/nfs/db7.internal.example/...), not a URL's host
        re.compile(
            r"(?<=[^/:]/)(?:[A-Za-z0-9-]{1,63}\.){2,8}"
            r"(?:com|net|org|edu|gov|io|cloud|internal|local|lan|corp|intranet|example|arpa)(?=/)",
            re.IGNORECASE,
        ),
        "<host>",
        (".",),
    ),
    (
        "private-host",
        # a host name under a top-level domain kept for private or documentation use (RFC 2606, RFC 6761, ICANN's
        # .internal; .lan/.corp/.intranet/.localdomain by custom), wherever it stands: it names a machine of the
        # user's network, never a public site a report needs (db7.internal-secret.example, gpu07.corp)
        re.compile(
            r"(?<![A-Za-z0-9_.@/-])(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,8}"
            r"(?:internal|local|lan|corp|intranet|localdomain|example|test|invalid|home\.arpa)(?![A-Za-z0-9_-]|\.[A-Za-z0-9])",
            re.IGNORECASE,
        ),
        "<host>",
        (".internal", ".local", ".lan", ".corp", ".intranet", ".example", ".test", ".invalid", ".home.arpa"),
    ),
    (
        "gpu-uuid",
        re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b"),
        r"\1-<uuid>",
        ("gpu-", "mig-"),
    ),
)
#: Values that are versions by the name of their field; an IP-address look-alike there is a version.
_VERSION_KEY = re.compile(r"version|^cuda$|^cudnn$|^driver$|^release$|^kernel$", re.IGNORECASE)
#: Where a pasted log names its machine: ``uname -a`` (``Linux gpu-node-07 5.15.0-91-generic ...``)
#: and shell prompts (``alice@gpu-node-07:~$``, ``[alice@gpu-node-07 ~/llm]$``), wherever a line shows them.
_UNAME_HOST = re.compile(r"(?<![A-Za-z0-9_])(?:Linux|Darwin) ([A-Za-z0-9][A-Za-z0-9.-]{1,62}) [0-9]{1,3}\.[0-9]{1,3}")
_PROMPT = re.compile(
    r"(?<![A-Za-z0-9_.-])([a-z_][a-z0-9_.-]{1,31})@([A-Za-z0-9][A-Za-z0-9-]{1,62})(?::[~/]| [~/][^\s]{0,64}\]?[$#%])"
)
#: Fact fields dropped outright: identifiers that help nobody debug bitsandbytes.
_DROPPED_KEYS = {"uuid", "serial"}


@dataclass
class Redactor:
    """Replaces identity and secrets in every string of a JSON-ready report."""

    home: str | None = None
    user: str | None = None
    host: str | None = None
    other_hosts: tuple[str, ...] = ()  # more names of this machine (a log's prompt and its uname)
    applied: dict[str, int] = field(default_factory=dict)  # rule -> replacements made
    originals: dict[str, set[str]] = field(default_factory=dict)  # rule -> what was replaced (stderr only)

    @classmethod
    def for_machine(cls, info: OsInfo) -> Redactor:
        return cls(home=info.home, user=info.username, host=info.hostname)

    @classmethod
    def for_text(cls, text: str) -> Redactor:
        """For a pasted log: the home folder that its paths show most often is the user's; the host
        is the one ``uname -a`` or a shell prompt names."""
        homes = re.findall(r"(/home/|/Users/|[A-Za-z]:\\Users\\)([A-Za-z0-9._-]{3,64})", text)
        home = user = None
        if homes:
            counts: dict[tuple[str, str], int] = {}
            for prefix, name in homes:
                counts[(prefix, name)] = counts.get((prefix, name), 0) + 1
            prefix, name = max(counts, key=lambda key: counts[key])
            home, user = prefix + name, name
        hosts: list[str] = []
        prompt = _PROMPT.search(text)
        if prompt is not None:
            user = user or prompt.group(1)
            hosts.append(prompt.group(2))
        uname = _UNAME_HOST.search(text)
        if uname is not None:
            hosts.insert(0, uname.group(1))
        return cls(home=home, user=user, host=hosts[0] if hosts else None, other_hosts=tuple(hosts[1:]))

    def also_machine(self, info: OsInfo) -> Redactor:
        """This redactor, also replacing ``info``'s home folder, user and host where it knows none."""
        hosts = tuple(name for name in (info.hostname,) if name and name != self.host)
        return Redactor(
            home=self.home or info.home,
            user=self.user or info.username,
            host=self.host or info.hostname,
            other_hosts=self.other_hosts + (hosts if self.host else ()),
        )

    def _note(self, rule: str, original: str, count: int = 1) -> None:
        self.applied[rule] = self.applied.get(rule, 0) + count
        self.originals.setdefault(rule, set()).add(original)

    def text(self, value: str, version_field: bool = False) -> str:
        """``value`` with identity and secret-shaped strings replaced. In a field that holds a
        version (``version_field``) a dotted quad is a version, not an IP address."""
        out = value
        home = (self.home or "").rstrip("/\\")
        if len(home) > 1 and home in out:
            # only where a path starts (a quote or a backtick may open it): not inside /System/Volumes/.../Users/x
            # (macOS cryptexes)
            out, count = re.subn(r"(?<![^\s'\"`=:(\[,;])" + re.escape(home) + r"(?=$|[/\\\s:;'\"`)\]])", "~", out)
            if count:
                self._note("home", home, count)
        lowered = out.lower()
        for rule, pattern, replacement, needles in _SECRET_PATTERNS:
            if (version_field and rule == "ip-address") or not any(needle in lowered for needle in needles):
                continue
            found = pattern.search(out)
            if found is None:
                continue
            out, count = pattern.subn(replacement, out)
            self._note(rule, found.group(0)[:80], count)
        for rule, name, marker in (("user", self.user, USER), *(("host", name, HOST) for name in self._hosts())):
            if not name or len(name) < 3 or name.lower() in _GENERIC_NAMES:
                continue
            if len(name) > _LONGEST_NAME:  # no real user or host name; a pattern of it would cost seconds to build
                out, count = out.replace(name, marker), out.count(name)
            else:
                out, count = _name_pattern(name, host=rule == "host").subn(marker, out)
            if count:
                self._note(rule, name, count)
        return out

    def _hosts(self) -> list[str]:
        """This machine's names, longest first: ``node7.corp.example.com``, then ``node7``."""
        names = [name for name in (self.host, *self.other_hosts) if name]
        names += [name.split(".", 1)[0] for name in names if "." in name]
        return sorted(set(names), key=len, reverse=True)

    def walk(self, value: Any, layout: frozenset[str] = frozenset(), key: str = "") -> Any:
        """A redacted copy of JSON-ready data. Keys named in ``layout`` are the document's structure
        (field names) and are kept: a user called ``arch`` must not rename the ``arch`` field."""
        if isinstance(value, str):
            return self.text(value, version_field=bool(key) and _VERSION_KEY.search(key) is not None)
        if isinstance(value, list):
            return [self.walk(v, layout, key) for v in value]
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for name, item in value.items():
                if name in _DROPPED_KEYS and item is not None:
                    self._note("gpu-id", str(item))
                    out[name] = None
                elif isinstance(name, str) and name not in layout:
                    out[self.text(name)] = self.walk(item, layout, name)
                else:
                    out[name] = self.walk(item, layout, name if isinstance(name, str) else "")
            return out
        return value

    def summary(self) -> dict[str, int]:
        return dict(sorted(self.applied.items()))


def _specific_host(name: str) -> bool:
    """A host name no word of ordinary text is: ``gpu-node-07``, ``dgx3`` (a hyphen or a digit, six
    characters or more). Such a name is replaced inside hyphenated words too (``qlora-gpu-node-07``)."""
    return len(name) >= 6 and any(c == "-" or c.isdigit() for c in name)


#: Longer than any user name or DNS host name (253 characters): replaced as it stands, not as a word.
_LONGEST_NAME = 255


@lru_cache(maxsize=64)
def _name_pattern(name: str, host: bool) -> re.Pattern[str]:
    """The user or host name as a word. A hyphen ends a word only for a :func:`specific <_specific_host>`
    host name: a user called ``ai`` is not redacted out of ``qlora-ai-demo``. Built once per name: a report
    has hundreds of strings, and a recorded machine may hold a name of any length."""
    if host and _specific_host(name):
        return re.compile(r"(?<![A-Za-z0-9_.])" + re.escape(name) + r"(?![A-Za-z0-9_])")
    return re.compile(r"(?<![A-Za-z0-9_.-])" + re.escape(name) + r"(?![A-Za-z0-9_-])")
