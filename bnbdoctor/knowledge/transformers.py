"""transformers releases that matter to bitsandbytes users: the device_map under-packing fixes, the
range ``bnbdoctor fit`` replicates, and when its bitsandbytes check started to need a GPU.

The under-packing facts come from the shared dispatch research (../shared/reference/dispatch_fit.md
§1, §2.6): transformers #46823, fixed by #47203 (first in 5.14.0) and #47211 (first in 5.18.0).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from bnbdoctor.fit_protocol import SUPPORTED_TRANSFORMERS_BELOW, SUPPORTED_TRANSFORMERS_MIN
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.ranges import VersionRange, full
from bnbdoctor.knowledge.signatures import SignatureId
from bnbdoctor.knowledge.versions import at_least


@dataclass(frozen=True)
class Fix:
    """A transformers pull request and the releases that contain it."""

    pr: str  # "#47203"
    releases: VersionRange

    @property
    def first(self) -> str:
        """The first release with the fix, as texts name it: ``"5.14.0"``."""
        return full(self.releases.first_text)


#: The per-GPU buffer is sized from the largest no-split block.
NO_SPLIT_BLOCK_FIX = Fix("#47203", VersionRange("5.14", None, "dispatch_fit.md §2.6: #47203 first in 5.14.0"))
#: The buffer also covers the biggest leaf module (embed_tokens, lm_head).
BIGGEST_LEAF_FIX = Fix("#47211", VersionRange("5.18", None, "dispatch_fit.md §2.6: #47211 first in 5.18.0"))

#: The releases with the no-split-block fix but not yet the biggest-leaf one.
ONLY_NO_SPLIT_BLOCK_FIX = VersionRange(
    NO_SPLIT_BLOCK_FIX.releases.first, BIGGEST_LEAF_FIX.releases.first, "dispatch_fit.md §2.6", last="5.17.x"
)

#: The releases whose from_pretrained pipeline the fit engine replicates: the range lives in the fit
#: protocol, which the engine script carries into the patient interpreter (it cannot import this module).
FIT_ENGINE_TRANSFORMERS = VersionRange(
    ".".join(map(str, SUPPORTED_TRANSFORMERS_MIN)),
    ".".join(map(str, SUPPORTED_TRANSFORMERS_BELOW)),
    "bnbdoctor/fit_protocol.py, sent with the engine script",
    last=f"{SUPPORTED_TRANSFORMERS_BELOW[0] - 1}.x" if SUPPORTED_TRANSFORMERS_BELOW[1:] == (0,) else None,
)

#: Since 4.32 is_bitsandbytes_available() also requires torch.cuda.is_available() (PR #24995; from 4.45 only for a
#: bitsandbytes older than 0.43.1, from 5.0 not at all): BNB_CHECK_NEEDS_GPU below. Was "4.3x" until the oracle ran
#: transformers 4.31.0 (no CUDA check) and 4.32.0 (the check).
BNB_CHECK_NEEDS_GPU_SINCE = "4.32"
#: The last release of each major before the next (what ``pip install "transformers<5.0"`` installs), from the
#: final releases on PyPI that tools/oracle_transformers.py runs (tests/data/oracle/transformers_gates.json).
LAST_OF_MAJOR = {"4": "4.57.6"}


@dataclass(frozen=True)
class MisleadingImportError:
    """transformers releases whose from_pretrained(..., quantization_config=BitsAndBytesConfig(...)) raises an
    ImportError naming accelerate / "the latest version of bitsandbytes" when torch.cuda.is_available() is False,
    both packages installed. ``bnb_below``: only with a bitsandbytes older than this."""

    releases: VersionRange
    message: str  # the start of the ImportError text (4.42+: the 4-bit quantizer says "4-bit" where it reads "8-bit";
    # before, both quantizers say "8-bit", as the oracle's 4.38.0-4.41.2 rows show)
    site: str  # where it is raised
    bnb_below: str | None = None


#: Read in the released wheels of every minor release 4.30-4.57 (their last patch, and the .0 of each
#: boundary): ``utils/import_utils.py`` is_bitsandbytes_available(), and the bnb check in
#: ``modeling_utils.py`` (< 4.38) or ``quantizers/quantizer_bnb_{4,8}bit.py`` validate_environment() (4.38+);
#: since checked against every final release's own code, run (tools/oracle_transformers.py, ORACLE below).
#: - 4.32 adds ``and torch.cuda.is_available()`` to is_bitsandbytes_available() (PR #24995), and the
#:   ImportError comes before any GPU check (4.32-4.35 in modeling_utils, 4.38-4.40 in the quantizers);
#: - 4.36-4.37 and 4.41-4.44 check torch.cuda.is_available() first and raise "No GPU found" instead;
#: - 4.45 needs CUDA only for a bitsandbytes older than 0.43.1 (which required it at import), so the
#:   "requires the latest version of bitsandbytes" ImportError remains for those;
#: - 4.53 names the cause: "The installed version of bitsandbytes (<0.43.1) requires CUDA".
IMPORTERROR_IN_MODELING_UTILS = MisleadingImportError(
    VersionRange(
        "4.32", "4.36", "transformers 4.32.0-4.35.2 modeling_utils.py, import_utils.py (PR #24995)", last="4.35"
    ),
    "Using `load_in_8bit=True` requires Accelerate: `pip install accelerate` and the latest version of bitsandbytes",
    "modeling_utils.from_pretrained",
)
IMPORTERROR_IN_QUANTIZERS = MisleadingImportError(
    VersionRange("4.38", "4.41", "transformers 4.38.0-4.40.2 quantizers/quantizer_bnb_8bit.py", last="4.40"),
    "Using `bitsandbytes` 8-bit quantization requires Accelerate: `pip install accelerate` and the latest "
    "version of bitsandbytes",
    "quantizer_bnb_8bit.validate_environment",
)
IMPORTERROR_FOR_OLD_BNB = MisleadingImportError(
    VersionRange("4.45", "4.53", "transformers 4.45.0-4.52.4 import_utils.py, quantizer_bnb_8bit.py", last="4.52"),
    "Using `bitsandbytes` 8-bit quantization requires the latest version of bitsandbytes: "
    "`pip install -U bitsandbytes`",
    "quantizer_bnb_8bit.validate_environment",
    bnb_below="0.43.1",
)
MISLEADING_BNB_IMPORTERRORS = (IMPORTERROR_IN_MODELING_UTILS, IMPORTERROR_IN_QUANTIZERS, IMPORTERROR_FOR_OLD_BNB)
#: The releases between them check torch.cuda.is_available() first and raise "No GPU found" instead (same wheels).
GPU_CHECKED_FIRST_IN_MODELING_UTILS = VersionRange(
    "4.36", "4.38", "transformers 4.36.0-4.37.2 modeling_utils.py", last="4.37"
)
GPU_CHECKED_FIRST_IN_QUANTIZERS = VersionRange(
    "4.41", "4.45", "transformers 4.41.0-4.44.2 quantizer_bnb_8bit.py", last="4.44"
)
#: From 4.45 is_bitsandbytes_available() needs CUDA only for a bitsandbytes older than 0.43.1 (which required
#: it at import) (import_utils.py, 4.45.0).
BNB_AVAILABLE_WITHOUT_CUDA = VersionRange("4.45", None, "transformers 4.45.0 import_utils.py is_bitsandbytes_available")
#: The transformers to upgrade to for bitsandbytes without CUDA: the first whose whole gate loads a multi-backend
#: bitsandbytes (BNB_MULTI_BACKEND) on a machine without CUDA, a CPU-only one included. It was 4.45 (the check
#: above) until the oracle ran 4.45-4.52 on such a machine: their device check crashes (4.45-4.49,
#: FROZENSET_DISCARD_BUG) or discards the CPU and refuses (4.50-4.52, CPU_DISCARDED); a Mac (MPS) passes from 4.45.
BNB_CHECK_WITHOUT_CUDA = VersionRange(
    "4.53",
    None,
    "transformers 4.53.0 integrations/bitsandbytes.py _validate_bnb_multi_backend_availability; "
    "tools/oracle_transformers.py, tests/data/oracle/transformers_gates.json",
)


def misleading_importerror(transformers: str | None, bitsandbytes: str | None) -> MisleadingImportError | None:
    """The ImportError these versions raise when torch sees no CUDA device, or None (the versions raise another
    error, or none). Where only an old bitsandbytes triggers it, an unknown bitsandbytes version does not."""
    for entry in MISLEADING_BNB_IMPORTERRORS:
        if not entry.releases.contains(transformers):
            continue
        if entry.bnb_below is None:
            return entry
        if VersionRange(None, entry.bnb_below, entry.releases.source).contains(bitsandbytes):
            return entry
    return None


# ======================================================================= the whole gate, release by release
# What from_pretrained(..., quantization_config=BitsAndBytesConfig(load_in_4bit|load_in_8bit=True)) checks before it
# loads anything, as bnbdoctor models it for the releases it has checked: every final release from 4.30.0 to the
# newest, whose own gate code tools/oracle_transformers.py ran against simulated environments (the rows:
# tests/data/oracle/transformers_gates.json; tests/test_oracle_transformers.py holds this model to them).
ORACLE = "tools/oracle_transformers.py, tests/data/oracle/transformers_gates.json"

#: The releases this model covers (the oracle's first release; a release it has not run is modelled by its series).
GATE_MODELLED = VersionRange("4.30", None, f"transformers 4.30.0 and newer; {ORACLE}")
#: From 4.38 the gate is the bnb quantizers' validate_environment (quantizers/quantizer_bnb_{4,8}bit.py); before,
#: it is inline in modeling_utils.from_pretrained.
QUANTIZERS = VersionRange("4.38", None, f"transformers 4.38.0 quantizers/quantizer_bnb_4bit.py; {ORACLE}")
#: BitsAndBytesConfig(load_in_4bit=True) itself reads bitsandbytes' version (utils/quantization_config.py post_init):
#: a ValueError below BNB_4BIT_MINIMUM, a PackageNotFoundError when bitsandbytes is not installed. 5.0 dropped it.
CONFIG_CHECKS_BNB_4BIT = VersionRange(
    "4.30", "5.0", f"transformers 4.30.0-4.57.6 utils/quantization_config.py post_init; {ORACLE}", last="4.57"
)
BNB_4BIT_MINIMUM = "0.39.0"
#: The 8-bit quantizer refuses a bitsandbytes older than this (4.38-4.57; before, from_pretrained did not check).
BNB_8BIT_MINIMUM = "0.37.2"
BNB_8BIT_MINIMUM_CHECKED = VersionRange(
    "4.38", "5.0", f"transformers 4.38.0-4.57.6 quantizer_bnb_8bit.py validate_environment; {ORACLE}", last="4.57"
)
#: is_accelerate_available()'s default minimum, by release (None: any version): a default argument in 4.36, then
#: ACCELERATE_MIN_VERSION in utils/import_utils.py.
ACCELERATE_MINIMUM_BY_RELEASE: tuple[tuple[str, str | None], ...] = (
    ("4.30", None),
    ("4.36", "0.21.0"),
    ("4.45", "0.26.0"),
    ("5.0", "1.1.0"),
)
#: From 5.4 is_accelerate_available() is also False when torch is disabled.
ACCELERATE_CHECK_NEEDS_TORCH = VersionRange("5.4", None, f"transformers 5.4.0 utils/import_utils.py; {ORACLE}")
#: transformers 5 disables a torch older than this (is_torch_available(); it warns "Disabling PyTorch because
#: PyTorch >= X is required"), by release.
TORCH_MINIMUM_BY_RELEASE: tuple[tuple[str, str | None], ...] = (
    ("4.30", None),
    ("5.0", "2.2"),
    ("5.1", "2.4"),
    ("5.15", "2.5"),
    ("5.20", "2.6"),
)
#: The oldest torch the oracle ran every release with (its stand-in torches: 2.1.2, 2.2.0, 2.5.1, 2.6.0): a minimum
#: below it was never observed (the threads show later 4.x releases refusing torch 2.0), so no bound is derived
#: for an older torch.
TORCH_LOWEST_TRIED = "2.1.2"
#: is_bitsandbytes_available() requires torch.cuda.is_available() (PR #24995) from 4.32; from 4.45 only for a
#: bitsandbytes older than IMPORTERROR_FOR_OLD_BNB.bnb_below; 5.0 compares the version with BITSANDBYTES_MIN_VERSION
#: (knowledge/dependents.py) and no longer asks torch.
BNB_CHECK_NEEDS_GPU = VersionRange(
    "4.32", "4.45", f"transformers 4.32.0-4.44.2 utils/import_utils.py is_bitsandbytes_available; {ORACLE}", last="4.44"
)
#: The quantizers' device check (integrations/bitsandbytes.py validate_bnb_backend_availability), from 4.45: a
#: bitsandbytes that declares ``features = {"multi_backend"}`` (BNB_MULTI_BACKEND) must support one of torch's devices;
#: an older one needs CUDA. 4.45-4.49 crash on a machine with only a CPU (``'frozenset' object has no attribute
#: 'discard'``), 4.50-4.52 discard the CPU and refuse; 4.53 accepts it.
BACKEND_CHECKED = VersionRange("4.45", None, f"transformers 4.45.0 integrations/bitsandbytes.py; {ORACLE}")
FROZENSET_DISCARD_BUG = VersionRange(
    "4.45", "4.50", f"transformers 4.45.0-4.49.0 _validate_bnb_multi_backend_availability; {ORACLE}", last="4.49"
)
#: The releases whose bitsandbytes quantizers index ``module._parameters[tensor_name]`` in check_quantized_param, so a
#: checkpoint buffer (a rotary embedding's ``inv_freq``) raises KeyError: the PyPI wheels of 4.38.0, 4.38.1 and 4.38.2
#: (4.37.2 has no quantizers/ folder; 4.39.0 uses ``module._parameters.get(tensor_name, None)``, PR #29329).
QUANTIZER_BUFFER_KEYERROR = VersionRange(
    "4.38", "4.39", "transformers 4.38.0-4.38.2 quantizers/quantizer_bnb_4bit.py, quantizer_bnb_8bit.py", last="4.38.2"
)
#: The release before the quantizer classes, which some threads pin instead (CogVLM #396).
BEFORE_QUANTIZERS = "4.37.2"
CPU_DISCARDED = VersionRange(
    "4.45", "4.53", f"transformers 4.45.0-4.52.4 _validate_bnb_multi_backend_availability; {ORACLE}", last="4.52"
)
#: The first bitsandbytes whose ``__init__.py`` declares ``features = {"multi_backend"}`` and the torch devices it
#: supports (the same set through 0.50.2), read from its wheel by tools/oracle_transformers.py.
BNB_MULTI_BACKEND = VersionRange("0.46.0", None, "bitsandbytes 0.46.0 bitsandbytes/__init__.py")
BNB_SUPPORTED_DEVICES = frozenset({"cpu", "cuda", "xpu", "hpu", "npu", "mps"})
#: 4.53 names the cause for a bitsandbytes older than IMPORTERROR_FOR_OLD_BNB.bnb_below without CUDA (an ImportError).
OLD_BNB_NAMED = VersionRange("4.53", None, f"transformers 4.53.0 quantizer_bnb_4bit.py validate_environment; {ORACLE}")
#: Where "No GPU found" is raised: from_pretrained (< 4.38), then the quantizers, until 4.45 replaced it with the
#: device check above.
NO_GPU_FOUND = VersionRange(
    "4.30", "4.45", f"transformers 4.30.0-4.44.2 modeling_utils.py, quantizer_bnb_8bit.py; {ORACLE}", last="4.44"
)
#: 4.42 splits the accelerate-and-bitsandbytes ImportError in two: accelerate first, then bitsandbytes.
SEPARATE_IMPORTERRORS = VersionRange("4.42", None, f"transformers 4.42.0 quantizer_bnb_4bit.py; {ORACLE}")
#: transformers 5: the messages name the minimums (``accelerate>=``, ``bitsandbytes>=``).
MESSAGES_NAME_MINIMUMS = VersionRange("5.0", None, f"transformers 5.0.0 quantizer_bnb_4bit.py; {ORACLE}")
#: A dict device_map that puts everything on the CPU passes the dispatch check: 4.45-4.57 with a multi-backend
#: bitsandbytes, every bitsandbytes from 5.0. Before the quantizers only a map with more than one entry is checked.
ALL_CPU_MAP_ALLOWED = VersionRange("4.45", None, f"transformers 4.45.0 quantizer_bnb_4bit.py; {ORACLE}")


@lru_cache(maxsize=4096)
def _in(releases: VersionRange, version: str | None) -> bool:
    """``releases.contains(version)``, remembered: the oracle's differential asks it some 500000 times."""
    return releases.contains(version)


