"""The BNB6xx rules: bitsandbytes mistakes in the user's code, read by ``bnbdoctor lint``.

They judge :class:`~bnbdoctor.facts.LintSite` facts (``needs=("lint",)``), which the static analysis
in :mod:`bnbdoctor.lint.analyze` recorded; the installed transformers/bitsandbytes, when the examined
interpreter was read, decide some severities (boundaries in ``knowledge/kbit.py``). Each finding's
evidence is ``file:line:col`` (``file cell N:line:col`` in a notebook) and its fix is code.
"""

from __future__ import annotations

from bnbdoctor.facts import Facts, LintSite
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity
from bnbdoctor.knowledge.kbit import BNB_4BIT_MOVE, BNB_8BIT_MOVE, KBIT_KWARGS_REMOVED, LOAD_IN_4BIT_KWARG
from bnbdoctor.knowledge.ranges import full
from bnbdoctor.rules.base import rule

TRANSFORMERS_BNB = "https://huggingface.co/docs/transformers/quantization/bitsandbytes"
PEFT_MERGE = "https://huggingface.co/docs/peft/developer_guides/quantization"
BNB_FSDP = "https://huggingface.co/docs/bitsandbytes/main/en/fsdp_qlora"


def _sites(facts: Facts, kind: str) -> list[LintSite]:
    return [site for site in (facts.lint.sites if facts.lint else []) if site.kind == kind]


def _evidence(site: LintSite) -> list[Evidence]:
    return [Evidence(site.where, site.code, f"lint.sites[{site.kind}]")]


def _installed(facts: Facts, name: str) -> str | None:
    python = facts.python
    if python is None:
        return None
    if name == "bitsandbytes":
        return python.bitsandbytes.version if python.bitsandbytes.installed else None
    return python.packages.get(name)


def _code(*lines: str) -> str:
    return "\n".join(f"    {line}" for line in lines)


# ------------------------------------------------------------------------------------------ BNB601
@rule(
    "BNB601",
    "lint-merge-into-kbit-weights",
    Severity.WARNING,
    "No LoRA adapter is merged into 4-bit or 8-bit weights",
    needs=("lint",),
    covers=("peft_merge_lora_into_4bit_rounding_warning", "peft_merge_in_8bit_mode_valueerror_legacy"),
    references=(PEFT_MERGE,),
)
def merge_into_kbit(facts: Facts) -> list[Hit]:
    """## What it detects

    A model loaded with a 4-bit or 8-bit `BitsAndBytesConfig` (directly, through a variable or a
    `**kwargs` dict), wrapped by `PeftModel.from_pretrained` or `get_peft_model`, then merged with
    `merge_and_unload()` or `merge_adapter()`.

    ## Why it matters

    Merging adds the adapter's delta to weights that are then quantized again: most of a small delta
    is rounded away. PEFT warns "Merge lora module to 4-bit linear may get different generations due to
    rounding errors"; old PEFT refused the 8-bit merge outright. The saved model is permanently worse
    than base + adapter.

    ## How to fix

    Merge into a 16-bit copy of the base model, then quantize the merged model when you load it:

    ```python
    base = AutoModelForCausalLM.from_pretrained(BASE, torch_dtype=torch.bfloat16)
    model = PeftModel.from_pretrained(base, ADAPTER).merge_and_unload()
    model.save_pretrained("merged")
    ```
    """
    hits = []
    for site in _sites(facts, "merge"):
        detail = site.detail
        base = detail.get("base") or "BASE_MODEL"
        adapter = detail.get("adapter")
        where = [] if adapter else ['# the adapter folder: the one model.save_pretrained("ADAPTER_DIR") wrote']
        adapter = adapter or '"ADAPTER_DIR"'
        loader = detail.get("loader") or "AutoModelForCausalLM"
        fix = _code(
            *where,
            f"base16 = {loader}.from_pretrained({base}, torch_dtype=torch.bfloat16)",
            f"merged = PeftModel.from_pretrained(base16, {adapter}).merge_and_unload()",
            'merged.save_pretrained("merged")  # quantize it when you load it',
        )
        hits.append(
            Hit(
                title=f"{detail.get('model', 'model')}.{detail.get('method', 'merge_and_unload')}() merges a LoRA "
                f"adapter into {detail.get('bits', '4')}-bit weights",
                explanation=(
                    "The adapter's delta is added to quantized weights and rounded back to "
                    f"{detail.get('bits', '4')} bits: much of it is lost, and the merged model is permanently worse "
                    "than the base model with the adapter."
                ),
                evidence=_evidence(site),
                remediation=Remediation("Merge into a 16-bit copy of the base model instead:\n" + fix),
                covers=(
                    ["peft_merge_in_8bit_mode_valueerror_legacy"]
                    if detail.get("bits") == "8"
                    else ["peft_merge_lora_into_4bit_rounding_warning"]
                ),
            )
        )
    return hits


