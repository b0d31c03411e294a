"""Where the model's layers went: transformers' dispatch ValueError (modules on the CPU or disk),
the misnamed offload option, CUDA out of memory.

"unexpected keyword argument" sometimes puts the argument's name on the next line; the line
number is kept in :class:`~bnbdoctor.logs.state.Recent` so that the next line can complete it.
"""

from __future__ import annotations

import re

from bnbdoctor.knowledge import signatures as S
from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.state import LogState

COLLECTOR = Collector("placement")
collects = COLLECTOR.collects
recognises = COLLECTOR.recognises


@collects(
    ("dispatched", "offload some keys"),
    r"Some modules are dispatched on the CPU or the disk",
    # transformers 4.30-4.37 (modeling_utils.from_pretrained) for a device_map with cpu/disk entries
    r"If you want to offload some keys to `?cpu`? or `?disk`?, you need to set `?llm_int8_enable_fp32_cpu_offload",
)
def dispatch(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.recent.dispatch = number
    state.match(S.DISPATCH_CPU_DISK_VALUEERROR, number, line)
    if "load_in_8bit_fp32_cpu_offload" in line:
        state.match(S.DISPATCH_MESSAGE_OLD_OPTION, number, line)


@collects("8bit_fp32", r"load_in_8bit_fp32_cpu_offload")
def old_offload_option(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    if "unexpected keyword argument" in line or state.since(state.recent.unexpected_kwarg, number) <= 1:
        state.match(S.FP32_OFFLOAD_KWARG_TYPEERROR, number, line)
    elif number - state.recent.dispatch > 0 and not state.count(S.DISPATCH_MESSAGE_OLD_OPTION):
        state.match(S.DISPATCH_MESSAGE_OLD_OPTION, number, line)


@collects("unexpected keyword", r"unexpected keyword argument\s*'?(?P<kwarg>\w{0,100})'?")
def unexpected_kwarg(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    if not m.group("kwarg"):
        state.recent.unexpected_kwarg = number  # the argument's name is on the next line


recognises(
    S.CUDA_OUT_OF_MEMORY,
    ("CUDA out of memory", "OutOfMemoryError"),
    r"CUDA out of memory\.?(?: Tried to allocate (?P<alloc>[\d.]{1,10} ?[GMK]i?B))?"
    r"(?:.{0,200}?GPU (?P<gpu>\d{1,3}))?",
    r"OutOfMemoryError",
)
