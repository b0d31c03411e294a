"""Workflow failures only a log shows: PEFT merging LoRA weights into quantized layers, tensors
on two devices, DataParallel replicas, bitsandbytes' device guard.

These messages carry no machine facts; they only record their lines for the workflow rules.
"""

from __future__ import annotations

from bnbdoctor.knowledge import signatures as S
from bnbdoctor.logs.collectors.base import Collector

COLLECTOR = Collector("workflow")
collects = COLLECTOR.collects
recognises = COLLECTOR.recognises


recognises(
    S.PEFT_MERGE_QUANTIZED_WARNING,
    "lora module",
    r"(?P<un>[Uu]n)?[Mm]erge lora module to (?P<bits>\d{1,2})-bit linear may get different generations",
    bnb=True,
)


recognises(
    S.PEFT_LEGACY_MERGE_ERROR,
    "Cannot merge",
    r"Cannot merge LORA layers when the model is loaded in (?P<bits>\d{1,2})-bit mode",
)


recognises(
    S.TENSORS_DIFFERENT_DEVICES,
    "tensors to be on the same device",
    r"Expected all tensors to be on the same device, but (?:found at least two devices, )?(?P<a>[\w:]{1,20})"
    r"(?: and (?P<b>[\w:]{1,20}))?",
)


recognises(
    S.DATAPARALLEL_REPLICA_ERROR,
    "replica",
    r"Caught \w{1,40} in replica (?P<replica>\d{1,3}) on device (?P<device>\d{1,3})",
)


recognises(
    S.BNB_DEVICE_GUARD, "tensors need to be on the same GPU", r"All input tensors need to be on the same GPU", bnb=True
)


# The quantizer was handed integer storage: weights that are already quantized, quantized again.
recognises(
    S.QUANTIZE_PACKED_WEIGHTS,
    "Blockwise quantization",
    r"Blockwise quantization only supports 16/32-bit floats, but got torch\.u?int8",
    bnb=True,
)