# ------------------------------------------------------------------------------------------ BNB602
@rule(
    "BNB602",
    "lint-load-in-kbit-keyword",
    Severity.WARNING,
    "No from_pretrained call passes a bare load_in_4bit=/load_in_8bit= keyword",
    needs=("lint",),
    covers=("transformers_load_in_kbit_kwarg_unsupported",),
    references=(TRANSFORMERS_BNB, "https://github.com/huggingface/transformers/pull/41287"),
)
def load_in_kbit_keyword(facts: Facts) -> list[Hit]:
    """## What it detects

    `from_pretrained(..., load_in_4bit=True)` or `load_in_8bit=True` instead of
    `quantization_config=BitsAndBytesConfig(...)`.

    ## Why it matters

    transformers 5 removed the bare keywords (PR #41287): the keyword reaches the model's `__init__`,
    which raises `TypeError: ... unexpected keyword argument 'load_in_4bit'`. It is an error when the
    examined interpreter has transformers 5 or newer, a warning otherwise.

    ## How to fix

    ```python
    model = AutoModelForCausalLM.from_pretrained(name, quantization_config=BitsAndBytesConfig(load_in_4bit=True))
    ```
    """
    transformers = _installed(facts, "transformers")
    removed = KBIT_KWARGS_REMOVED.contains(transformers)
    hits = []
    for site in _sites(facts, "kbit_kwarg"):
        kwarg = site.detail.get("kwarg", "load_in_4bit")
        installed = f" (transformers {transformers} is installed)" if transformers else ""
        hits.append(
            Hit(
                title=f"from_pretrained(..., {kwarg}=True): transformers {full(KBIT_KWARGS_REMOVED.first_text)}+ "
                f"removed this keyword{installed}",
                explanation=(
                    f"transformers {full(KBIT_KWARGS_REMOVED.first_text)} removed the bare load_in_4bit/load_in_8bit "
                    "keywords of from_pretrained in favour of quantization_config; there the call raises TypeError. "
                    f"quantization_config works on every transformers from {LOAD_IN_4BIT_KWARG.first_text} on."
                ),
                evidence=_evidence(site),
                remediation=Remediation(
                    f"Pass a BitsAndBytesConfig instead of {kwarg}=True:\n"
                    + _code(f"quantization_config=BitsAndBytesConfig({kwarg}=True)")
                ),
                severity=Severity.ERROR if removed else None,
            )
        )
    return hits


# ------------------------------------------------------------------------------------------ BNB603
@rule(
    "BNB603",
    "lint-fp32-offload-in-from-pretrained",
    Severity.ERROR,
    "llm_int8_enable_fp32_cpu_offload is given to BitsAndBytesConfig, not to from_pretrained",
    needs=("lint",),
    covers=("fp32_cpu_offload_kwarg_typeerror",),
    references=(TRANSFORMERS_BNB,),
)
def fp32_offload_misplaced(facts: Facts) -> list[Hit]:
    """## What it detects

    `llm_int8_enable_fp32_cpu_offload=` passed to `from_pretrained` (popular answers to the "Some
    modules are dispatched on the CPU or the disk" ValueError do exactly this).

    ## Why it matters

    It is a `BitsAndBytesConfig` field. Given to `from_pretrained` it reaches the model's `__init__`,
    which raises `TypeError: __init__() got an unexpected keyword argument`.

    ## How to fix

    ```python
    quantization_config=BitsAndBytesConfig(load_in_8bit=True, llm_int8_enable_fp32_cpu_offload=True)
    ```
    """
    return [
        Hit(
            title="llm_int8_enable_fp32_cpu_offload is passed to from_pretrained, not to BitsAndBytesConfig",
            explanation=(
                "from_pretrained does not know this keyword: it is passed on to the model's __init__, which raises "
                "TypeError. The option belongs to BitsAndBytesConfig."
            ),
            evidence=_evidence(site),
            remediation=Remediation(
                "Move it into the quantization config:\n"
                + _code(
                    "quantization_config=BitsAndBytesConfig(load_in_8bit=True, llm_int8_enable_fp32_cpu_offload=True)"
                )
            ),
        )
        for site in _sites(facts, "offload_kwarg")
    ]


