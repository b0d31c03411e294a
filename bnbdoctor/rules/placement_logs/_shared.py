"""What the placement_logs rules share: helpers and constants used by more than one of them."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.transformers import BIGGEST_LEAF_FIX
from bnbdoctor.rules import log_evidence as log

QUANTIZATION_DOCS = (
    "https://huggingface.co/docs/transformers/main/en/main_classes/quantization#offload-between-cpu-and-gpu"
)


#: The upgrade that has both under-packing fixes.
UPGRADE_TRANSFORMERS = f'pip install -U "transformers>={BIGGEST_LEAF_FIX.first}"'


VERSIONS_CHECK = 'python -c "import transformers, accelerate; print(transformers.__version__, accelerate.__version__)"'


def model_id(facts: Facts) -> str | None:
    """The model id passed to from_pretrained, when the log shows it literally (``org/name``, never ``./x``)."""
    for match in log.matches(facts, S.MODEL_ID):
        found = re.search(
            r"from_pretrained\(\s*(?:pretrained_model_name_or_path\s*=\s*)?['\"]([A-Za-z0-9][\w.-]*/[\w.-]+)['\"]",
            match.text,
        )
        if found and ".." not in found.group(1):
            return found.group(1)
    return None


def quant_bits(facts: Facts) -> str | None:
    for match in log.matches(facts, S.QUANTIZATION_CONFIG, S.DISPATCH_CPU_DISK_VALUEERROR):
        found = re.search(r"(?:load_in_|bnb_|quantizer_bnb_|Linear|matmul_)(4|8)bit", match.text)
        if found:
            return found.group(1)
    return None


def device_map_arg(facts: Facts) -> str | None:
    for match in log.matches(facts, S.DEVICE_MAP_ARGUMENT):
        found = re.search(r"device_map\s*=\s*['\"]?(auto|balanced_low_0|balanced|sequential|\{)", match.text)
        if found:
            return "a dict" if found.group(1) == "{" else found.group(1)
    return None


def fit_command(facts: Facts) -> list[str]:
    """``bnbdoctor fit`` for the model the log loads, as a command that runs as printed (fit finds an ``org/name``
    id in the local Hugging Face cache); none when the log does not name the model (see :func:`fit_advice`)."""
    found = model_id(facts)
    return [f"bnbdoctor fit {found}{_fit_flags(facts)}"] if found else []


def fit_advice(facts: Facts) -> str:
    """A sentence for the fix when the log does not name the model: there is then no command to print."""
    if model_id(facts):
        return ""
    return (
        " To predict the placement offline, without loading weights, run bnbdoctor fit with the model's id or "
        f"folder (what from_pretrained was given) and{_fit_flags(facts)}."
    )


def _fit_flags(facts: Facts) -> str:
    dmap = device_map_arg(facts)
    extra = f" --device-map {dmap}" if dmap in ("auto", "balanced", "balanced_low_0", "sequential") else ""
    return f" --quant {quant_bits(facts) or '4'}bit{extra}"
