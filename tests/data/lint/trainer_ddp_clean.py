# The same trainer, done right: no findings.
import os

import torch
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, TrainingArguments

local_rank = int(os.environ["LOCAL_RANK"])
bnb = BitsAndBytesConfig(
    load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16, bnb_4bit_quant_storage=torch.bfloat16
)
args = TrainingArguments("out", fsdp="full_shard auto_wrap")
model = AutoModelForCausalLM.from_pretrained(
    "meta-llama/Llama-2-7b-hf", quantization_config=bnb, device_map={"": local_rank}, torch_dtype=torch.bfloat16
)
