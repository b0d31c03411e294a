"""Release numbers written by hand in a rule's prose: :func:`bare_versions`.

A rule's page names the releases its check compares against, and the check reads them from
``bnbdoctor/knowledge/``. When the prose writes the number itself ("bitsandbytes 0.50+"), the page
goes stale the day the knowledge changes; written as ``{{ loader.NEAREST_BUILD.first_text }}`` it
cannot (:func:`bnbdoctor.ruledocs.pages.expand`). This module finds the numbers still written by hand.

What counts, in the docstring *before* expansion: every version-like token (``0.45``, ``0.45.1``,
``0.45.x``, ``4.3x``, ``5.x``, ``0.50+``, each end of ``0.43.1 – 0.45.x``), except

1. inside ``{{ }}`` (a placeholder) or a URL (an address, ``/v0.48.1/installation``, names the page
   it links, not a claim about releases);
2. glued to a name, so part of a file name or symbol: ``libcudart.so.11.0``, ``GLIBCXX_3.4.21``,
   ``/usr/local/cuda-11.8``, ``CUDA\\v13.0\\bin``;
3. the version of something that is not a release of a Python package: the token, or the range or
   list it belongs to ("CUDA 12.6 or 12.8", "Maxwell (5.0/5.2)", "Python `>=3.10`"), follows one of
   :data:`NOT_RELEASES` (CUDA, ROCm, a compute capability or GPU architecture, Python, glibc, a
   driver, ...). A number that names none of them is read as a release, so a list of compute
   capabilities says "compute capability" once before it. Inside a quoted message (a code span) the
   word may stand anywhere before the number: `Highest compute capability among GPUs detected: 6.1`;
4. one published build, as an example of what to install or what is installed: a version with a
   local part (``2.8.0+cu128``) or a pinned torch (``torch==2.5.1``): that pair comes from the
   example, the text around it says how to choose one;
5. a quantity: followed by its unit (``0.5 byte``, ``428.5 GiB``, ``1.25 x the largest block``), or a
   fraction with a zero after the point (``0.0625``, ``0.016``), which no release number has;
6. a wheel bnbdoctor recorded (``bnbdoctor/data/bnb_wheels.json``), named by its exact release for
   what was measured in it ("the 0.50.2 wheel", "0.46.1 `cuda128` starts at sm_75"): a fact about a
   published file, which no new knowledge makes stale. ``0.46.1+`` and ``>=0.46.1`` are boundaries
   all the same.

:data:`HISTORICAL` lists, per rule, the few numbers that only record the past or give an example
(a release that shipped one thing no check reads); anything a check compares against belongs in
knowledge instead.
"""

from __future__ import annotations

import inspect
import re
from functools import cache

from bnbdoctor.knowledge.releases import recorded_wheels
from bnbdoctor.rules.base import Rule

#: A version-like token; ``(?<!...)`` keeps out tokens glued to a name (rule 2).
TOKEN = re.compile(r"(?<![\w.\\/])(?:(?<![A-Za-z]-)|(?<=\dx-))\d+(?:\.(?:\d+|x))+x?\+?(?![\w.]\w|\w)")
_PLACEHOLDER = re.compile(r"\{\{.*?\}\}", re.DOTALL)
_URL = re.compile(r"https?://\S+")
#: One piece of what stands between the numbers of a range or list, and between it and its qualifier:
#: punctuation, "to"/"and"/"or", another number.
_JOINER = re.compile(r"(?:[ \t(`'\"=<>~!,/–—-]|\b(?:to|and|or)|\d+(?:\.(?:\d+|x))*x?\+?)\Z")
#: Words whose versions are not releases of a package (rule 3), as whole words, case-insensitive.
NOT_RELEASES = (
    "CUDA",
    "cu",
    "ROCm",
    "compute capability",
    "capability",
    "capabilities",
    "cc",
    "sm",
    "Kepler",
    "Maxwell",
    "Pascal",
    "Volta",
    "Xavier",
    "Turing",
    "Ampere",
    "Hopper",
    "Blackwell",
    "Python",
    "glibc",
    "GCC",
    "driver",
    "Ubuntu",
    "oneAPI",
)
_QUALIFIER = re.compile(r"\b(?:" + "|".join(re.escape(word) for word in NOT_RELEASES) + r")$", re.IGNORECASE)
_NAMED = re.compile(r"\b(?:" + "|".join(re.escape(word) for word in NOT_RELEASES) + r")\b", re.IGNORECASE)
_COMPARED = re.compile(r"[<>=!~]=?\s*$")
_FRACTION = re.compile(r"0\.0\d")
_CLOSED = re.compile(r"[\d.x+/–—, \t-]*\)")
_LOCAL_PART = re.compile(r"\+[A-Za-z]")
_UNIT = re.compile(r"\s*(?:or \d+ )?(?:bytes?\b|GiB\b|GB\b|MiB\b|MB\b|%|x\b)")

