# A BitsAndBytesConfig with compute dtype and the offload flag where it belongs: no findings.
import torch
from transformers import AutoModelForCausalLM, BitsAndBytesConfig

quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.float16, llm_int8_enable_fp32_cpu_offload=True)
kwargs = {"quantization_config": quant, "torch_dtype": torch.float16, "device_map": "auto"}
model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m", **kwargs)
model.eval()
