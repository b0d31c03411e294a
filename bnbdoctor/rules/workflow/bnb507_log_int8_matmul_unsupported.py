"""BNB507 log-int8-matmul-unsupported: passes when the log shows no int8-matmul failure or warning for GPUs without int8 tensor cores."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.gpus import INT8_MATMUL_MIN, INT8_NAMEERROR, INT8_WITHOUT_FALLBACK
from bnbdoctor.knowledge.ranges import minor
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

UPGRADE_PAST_INT8_NAMEERROR = f'pip install -U "bitsandbytes{INT8_NAMEERROR.after().pip_spec()}"'


#: The failures: one finding for each the log shows.
FINDINGS = (
    log.LogFinding(
        (S.INT8_MATMUL_UNSUPPORTED,),
        title="LLM.int8() needs int8 tensor cores this GPU lacks ('Your GPU does not support Int8 Matmul!')",
        explanation="LLM.int8() runs its matmul on cuBLASLt int8 tensor-core kernels, which need "
        f"{INT8_MATMUL_MIN.architecture} (compute capability {INT8_MATMUL_MIN.text}) or newer. Releases up to "
        f"{INT8_WITHOUT_FALLBACK.last_text} used builds without cuBLASLt on older GPUs and stop with an assertion "
        f"in igemmlt; {INT8_WITHOUT_FALLBACK.below_text} added a slower fallback. 4-bit quantization works on "
        "these GPUs.",
        fix=f"Upgrade bitsandbytes ({minor(INT8_WITHOUT_FALLBACK.below_text)} or newer has a "
        "slower 8-bit path for older GPUs), or prefer 4-bit (load_in_4bit=True, "
        f"bnb_4bit_quant_type='nf4'), or use a {INT8_MATMUL_MIN.architecture} or newer "
        "GPU.",
        commands=(UPGRADE_PAST_INT8_NAMEERROR,),
        covers=("int8_matmul_unsupported_cc_lt_75",),
    ),
    log.LogFinding(
        (S.CUDA_SETUP_NAMEERROR,),
        title=f"bitsandbytes {INT8_NAMEERROR.first_text} crashes at import on GPUs below compute capability "
        f"{INT8_MATMUL_MIN.text}",
        explanation=f"\"NameError: name 'cuda_setup' is not defined\" is a bug in {INT8_NAMEERROR.first_text}'s "
        f"check for cuBLASLt support, hit on every GPU older than {INT8_MATMUL_MIN.architecture}.",
        fix="Upgrade bitsandbytes.",
        commands=(UPGRADE_PAST_INT8_NAMEERROR,),
        covers=("cuda_setup_nameerror_bnb_0_37",),
    ),
)

#: The note that this GPU takes the slow path: only when nothing above failed.
SLOW_PATH = log.LogFinding(
    (S.SLOW_INT8_MATMUL,),
    title="Warning only: this GPU runs LLM.int8() on the slow 8-bit matmul",
    explanation="bitsandbytes notes that the GPU has no int8 tensor cores (compute capability below "
    f"{INT8_MATMUL_MIN.text}) and "
    "selects its slower path. This is not itself a failure: if something breaks, the cause is elsewhere in "
    "the log.",
    fix="Nothing to fix; prefer 4-bit quantization on this GPU for speed.",
    covers=("slow_int8_matmul_warning_cc_lt_75",),
    limit=1,
    severity=Severity.INFO,
)


@rule(
    Severity.ERROR,
    "The log shows no int8-matmul failure or warning for GPUs without int8 tensor cores",
    needs=("log",),
    covers=("int8_matmul_unsupported_cc_lt_75", "slow_int8_matmul_warning_cc_lt_75", "cuda_setup_nameerror_bnb_0_37"),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/529",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/118",
    ),
    stands_in_for=("BNB104",),
    confirm=("nvidia-smi --query-gpu=name,compute_cap --format=csv", "pip show bitsandbytes"),
)
def int8_matmul(facts: Facts) -> list[Hit]:
    """## What it detects

    Three messages about GPUs without int8 tensor cores (compute capability below {{ gpus.INT8_MATMUL_MIN.text }}):

    - `ERROR: Your GPU does not support Int8 Matmul!` and the `igemmlt … Assertion 'false' failed` that follows
      (releases up to {{ gpus.INT8_WITHOUT_FALLBACK.last_text }}): an error;
    - `NameError: name 'cuda_setup' is not defined` (the {{ gpus.INT8_NAMEERROR.first_text }} import crash on those GPUs): an error;
    - `WARNING: Compute capability < 7.5 detected! Only slow 8-bit matmul is supported for your GPU!`: info, since it is
      a warning and not the failure.

    It is the log twin of [BNB104](BNB104.md), which reports the same from the GPU's compute capability.

    ## Why it matters

    LLM.int8() runs its matmul on cuBLASLt int8 tensor-core kernels, which need Turing (7.5) or newer. Releases up to
    {{ gpus.INT8_WITHOUT_FALLBACK.last_text }} used builds without cuBLASLt on older GPUs and stopped on an assertion; {{ gpus.INT8_WITHOUT_FALLBACK.below_text }} added a slower fallback (and, in
    {{ gpus.INT8_NAMEERROR.first_text }} only, a crash in the check). 4-bit quantization and 8-bit optimizers work on these GPUs.

    ## How to fix

    - Upgrade bitsandbytes ({{ gpus.INT8_NAMEERROR.below_text }} or newer has the slower 8-bit path):

      ```bash
      pip install -U "bitsandbytes>={{ gpus.INT8_NAMEERROR.below_text }}"
      ```

    - Prefer 4-bit (`load_in_4bit=True`, `bnb_4bit_quant_type="nf4"`) on these GPUs, or use a Turing or newer GPU for
      fast LLM.int8().
    - The slow-matmul warning alone needs no fix: look further in the log for the failure.
    """
    return log.hits(facts, FINDINGS) or log.hits(facts, (SLOW_PATH,))