# ------------------------------------------------------------------------------------------ BNB604
@rule(
    "BNB604",
    "lint-kbit-model-moved-or-cast",
    Severity.ERROR,
    "No 4-bit or 8-bit model is moved with .to()/.cuda() or cast with .half()/.float()",
    needs=("lint",),
    covers=("kbit_model_to_device_unsupported",),
    references=("https://github.com/huggingface/transformers/issues/38717", TRANSFORMERS_BNB),
)
def kbit_model_moved(facts: Facts) -> list[Hit]:
    """## What it detects

    `.to(...)`, `.cuda()`, `.half()`, `.float()` or `.bfloat16()` on a model loaded in 4 or 8 bits.

    ## Why it matters

    A dtype cast of a quantized model is refused with every release. A device move is refused for
    4-bit models with bitsandbytes before 0.43.2 and for 8-bit models before 0.48; with newer
    bitsandbytes it works, and no finding is reported when the examined interpreter has one.

    ## How to fix

    Place the model when loading it (`device_map=...`) and choose its dtype with `torch_dtype=` and
    `bnb_4bit_compute_dtype=`; drop the `.to()`/`.half()` call.
    """
    bnb = _installed(facts, "bitsandbytes")
    hits = []
    for site in _sites(facts, "move"):
        bits = site.detail.get("bits", "4")
        boundary = BNB_8BIT_MOVE if bits == "8" else BNB_4BIT_MOVE
        call = f"{site.detail.get('model', 'model')}.{site.detail.get('method', 'to')}({site.detail.get('args', '')})"
        if site.detail.get("cast") == "yes":
            title = f"{call} casts a {bits}-bit model: transformers refuses it with every release"
            why = "Quantized weights have their own storage dtype; a cast would destroy them, so transformers raises."
            severity: Severity | None = None
        elif bnb and boundary.contains(bnb):
            continue
        elif bnb:
            title = f"{call} moves a {bits}-bit model: refused with bitsandbytes {bnb} (needs {boundary.first_text}+)"
            why = f"transformers lets a {bits}-bit model move only with bitsandbytes {boundary.first_text} or newer."
            severity = None
        else:
            title = f"{call} moves a {bits}-bit model: refused unless bitsandbytes is {boundary.first_text} or newer"
            why = (
                f"transformers lets a {bits}-bit model move only with bitsandbytes {boundary.first_text} or newer; "
                "the installed release was not examined."
            )
            severity = Severity.WARNING
        hits.append(
            Hit(
                title=title,
                explanation=why + " device_map= places a quantized model where it is loaded.",
                evidence=_evidence(site),
                remediation=Remediation(
                    "Drop the call; place the model with device_map= (and choose dtypes with torch_dtype= and "
                    "bnb_4bit_compute_dtype=) in from_pretrained."
                ),
                severity=severity,
            )
        )
    return hits