#: Per rule, numbers of its prose that record history or give an example no check reads (keep this
#: short: a boundary a check compares against is knowledge, and its text is a placeholder).
HISTORICAL: dict[str, frozenset[str]] = {
    # the failure catalog (cuda_setup_nameerror_bnb_0_37) has 0.36.0 crash too; the check knows 0.37.0's
    "BNB104": frozenset({"0.36.0"}),
    # an example of the lookup in the recorded wheels (a release that has none of its own)
    "BNB105": frozenset({"0.45.0"}),
    # the minimum transformers 5.0 shipped, as an example: the check reads it from the installed transformers
    "BNB214": frozenset({"0.46.1"}),
    # issue #1378: 0.44 was never published for macOS
    "BNB313": frozenset({"0.44"}),
    # transformers #46823: the measurement the fixes were checked with
    "BNB407": frozenset({"5.13.1"}),
    # the failure catalog's rough ranges of two message wordings (quantizer_no_gpu_found); the check
    # matches the messages, whatever the release
    "BNB534": frozenset({"4.4x", "5.x"}),
}


def _paragraph_lines(text: str) -> str:
    """Join wrapped lines of a paragraph (a line break inside one is a space); list items, table rows
    and code fences stay on lines of their own, so a range never reaches into the line above."""
    out: list[str] = []
    fence = False
    for line in text.split("\n"):
        stripped = line.strip()
        fenced, fence = fence, fence != stripped.startswith("```")
        own_line = fenced or fence or not stripped or stripped.startswith(("- ", "* ", "|", "#"))
        if own_line or not out or not out[-1].strip() or out[-1].lstrip().startswith(("|", "```")):
            out.append(line)
        else:
            out[-1] = out[-1].rstrip() + " " + stripped
    return "\n".join(out)


@cache
def _recorded() -> frozenset[str]:
    return frozenset(wheel.version for wheel in recorded_wheels())


def _exempt(line: str, start: int, end: int) -> bool:
    if line[start:end] in _recorded() and not _COMPARED.search(line[max(0, start - 3) : start]):
        return True
    before = line[max(0, start - 120) : start]
    if _FRACTION.match(line, start) or before.endswith("torch=="):
        return True
    if _LOCAL_PART.match(line, end) or _UNIT.match(line, end):
        return True
    quoted = line[:start].rsplit("`", 1)[1] if line.count("`", 0, start) % 2 else None
    if quoted is not None and _NAMED.search(quoted):
        return True
    opened = False
    while joiner := _JOINER.search(before):  # walk back over the range or list the token is in
        before, opened = before[: joiner.start()], opened or joiner.group() == "("
    # "Maxwell (5.0/5.2)" is qualified, "the installed ROCm (0.49+ wheels ...)" is not
    return bool(_QUALIFIER.search(before)) and (not opened or bool(_CLOSED.match(line, end)))


def bare_versions_in(text: str, allowed: frozenset[str] = frozenset()) -> list[str]:
    """The release numbers written by hand in prose ``text``, each as ``'0.45.0+' in '<its line>'``."""
    text = _URL.sub("<url>", _PLACEHOLDER.sub("{{…}}", text))
    found = []
    for line in _paragraph_lines(text).split("\n"):
        for match in TOKEN.finditer(line):
            if match.group() in allowed or _exempt(line, match.start(), match.end()):
                continue
            found.append(f"{match.group()!r} in {line.strip()!r}")
    return found


def bare_versions(rule: Rule) -> list[str]:
    """The release numbers written by hand in ``rule``'s prose (its check's docstring)."""
    return bare_versions_in(inspect.getdoc(rule.check) or "", HISTORICAL.get(rule.id, frozenset()))
