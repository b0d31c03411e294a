"""BNB529 log-params4bit-lacks-quant-storage: passes when the log shows no 4-bit loader reading a quant_storage the installed bitsandbytes lacks."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.features import BNB_QUANT_STORAGE
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB

#: What shows whether the running interpreter's Params4bit has quant_storage.
HAS_QUANT_STORAGE = "python -c \"import bitsandbytes as b; print(b.__version__, 'quant_storage' in b.nn.Params4bit.__new__.__code__.co_varnames)\""


@rule(
    Severity.ERROR,
    "The log shows no 4-bit loader reading a quant_storage the installed bitsandbytes lacks",
    needs=("log",),
    covers=("params4bit_lacks_quant_storage_old_bnb",),
    references=(
        "https://github.com/Comfy-Org/ComfyUI/issues/4307",
        "https://github.com/Comfy-Org/ComfyUI/issues/4330",
    ),
    confirm=(HAS_QUANT_STORAGE,),
)
def params4bit_lacks_quant_storage(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `AttributeError: 'ForgeParams4bit' object has no attribute 'quant_storage'` (any subclass of
    `Params4bit`), which the Flux NF4 loaders of Forge and ComfyUI (the `ComfyUI_bitsandbytes_NF4` node) raise when
    they load or move an NF4 checkpoint.

    The installed release is also a machine fact: bitsandbytes older than
    {{ features.BNB_QUANT_STORAGE.first_text }} in the application's Python is what the message means.

    ## Why it matters

    Those loaders subclass bitsandbytes' `Params4bit` and read its `quant_storage` attribute, which `Params4bit`
    has only from bitsandbytes {{ features.BNB_QUANT_STORAGE.first_text }} (it came with FSDP-QLoRA). The NF4 node
    declares `bitsandbytes>={{ features.BNB_QUANT_STORAGE.first_text }}`, but an older bitsandbytes already in
    ComfyUI's Python (portable's `python_embeded`) satisfies nothing and is not upgraded by installing the node.

    ## How to fix

    Upgrade bitsandbytes with the interpreter that runs ComfyUI or Forge, then restart it:

    ```bash
    python -m pip install -U bitsandbytes
    python -m bitsandbytes
    ```

    ComfyUI portable on Windows: `python_embeded\\python.exe -m pip install -U bitsandbytes`.
    """
    match = log.first(facts, S.PARAMS4BIT_NO_QUANT_STORAGE)
    if match is None:
        return None
    found = re.search(r"'(\w*Params4bit)'", match.text)
    cls = found.group(1) if found else "Params4bit"
    first = BNB_QUANT_STORAGE.first_text
    return Hit(
        title=f"bitsandbytes is older than {first}: {cls} has no quant_storage",
        explanation=(
            f"The NF4 loader subclasses bitsandbytes' Params4bit ({cls}) and reads its quant_storage attribute, which "
            f"Params4bit has only from bitsandbytes {first}. The bitsandbytes in the application's Python is older."
        ),
        evidence=log.line_evidence(facts, S.PARAMS4BIT_NO_QUANT_STORAGE, S.BNB_VERSION, limit=2),
        remediation=Remediation(
            f"Upgrade bitsandbytes to {first} or newer with the interpreter that runs ComfyUI or Forge (portable: "
            "python_embeded\\python.exe -m pip install -U bitsandbytes), then restart it.",
            [f'pip install -U "bitsandbytes{BNB_QUANT_STORAGE.pip_spec()}"', PYTHON_M_BNB],
        ),
    )
