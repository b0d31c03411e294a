# Pattern of trainer scripts launched with torchrun / accelerate launch --use_fsdp.
# must: BNB605, BNB607 (line 12)  must not: BNB606
import os

import torch
from peft import get_peft_model, LoraConfig
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, TrainingArguments

local_rank = int(os.environ["LOCAL_RANK"])
bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)
args = TrainingArguments("out", fsdp="full_shard auto_wrap")
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", quantization_config=bnb, device_map="auto")
model = get_peft_model(model, LoraConfig(r=8))
