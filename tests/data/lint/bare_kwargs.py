# Old answers: bare load_in_8bit and the fp32 offload flag given to from_pretrained.
# must: BNB602, BNB603 (line 6)
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained(
    "bigscience/bloom-1b7", load_in_8bit=True, device_map="auto", llm_int8_enable_fp32_cpu_offload=True
)
