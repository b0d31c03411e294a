"""What transformers, accelerate and FSDP refuse to do with a 4-bit/8-bit model, and two known
harmless messages (issue 12).

- transformers' bitsandbytes quantizer finding no accelerator: ``No GPU found. A GPU is needed for
  quantization.`` (4.3x-4.4x), ``None of the available devices `available_devices = ...` are
  supported by the bitsandbytes version you have installed`` (the multi-backend check),
  ``CUDA is required but not available for bitsandbytes`` and ``The installed version of
  bitsandbytes (<0.43.1) requires CUDA, but CUDA is not available``;
- ``got an unexpected keyword argument 'load_in_4bit'`` (or ``'load_in_8bit'``), also with the
  name wrapped onto the next line;
- ``.to``/``.cuda`` refused for a ``4-bit``/``8-bit`` model, ``You cannot cast a bitsandbytes
  model in a new `dtype` ``, ``.half()``/``.float()`` refused for a quantized model;
- accelerate's ``You can't train a model that has been loaded in 8-bit [or 4-bit] precision on a
  different device than the one you're training on`` (older releases: ``... on multiple devices``);
- FSDP's ``Cannot flatten integer dtype tensors`` and ``Must flatten tensors with uniform dtype
  but got X and Y`` where X or Y is an integer dtype (mixing two float dtypes is another problem);
- noise: bitsandbytes' ``Input type into Linear4bit is torch.float16, but
  bnb_4bit_compute_dtype=torch.float32`` performance warning, and WSL2's ``ldconfig:
  /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link``.

The variable parts (classes, dtypes, devices, paths) are groups; the handlers record the lines and
the few facts a line carries (WSL2 from the ldconfig path).
"""

from __future__ import annotations

import re

from bnbdoctor.knowledge import signatures as S
from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.patterns import Q
from bnbdoctor.logs.state import LogState

COLLECTOR = Collector("kbit")
collects = COLLECTOR.collects
recognises = COLLECTOR.recognises

#: The dtypes bitsandbytes stores quantized weights in (int8 for 8-bit, uint8 by default for 4-bit).
_INTEGER_DTYPE = re.compile(r"^(?:torch\.)?u?int\d{1,2}$")


recognises(
    S.QUANTIZER_NO_GPU,
    ("No GPU found", "available devices", "required but not available for bitsandbytes", "requires CUDA, but CUDA"),
    r"No GPU found\. A GPU is needed for quantization",
    r"None of the available devices `?available_devices = (?P<devices>None|set\(\)|\{[^}]{0,200}\})`? are supported"
    r" by the bitsandbytes",
    r"CUDA is required but not available for bitsandbytes",
    r"bitsandbytes \(<\s?\d+\.\d+(?:\.\d+)?\) requires CUDA, but CUDA is not available",
    bnb=True,
)


recognises(
    S.LOAD_IN_KBIT_KWARG_UNSUPPORTED,
    "unexpected keyword",
    rf"unexpected keyword argument\s*{Q}load_in_(?P<bits>4|8)bit{Q}",
)


