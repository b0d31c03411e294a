"""BNB408 fit-engine-degraded: passes when the placement was computed by the installed transformers with bitsandbytes itself."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity
from bnbdoctor.fit_protocol import ENGINE_APPROXIMATE, ENGINE_TRANSFORMERS
from bnbdoctor.knowledge.transformers import FIT_ENGINE_TRANSFORMERS
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.placement._shared import _VERDICT_TEXT, _fit


@rule(
    Severity.INFO,
    "The placement was computed by the installed transformers with bitsandbytes itself",
    needs=("fit",),
)
def check_engine(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `fit` facts and reports one finding when the placement was not computed by the installed
    transformers with the real bitsandbytes:

    - **approximate mode**: torch, transformers or accelerate cannot be imported in the patient interpreter, or
      transformers is outside the range the engine replicates ({{ transformers.FIT_ENGINE_TRANSFORMERS.first_text }} to {{ transformers.FIT_ENGINE_TRANSFORMERS.last_text }}). The sizes then come from the
      `*.safetensors` headers (or the config) by tensor name, the verdict compares totals with the GPU budgets after
      x0.9 (`likely_fits` / `likely_raises`), and no device map or remedy is computed;
    - **stand-in mode**: bitsandbytes is missing or fails to import. A stand-in module provides `Linear4bit` and
      `Linear8bitLt` as plain `nn.Linear` subclasses, so transformers' own module selection and placement run unchanged.
      The placement is still exact (the tests compare it with real bitsandbytes), but the real load needs a working
      bitsandbytes.

    ## Why it matters

    The approximate verdict can be wrong near the limit: it does not apply the balanced caps, the GPU 0 reservation or
    the packing order, which decide most borderline cases (BNB402). The stand-in verdict is exact, but a broken
    bitsandbytes will fail the real load for another reason first.

    ## How to fix

    - Approximate mode: install torch, transformers ({{ transformers.FIT_ENGINE_TRANSFORMERS.first_text }} or newer) and accelerate in the interpreter that loads the
      model, or point `--python` at one that has them.
    - Stand-in mode: run `bnbdoctor` (without `fit`) to find out why bitsandbytes does not import.

      ```bash
      bnbdoctor
      ```

    [bnbdoctor fit](../fit.md) explains how the placement is computed.

    ## Further reading

    - https://huggingface.co/docs/transformers/main/en/quantization/bitsandbytes
    - https://huggingface.co/docs/bitsandbytes/main/en/installation
    """
    fit = _fit(facts)
    if fit.engine == ENGINE_TRANSFORMERS:
        return None
    if fit.engine == ENGINE_APPROXIMATE:
        return Hit(
            title=f"Approximate only: {_VERDICT_TEXT.get(fit.verdict, fit.verdict)}",
            explanation=(
                f"{fit.engine_note}. So the verdict compares totals, sized from tensor names, with the "
                "GPU budgets after from_pretrained's x0.9; it is not the device map from_pretrained would "
                "compute, and no remedy was simulated."
            ),
            evidence=[Evidence("engine", fit.engine_note or ENGINE_APPROXIMATE, "fit.engine_note")],
            remediation=Remediation(
                f"Install torch, transformers ({FIT_ENGINE_TRANSFORMERS.first_text} or newer) and "
                "accelerate in the interpreter "
                "that loads the model, or point --python at one that has them."
            ),
        )
    return Hit(
        title="bitsandbytes could not be imported; a stand-in selected the modules to quantize",
        explanation=(
            f"{fit.engine_note}. The placement is still transformers' own: the stand-in only provides "
            "bitsandbytes' Linear4bit/Linear8bitLt classes so that transformers' module selection and sizes "
            "run unchanged. The real load needs a working bitsandbytes."
        ),
        evidence=[Evidence("engine", fit.engine_note or fit.engine, "fit.engine_note")],
        remediation=Remediation(
            "Run `bnbdoctor` (without `fit`) to find out why bitsandbytes does not import.", ["bnbdoctor"]
        ),
    )