# ------------------------------------------------------------------------------------------ BNB605
@rule(
    "BNB605",
    "lint-device-map-auto-under-ddp",
    Severity.WARNING,
    'No quantized model is loaded with device_map="auto" in a script launched as several processes',
    needs=("lint",),
    covers=("accelerate_kbit_model_on_other_device",),
    references=(TRANSFORMERS_BNB,),
)
def device_map_auto_ddp(facts: Facts) -> list[Hit]:
    """## What it detects

    `from_pretrained(..., quantization_config=..., device_map="auto")` in a script that shows it runs
    as several processes (torchrun, `accelerate launch`, `LOCAL_RANK`, `init_process_group`).

    ## Why it matters

    `"auto"` spreads every process's copy over all GPUs; under DDP each process must own its model on
    its own GPU. Training then fails with "You can't train a model that has been loaded in 8-bit or
    4-bit precision on a different device than the one you're training on".

    ## How to fix

    ```python
    device_map={"": int(os.environ.get("LOCAL_RANK", 0))}
    ```
    """
    return [
        Hit(
            title=f'device_map="auto" for a {site.detail.get("bits", "4")}-bit model in a multi-process script',
            explanation=(
                'Under torchrun/accelerate each process loads its own copy; "auto" spreads it over every GPU instead '
                "of the process's own, and training a quantized model across devices is refused."
            ),
            evidence=_evidence(site),
            remediation=Remediation(
                "Give each process its own GPU:\n" + _code('device_map={"": int(os.environ.get("LOCAL_RANK", 0))}')
            ),
        )
        for site in _sites(facts, "device_map_auto")
    ]


# ------------------------------------------------------------------------------------------ BNB606
@rule(
    "BNB606",
    "lint-4bit-compute-dtype-missing",
    Severity.WARNING,
    "Every 4-bit BitsAndBytesConfig loaded with a 16-bit torch_dtype sets bnb_4bit_compute_dtype",
    needs=("lint",),
    covers=("bnb_4bit_compute_dtype_fp32_slow_warning",),
    references=(TRANSFORMERS_BNB,),
)
def compute_dtype_missing(facts: Facts) -> list[Hit]:
    """## What it detects

    A 4-bit `BitsAndBytesConfig` without `bnb_4bit_compute_dtype`, used by a `from_pretrained` whose
    `torch_dtype` is float16 or bfloat16.

    ## Why it matters

    The compute dtype defaults to float32: every 4-bit layer dequantizes to fp32 and bitsandbytes
    warns "Input type into Linear4bit is torch.float16, but bnb_4bit_compute_dtype=torch.float32
    (default). This will lead to slow inference or training speed."

    ## How to fix

    ```python
    BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)
    ```
    """
    return [
        Hit(
            title=f"4-bit layers compute in float32 although torch_dtype is {site.detail.get('dtype', 'bfloat16')}",
            explanation=(
                "bnb_4bit_compute_dtype is not set, so it defaults to float32: each 4-bit matmul upcasts to fp32, "
                "which is slow and uses more memory."
            ),
            evidence=_evidence(site),
            remediation=Remediation(
                "Set the compute dtype in the config:\n"
                + _code(f"BitsAndBytesConfig(..., bnb_4bit_compute_dtype=torch.{site.detail.get('dtype', 'bfloat16')})")
            ),
        )
        for site in _sites(facts, "compute_dtype")
    ]


# ------------------------------------------------------------------------------------------ BNB607
@rule(
    "BNB607",
    "lint-4bit-quant-storage-missing-fsdp",
    Severity.ERROR,
    "Every 4-bit BitsAndBytesConfig in an FSDP script sets bnb_4bit_quant_storage",
    needs=("lint",),
    covers=("fsdp_kbit_integer_storage",),
    references=(BNB_FSDP,),
)
def quant_storage_missing(facts: Facts) -> list[Hit]:
    """## What it detects

    A 4-bit `BitsAndBytesConfig` without `bnb_4bit_quant_storage` in a script that uses FSDP.

    ## Why it matters

    4-bit weights are stored as uint8 by default; FSDP cannot flatten integer tensors together with
    the float ones ("Cannot flatten integer dtype tensors" / "Must flatten tensors with uniform dtype").

    ## How to fix

    ```python
    BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_storage=torch.bfloat16)
    ```
    """
    return [
        Hit(
            title="4-bit weights stored as uint8 in an FSDP script: set bnb_4bit_quant_storage",
            explanation=(
                "FSDP flattens each module's parameters into one tensor of one float dtype; 4-bit weights default to "
                "uint8 storage, which it cannot shard with the rest."
            ),
            evidence=_evidence(site),
            remediation=Remediation(
                "Store the 4-bit weights in the model's dtype:\n"
                + _code(f"BitsAndBytesConfig(..., bnb_4bit_quant_storage=torch.{site.detail.get('dtype', 'bfloat16')})")
            ),
        )
        for site in _sites(facts, "quant_storage")
    ]