@collects(("load_in_4bit", "load_in_8bit"), rf"^\s*{Q}?load_in_(?P<bits>4|8)bit{Q}?\s*$")
def load_in_kbit_wrapped(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """The argument's name alone on a line, right after "unexpected keyword argument" (a wrapped message)."""
    if state.since(state.recent.unexpected_kwarg, number) <= 1:
        state.match(S.LOAD_IN_KBIT_KWARG_UNSUPPORTED, number, line)


recognises(
    S.KBIT_MODEL_MOVED,
    (
        "-bit`",
        "cast a bitsandbytes model",
        "supported for quantized model",
        "not supported for 4-bit",
        "for 8-bit",
        "via .to() is not supported",
        "via `.to()` is not supported",
    ),
    r"(?:`\.?(?P<call>to|cuda)(?:\(\))?`|Calling `(?P<called>to|cuda)\(\)`) is not supported for `(?P<bits>4|8)-bit`",
    # the same, its backticks lost to Markdown in a paste
    r"Calling (?P<called2>to|cuda)\(\) is not supported for (?P<bits2>4|8)-bit quantized models",
    r"You cannot cast a bitsandbytes model in a new `?dtype",
    r"`\.?(?P<cast>half|float)\(\)` is not supported for quantized model",
    # diffusers' wording (its model offloading moves each module with .to())
    r"has been loaded in `?bitsandbytes`? (?P<bits3>4|8)-?bit and moving it to \S{1,40} via `?\.?to\(\)`? is not"
    r" supported",
)


recognises(
    S.KBIT_MODEL_OTHER_DEVICE,
    ("different device than the one you", "precision on multiple devices"),
    r"You can.t train a model that has been loaded in (?P<bits>[48]-bit(?: or [48]-bit)?) precision on (?:a different"
    r" device than the one you.re training on|multiple devices)",
)


@collects(
    ("Cannot flatten integer dtype", "Must flatten tensors with uniform dtype", "Integer parameters are unsupported"),
    r"Cannot flatten integer dtype tensors",
    r"Integer parameters are unsupported",  # torch 2.0's FlatParameter
    r"Must flatten tensors with uniform dtype but got (?P<a>(?:torch\.)?\w{1,20}) and (?P<b>(?:torch\.)?\w{1,20})",
)
def fsdp_flatten(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    pair = [m.groupdict().get("a"), m.groupdict().get("b")]
    if pair == [None, None] or any(d and _INTEGER_DTYPE.match(d) for d in pair):
        state.match(S.FSDP_INTEGER_FLATTEN, number, line)


recognises(
    S.COMPUTE_DTYPE_FP32_SLOW,
    ("bnb_4bit_compute_dtype", "bnb_4bit_compute_type"),
    # 0.40-0.41 spelled the option bnb_4bit_compute_type in the warning
    r"Input type into Linear4bit is (?:torch\.)?(?P<input>b?float16|half)[,.]? (?:but|and) "
    r"bnb_4bit_compute_d?type\s?=\s?(?:torch\.)?float32",
    bnb=True,
)


@collects(
    "is not a symbolic link",
    r"ldconfig(?:\.real)?: (?P<path>\S{0,200}/wsl/lib/(?P<lib>lib[\w.+-]{1,60}\.so[\d.]{0,12})) is not a symbolic link",
)
def wsl_ldconfig(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.platform.wsl = True
    state.platform.os_votes["linux"] += 1
    state.match(S.WSL_LDCONFIG_NOT_SYMLINK, number, line)


# --- families found in real threads (issue 24) ------------------------------------------------------
# A 4-bit weight without its quantization state: never quantized on the device, or loaded as a plain tensor.
recognises(
    S.QUANT_STATE_MISSING,
    ("quantization state not initialized", "bit quantization data type", "quant_state"),
    r"(?:FP4|NF4|4-bit) quantization state not initialized",
    r"4-bit quantization data type None is not implemented",
    r"'Tensor' object has no attribute 'quant_state'",
)


# The packed 4-bit weight (shape N x 1, transposed 1 x N) multiplied as a plain one: the 4-bit path was not taken.
recognises(
    S.PACKED_4BIT_MATMUL,
    "shapes cannot be multiplied",
    r"mat1 and mat2 shapes cannot be multiplied \(\d{1,9}x\d{1,9} and 1x\d{1,9}\)",
)


recognises(
    S.KBIT_KWARG_WITH_CONFIG,
    "as a kwarg when passing",
    r"You can't pass `?load_in_4bit`? ?or `?load_in_8bit`? as a kwarg when passing `?quantization_config`? argument",
)


recognises(
    S.SAVE_4BIT_UNSUPPORTED,
    "on a 4-bit converted model",
    r"You are calling `?save_pretrained`? on a 4-bit converted model\. This is currently not supported",
)


recognises(
    S.VLLM_BNB_PARALLELISM,
    ("BitAndBytes quantization with TP", "Prequant BitsAndBytes"),
    r"BitAndBytes quantization with TP or PP is not supported",
    r"ValueError: Prequant BitsAndBytes\b",
)


recognises(
    S.TRAINER_8BIT_NEEDS_BNB,
    "The model you want to train is loaded in 8-bit precision",
    r"The model you want to train is loaded in 8-bit precision\.\s+if you want to fine-tune an 8-bit model, please make"
    r" sure that you have installed `?bitsandbytes>=(?P<minimum>\d+(?:\.\d+){1,2})",
)


recognises(
    S.INT_PARAMS_REQUIRE_GRAD,
    "dtype can require gradients",
    r"[Oo]nly Tensors of floating point (?:and complex )?dtype can require gradients",
)


@collects(
    "must have the same dtype",
    r"(?:mat1|self) and mat2 must have the same dtype(?:, but got (?P<a>\w{1,20}) and (?P<b>\w{1,20}))?",
)
def matmul_dtype_mismatch(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """An int8 operand (Char) is an 8-bit weight used as a plain one; two float dtypes are another problem."""
    pair = {m.group("a"), m.group("b")}
    if "Byte" in pair:  # uint8: a 4-bit weight's packed storage, not an 8-bit one
        state.match(S.PACKED_4BIT_WEIGHT_AS_TENSOR, number, line)
    elif "Char" in pair:
        state.match(S.INT8_WEIGHT_DTYPE_MISMATCH, number, line)
    elif pair == {None}:
        state.match(S.MATMUL_DTYPE_MISMATCH, number, line)


recognises(
    S.FINETUNE_PURELY_QUANTIZED,
    "fine-tuning on purely quantized models",
    r"You cannot perform fine-tuning on purely quantized models",
)


# peft's LoRA layers and the bitsandbytes layers of another release: a keyword the layer no longer takes, an attribute
# it does not have (markdown may eat the underscores of __init__).
recognises(
    S.PEFT_BNB_API_MISMATCH,
    ("loaded_in_", "bit' object has no attribute", "bitLt' object has no attribute"),
    rf"Linear\.(?:__)?init(?:__)?\(\) got an unexpected keyword argument\s*{Q}loaded_in_(?P<bits>4|8)bit{Q}",
    r"'Linear(?:4bit|8bitLt)' object has no attribute "
    r"'(?P<attr>compute_dtype|quant_type|compress_statistics|has_fp16_weights)'",
)


# vLLM's config check: the bitsandbytes quantization and the bitsandbytes load format go together (a paste may lose the
# first letter of the message).
recognises(
    S.VLLM_BNB_LOAD_FORMAT_MISMATCH,
    "and QLoRA adapter only support",
    rf"itsAndBytes load format and QLoRA adapter only support {Q}bitsandbytes{Q} quantization",
    rf"itsAndBytes quantization and QLoRA adapter only support {Q}bitsandbytes{Q} load format",
)


# vLLM's bitsandbytes loader and a model class without a bitsandbytes weight mapping in that release.
recognises(
    S.VLLM_MODEL_LACKS_BNB,
    "does not support BitsAndBytes quantization",
    r"Model (?P<model>\w{1,100}) does not support BitsAndBytes quantization",
)


# transformers' checkpoint sharding sizing a string of the state dict (the 8-bit weight_format) as a tensor.
recognises(
    S.STATE_DICT_STR_NUMEL,
    "numel",
    rf"{Q}str{Q} object has no attribute {Q}numel{Q}",
)


# transformers 4.38.0-4.38.2's bitsandbytes quantizers indexing module._parameters with every checkpoint key: a buffer
# (a rotary embedding's inv_freq) raises KeyError; the traceback's source line is the quantizer's own.
recognises(
    S.QUANTIZER_BUFFER_KEYERROR,
    ("inv_freq", "_parameters[tensor_name], bnb.nn."),
    r"KeyError: ['\"](?P<buffer>(?:[\w.]{0,100}\.)?inv_freq)['\"]",
    r"isinstance\(module\._parameters\[tensor_name\], bnb\.nn\.(?:Params4bit|Int8Params)\)",
)


# LLaMA-Factory's export refusing to merge adapters into a quantized base (a QLoRA run's 4-bit model, a GPTQ one).
recognises(
    S.MERGE_INTO_QUANTIZED_REFUSED,
    "Cannot merge adapters",
    r"Cannot merge adapters to a quantized model",
)


# A uint8 tensor where a float one is expected in a convolution or a layer (``Input type (torch.cuda.ByteTensor) and
# weight type (CUDABFloat16Type) should be the same``): under a 4-bit load, a packed weight or its dtype (remote model
# code casting its input to a layer's weight.dtype);
# BNB574 names it only under a 4-bit load (raw uint8 images raise it too).
recognises(
    S.UINT8_INPUT_TYPE_MISMATCH,
    "ByteTensor",
    r"Input type \((?:torch\.)?(?:cuda\.)?ByteTensor\) and weight type \(\S{1,60}\) should be the same",
    r"Input type \(\S{1,60}\) and weight type \((?:torch\.)?(?:cuda\.)?ByteTensor\) should be the same",
)
recognises(
    S.KBIT_LOAD_CONTEXT,
    ("load_in_4bit", "bnb-4bit", "BitsAndBytesConfig", "bnb_4bit", "Linear4bit"),
    r"load_in_4bit\s{0,4}=\s{0,4}True|bnb-4bit|BitsAndBytesConfig\(|bnb_4bit_\w{1,40}|\bLinear4bit\b",
    up_to=2,
)
# A bitsandbytes checkpoint given to a GGUF converter: llama.cpp's convert_hf_to_gguf.py finds the quantization
# state's tensors (absmax, quant_map, ...), Ollama's importer the packed weights' U8 type.
recognises(
    S.BNB_CHECKPOINT_TO_GGUF,
    ("Can not map tensor", "unknown data type: U8"),
    r"Can not map tensor '[\w.]{1,200}\.(?:absmax|quant_map|nested_absmax|nested_quant_map|SCB|"
    r"quant_state\.bitsandbytes__(?:nf4|fp4))'",
    r"[Ee]rror: unknown data type: U8\b",
)


# vLLM's bitsandbytes quantizer refusing the environment: "Please install bitsandbytes>=X via `pip install ...` to use
# bitsandbytes quantizer." (missing), "bitsandbytes version is wrong. Please install bitsandbytes>=X." (too old).
recognises(
    S.VLLM_BNB_MINIMUM,
    ("to use bitsandbytes quantizer", "bitsandbytes version is wrong"),
    r"Please install bitsandbytes>=(?P<minimum>\d{1,3}\.\d{1,3}(?:\.\d{1,3})?) via .{0,60}"
    r"to use bitsandbytes quantizer",
    r"bitsandbytes version is wrong\. Please install bitsandbytes>=(?P<minimum2>\d{1,3}\.\d{1,3}(?:\.\d{1,3})?)",
)


# accelerate placing a parameter that was never loaded (still on the meta device).
recognises(
    S.META_DEVICE_WEIGHT_NEEDS_VALUE,
    "is on the meta device",
    r"(?P<tensor>[\w.]{1,100}) is on the meta device, we need a `?value`? to put in on (?P<device>[\w:]{1,20})",
)


# A bitsandbytes 4-bit layer whose weight is a plain Parameter or DTensor, not a Params4bit (issue 24): whatever reads
# its quantization attributes (peft wrapping the layer) fails.
recognises(
    S.PARAMS4BIT_DEGRADED_TO_PARAMETER,
    "object has no attribute",
    r"'(?P<kind>Parameter|DTensor)' object has no attribute '(?P<attr>compress_statistics|quant_type)'",
)


# transformers 4.49's multi-backend check calling discard() on bitsandbytes' frozenset of devices (issue 24): the
# exception is Python's, so alone it counts only next to bitsandbytes (the rule asks); the source line transformers
# prints, or a title saying it alters a frozenset in that check, are its own.
recognises(
    S.BNB_MULTIBACKEND_PREVIEW_TRANSFORMERS_MISMATCH,
    ("frozenset", "available_devices.discard"),
    rf"{Q}frozenset{Q} object has no attribute {Q}discard{Q}",
    r"available_devices\.discard\(",
    r"alter (?:a )?frozenset in \W?_validate_bnb_multi_backend_availability",
)
