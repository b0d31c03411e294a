# Pattern of QLoRA notebooks: load 4-bit, attach the trained adapter, merge, save.
# must: BNB601 (line 14)  must not: BNB606 (compute dtype is set)
import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM, BitsAndBytesConfig

bnb_config = BitsAndBytesConfig(
    load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16
)
base_model = AutoModelForCausalLM.from_pretrained(
    "meta-llama/Llama-2-7b-hf", quantization_config=bnb_config, torch_dtype=torch.bfloat16, device_map="auto"
)
model = PeftModel.from_pretrained(base_model, "outputs/checkpoint-500")
model = model.merge_and_unload()
model.save_pretrained("merged")
