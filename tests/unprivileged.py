"""Run a command as a user without privileges, so permission checks run when the suite runs as root.

Root reads and writes every file, so a test of "permission denied" proves nothing under root (the CI
image runs the suite as root). :func:`as_unprivileged` prefixes a command with ``setpriv`` to drop to
``nobody`` when the suite runs as root; :func:`shared_folder` makes a folder that user can reach
(pytest's ``tmp_path`` lives under a folder only its owner can enter).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

NOBODY = 65534


def as_unprivileged(argv: list[str]) -> list[str]:
    """``argv``, run as ``nobody`` when this process is root (unchanged otherwise)."""
    if sys.platform == "win32" or os.geteuid() != 0:
        return argv
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise RuntimeError("the suite runs as root and setpriv (util-linux) is missing: cannot test permissions")
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]


def shared_folder() -> Path:
    """A new folder under the system temp folder that an unprivileged user can enter and read."""
    folder = Path(tempfile.mkdtemp(prefix="bnbdoctor-perm-"))
    folder.chmod(0o755)
    return folder
