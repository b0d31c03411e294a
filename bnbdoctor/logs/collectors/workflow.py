"""Workflow failures only a log shows: PEFT merging LoRA weights into quantized layers, tensors
on two devices, DataParallel replicas, bitsandbytes' device guard.

These messages carry no machine facts; they only record their lines for the workflow rules.
"""

from __future__ import annotations

import re

from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.state import LogState

COLLECTOR = Collector("workflow")
collects = COLLECTOR.collects


@collects(
    "peft_merge",
    "lora module",
    r"(?P<un>[Uu]n)?[Mm]erge lora module to (?P<bits>\d{1,2})-bit linear may get different generations",
)
def peft_merge(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.bnb.seen = True
    state.match("peft_merge_quantized_warning", number, line)


@collects(
    "peft_legacy_merge",
    "Cannot merge",
    r"Cannot merge LORA layers when the model is loaded in (?P<bits>\d{1,2})-bit mode",
)
def peft_legacy_merge(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.match("peft_legacy_merge_error", number, line)


@collects(
    "tensors_devices",
    "tensors to be on the same device",
    r"Expected all tensors to be on the same device, but (?:found at least two devices, )?(?P<a>[\w:]{1,20})"
    r"(?: and (?P<b>[\w:]{1,20}))?",
)
def tensors_devices(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.match("tensors_different_devices", number, line)


@collects("replica_error", "replica", r"Caught \w{1,40} in replica (?P<replica>\d{1,3}) on device (?P<device>\d{1,3})")
def replica_error(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.match("dataparallel_replica_error", number, line)


@collects("device_guard", "tensors need to be on the same GPU", r"All input tensors need to be on the same GPU")
def device_guard(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.bnb.seen = True
    state.match("bnb_device_guard", number, line)


@collects(
    "quantize_packed_weights",
    "Blockwise quantization",
    r"Blockwise quantization only supports 16/32-bit floats, but got torch\.u?int8",
)
def quantize_packed_weights(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """The quantizer was handed integer storage: weights that are already quantized, quantized again."""
    state.bnb.seen = True
    state.match("quantize_packed_weights", number, line)