@lru_cache(maxsize=4096)
def _at_least(version: str | None, minimum: str) -> bool | None:
    return at_least(version, minimum)


def _by_release(table: tuple[tuple[str, str | None], ...], transformers: str) -> str | None:
    value: str | None = None
    for first, minimum in table:
        if _at_least(transformers, first):
            value = minimum
    return value


def accelerate_minimum(transformers: str) -> str | None:
    """The accelerate this release's is_accelerate_available() requires by default (None: any)."""
    return _by_release(ACCELERATE_MINIMUM_BY_RELEASE, transformers)


def torch_minimum(transformers: str) -> str | None:
    """The torch below which this release disables torch (None: it takes any)."""
    return _by_release(TORCH_MINIMUM_BY_RELEASE, transformers)


@dataclass(frozen=True)
class GateInput:
    """What the gate reads: the installed versions (None: not installed), the devices torch sees, what the user
    passed. ``bnb_minimum``: the BITSANDBYTES_MIN_VERSION of the installed transformers 5, as the patient probe reads
    it (knowledge/dependents.py; bnbdoctor does not repeat the number)."""

    transformers: str
    bits: int = 4
    bitsandbytes: str | None = None
    accelerate: str | None = None
    torch: str | None = None
    cuda: bool = False
    mps: bool = False
    device_map: str | dict[str, int | str] | None = None
    fp32_cpu_offload: bool = False
    bnb_minimum: str | None = None


