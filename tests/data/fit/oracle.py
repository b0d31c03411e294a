"""The oracle for bnbdoctor fit's tests: the real ``from_pretrained``, stopped right after the device map.

Run as ``python oracle.py REQUEST.json``; prints one JSON list. For each case it calls
``AutoModelForCausalLM.from_pretrained(folder, quantization_config=BitsAndBytesConfig(...),
device_map=..., max_memory=...)`` on a folder holding a ``config.json`` and an empty
``model.safetensors``. ``transformers.modeling_utils._get_device_map`` is wrapped: the wrapper calls
the original and then stops the load, so no weight is read; ``infer_auto_device_map`` is wrapped
only to record the map a raising load computed. A ``ValueError`` from either raise site
(get_hf_quantizer or _get_device_map) is the "raises" verdict.

When a case simulates GPUs (``detected``: max_memory=None), ``accelerate_max_memory`` in
transformers' accelerate integration answers with the given free memory instead of asking
torch.cuda / psutil: the one question about the hardware this CPU-only machine cannot answer.
The engine under test does the same, and nothing else here is shared with it.
"""

import json
import os
import sys

os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


class Stop(Exception):
    def __init__(self, device_map):
        super().__init__("stop")
        self.device_map = device_map


def main(path):
    with open(path, encoding="utf-8") as handle:
        cases = json.load(handle)
    import transformers
    import transformers.integrations.accelerate as tia
    import transformers.modeling_utils as mu
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    original_get_device_map = mu._get_device_map
    original_max_memory = tia.accelerate_max_memory
    detected = {}

    def get_device_map(*args, **kwargs):
        raise Stop(original_get_device_map(*args, **kwargs))

    def accelerate_max_memory(max_memory=None):
        if max_memory is None and detected.get("value") is not None:
            return dict(detected["value"])
        return original_max_memory(max_memory)

    original_infer = tia.infer_auto_device_map
    seen = {}

    def infer_auto_device_map(*args, **kwargs):  # records the map that a raising load computed
        seen["map"] = original_infer(*args, **kwargs)
        return seen["map"]

    mu._get_device_map = get_device_map
    tia.accelerate_max_memory = accelerate_max_memory
    tia.infer_auto_device_map = infer_auto_device_map
    results = []
    for case in cases:
        kwargs = {"load_in_8bit": True} if case.get("quant") == "8bit" else {"load_in_4bit": True}
        if case.get("fp32_offload"):
            kwargs["llm_int8_enable_fp32_cpu_offload"] = True
        device_map = case.get("device_map", "auto")
        if isinstance(device_map, dict):
            device_map = {k: (int(v) if isinstance(v, str) and v.isdigit() else v) for k, v in device_map.items()}
        max_memory = case.get("max_memory")
        if max_memory is not None:
            max_memory = {(int(k) if k.isdigit() else k): v for k, v in max_memory.items()}
        det = case.get("detected")
        detected["value"] = {(int(k) if k.isdigit() else k): v for k, v in det.items()} if det else None
        out = {"id": case.get("id")}
        seen.clear()
        try:
            AutoModelForCausalLM.from_pretrained(
                case["folder"],
                quantization_config=BitsAndBytesConfig(**kwargs),
                device_map=device_map,
                max_memory=max_memory,
            )
            out["verdict"] = "loaded?"
        except Stop as stop:
            out["device_map"] = dict(stop.device_map)
            values = set(stop.device_map.values())
            if values == {"cpu"}:
                out["verdict"] = "all_cpu"
            elif "cpu" in values or "disk" in values:
                out["verdict"] = "fp32_offload"
            else:
                out["verdict"] = "fits"
        except ValueError as exc:
            out["verdict"] = "raises"
            out["error"] = str(exc)
            if "map" in seen:
                out["device_map"] = dict(seen["map"])
        results.append(out)
    print(json.dumps({"transformers": transformers.__version__, "results": results}))


if __name__ == "__main__":
    main(sys.argv[1])
