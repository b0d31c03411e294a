"""A Hugging Face model id (``org/name``) found in the local hub cache, offline.

``bnbdoctor fit meta-llama/Llama-3.1-8B`` should mean what ``from_pretrained("meta-llama/Llama-3.1-8B")``
means with ``HF_HUB_OFFLINE=1``: the entry ``models--meta-llama--Llama-3.1-8B`` in the cache folder
huggingface_hub uses. That folder is, as huggingface_hub decides it (its environment-variable
reference, https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables):
``HF_HUB_CACHE``, else the older ``HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub``, where ``HF_HOME``
defaults to ``$XDG_CACHE_HOME/huggingface``, else ``~/.cache/huggingface``. Everything is read
through the host; nothing here contacts the Hub. An id that is not cached gets one line saying how
to fetch only its ``config.json`` (which is all ``fit`` needs).
"""

from __future__ import annotations

import re

from bnbdoctor.fit.options import FitInputError
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


def fetch_config_command(repo_id: str) -> str:
    """The command that downloads only the model's config.json into the cache."""
    return f"hf download {repo_id} config.json"


def cached_repo(host: Host, repo_id: str) -> str:
    """The cache folder of ``repo_id``; raises :class:`FitInputError` (one line) when it is not cached."""
    cache = hub_cache(host)
    folder = host.pathmod.join(cache, repo_folder_name(repo_id))
    if host.is_dir(folder):
        return folder
    raise FitInputError(
        f"{repo_id}: not a local folder and not in the Hugging Face cache ({cache}); bnbdoctor fit works "
        f"offline and needs only the config: {fetch_config_command(repo_id)}"
    )