@dataclass(frozen=True)
class GateRefusal:
    """What the gate raises: ``kind`` (one of GATE_KINDS), the start of the message (the N-bit quantizer's ``{bits}``
    filled in), where it is raised (``module.function``), and the log family bnbdoctor's log reader files the message
    under (None: the log reader has no family for it)."""

    kind: str
    message: str
    site: str
    family: SignatureId | None


#: Every refusal the model knows: kind -> (family, why). The message and site depend on the release (below).
GATE_KINDS: dict[str, tuple[SignatureId | None, str]] = {
    "torch_missing": (S.TRANSFORMERS_TORCH_UNAVAILABLE, "torch is missing (4.30-4.37's requires_backends ImportError)"),
    # 4.38+: BitsAndBytesConfig's bare NameError, which alone the log reader cannot tell from a script that forgot
    # `import torch`; the "Disabling PyTorch" warning 5.x prints before it is what names the family in a log.
    "torch_missing_nameerror": (None, "torch is missing, or older than this transformers accepts"),
    "config_no_bnb": (
        S.BNB_METADATA_NOT_FOUND,
        "BitsAndBytesConfig(load_in_4bit=True) reads the metadata of a bitsandbytes not installed",
    ),
    "config_4bit_minimum": (
        S.BNB_LACKS_4BIT,
        "BitsAndBytesConfig(load_in_4bit=True) refuses a bitsandbytes below 0.39.0",
    ),
    "device_map_needs_accelerate": (
        S.DEVICE_MAP_NEEDS_ACCELERATE,
        "a device_map without (a recent enough) accelerate",
    ),
    "accelerate_and_bnb": (S.TRANSFORMERS_BNB_IMPORTERROR, "one ImportError for accelerate and bitsandbytes"),
    "accelerate": (S.TRANSFORMERS_BNB_IMPORTERROR, "accelerate missing or older than the release's minimum"),
    "bitsandbytes": (S.TRANSFORMERS_BNB_IMPORTERROR, "is_bitsandbytes_available() is False"),
    "bitsandbytes_minimum": (S.TRANSFORMERS_BNB_MINIMUM, "transformers 5: bitsandbytes below BITSANDBYTES_MIN_VERSION"),
    "no_gpu": (S.QUANTIZER_NO_GPU, "torch sees no CUDA device"),
    "old_bnb_needs_cuda": (S.QUANTIZER_NO_GPU, "a bitsandbytes older than 0.43.1 without CUDA, named as such"),
    "cuda_backend_required": (S.QUANTIZER_NO_GPU, "a bitsandbytes without multi-backend support and no CUDA"),
    "no_supported_device": (S.QUANTIZER_NO_GPU, "none of torch's devices is one bitsandbytes supports"),
    "frozenset_bug": (
        S.BNB_MULTIBACKEND_PREVIEW_TRANSFORMERS_MISMATCH,
        "transformers 4.45-4.49 crash on a machine with only a CPU",
    ),
    "offload_needs_fp32": (
        S.DISPATCH_CPU_DISK_VALUEERROR,
        "a dict device_map with cpu/disk entries, before the quantizers",
    ),
    "dispatch_cpu_disk": (S.DISPATCH_CPU_DISK_VALUEERROR, "a dict device_map with cpu/disk entries"),
    "bnb_8bit_minimum": (S.TRANSFORMERS_BNB_MINIMUM, "the 8-bit quantizer refuses a bitsandbytes below 0.37.2"),
}


