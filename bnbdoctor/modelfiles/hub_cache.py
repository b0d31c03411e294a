"""A Hugging Face model id (``org/name``) found in the local hub cache, offline.

``bnbdoctor fit meta-llama/Llama-3.1-8B`` should mean what ``from_pretrained("meta-llama/Llama-3.1-8B")``
means with ``HF_HUB_OFFLINE=1``: the entry ``models--meta-llama--Llama-3.1-8B`` in the cache folder
huggingface_hub uses. That folder is, as huggingface_hub decides it (its environment-variable
reference, https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables):
``HF_HUB_CACHE``, else the older ``HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub``, where ``HF_HOME``
defaults to ``$XDG_CACHE_HOME/huggingface``, else ``~/.cache/huggingface``. Everything is read
through the host; nothing here contacts the Hub. What a command says when an id is not cached is the
command's (``fit`` names the one file it needs, ``merge-check`` the weights).
"""

from __future__ import annotations

import re

from bnbdoctor.hosts.base import Host

#: A Hub repository id as from_pretrained accepts one: ``org/name``, letters, digits, ``-``, ``_``, ``.``.
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def is_repo_id(text: str) -> bool:
    """True when ``text`` has the shape of a Hub model id (``org/name``); it may still be a local path."""
    return bool(_REPO_ID.fullmatch(text)) and ".." not in text and not text.endswith(".json")


def _home(host: Host) -> str:
    return host.os_info().home or "~"


def _expand(host: Host, path: str) -> str:
    """``~`` at the start of a configured folder means the home folder, as huggingface_hub expands it."""
    if path == "~" or path.startswith(("~/", "~\\")):
        return _home(host) + path[1:]
    return path


def hub_cache(host: Host) -> str:
    """The hub cache folder from_pretrained reads on this machine (it need not exist)."""
    join = host.pathmod.join
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        configured = host.getenv(name)
        if configured:
            return _expand(host, configured)
    hf_home = host.getenv("HF_HOME")
    if hf_home:
        return join(_expand(host, hf_home), "hub")
    xdg = host.getenv("XDG_CACHE_HOME")
    base = _expand(host, xdg) if xdg else join(_home(host), ".cache")
    return join(base, "huggingface", "hub")


def repo_folder_name(repo_id: str) -> str:
    """The cache's folder name for a model repository: ``org/name`` -> ``models--org--name``."""
    return "models--" + repo_id.replace("/", "--")
