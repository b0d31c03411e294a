"""Hosts: the machine a diagnosis reads, live or recorded."""

from bnbdoctor.facts import OsInfo
from bnbdoctor.hosts.base import (
    CommandResult,
    CurrentPython,
    Host,
    NvmlAnswer,
    NvmlDevice,
)

__all__ = ["CommandResult", "CurrentPython", "Host", "NvmlAnswer", "NvmlDevice", "OsInfo"]