def _refusal(kind: str, message: str, site: str, bits: int) -> GateRefusal:
    return GateRefusal(kind, message.format(bits=bits), site.format(bits=bits), GATE_KINDS[kind][0])


def bitsandbytes_available(g: GateInput) -> bool:
    """What the release's is_bitsandbytes_available() answers."""
    if g.bitsandbytes is None:
        return False
    if _in(MESSAGES_NAME_MINIMUMS, g.transformers):
        return g.bnb_minimum is None or bool(_at_least(g.bitsandbytes, g.bnb_minimum))
    if not _torch_usable(g):
        return not VersionRange("4.32", None, ORACLE).contains(g.transformers)
    if _in(BNB_CHECK_NEEDS_GPU, g.transformers):
        return g.cuda
    if _in(BNB_AVAILABLE_WITHOUT_CUDA, g.transformers):
        return g.cuda or bool(_at_least(g.bitsandbytes, IMPORTERROR_FOR_OLD_BNB.bnb_below or "0"))
    return True


def accelerate_available(g: GateInput) -> bool:
    """What the release's is_accelerate_available() answers (with its default minimum)."""
    if g.accelerate is None or (_in(ACCELERATE_CHECK_NEEDS_TORCH, g.transformers) and not _torch_usable(g)):
        return False
    minimum = accelerate_minimum(g.transformers)
    return minimum is None or bool(_at_least(g.accelerate, minimum))


