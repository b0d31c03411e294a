"""Wrappers around transformers' placement helpers that record the budgets they compute.

``get_max_memory``, ``get_balanced_memory`` and ``infer_auto_device_map`` are wrapped (once per
process) so that a placement in progress (``engine.recording``) sees the budgets transformers
itself computed; ``accelerate_max_memory`` answers with the simulated free memory
(``engine.detected``) where from_pretrained would query the driver. Nothing here changes a result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .replica import Engine

#: The engine of the request being answered (one process may answer several, one after another).
ACTIVE: list[Engine | None] = [None]


class _Current:
    """Stands for ``ACTIVE[0]``: the wrappers, installed once, always see the current request's engine."""

    def __getattr__(self, name: str) -> Any:
        return getattr(ACTIVE[0], name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(ACTIVE[0], name, value)


def install_wrappers(engine: Engine) -> None:
    ACTIVE[0] = engine
    if getattr(engine.tia, "_bnbdoctor_wrapped", False):
        return
    tia = engine.tia
    current: Any = _Current()
    original_accelerate_max_memory = tia.accelerate_max_memory
    original_get_max_memory = tia.get_max_memory
    original_balanced = tia.get_balanced_memory
    original_infer = tia.infer_auto_device_map

    def accelerate_max_memory(max_memory: Any = None) -> Any:
        if max_memory is None and current.detected is not None:
            return dict(current.detected)
        return original_accelerate_max_memory(max_memory)

    def get_max_memory(max_memory: Any = None) -> Any:
        result = original_get_max_memory(max_memory)
        rec = current.recording
        if rec is not None and "user" not in rec:
            rec["user"] = dict(result)
        return result

    def get_balanced_memory(*args: Any, **kwargs: Any) -> Any:
        result = original_balanced(*args, **kwargs)
        if current.recording is not None:
            current.recording["balanced"] = dict(result)
        return result

    def infer_auto_device_map(model: Any, *args: Any, **kwargs: Any) -> Any:
        rec = current.recording
        if rec is not None:
            budget = kwargs.get("max_memory", args[0] if args else None)
            rec["budget"] = dict(budget) if budget is not None else None
            rec["no_split"] = list(kwargs.get("no_split_module_classes") or [])
            if rec.get("trace"):
                detailed = dict(kwargs)
                detailed["clean_result"] = False
                rec["atoms"] = list(original_infer(model, *args, **detailed).items())
        result = original_infer(model, *args, **kwargs)
        if rec is not None:
            rec["map"] = dict(result)
        return result

    tia.accelerate_max_memory = accelerate_max_memory
    tia.get_max_memory = get_max_memory
    tia.get_balanced_memory = get_balanced_memory
    tia.infer_auto_device_map = infer_auto_device_map
    tia._bnbdoctor_original_infer = original_infer
    tia._bnbdoctor_wrapped = True
