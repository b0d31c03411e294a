"""What ``merge-check`` measured: plain dataclasses, JSON through :mod:`bnbdoctor.serde`.

``kept`` is the projection ⟨M - base_M, ΔW⟩ / ‖ΔW‖² of what a merge changed onto the update the adapter
trained; ``unmoved`` is the share of the adapted weights the merge left exactly where they were. The
measurement is data, below merge-check's pipeline and the renderers, which both read it; what it says in
words (the verdict, the way titles, the workflow script) is the renderers' (:mod:`bnbdoctor.render.merge_check_words`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: The ways of merging, in report order.
WAYS = ("4bit", "16bit", "dequantized", "16bit_then_quantize")
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
