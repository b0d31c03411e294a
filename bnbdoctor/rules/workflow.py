"""Rules about workflows and messages seen in logs (BNB5xx): PEFT merges, devices, stale modules."""

from __future__ import annotations
