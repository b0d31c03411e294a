"""BNB407 transformers-underpacking-fixed-upstream: passes when the installed transformers sizes the balanced caps by the largest block and leaf (#47203, #47211)."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity
from bnbdoctor.fit_protocol import REMEDY_UPGRADE_TRANSFORMERS, STATUS_PASSES, STATUS_UNVERIFIED
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.placement._shared import _ISSUE_46823, _PR_47203, _PR_47211, _fit


@rule(
    Severity.WARNING,
    "The installed transformers sizes the balanced caps by the largest block and leaf (#47203, #47211)",
    needs=("fit",),
    covers=("dispatch_valueerror_device_map_underpacking",),
    references=(_ISSUE_46823, _PR_47203, _PR_47211),
)
def check_upgrade(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `fit` facts. When the installed transformers predates the under-packing fixes (#47203 in {{ transformers.NO_SPLIT_BLOCK_FIX.first }},
    #47211 in {{ transformers.BIGGEST_LEAF_FIX.first }}), the call uses a balanced device map (`auto`, `balanced`, `balanced_low_0`) and the prediction is
    an error or an all-CPU map, `bnbdoctor fit` re-runs the same placement with a newer transformers, if one is
    available on this machine:

    - another copy on the patient interpreter's `sys.path` (for example site-packages behind an older copy on
      `PYTHONPATH`);
    - a folder given with `--compare-transformers DIR` (`pip install --target DIR transformers`).

    If the newer release places the model on the GPUs, the finding is a **warning** that says so and names the version
    and folder it was verified with. If no newer transformers is available, the finding is **info**: upgrading may help,
    but bnbdoctor cannot verify it offline and does not claim it.

    ## Why it matters

    `get_balanced_memory` caps every GPU but the last. Before #47203 the buffer added to the caps was sized from the
    first block of each no-split class (a small dense layer in front of large MoE layers); before #47211 it ignored
    large leaves such as a bf16 `embed_tokens` or `lm_head`. The caps were then smaller than a single block, the packer
    skipped GPU after GPU and spilled to the CPU: Llama-3-8B in 4-bit raises on 8 x 4 GiB with transformers 5.13.1 and
    fits with {{ transformers.BIGGEST_LEAF_FIX.releases.first_text }} and later.

    ## Example notes

    BNB402 is reported for the same call, with `device_map="sequential"` as a remedy that works without upgrading.

    ## How to fix

    ```bash
    pip install -U "transformers{{ transformers.BIGGEST_LEAF_FIX.releases.pip_spec }}"
    ```

    To verify an upgrade without touching the environment first:

    ```bash
    pip install --target /tmp/tf-new transformers
    bnbdoctor fit ./model ... --compare-transformers /tmp/tf-new
    ```

    [bnbdoctor fit](../fit.md) explains how the placement is computed.
    """
    fit = _fit(facts)
    upgrade = next((r for r in fit.remedies if r.kind == REMEDY_UPGRADE_TRANSFORMERS), None)
    if upgrade is None or upgrade.status not in (STATUS_PASSES, STATUS_UNVERIFIED):
        return None
    installed = fit.versions.get("transformers", "?")
    if upgrade.status == STATUS_PASSES:
        return Hit(
            title=f"transformers {installed} has the device_map under-packing bug; {upgrade.transformers_version} "
            "places this model without the error (verified here)",
            explanation=upgrade.detail,
            evidence=[
                Evidence("installed", f"transformers {installed}", "fit.versions.transformers"),
                Evidence(
                    "verified with",
                    f"transformers {upgrade.transformers_version} in {upgrade.transformers_location}",
                    "fit.remedies",
                ),
            ],
            remediation=Remediation(
                f"Upgrade transformers to {upgrade.transformers_version} or newer.",
                [upgrade.code] if upgrade.code else [],
            ),
        )
    return Hit(
        title=f"transformers {installed} predates the device_map under-packing fixes; whether upgrading helps here "
        "cannot be verified offline",
        explanation=upgrade.detail,
        evidence=[Evidence("installed", f"transformers {installed}", "fit.versions.transformers")],
        remediation=Remediation(
            "Prefer a remedy verified above. To verify an upgrade without changing this "
            "environment: pip install --target DIR transformers, then re-run with "
            "--compare-transformers DIR."
        ),
        severity=Severity.INFO,
    )
