"""Rules about model placement with device_map (BNB4xx): the transformers dispatch ValueError and its remedies."""

from __future__ import annotations
