"""Imports that fail: a module that is not installed (torch, bitsandbytes, scipy, triton.ops), a
name a bitsandbytes module lacks (old and new files mixed), transformers' generic ImportError.

``No module named 'torch'`` and ``'bitsandbytes'`` are the only way a log shows that a package
is absent, so they mark it missing in the ``python`` evidence.
"""

from __future__ import annotations

import re

from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.transformers import BNB_8BIT_MINIMUM
from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.patterns import Q
from bnbdoctor.logs.state import LogState

COLLECTOR = Collector("imports")
collects = COLLECTOR.collects
recognises = COLLECTOR.recognises


recognises(
    S.TRITON_OPS_MISSING, ("triton.o",), r"No module named '?triton\.o(?:ps)?|from triton\.ops\b|import triton\.ops\b"
)


@collects("No module", r"No module named '?(?P<module>[\w.]{1,100})'?")
def no_module(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    module = m.group("module").split(".")[0]
    if m.group("module").startswith("triton.o"):
        return
    if line.lstrip().startswith("No module named"):
        # ModuleNotFoundError's message without its name: under a wrapper's "because of the following error:"
        state.error_line(number, line.strip())
    if module == "scipy":
        state.match(S.SCIPY_MISSING, number, line)
    elif module == "torch":
        state.torch.missing = True
        state.match(S.TORCH_NOT_INSTALLED, number, line)
    elif m.group("module") == "bitsandbytes":
        state.bnb.missing = True
        state.match(S.BNB_NOT_INSTALLED, number, line)
    elif module == "bitsandbytes" or _cut_inside_bitsandbytes(state, m):
        # the package imports, one of its modules does not: two releases' files
        state.bnb.seen = True
        state.match(S.BNB_SUBMODULE_MISSING, number, line)


def _cut_inside_bitsandbytes(state: LogState, m: re.Match[str]) -> bool:
    """``No module named 'bit`` cut at the end of the paste, raised while bitsandbytes' own files import (the
    traceback runs in the package): one of its modules, whatever the rest of the name was."""
    name = m.group("module")
    cut = m.end() == len(m.string.rstrip()) and not m.group(0).endswith("'")
    return cut and len(name) >= 3 and "bitsandbytes".startswith(name) and state.bnb.seen


#: Lines from a bitsandbytes/__main__.py frame within which an import error is that process's (a traceback).
_MAIN_FRAME_LINES = 30


@collects(("bitsandbytes/__main__", "bitsandbytes\\__main__"), r"bitsandbytes[/\\]__main__\.py")
def bnb_main_frame(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """A traceback frame in bitsandbytes' __main__.py: the process is a fresh `python -m bitsandbytes`."""
    state.recent.bnb_main = number


@collects(
    ("cannot import", "not import"),
    r"cannot import name '(?P<name>\w{1,100})' from '(?P<module>bitsandbytes[\w.]{0,100})'",
    r"can(?:'t| ?not) import '?(?P<name>sync_gpu)\b",
    bnb=True,
)
def stale_bnb_modules(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """A bitsandbytes module importing a name its sibling lacks: old modules kept in a running process, or, in a
    fresh `python -m bitsandbytes` (no module was loaded before), the files of two releases on disk."""
    fresh = 0 <= state.since(state.recent.bnb_main, number) <= _MAIN_FRAME_LINES
    state.match(S.BNB_SUBMODULE_MISSING if fresh else S.STALE_BNB_MODULES, number, line)


recognises(
    S.TRANSFORMERS_BNB_IMPORTERROR,
    ("bitsandbytes", "load_in_8bit", "load_in_4bit"),
    r"Using `?bitsandbytes`? (?:\d-bit )?quantization requires(?! bitsandbytes\b)"
    r"|requires the latest version of bitsandbytes"
    # transformers 4.2x-4.37 (modeling_utils.from_pretrained), often cut in the paste: "requires Acceler"
    r"|Using `?load_in_(?:4|8)bit=True`? requires Acceler",
)


@collects(
    ("requires bitsandbytes",),
    r"quantization requires bitsandbytes\W{1,8}pip install[^`]{0,40}?"
    r"bitsandbytes\s*>=\s*(?P<minimum>\d+(?:\.\d+){1,3})",
)
def transformers_bnb_minimum(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """transformers 5's quantizers name their minimum bitsandbytes in the ImportError they raise."""
    state.python.bnb_minimum = m.group("minimum")
    state.match(S.TRANSFORMERS_BNB_MINIMUM, number, line)


@collects(
    "not compatible with 8bit",
    r"You have a version of `?bitsandbytes`? that is not compatible with 8bit inference and training",
)
def transformers_bnb_8bit_minimum(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """transformers' 8-bit gate (from_pretrained, then the 8-bit quantizer): a bitsandbytes below its 8-bit minimum,
    which the message does not name (knowledge.transformers.BNB_8BIT_MINIMUM, read from the releases' code)."""
    state.python.bnb_minimum = state.python.bnb_minimum or BNB_8BIT_MINIMUM
    state.match(S.TRANSFORMERS_BNB_MINIMUM, number, line)


# --- families found in real threads (issue 24) ------------------------------------------------------
# importlib.metadata finds no bitsandbytes distribution (transformers' and diffusers' version checks).
recognises(
    S.BNB_METADATA_NOT_FOUND,
    ("for bitsandbytes", "FOR BITSANDBYTES"),
    r"(?i)no package metadata was found for bitsandbytes\b",
)


# vLLM's bitsandbytes quantizer: the import failed (or the release is older than its minimum).
recognises(
    S.BNB_INSTALL_REQUIRED,
    "to use bitsandbytes quantizer",
    r"Please install bitsandbytes\s*>=\s*\d+(?:\.\d+){1,2} via `?pip install bitsandbytes\s*>=\s*\d+(?:\.\d+){1,2}`?"
    r" to use bitsandbytes quantizer",
)


# A bitsandbytes older than 4-bit quantization: its nn module has no 4-bit layer, or transformers' own gate says so.
recognises(
    S.BNB_LACKS_4BIT,
    ("bitsandbytes.nn", "bit quantization requires bitsandbytes"),
    r"module 'bitsandbytes\.nn' has no attribute '(?P<name>Linear4bit|LinearNF4|LinearFP4|Params4bit)'",
    r"4[- ]bit quantization requires bitsandbytes\s*>=\s*(?P<minimum>\d+(?:\.\d+){1,2})",
)


# kohya's train_util (and trainers copied from it) catch the failed `import bitsandbytes` and raise their own message.
recognises(S.APP_NO_BITSANDBYTES, "No bitsandbytes", r"ImportError: No bitsandbytes\b")
# transformers' check_imports for a model's remote code (trust_remote_code): an import of bitsandbytes that failed on
# a missing dependency ("No module named 'scipy'") is reported as bitsandbytes not found (Baichuan2 #196).
recognises(
    S.REMOTE_CODE_BNB_NOT_FOUND,
    "requires the following packages that were not found",
    r"This modeling file requires the following packages that were not found in your environment: "
    r"(?:[\w.-]{1,60}, ){0,20}bitsandbytes\b",
)


# A bitsandbytes older than the optimizer the trainer asks for (8-bit Lion, the paged optimizers).
recognises(
    S.BNB_LACKS_OPTIMIZER,
    ("bitsandbytes.optim", "is_paged"),
    r"module 'bitsandbytes\.optim' has no attribute '(?P<name>\w{1,40})'",
    r"(?P<name>\w{1,40})\.__init__\(\) got an unexpected keyword argument 'is_paged'",
)


# Forge's and ComfyUI's NF4 loaders subclass Params4bit and read quant_storage, which older releases lack.
recognises(
    S.PARAMS4BIT_NO_QUANT_STORAGE,
    "Params4bit",
    r"'(?P<cls>\w{0,40}Params4bit)' object has no attribute 'quant_storage'",
)


# The ComfyUI NF4 node's ForgeParams4bit.to() reads self.module, which its parameter lacks.
recognises(
    S.FORGE_PARAMS4BIT_NO_MODULE,
    "Params4bit",
    r"'(?P<cls>\w{0,40}Params4bit)' object has no attribute 'module'",
)


# An application importing BitsAndBytesConfig (transformers 4.27+) under an older transformers.
recognises(
    S.TRANSFORMERS_LACKS_BNB_CONFIG,
    "BitsAndBytesConfig",
    rf"cannot import name {Q}BitsAndBytesConfig{Q} from {Q}transformers{Q}",
)


# transformers turning torch off: older than its minimum (transformers 5: "Disabling PyTorch because PyTorch >= 2.4 is
# required but found 2.2.0"), or none in that Python; a model class then says it "requires the PyTorch library".
recognises(
    S.TRANSFORMERS_TORCH_UNAVAILABLE,
    ("Disabling PyTorch", "PyTorch library", "None of PyTorch", "PyTorch was not found"),
    r"Disabling PyTorch because PyTorch >= ?\d[\w.]{0,20} is required but found \d[\w.+]{0,40}",
    r"requires the PyTorch library but it was not found in your environment",
    r"None of PyTorch, TensorFlow >= 2\.0, or Flax have been found",
    r"PyTorch was not found\. Models won't be available",
)


# transformers' from_pretrained with a device_map (or low_cpu_mem_usage) when is_accelerate_available() is False.
recognises(
    S.DEVICE_MAP_NEEDS_ACCELERATE,
    "requires Accelerate",
    r"Using `?low_cpu_mem_usage=True`? or a `?device_map`? requires Accelerate",
)


# `bitsandbytes` imported, but without its nn/optim submodules: a failed import left half a module, or another
# folder named bitsandbytes shadows the package.
recognises(
    S.BNB_MODULE_ATTRIBUTE_MISSING,
    "module 'bitsandbytes' has no attribute",
    r"module 'bitsandbytes' has no attribute '(?P<name>nn|optim|functional|autograd|utils|research|cextension)'",
)


# Triton compiling its driver module or a kernel at run time (bitsandbytes' Triton backend on XPU, transformers'
# bitsandbytes integration importing Triton) on a machine without a C compiler.
recognises(
    S.TRITON_NO_C_COMPILER,
    "Failed to find C compiler",
    r"Failed to find C compiler\. Please specify via CC environment variable",
)
