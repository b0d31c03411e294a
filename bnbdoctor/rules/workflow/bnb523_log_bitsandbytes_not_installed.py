"""BNB523 log-bitsandbytes-not-installed: passes when the log shows no program finding bitsandbytes missing from its own Python."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB

#: What shows where the running interpreter looks for bitsandbytes' metadata.
METADATA_CHECK = "python -c \"import importlib.metadata as m, sys; print(sys.executable, m.version('bitsandbytes'))\""


@rule(
    Severity.ERROR,
    "The log shows no program finding bitsandbytes missing from its own Python",
    needs=("log",),
    covers=("bitsandbytes_not_installed",),
    references=(
        "https://github.com/Lightricks/ComfyUI-LTXVideo/issues/354",
        "https://github.com/Comfy-Org/ComfyUI/issues/7756",
        "https://github.com/gpustack/gpustack/issues/1079",
    ),
    stands_in_for=("BNB203",),
    confirm=(METADATA_CHECK,),
)
def bitsandbytes_not_installed(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the messages a program prints when the Python it runs in has no bitsandbytes:

    - `importlib.metadata.PackageNotFoundError: No package metadata was found for bitsandbytes`, from the version
      check of transformers and diffusers (ComfyUI nodes print it after `!!! Exception during processing !!!`);
    - vLLM's `Please install bitsandbytes>=X via pip install bitsandbytes>=X to use bitsandbytes quantizer.`, which it
      raises when `import bitsandbytes` fails (or finds a release older than X).

    It is the log twin of [BNB203](BNB203.md): when the log also shows `No module named 'bitsandbytes'`, BNB203's
    finding is kept and these lines are added to it.

    ## Why it matters

    The message looks like a bitsandbytes bug, but nothing of bitsandbytes ran: the interpreter that runs the
    application has no bitsandbytes distribution. Applications with their own Python are where it happens: ComfyUI
    portable's `python_embeded`, a serving engine in a pipx or Docker venv, a vendor image. `pip install` in another
    shell installed it into a different Python. A bitsandbytes folder copied without its `.dist-info` gives the same
    message, since transformers reads the version from the metadata pip writes.

    ## How to fix

    Install bitsandbytes with the interpreter that runs the application, then check it there:

    ```bash
    /path/to/that/python -m pip install -U bitsandbytes
    /path/to/that/python -m bitsandbytes
    ```

    ComfyUI portable on Windows: `python_embeded\\python.exe -m pip install -U bitsandbytes`; an application installed
    with pipx: `pipx inject <app> bitsandbytes`. Point bnbdoctor at that interpreter with `bnbdoctor --python`.
    """
    if not log.seen(facts, S.BNB_METADATA_NOT_FOUND, S.BNB_INSTALL_REQUIRED):
        return None
    vllm = log.first(facts, S.BNB_INSTALL_REQUIRED)
    missing = log.seen(facts, S.BNB_METADATA_NOT_FOUND, S.BNB_NOT_INSTALLED)
    if vllm is not None and not missing:
        found = re.search(r">=\s*(\d+(?:\.\d+){1,2})", vllm.text)
        minimum = found.group(1) if found else None
        title = "The serving engine could not import bitsandbytes" + (f" {minimum} or newer" if minimum else "")
        why = (
            "vLLM's bitsandbytes quantizer imports bitsandbytes when the model is loaded and raises this message "
            "when the import fails or finds an older release; the log does not show which. It runs in the "
            "engine's own environment (a pipx or Docker venv), which does not ship bitsandbytes."
        )
    else:
        title = "bitsandbytes is not installed in the Python that runs this program"
        why = (
            "The program looked bitsandbytes up in the interpreter it runs in (transformers and diffusers read its "
            "version from the installed metadata) and found none: bitsandbytes was installed into another Python "
            "than the application's own (ComfyUI portable's python_embeded, a pipx or Docker venv), or its folder "
            "was copied without the .dist-info pip writes."
        )
    return Hit(
        title=title,
        explanation=why + " Nothing of bitsandbytes ran, so no bitsandbytes error is to blame.",
        evidence=log.line_evidence(facts, S.BNB_METADATA_NOT_FOUND, S.BNB_INSTALL_REQUIRED, S.BNB_NOT_INSTALLED),
        remediation=Remediation(
            "Install bitsandbytes with the interpreter that runs the application (its own python -m pip), then run "
            "python -m bitsandbytes with it.",
            ["pip install -U bitsandbytes", PYTHON_M_BNB],
        ),
    )
