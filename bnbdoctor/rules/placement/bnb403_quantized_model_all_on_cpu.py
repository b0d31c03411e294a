"""BNB403 quantized-model-all-on-cpu: passes when device_map puts the quantized model on a GPU, not wholly on the CPU."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity
from bnbdoctor.fit_protocol import VERDICT_ALL_CPU
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.placement._shared import _VERDICT_TEXT, _fit, _gpu_rows, _passing, _quant_name, _remedy_text
from bnbdoctor.units import human


@rule(
    Severity.WARNING,
    "device_map puts the quantized model on a GPU, not wholly on the CPU",
    needs=("fit",),
    covers=("dispatch_cpu_disk_valueerror",),
)
def check_all_cpu(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `fit` facts and reports one finding when the predicted device map puts the whole model on the CPU
    (`{"": "cpu"}`). This happens when not even the first module fits the GPU budget: the packer moves straight to the
    CPU.

    ## Why it matters

    transformers raises the dispatch `ValueError` only for a map that mixes GPUs with `cpu` or `disk`. A map that is
    entirely `cpu` passes its check, so the load succeeds without a word and the model runs on bitsandbytes' CPU
    backend, far slower than on a GPU. The same happens when CUDA is not visible to torch at all.

    ## How to fix

    - Give the GPU more memory, or use more GPUs, as the finding says.
    - If a GPU is present but not used, check that torch sees it: run `bnbdoctor` (without `fit`).

    [bnbdoctor fit](../fit.md) explains how the placement is computed.

    ## Further reading

    - https://huggingface.co/docs/transformers/main/en/main_classes/quantization#offload-between-cpu-and-gpu
    """
    fit = _fit(facts)
    if fit.verdict != VERDICT_ALL_CPU:
        return None
    gpu = next((d for d in fit.devices if d.device.isdigit()), None)
    why = (
        f" Not even the first module fits GPU {gpu.device}: {gpu.skipped_at} needs "
        f"{human(gpu.skipped_atom_bytes)}, {human(gpu.remaining_bytes)} remained."
        if gpu and gpu.skipped_at
        else ""
    )
    return Hit(
        title=f"from_pretrained will not raise, but it puts the whole {_quant_name(fit)} model on the CPU",
        explanation=(
            "transformers raises the dispatch ValueError only when a map mixes GPUs with cpu or disk. A "
            "map that is entirely {'': 'cpu'} passes its check and the model runs on bitsandbytes' CPU "
            "backend, far slower than on a GPU." + why
        ),
        evidence=[Evidence("verdict", _VERDICT_TEXT[VERDICT_ALL_CPU], "fit.verdict"), *_gpu_rows(fit)],
        remediation=Remediation(_remedy_text(_passing(fit)) or "Use a GPU with more memory, or a smaller model."),
    )
