"""The platform probe: OS, distro, architecture, glibc, WSL, Jetson, containers."""

from __future__ import annotations

import re

from bnbdoctor.facts import PlatformFacts
from bnbdoctor.hosts.base import Host
from bnbdoctor.probes.base import ProbeContext

WSL_LIB_DIR = "/usr/lib/wsl/lib"
#: Device nodes that show a GPU without NVML: WSL2's paravirtualized GPU, AMD's ROCm kernel driver, NVIDIA's
#: kernel driver (present even where libnvidia-ml is not, e.g. a container started without the NVIDIA runtime).
GPU_DEVICE_NODES = ("dxg", "kfd", "nvidiactl")
_OS_NAMES = {"linux": "linux", "windows": "windows", "darwin": "macos"}
_ARCH_NAMES = {
    "amd64": "x86_64",
    "x86_64": "x86_64",
    "x64": "x86_64",
    "arm64": "aarch64",
    "aarch64": "aarch64",
    "armv8": "aarch64",
    "ppc64le": "ppc64le",
    "i686": "x86",
    "i386": "x86",
    "x86": "x86",
}


def normalise_arch(machine: str) -> str:
    """One spelling per architecture: Windows' AMD64 and macOS' arm64 included."""
    return _ARCH_NAMES.get(machine.lower(), machine.lower())


def parse_os_release(text: str) -> dict[str, str]:
    """KEY=value lines of /etc/os-release, quotes removed."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key and not key.startswith("#"):
            values[key] = value.strip().strip("\"'")
    return values


def detect_wsl(kernel_release: str, proc_version: str | None, distro_env: str | None) -> int | None:
    """WSL2 kernels say "microsoft-standard" (or WSL2); WSL1 reports "Microsoft" in the release."""
    text = f"{kernel_release} {proc_version or ''}"
    if re.search(r"microsoft-standard|WSL2", text, re.IGNORECASE):
        return 2
    if re.search(r"microsoft", text, re.IGNORECASE) or distro_env:
        return 1
    return None


def loader_config_dirs(host: Host, path: str = "/etc/ld.so.conf", depth: int = 0) -> list[str]:
    """Directories listed in ld.so.conf, following ``include`` globs (one level of *)."""
    text = host.read_text(path)
    if text is None or depth > 4:
        return []
    dirs: list[str] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("include"):
            pattern = line.split(None, 1)[1] if len(line.split(None, 1)) > 1 else ""
            folder, _, mask = pattern.rpartition("/")
            if not folder.startswith("/"):
                folder = "/etc/" + folder
            prefix, _, suffix = mask.partition("*")
            for name in host.list_dir(folder) or []:
                if name.startswith(prefix) and name.endswith(suffix):
                    dirs.extend(loader_config_dirs(host, f"{folder}/{name}", depth + 1))
        elif line.startswith("hwcap"):
            continue
        else:
            dirs.append(line.rstrip("/"))
    return dirs


def gpu_device_nodes(host: Host) -> list[str]:
    """Which of :data:`GPU_DEVICE_NODES` exist in /dev (listed, not opened: a device node is no file)."""
    present = set(host.list_dir("/dev") or [])
    return [name for name in GPU_DEVICE_NODES if name in present]


def gather_platform(ctx: ProbeContext) -> PlatformFacts:
    host = ctx.host
    info = host.os_info()
    os_name = _OS_NAMES.get(info.system.lower(), info.system.lower())
    facts = PlatformFacts(os=os_name, arch=normalise_arch(info.machine), kernel=info.release)
    if os_name == "windows":
        facts.os_version = info.version or info.release
        return facts
    if os_name == "macos":
        facts.os_version = info.mac_version or info.release
        return facts
    facts.libc, facts.libc_version = info.libc_name, info.libc_version
    release = parse_os_release(host.read_text("/etc/os-release") or host.read_text("/usr/lib/os-release") or "")
    facts.distro_id = release.get("ID") or None
    facts.distro_version = release.get("VERSION_ID") or None
    facts.distro_name = release.get("PRETTY_NAME") or None
    facts.wsl = detect_wsl(info.release, host.read_text("/proc/version"), host.getenv("WSL_DISTRO_NAME"))
    if facts.wsl:
        facts.wsl_lib_dir = WSL_LIB_DIR if host.is_dir(WSL_LIB_DIR) else None
        ld_path = [p.rstrip("/") for p in (host.getenv("LD_LIBRARY_PATH") or "").split(":") if p]
        facts.wsl_lib_on_loader_path = WSL_LIB_DIR in ld_path or WSL_LIB_DIR in loader_config_dirs(host)
    facts.gpu_device_nodes = gpu_device_nodes(host)
    tegra = host.read_text("/etc/nv_tegra_release")
    if tegra:
        facts.jetson_release = tegra.strip().splitlines()[0][:200]
    if host.is_file("/.dockerenv"):
        facts.container = "docker"
    elif host.is_file("/run/.containerenv"):
        facts.container = "podman"
    return facts