def _torch_usable(g: GateInput) -> bool:
    minimum = torch_minimum(g.transformers)
    return g.torch is not None and (minimum is None or bool(_at_least(g.torch, minimum)))


def _cpu_or_disk(g: GateInput) -> set[str]:
    if not isinstance(g.device_map, dict):
        return set()
    return {str(v) for v in g.device_map.values()} & {"cpu", "disk"}


def bnb_gate(g: GateInput) -> GateRefusal | None:
    """What the gate of ``g.transformers`` (a release in GATE_MODELLED) raises for ``g``, or None when it passes."""
    t, bits = g.transformers, g.bits
    quantizer = "quantizer_bnb_{bits}bit.validate_environment"
    if _in(QUANTIZERS, t) and not _torch_usable(g):
        return _refusal("torch_missing_nameerror", "name 'torch' is not defined", "quantization_config.__init__", bits)
    if bits == 4 and _in(CONFIG_CHECKS_BNB_4BIT, t):
        if g.bitsandbytes is None:
            return _refusal(
                "config_no_bnb", "No package metadata was found for bitsandbytes", "quantization_config.post_init", bits
            )
        if not _at_least(g.bitsandbytes, BNB_4BIT_MINIMUM):
            return _refusal(
                "config_4bit_minimum",
                f"4 bit quantization requires bitsandbytes>={BNB_4BIT_MINIMUM}",
                "quantization_config.post_init",
                bits,
            )
    if not _in(QUANTIZERS, t):
        return _from_pretrained_gate(g)
    acc, bnb = accelerate_available(g), bitsandbytes_available(g)
    if _in(GPU_CHECKED_FIRST_IN_QUANTIZERS, t) and not g.cuda:
        return _refusal("no_gpu", "No GPU found. A GPU is needed for quantization.", quantizer, bits)
    if not _in(SEPARATE_IMPORTERRORS, t):
        if not (acc and bnb):  # 4.38-4.41: the 4-bit quantizer's message says 8-bit too
            return _refusal("accelerate_and_bnb", IMPORTERROR_IN_QUANTIZERS.message, quantizer, bits)
    else:
        if not acc:
            name = "accelerate" if _in(MESSAGES_NAME_MINIMUMS, t) else "Accelerate"
            message = f"Using `bitsandbytes` {{bits}}-bit quantization requires {name}: `pip install "
            return _refusal("accelerate", message, quantizer, bits)
        library_only = _in(OLD_BNB_NAMED, t) and not _in(MESSAGES_NAME_MINIMUMS, t)
        if not (g.bitsandbytes is not None if library_only else bnb):
            if _in(MESSAGES_NAME_MINIMUMS, t):
                message = (
                    "Using `bitsandbytes` {bits}-bit quantization requires bitsandbytes: "
                    f"`pip install -U bitsandbytes>={g.bnb_minimum}`"
                )
                return _refusal("bitsandbytes_minimum", message, quantizer, bits)
            message = "Using `bitsandbytes` {bits}-bit quantization requires the latest version of bitsandbytes"
            return _refusal("bitsandbytes", message, quantizer, bits)
        old = not _at_least(g.bitsandbytes, IMPORTERROR_FOR_OLD_BNB.bnb_below or "0")
        if library_only and old and not g.cuda:
            message = f"The installed version of bitsandbytes (<{IMPORTERROR_FOR_OLD_BNB.bnb_below}) requires CUDA"
            return _refusal("old_bnb_needs_cuda", message, quantizer, bits)
    if not _in(BACKEND_CHECKED, t) and not g.cuda:
        return _refusal("no_gpu", "No GPU found. A GPU is needed for quantization.", quantizer, bits)
    multi = _in(BNB_MULTI_BACKEND, g.bitsandbytes)
    if _in(BACKEND_CHECKED, t):
        refusal = _backend(g, multi)
        if refusal is not None:
            return refusal
    places = _cpu_or_disk(g)
    if places and not g.fp32_cpu_offload:
        all_cpu = isinstance(g.device_map, dict) and set(g.device_map.values()) == {"cpu"}
        if not (all_cpu and _in(ALL_CPU_MAP_ALLOWED, t) and (multi or _in(MESSAGES_NAME_MINIMUMS, t))):
            return _refusal("dispatch_cpu_disk", "Some modules are dispatched on the CPU or the disk.", quantizer, bits)
    if bits == 8 and _in(BNB_8BIT_MINIMUM_CHECKED, t) and not _at_least(g.bitsandbytes, BNB_8BIT_MINIMUM):
        message = "You have a version of `bitsandbytes` that is not compatible with 8bit inference and training"
        return _refusal("bnb_8bit_minimum", message, quantizer, bits)
    return None


