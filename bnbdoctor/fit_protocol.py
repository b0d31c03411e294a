"""The vocabulary both sides of ``bnbdoctor fit`` use: the engine in the patient interpreter, and bnbdoctor.

The fit engine (``bnbdoctor/fit/engine_parts/``) runs in the patient's Python and answers with one
``MARKER`` line of JSON; bnbdoctor (``bnbdoctor/fit/``) builds its request, reads the answer into
:class:`~bnbdoctor.facts.FitFacts`, and the placement rules (``bnbdoctor/rules/placement.py``) read
those. The strings they exchange have their one home here: the marker and script version, the
request's choices, the engine's error kinds, verdicts, raise sites and remedy kinds, and the
values bnbdoctor derives from them (remedy statuses, engine kinds).

This module is the first part of the engine script (see ``bnbdoctor/fit/script_assembly.py``), so
it holds plain constants only: no imports, and nothing newer than Python 3.7 (the script must
still answer "transformers too old" on an old interpreter). It lives outside ``bnbdoctor.fit`` so
that the rules can import it without importing the fit package.
"""

from __future__ import annotations

# -- the wire -------------------------------------------------------------------------------------

#: Prefix of the engine's one answer line on stdout; the JSON object follows on the same line.
MARKER = "@@BNBDOCTOR-FIT@@"
#: ``script_version`` of the answer: the shape of the JSON the engine writes.
SCRIPT_VERSION = 1
#: transformers releases whose from_pretrained pipeline the engine replicates: [MIN, BELOW) as
#: (major, minor); knowledge/transformers.py names the same range for the rules.
SUPPORTED_TRANSFORMERS_MIN = (5, 12)
SUPPORTED_TRANSFORMERS_BELOW = (6, 0)

# -- the request's choices -------------------------------------------------------------------------

QUANT_4BIT = "4bit"
QUANT_8BIT = "8bit"
#: bitsandbytes quantizations (``--quant``).
QUANTS = (QUANT_4BIT, QUANT_8BIT)
QUANT_TYPE_NF4 = "nf4"
QUANT_TYPE_FP4 = "fp4"
#: ``bnb_4bit_quant_type`` values (``--quant-type``).
QUANT_TYPES = (QUANT_TYPE_NF4, QUANT_TYPE_FP4)
DTYPE_AUTO = "auto"
#: ``dtype=`` values for from_pretrained (``--dtype``).
DTYPES = (DTYPE_AUTO, "bfloat16", "float16", "float32")
DEVICE_MAP_AUTO = "auto"
DEVICE_MAP_SEQUENTIAL = "sequential"
#: The device_map strings from_pretrained computes a placement for.
DEVICE_MAPS = (DEVICE_MAP_AUTO, "balanced", "balanced_low_0", DEVICE_MAP_SEQUENTIAL)
#: The device_map strings that go through get_balanced_memory (all but sequential).
BALANCED_MAPS = (DEVICE_MAP_AUTO, "balanced", "balanced_low_0")

# -- sizes both sides count alike ----------------------------------------------------------------

#: Quantization state that transformers does not count, in bytes per 4-bit weight: NF4/FP4 absmax
#: (fp32 per 64 weights) and, with double quant, 8-bit absmax plus one fp32 per 256 blocks (measured, bnb 0.50.2).
QUANT_STATE_4BIT = 0.0625
QUANT_STATE_4BIT_DOUBLE = 0.0159
#: How many of the largest unquantized tensors an answer lists.
LARGEST_TENSORS = 8

# -- why the engine gave no placement (``error_kind``) ---------------------------------------------

ERROR_NO_TORCH = "no_torch"
ERROR_NO_TRANSFORMERS = "no_transformers"
ERROR_NO_ACCELERATE = "no_accelerate"
#: transformers outside the releases the engine replicates, or lacking a function it calls.
ERROR_UNSUPPORTED_TRANSFORMERS = "unsupported_transformers"
ERROR_REMOTE_CODE = "remote_code"
ERROR_UNKNOWN_MODEL_TYPE = "unknown_model_type"
ERROR_UNKNOWN_ARCHITECTURE = "unknown_architecture"
ERROR_CONFIG = "config_error"
#: Anything else the engine raised (the answer carries the traceback).
ERROR_ENGINE_FAILED = "engine_failed"
#: Set by bnbdoctor: the subprocess printed no answer (crashed, timed out, a SyntaxError on an old Python).
ERROR_RUN_FAILED = "run_failed"
#: Errors that mean the input is wrong, not the engine: exit 2.
INPUT_ERRORS = (ERROR_UNKNOWN_MODEL_TYPE, ERROR_UNKNOWN_ARCHITECTURE, ERROR_REMOTE_CODE, ERROR_CONFIG)

