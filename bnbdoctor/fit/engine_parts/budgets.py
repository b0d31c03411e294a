"""Per-device budgets and use of one placement, and for each device the packer left, the atom that did not fit.

Reads what the recording wrappers saw (the budgets given, the balanced caps, the x0.9 budgets,
the atoms in packing order) and re-asks transformers' ``get_max_layer_size`` for the space it
kept free on the main devices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .common import device_key, int_or_none
from .sizes import module_sizes, quant_state_by_module

if TYPE_CHECKING:
    from .common import Device, Json, Placement
    from .replica import Engine


def ordered_devices(budget: dict[Device, int]) -> list[Device]:
    gpus: list[Device] = sorted(k for k in budget if isinstance(k, int))
    rest: list[Device] = [k for k in ("mps", "cpu") if k in budget]
    return gpus + rest + ["disk"]


def explain_devices(engine: Engine, rec: Placement) -> list[Json]:
    """Per-device budgets and use; for each device the packer left, the atom that did not fit."""
    model, _hf_quantizer, _ = rec["built"]
    sizes = module_sizes(engine, rec["built"])
    budget = rec.get("budget") or {}
    user = rec.get("user") or {}
    balanced = rec.get("balanced")
    atoms = rec.get("atoms") or list(rec["result"].items())
    devices = ordered_devices(budget) if budget else sorted({d for _, d in atoms}, key=str)
    gpus = [d for d in devices if isinstance(d, int)]
    main = {gpus[0], "cpu"} if gpus else {"cpu"}
    index = {d: i for i, d in enumerate(devices)}
    no_split = rec.get("no_split") or list(getattr(model, "_no_split_modules", None) or [])
    used: dict[Device, int] = {}
    state_by_module = quant_state_by_module(engine, rec["built"])
    state: dict[Device, int] = {}
    for name, device in atoms:
        used[device] = used.get(device, 0) + sizes.get(name, 0)
        state[device] = state.get(device, 0) + state_by_module.get(name, 0)
    # the reservation on a main device before anything is placed: the largest layer overall
    top = [(n, m) for n, m in model.named_children()]
    initial_reserved, _ = engine.tia.get_max_layer_size(top, sizes, no_split)
    rows = []
    for device in devices:
        if device == "disk" and not used.get("disk"):
            continue
        row: dict[str, Any] = {
            "device": device_key(device),
            "given_bytes": int_or_none(user.get(device)),
            "balanced_cap_bytes": int_or_none(balanced.get(device)) if balanced is not None else None,
            "budget_bytes": int_or_none(budget.get(device)),
            "reserved_bytes": int(initial_reserved) if device in main and gpus else 0,
            "used_bytes": int(used.get(device, 0)),
            "quant_state_bytes": int(state.get(device, 0)),
            "skipped_at": None,
            "skipped_atom_bytes": None,
            "remaining_bytes": None,
        }
        later = [(i, (n, d)) for i, (n, d) in enumerate(atoms) if index.get(d, -1) > index[device]]
        if later and device != "disk":
            position, (name, _) = later[0]
            row["skipped_at"] = name
            row["skipped_atom_bytes"] = int(sizes.get(name, 0))
            reserved = 0
            if device in main:
                remaining_modules = []
                for n, _d in atoms[position + 1 :]:
                    try:
                        remaining_modules.append((n, model.get_submodule(n)))
                    except Exception:  # noqa: BLE001, S112 - a parameter or buffer, not a module
                        continue
                reserved, _ = engine.tia.get_max_layer_size(remaining_modules, sizes, no_split)
                row["reserved_bytes"] = int(reserved)
            placed_before = sum(sizes.get(n, 0) for n, d in atoms[:position] if d == device)
            if row["budget_bytes"] is not None:
                row["remaining_bytes"] = max(0, int(row["budget_bytes"] - reserved - placed_before))
        rows.append(row)
    return rows
