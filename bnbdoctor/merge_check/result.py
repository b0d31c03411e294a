"""What ``merge-check`` measured (plain dataclasses, JSON through :mod:`bnbdoctor.serde`), and its verdict in words.

``kept`` is the projection ⟨M - base_M, ΔW⟩ / ‖ΔW‖² of what a merge changed onto the update the adapter
trained; ``unmoved`` is the share of the adapted weights the merge left exactly where they were.
:func:`verdict` turns the overall figures into one sentence; :func:`workflow_script` is the merge that
keeps the update (16-bit base, then quantize once at load), with the user's own paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: The ways of merging, in report order, and what each one is.
WAYS = ("4bit", "16bit", "dequantized", "16bit_then_quantize")
WAY_TITLES = {
    "4bit": "(a) into the 4-bit model (merge_and_unload on a QLoRA model): Q(deq(Q(W)) + ΔW)",
    "16bit": "(b) into the 16-bit base, kept 16-bit: W + ΔW",
    "dequantized": "(c) into the dequantized 4-bit base, kept 16-bit: deq(Q(W)) + ΔW",
    "16bit_then_quantize": "(d) into the 16-bit base, then quantized once: Q(W + ΔW)",
}
#: The prefixes peft puts before a module path (``base_model.model.model.layers.0...``), left out where shown.
PEFT_PREFIXES = ("base_model.model.", "base_model.")
#: Below this share of the update kept, a way of merging is said to lose the adapter.
LOW_KEPT = 0.5


@dataclass
class WayResult:
    """One way of merging: the share of the update kept, and of the weights left unmoved."""

    kept: float | None = None
    unmoved: float | None = None


@dataclass
class LayerResult:
    """One adapted layer."""

    module: str
    base_weight: str | None = None
    shape: list[int] = field(default_factory=list)
    dtype: str | None = None
    delta_rel: float | None = None  # ‖ΔW‖ / ‖W‖
    ways: dict[str, WayResult] = field(default_factory=dict)
    seconds: float | None = None
    error: str | None = None


@dataclass
class MergeCheck:
    """The whole measurement of one adapter against its base."""

    adapter: str
    base: str
    base_dir: str
    base_ref: str  # how the workflow script loads the base: a Hub id, or the folder found
    python: str
    quant_type: str
    blocksize: int
    double_quant: bool
    rank: int | None = None
    alpha: float | None = None
    use_rslora: bool = False
    use_dora: bool = False
    fan_in_fan_out: bool = False
    base_bytes: int = 0  # the base's tensors, from its safetensors headers
    largest_tensor_bytes: int = 0
    adapter_bytes: int = 0
    scale: float | None = None
    versions: dict[str, str] = field(default_factory=dict)
    overall: dict[str, WayResult] = field(default_factory=dict)
    layers: list[LayerResult] = field(default_factory=list)
    engine_peak_rss_bytes: int | None = None
    timings: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    @property
    def merge_peak_bytes(self) -> int:
        """Memory the 16-bit merge needs: the whole base in its dtype, the adapter, one merged layer."""
        return self.base_bytes + self.adapter_bytes + self.largest_tensor_bytes


def short_module(module: str) -> str:
    """A module path as the model names it: ``model.layers.1.self_attn.q_proj``, without peft's prefix."""
    for prefix in PEFT_PREFIXES:
        if module.startswith(prefix):
            return module[len(prefix) :]
    return module


def _percent(share: float | None) -> str:
    """A share in whole percent, but never rounded onto 0 % or 100 % (99.5 % kept is not "100 %")."""
    if share is None:
        return "?"
    value = share * 100
    return f"{value:.1f} %" if 0 < value < 1 or 99.5 <= value < 100 else f"{value:.0f} %"


def verdict(check: MergeCheck) -> str:
    """The result in one sentence."""
    if check.error:
        return f"merge-check could not measure the adapter: {check.error}"
    four = check.overall.get("4bit", WayResult()).kept
    once = check.overall.get("16bit_then_quantize", WayResult()).kept
    if four is None:
        return "no adapted layer could be measured"
    if four < LOW_KEPT:
        return (
            f"merging into 4-bit keeps {_percent(four)} of what you trained; merge into the 16-bit base, "
            f"then quantize once (keeps {_percent(once)})"
        )
    return (
        f"merging into 4-bit keeps {_percent(four)} of the update; merging into the 16-bit base keeps {_percent(once)}"
    )


def workflow_script(check: MergeCheck) -> str:
    """The merge that keeps the update: the adapter into the 16-bit base, saved, quantized once at load."""
    merged = check.adapter.rstrip("/\\") + "-merged"
    return "\n".join(
        [
            "import torch",
            "from peft import PeftModel",
            "from transformers import AutoModelForCausalLM, BitsAndBytesConfig",
            "",
            f"base = AutoModelForCausalLM.from_pretrained({check.base_ref!r}, dtype=torch.bfloat16)",
            f"model = PeftModel.from_pretrained(base, {check.adapter!r}).merge_and_unload()",
            f"model.save_pretrained({merged!r})",
            "",
            "# then quantize once, when loading for inference:",
            "config = BitsAndBytesConfig(",
            f"    load_in_4bit=True, bnb_4bit_quant_type={check.quant_type!r},",
            f"    bnb_4bit_use_double_quant={check.double_quant}, bnb_4bit_compute_dtype=torch.bfloat16,",
            ")",
            f"model = AutoModelForCausalLM.from_pretrained({merged!r}, quantization_config=config)",
        ]
    )
