"""The collectors, in the order they run on a line, and the tables the extractor dispatches by.

Each module is one part of a log (the loader's messages, bitsandbytes' own, the driver, ...) and
declares its message families on their handlers (:class:`~bnbdoctor.logs.collectors.base.Collector`).
:data:`FAMILIES` concatenates them in :data:`COLLECTORS` order, which is also the order in which
the families matched on one line run; that order is part of the output (``facts.log.matches``
lists one line's signatures in the order they were recorded) and a few handlers rely on it:

- ``bnb_banner`` before ``bnb_version`` (packages): a banner's version wins over other mentions;
- ``python_version`` (packages) before the path hints (paths): a ``\\Python3NN\\`` folder only
  gives the Python version when no version line did;
- ``gpu`` and ``paths`` last: GPU names are recorded after the failures of their line, and path
  hints record nothing; ``errors`` after them records no match (only the exception lines).

:data:`PATTERNS` and :data:`HANDLERS` are indexed like :data:`FAMILIES`; :data:`ANCHORS` maps
each prefilter anchor to the indices of the patterns that need it.
"""

from __future__ import annotations

from bnbdoctor.logs.collectors import (
    bnb_loader,
    context,
    driver,
    errors,
    gpu,
    imports,
    kbit,
    loader,
    packages,
    paths,
    placement,
    platform,
    torch_arch,
    workflow,
)
from bnbdoctor.logs.collectors.base import Collector, Family, Handler
from bnbdoctor.logs.patterns import Pattern, anchors

COLLECTORS: tuple[Collector, ...] = (
    loader.COLLECTOR,  # the dynamic loader: missing libraries, symbol versions
    bnb_loader.COLLECTOR,  # bitsandbytes' own library selection and CUDA setup
    driver.COLLECTOR,  # the driver, CUDA errors, kernels
    torch_arch.COLLECTOR,  # torch's own incompatible-GPU warning and its arch list
    imports.COLLECTOR,
    placement.COLLECTOR,
    workflow.COLLECTOR,
    kbit.COLLECTOR,  # k-bit models in transformers, accelerate, FSDP; two harmless messages
    packages.COLLECTOR,  # versions
    platform.COLLECTOR,  # the OS as stated
    context.COLLECTOR,  # device_map, quantization, model id, notebook
    gpu.COLLECTOR,  # GPU names
    paths.COLLECTOR,  # the OS from paths, install locations
    errors.COLLECTOR,  # every exception line, for the errors no family names
)

FAMILIES: tuple[Family, ...] = tuple(family for collector in COLLECTORS for family in collector.families)
PATTERNS: tuple[Pattern, ...] = tuple(family.pattern for family in FAMILIES)
HANDLERS: tuple[Handler, ...] = tuple(family.handler for family in FAMILIES)
ANCHORS: dict[bytes, tuple[int, ...]] = anchors(PATTERNS)

__all__ = ["ANCHORS", "COLLECTORS", "FAMILIES", "HANDLERS", "PATTERNS", "Collector", "Family", "Handler"]
