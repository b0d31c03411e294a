"""BNB570 comfy-nf4-node-incompatible: passes when the log shows no ComfyUI NF4 parameter lacking the module its .to() reads."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

VERSIONS = 'python -c "import torch, bitsandbytes; print(torch.__version__, bitsandbytes.__version__)"'

FINDING = log.LogFinding(
    (S.FORGE_PARAMS4BIT_NO_MODULE,),
    title="The ComfyUI NF4 node's 4-bit parameter lacks the layer reference its .to() reads",
    explanation="The ComfyUI_bitsandbytes_NF4 node (code from Forge) subclasses bitsandbytes' Params4bit as "
    "ForgeParams4bit; when ComfyUI moves the model, its .to() reads self.module, which this parameter does not have. "
    "The node, ComfyUI, torch and bitsandbytes installed together do not match; the threads do not say which one.",
    fix="Update the NF4 node, ComfyUI and bitsandbytes together (in the Python that runs ComfyUI), use a stable torch "
    "rather than a nightly; if it persists, load a Flux checkpoint ComfyUI supports without the node (fp8, GGUF).",
    commands=(VERSIONS,),
    also_quoted=(S.PACKAGE_VERSION, S.BNB_VERSION),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no ComfyUI NF4 parameter lacking the module its .to() reads",
    needs=("log",),
    covers=("comfy_nf4_node_incompatible",),
    references=(
        "https://github.com/comfyanonymous/ComfyUI_bitsandbytes_NF4/issues/12",
        "https://github.com/comfyanonymous/ComfyUI_bitsandbytes_NF4/issues/24",
    ),
    confirm=(VERSIONS,),
)
def comfy_nf4_node_incompatible(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `'ForgeParams4bit' object has no attribute 'module'` (ComfyUI prints it as `Error occurred when
    executing KSampler:` or `!!! Exception during processing !!!`), raised from the ComfyUI_bitsandbytes_NF4 node
    when ComfyUI loads the Flux model onto the GPU (`model_patcher.patch_model` → `model.to(device)`).

    `'ForgeParams4bit' object has no attribute 'quant_storage'` is another failure (a bitsandbytes older than
    {{ features.BNB_QUANT_STORAGE.first_text }}, BNB529).

    ## Why it matters

    The node copies Forge's NF4 code: `ForgeParams4bit` subclasses bitsandbytes' `Params4bit`, and its `.to()`
    rebuilds the parameter with `module=self.module` (the layer whose `quant_state` it keeps in step). A
    `ForgeParams4bit` without that attribute, made by a code path or a release the node was not written for, fails
    on the first move of the model. The threads have no maintainer answer: one reporter had already updated ComfyUI
    and bitsandbytes and ran a torch nightly, so the log alone cannot say which of the node, ComfyUI, torch and
    bitsandbytes is the odd one.

    ## How to fix

    Update the node, ComfyUI and bitsandbytes together, in the Python that runs ComfyUI:

    ```bash
    python_embeded\\python.exe -m pip install -U bitsandbytes
    ```

    (the portable build; `<venv python> -m pip ...` otherwise), prefer a stable torch to a nightly, and restart
    ComfyUI. If it persists, load a Flux checkpoint ComfyUI supports without the node (fp8, or GGUF with its
    node).
    """
    return FINDING.hit(facts)
