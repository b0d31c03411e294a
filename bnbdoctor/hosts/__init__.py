"""Hosts: the machine a diagnosis reads, live or recorded."""

from bnbdoctor.hosts.base import (
    CommandResult,
    CurrentPython,
    Host,
    NvmlAnswer,
    NvmlDevice,
    OsInfo,
)

__all__ = ["CommandResult", "CurrentPython", "Host", "NvmlAnswer", "NvmlDevice", "OsInfo"]
