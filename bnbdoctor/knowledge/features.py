"""The bitsandbytes (and transformers) release each feature arrived in, for the families found in the
development corpus (issue 24): a program that uses the feature on an older release fails with an
AttributeError, a TypeError or its own version gate.

Each boundary names its source: the bitsandbytes CHANGELOG (0.37.0 int8 backward on all GPUs, which
transformers' Trainer gates 8-bit training on; 0.38.0 8-bit Lion; 0.39.0 4-bit layers and paged
optimizers; 0.43.0 ``quant_storage`` for FSDP), transformers' 4-bit serialization (PR #26037) and its
``BitsAndBytesConfig`` (4.27.0 release notes).
"""

from __future__ import annotations

from bnbdoctor.knowledge.ranges import VersionRange

#: bitsandbytes releases with 4-bit layers (``bnb.nn.Linear4bit``, ``Params4bit``, FP4/NF4).
BNB_4BIT = VersionRange("0.39.0", None, "bitsandbytes CHANGELOG 0.39.0: 4-bit matrix multiplication, NF4/FP4")
#: bitsandbytes releases with paged optimizers (``PagedAdam``, ``PagedAdamW``, ``is_paged=``).
BNB_PAGED_OPTIMIZERS = VersionRange("0.39.0", None, "bitsandbytes CHANGELOG 0.39.0: paged optimizers for Adam and Lion")
#: bitsandbytes releases with the (8-bit) Lion optimizer.
BNB_LION = VersionRange("0.38.0", None, "bitsandbytes CHANGELOG 0.38.0: 32 and 8-bit Lion")
#: bitsandbytes releases whose ``Params4bit`` has ``quant_storage`` (FSDP-QLoRA), which Forge's and ComfyUI's
#: NF4 loaders read.
BNB_QUANT_STORAGE = VersionRange("0.43.0", None, "bitsandbytes CHANGELOG 0.43.0: quant_storage for FSDP-QLoRA")
#: bitsandbytes releases transformers' Trainer accepts for training an 8-bit model.
BNB_8BIT_TRAINING = VersionRange("0.37.0", None, "transformers Trainer: 8-bit training needs bitsandbytes>=0.37.0")
#: transformers releases that save a 4-bit model (with bitsandbytes >= BNB_4BIT_SERIALIZATION).
TRANSFORMERS_4BIT_SERIALIZATION = VersionRange("4.36", None, "transformers PR #26037 (4-bit serialization, 4.36)")
#: bitsandbytes releases whose 4-bit weights transformers can serialize.
BNB_4BIT_SERIALIZATION = VersionRange("0.41.3", None, "transformers PR #26037: 4-bit serialization needs 0.41.3")
#: transformers releases with ``BitsAndBytesConfig`` (its class for the bitsandbytes quantization settings).
TRANSFORMERS_BNB_CONFIG = VersionRange("4.27.0", None, "transformers 4.27.0 release notes: BitsAndBytesConfig")