def _backend(g: GateInput, multi: bool) -> GateRefusal | None:
    """integrations/bitsandbytes.py validate_bnb_backend_availability(raise_exception=True)."""
    site = "bitsandbytes._validate_bnb_{0}_backend_availability"
    available = {"cpu"} | ({"cuda"} if g.cuda else set()) | ({"mps"} if g.mps else set())
    if multi or _in(MESSAGES_NAME_MINIMUMS, g.transformers):
        if available == {"cpu"} and _in(FROZENSET_DISCARD_BUG, g.transformers):
            return _refusal(
                "frozenset_bug", "'frozenset' object has no attribute 'discard'", site.format("multi"), g.bits
            )
        if available == {"cpu"} and _in(CPU_DISCARDED, g.transformers):
            available = set()
        if not available & BNB_SUPPORTED_DEVICES:
            message = "None of the available devices `available_devices = "
            return _refusal("no_supported_device", message, site.format("multi"), g.bits)
        return None
    if not g.cuda:
        return _refusal(
            "cuda_backend_required", "CUDA is required but not available for bitsandbytes", site.format("cuda"), g.bits
        )
    return None


def _from_pretrained_gate(g: GateInput) -> GateRefusal | None:
    """4.30-4.37: the checks inline in modeling_utils.from_pretrained, before replace_with_bnb_linear."""
    t, bits, site = g.transformers, g.bits, "modeling_utils.from_pretrained"
    if not _torch_usable(g):
        return _refusal("torch_missing", "requires the PyTorch library", "import_utils.requires_backends", bits)
    acc = accelerate_available(g)
    if g.device_map is not None and not acc:
        message = "Using `low_cpu_mem_usage=True` or a `device_map` requires Accelerate: `pip install accelerate`"
        return _refusal("device_map_needs_accelerate", message, site, bits)
    if _in(GPU_CHECKED_FIRST_IN_MODELING_UTILS, t) and not g.cuda:
        return _refusal("no_gpu", "No GPU found. A GPU is needed for quantization.", site, bits)
    if not (acc and bitsandbytes_available(g)):
        return _refusal("accelerate_and_bnb", IMPORTERROR_IN_MODELING_UTILS.message, site, bits)
    if g.device_map is None and not g.cuda:
        return _refusal("no_gpu", "No GPU found. A GPU is needed for quantization.", site, bits)
    if isinstance(g.device_map, dict) and len(g.device_map) > 1 and _cpu_or_disk(g) and not g.fp32_cpu_offload:
        message = "If you want to offload some keys to `cpu` or `disk`, you need to set "
        message += "`llm_int8_enable_fp32_cpu_offload=True`"
        return _refusal("offload_needs_fp32", message, site, bits)
    return None
