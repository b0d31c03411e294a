"""One typed decoder for the part of a report the fleet reads, whatever its layout.

A fleet's reports come from Slurm epilogs, Kubernetes jobs and log shippers, which write JSON as they like:
indented or compact, keys in any order, one report a line. :func:`decode_summary` reads only the members a
fingerprint needs (the findings' id, severity and title; the GPU, platform and package facts) with msgspec's
typed decoding, which skips every other member at C speed without building it, so every layout costs the same
(``bench/bench_fleet.py`` measures each). Anything it cannot type (a member of the wrong type, invalid JSON,
nesting past the decoder's limits) returns None, and the caller decodes the text whole with
:func:`bnbdoctor.report_io.parse_report`, where each way a report can be wrong is one line.
"""

from __future__ import annotations

from typing import Any

import msgspec

_Scalar = str | int | float | bool | None


class _Finding(msgspec.Struct):
    rule_id: _Scalar = None
    severity: _Scalar = None
    title: _Scalar = None


class _Device(msgspec.Struct):
    name: _Scalar = None


class _Gpu(msgspec.Struct):
    nvml_available: _Scalar = None
    driver_version: _Scalar = None
    driver_cuda_version: _Scalar = None
    devices: list[_Device] | None = None


class _Platform(msgspec.Struct):
    libc: _Scalar = None
    libc_version: _Scalar = None


class _Package(msgspec.Struct):
    installed: _Scalar = None
    version: _Scalar = None


class _Python(msgspec.Struct):
    torch: _Package | None = None
    bitsandbytes: _Package | None = None


class _Source(msgspec.Struct):
    kind: _Scalar = None


class _Facts(msgspec.Struct):
    platform: _Platform | None = None
    gpu: _Gpu | None = None
    python: _Python | None = None


class _Report(msgspec.Struct):
    tool: _Scalar = None
    schema_version: _Scalar = None
    kind: _Scalar = None
    source: _Source | None = None
    findings: list[_Finding] | None = None
    facts: _Facts | None = None


_DECODER = msgspec.json.Decoder(_Report)


def decode_summary(text: str | bytes) -> dict[str, Any] | None:
    """The members the fleet reads, as the plain dict a whole decode would give of them; None when the text is
    not one JSON object of that shape (decode it whole instead)."""
    try:
        report = _DECODER.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeError):
        return None
    result = msgspec.to_builtins(report)
    return result if isinstance(result, dict) and result.get("tool") == "bnbdoctor" else None
