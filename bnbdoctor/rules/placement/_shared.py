"""What the placement rules share: helpers and constants used by more than one of them."""

from __future__ import annotations

from bnbdoctor.facts import Facts, FitFacts, FitRemedy
from bnbdoctor.findings import Evidence, Skip
from bnbdoctor.fit_protocol import (
    QUANT_8BIT,
    SAME_HARDWARE_REMEDIES,
    STATUS_PASSES,
    VERDICT_ALL_CPU,
    VERDICT_FITS,
    VERDICT_FP32_OFFLOAD,
    VERDICT_LIKELY_FITS,
    VERDICT_LIKELY_RAISES,
    VERDICT_RAISES,
    VERDICT_UNKNOWN,
)
from bnbdoctor.units import human

_TRANSFORMERS_QUANT_DOCS = (
    "https://huggingface.co/docs/transformers/main/en/main_classes/quantization#offload-between-cpu-and-gpu"
)


_ISSUE_46823 = "https://github.com/huggingface/transformers/issues/46823"


_PR_47203 = "https://github.com/huggingface/transformers/pull/47203"


_PR_47211 = "https://github.com/huggingface/transformers/pull/47211"


#: Remedies that change only the from_pretrained call, not the hardware or the quantization.
_SAME_HARDWARE = SAME_HARDWARE_REMEDIES


_VERDICT_TEXT = {
    VERDICT_FITS: "fits on the GPUs",
    VERDICT_RAISES: "raises ValueError",
    VERDICT_ALL_CPU: "no error, but the whole model is on the CPU",
    VERDICT_FP32_OFFLOAD: "no error, modules offloaded to the CPU (llm_int8_enable_fp32_cpu_offload)",
    VERDICT_LIKELY_FITS: "probably fits (approximate)",
    VERDICT_LIKELY_RAISES: "probably raises ValueError (approximate)",
    VERDICT_UNKNOWN: "unknown",
}


def _fit(facts: Facts) -> FitFacts:
    if facts.fit is None:
        raise Skip("bnbdoctor fit did not run")
    return facts.fit


def _quant_name(fit: FitFacts) -> str:
    return "8-bit" if fit.quant == QUANT_8BIT else "4-bit"


def _passing(fit: FitFacts, kinds: tuple[str, ...] | None = None) -> list[FitRemedy]:
    return [r for r in fit.remedies if r.status == STATUS_PASSES and (kinds is None or r.kind in kinds)]


def _remedy_text(remedies: list[FitRemedy], limit: int = 4) -> str:
    if not remedies:
        return ""
    items = [f"({i}) {r.title}" for i, r in enumerate(remedies[:limit], 1)]
    more = f"; {len(remedies) - limit} more in the fit report" if len(remedies) > limit else ""
    return "Simulated and passing: " + "; ".join(items) + more + ". The code for each is in the fit report."


def _gpu_rows(fit: FitFacts) -> list[Evidence]:
    rows = []
    for device in fit.devices:
        label = f"GPU {device.device}" if device.device.isdigit() else device.device
        parts = []
        if device.given_bytes is not None:
            parts.append(f"given {human(device.given_bytes)}")
        if device.balanced_cap_bytes is not None and device.balanced_cap_bytes != device.given_bytes:
            parts.append(f"balanced cap {human(device.balanced_cap_bytes)}")
        if device.budget_bytes is not None:
            parts.append(f"x0.9 {human(device.budget_bytes)}")
        if device.reserved_bytes:
            parts.append(f"reserved {human(device.reserved_bytes)}")
        parts.append(f"used {human(device.used_bytes)}")
        if device.quant_state_bytes and device.device.isdigit():
            parts.append(f"+ quantization state {human(device.quant_state_bytes)}")
        if device.skipped_at:
            parts.append(
                f"left at {device.skipped_at} ({human(device.skipped_atom_bytes)} > "
                f"{human(device.remaining_bytes)} remaining)"
            )
        rows.append(Evidence(label, ", ".join(parts), f"fit.devices[{fit.devices.index(device)}]"))
    return rows


def _offloaded(fit: FitFacts) -> int:
    return sum(d.used_bytes for d in fit.devices if d.device in ("cpu", "disk"))


def _first_skip(fit: FitFacts) -> str:
    for device in fit.devices:
        if device.device.isdigit() and device.skipped_at:
            label = f"GPU {device.device}"
            return (
                f"The packer left {label} at {device.skipped_at} ({human(device.skipped_atom_bytes)}), "
                f"which is larger than the {human(device.remaining_bytes)} that remained there"
                + (
                    f" after keeping {human(device.reserved_bytes)} free for the largest layer still to place"
                    if device.reserved_bytes
                    else ""
                )
                + "; it never goes back to a device it has left."
            )
    return ""


def _underpacked(fit: FitFacts) -> bool:
    return fit.verdict in (VERDICT_RAISES, VERDICT_ALL_CPU) and bool(_passing(fit, _SAME_HARDWARE))
