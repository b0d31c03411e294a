# Pattern of ComfyUI nodes: load a 4-bit text encoder, then cast and move it.
# must: BNB604 (lines 12, 13), BNB606 (line 9)
import torch
from transformers import AutoModelForCausalLM, BitsAndBytesConfig


class LoadQuantizedEncoder:
    def load(self, path):
        cfg = BitsAndBytesConfig(load_in_4bit=True)
        model = AutoModelForCausalLM.from_pretrained(path, quantization_config=cfg, torch_dtype=torch.float16)
        model.half()
        model.to(torch.float16)
        return model
