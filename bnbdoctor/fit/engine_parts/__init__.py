"""Runs inside the *patient* interpreter: predicts where ``from_pretrained`` puts a bnb-quantized model.

bnbdoctor sends one script, followed by one JSON request, to ``python -B -c``. The script imports
the patient's own torch, transformers and accelerate, builds the model on the meta device exactly as
``PreTrainedModel.from_pretrained`` does (``get_hf_quantizer``, ``_get_dtype``, ``get_init_context``,
the model class, ``preprocess_model``) and calls the same
``transformers.integrations.accelerate._get_device_map``. It never loads a weight, never touches a
GPU (``CUDA_VISIBLE_DEVICES`` is emptied before torch is imported) and never uses the network.

Only transformers' own functions decide sizes and placement. The script wraps a few of them
(``get_max_memory``, ``get_balanced_memory``, ``infer_auto_device_map``, the quantizer's
``adjust_max_memory``) to record the budgets they compute, and patches ``accelerate_max_memory`` to
stand in for ``torch.cuda.mem_get_info`` when GPUs are simulated. When bitsandbytes is missing or
broken, a stand-in module provides ``bitsandbytes.nn.Linear4bit`` / ``Linear8bitLt`` as plain
``nn.Linear`` subclasses, so transformers' ``replace_with_bnb_linear`` selects the same modules.

The answer is one line on stdout: ``@@BNBDOCTOR-FIT@@`` followed by a JSON object.

The script is assembled at send time (``bnbdoctor/fit/script_assembly.py``) from
``bnbdoctor/fit_protocol.py`` and the modules of this package, in the order of :data:`PARTS`. Each
part is a typed module with one job. The rules that keep the assembly valid:

- a part imports only the stdlib at module level; torch, transformers, accelerate and
  bitsandbytes are imported inside functions, once the script has checked they can be;
- a part takes what it needs from an earlier part (or the protocol) with a relative import, which
  the assembly strips; type-only imports sit under ``if TYPE_CHECKING:``, which it strips too;
- no two parts define the same top-level name (they share one namespace in the script);
- the code is valid Python 3.7 at run time (``from __future__ import annotations`` keeps the
  annotations unevaluated), so that an old interpreter still answers "transformers too old" rather
  than a SyntaxError. The code past the version check runs on transformers >= 5.12, hence Python >= 3.10.
"""

from __future__ import annotations

#: The parts in assembly order (modules of this package); each uses only names defined before it.
PARTS = (
    "common",  # the engine's error, JSON/device conversions, the shared record types
    "standin",  # the bitsandbytes stand-in
    "recording",  # wrappers that record the budgets transformers computes
    "replica",  # Engine: imports, config, model class, meta-device build, placement (from_pretrained's steps)
    "sizes",  # module sizes, quantization state, the inventory of unquantized tensors
    "budgets",  # per-device budgets and use, and where the packer moved on
    "minimum",  # the least GPU memory, and the fewest GPUs, that fit
    "remedy_search",  # the remedies, each re-run through the engine
    "request",  # one request (or a batch) in, one marked answer line out
)
