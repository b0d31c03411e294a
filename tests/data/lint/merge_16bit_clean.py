# The 16-bit merge workflow: no findings.
import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM

base = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)
model = PeftModel.from_pretrained(base, "outputs/checkpoint-500")
model = model.merge_and_unload()
model.to("cuda")
model.half()
model.save_pretrained("merged")
