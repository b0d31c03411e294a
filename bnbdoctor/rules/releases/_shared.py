"""What the releases rules share: helpers and constants used by more than one of them."""

from __future__ import annotations

PIP_SHOW_FILES = "pip show -f bitsandbytes"


#: A community wheel that only worked over 0.35's leftover cuda_setup/paths.py, and such a traceback.
OVERLAY_REPORT = "https://github.com/jllllll/bitsandbytes-windows-webui/issues/22"


OVERLAY_TRACEBACK = "https://github.com/kohya-ss/sd-scripts/issues/1062"
