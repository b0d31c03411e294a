# An 8-bit model with a LoRA adapter merged in (old PEFT raised ValueError here).
# must: BNB601 (line 8)
from peft import get_peft_model, LoraConfig
from transformers import AutoModelForCausalLM, BitsAndBytesConfig

model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m", quantization_config=BitsAndBytesConfig(load_in_8bit=True))
model = get_peft_model(model, LoraConfig(r=8))
model.merge_adapter()