# -- bitsandbytes as the engine found it (``bnb_mode``) ---------------------------------------------

BNB_REAL = "real"
BNB_STANDIN = "standin"

# -- verdicts --------------------------------------------------------------------------------------

#: Every module on a GPU.
VERDICT_FITS = "fits"
#: from_pretrained raises "Some modules are dispatched on the CPU or the disk".
VERDICT_RAISES = "raises"
#: No error, but the whole model on the CPU.
VERDICT_ALL_CPU = "all_cpu"
#: No error: modules offloaded to cpu/disk with llm_int8_enable_fp32_cpu_offload.
VERDICT_FP32_OFFLOAD = "fp32_offload"
#: Set by bnbdoctor's approximate mode (no device map computed).
VERDICT_LIKELY_FITS = "likely_fits"
VERDICT_LIKELY_RAISES = "likely_raises"
#: Set by bnbdoctor: the sizes could not be read.
VERDICT_UNKNOWN = "unknown"
#: The ``verdict`` of a remedy whose simulation raised.
VERDICT_ERROR = "error"

#: Where from_pretrained raises the dispatch ValueError (``raise_site``).
RAISE_SITE_GET_HF_QUANTIZER = "get_hf_quantizer"  # a dict device_map with cpu/disk entries
RAISE_SITE_GET_DEVICE_MAP = "_get_device_map"  # a string device_map whose computed map has cpu/disk entries

# -- remedies ---------------------------------------------------------------------------------------

REMEDY_SEQUENTIAL = "sequential"
REMEDY_MAX_MEMORY = "max_memory"
REMEDY_EXPLICIT_MAP = "explicit_map"
#: Set by bnbdoctor: a newer transformers re-run in the patient interpreter.
REMEDY_UPGRADE_TRANSFORMERS = "upgrade_transformers"
REMEDY_QUANT_4BIT = "quant_4bit"
REMEDY_FP32_OFFLOAD = "fp32_offload"
REMEDY_MIN_GPU_MEMORY = "min_gpu_memory"
REMEDY_MORE_GPUS = "more_gpus"
#: Remedy kinds in display order: changes to the call first, then configuration, then hardware.
REMEDY_ORDER = (
    REMEDY_SEQUENTIAL,
    REMEDY_MAX_MEMORY,
    REMEDY_EXPLICIT_MAP,
    REMEDY_UPGRADE_TRANSFORMERS,
    REMEDY_QUANT_4BIT,
    REMEDY_FP32_OFFLOAD,
    REMEDY_MIN_GPU_MEMORY,
    REMEDY_MORE_GPUS,
)
#: Remedies that change only the from_pretrained call, not the hardware or the quantization.
SAME_HARDWARE_REMEDIES = (REMEDY_SEQUENTIAL, REMEDY_MAX_MEMORY, REMEDY_UPGRADE_TRANSFORMERS)
#: Where an explicit_map remedy's map comes from (``origin``): a passing remedy's kind, or these two.
ORIGIN_MAX_MEMORY_SEQUENTIAL = "max_memory+sequential"
ORIGIN_FULL_BUDGET = "full_budget"  # packed at 100% of the given memory, without transformers' 10% margin

#: Set by bnbdoctor (``FitRemedy.status``): the simulated verdict is the one the remedy promises, or not.
STATUS_PASSES = "passes"
STATUS_FAILS = "fails"
STATUS_UNVERIFIED = "unverified"  # upgrade_transformers with no newer transformers to run
STATUS_ERROR = "error"

# -- who computed the verdict (``FitFacts.engine``, set by bnbdoctor) ------------------------------

ENGINE_TRANSFORMERS = "transformers"
ENGINE_STANDIN = "transformers+standin"
ENGINE_APPROXIMATE = "approximate"
