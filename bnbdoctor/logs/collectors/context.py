"""How the model was loaded and where the log comes from: ``device_map=``, bitsandbytes
quantization settings, the model id given to ``from_pretrained``, a notebook (Colab/Jupyter).

Facts without a failure: a few lines of each are recorded for the placement and workflow rules
(at most :data:`_KEPT` per family), and the patterns stop after a few hits.
"""

from __future__ import annotations

import re

from bnbdoctor.knowledge import signatures as S
from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.state import LogState

COLLECTOR = Collector("context")
collects = COLLECTOR.collects
recognises = COLLECTOR.recognises

#: Lines recorded per context family.
_KEPT = 3


recognises(
    S.DEVICE_MAP_ARGUMENT,
    "device_map",
    r"device_map\s*=\s*['\"]?(?P<device_map>auto|balanced_low_0|balanced|sequential|\{)",
    evidence=20,
    up_to=_KEPT,
)


recognises(
    S.QUANTIZATION_CONFIG,
    ("4bit", "8bit"),
    r"load_in_(?P<bits>4|8)bit|bnb_(?P<bits2>4)bit|quantizer_bnb_(?P<bits3>4|8)bit|Linear(?P<bits4>4)bit"
    r"|Linear(?P<bits5>8)bitLt|matmul_(?P<bits6>4)bit|BitsAndBytesConfig|Params4bit|Int8Params",
    evidence=40,
    up_to=_KEPT,
)


recognises(
    S.MODEL_ID,
    "from_pretrained",
    r"from_pretrained\(\s*(?:pretrained_model_name_or_path\s*=\s*)?['\"](?P<model>[\w.-]{1,100}/[\w.-]{1,200})['\"]",
    evidence=5,
    up_to=_KEPT,
)


@collects(
    ("/content/", "<ipython-input", "ipykernel"),
    r"ipykernel|google\.colab|/content/|<ipython-input|Cell In\[|localhost:8080|jupyter",
    evidence=5,
)
def notebook(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.platform.notebook = True
    state.platform.os_votes["linux"] += "/content/" in line
    state.match(S.NOTEBOOK, number, line, up_to=2)
