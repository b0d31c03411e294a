"""A real, one-node Slurm cluster on localhost for the fleet recipe tests.

Provides :func:`ensure_installed` (Debian's ``slurm-wlm`` and ``munge``, installed with apt-get when missing,
saying so on stderr) and :class:`LocalSlurm`, a context manager that starts ``munged``, ``slurmctld`` and
``slurmd`` with a minimal ``slurm.conf`` in a temporary folder, waits until the node takes jobs, and stops
every daemon it started — also when the test fails. Nothing is written outside that folder: the munge
socket, key, state and spool folders, pid and log files all live there, and the ports are free ones picked
at start, so several runs (or engineers) on one machine do not collide. Clients find the cluster through
:attr:`LocalSlurm.env` (``SLURM_CONF``).

Why a real cluster: the recipe in ``docs/fleet.md`` is only worth printing if ``srun``/``sbatch`` really run
it — quoting, ``%N``-style names, the working folder and the exit code are what break on a cluster.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

# Binaries the cluster needs, and the Debian package each comes from.
BINARIES = {
    "munged": "munge",
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "srun": "slurm-client",
    "sbatch": "slurm-client",
    "sinfo": "slurm-client",
}
APT_PACKAGES = ("slurm-wlm", "munge")
SBIN = ("/usr/sbin", "/sbin")


class SlurmUnavailable(RuntimeError):
    """Slurm or munge is missing and could not be installed; the message says why."""


def _which(name: str) -> str | None:
    path = os.pathsep.join([os.environ.get("PATH", ""), *SBIN])
    return shutil.which(name, path=path)


def missing_binaries() -> list[str]:
    return [name for name in BINARIES if _which(name) is None]


def installed_versions() -> dict[str, str]:
    """Debian package -> installed version (``dpkg-query``), for the test's report."""
    found: dict[str, str] = {}
    for package in sorted({*APT_PACKAGES, *BINARIES.values()}):
        done = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, check=False
        )
        if done.returncode == 0 and done.stdout:
            found[package] = done.stdout
    return found


def ensure_installed() -> None:
    """Install ``slurm-wlm`` and ``munge`` with apt-get when a binary is missing; raise with the reason."""
    missing = missing_binaries()
    if not missing:
        return
    apt = shutil.which("apt-get")
    if apt is None:
        raise SlurmUnavailable(
            f"{', '.join(missing)} not found and there is no apt-get to install {' '.join(APT_PACKAGES)}"
        )
    if os.geteuid() != 0:
        raise SlurmUnavailable(
            f"{', '.join(missing)} not found; installing {' '.join(APT_PACKAGES)} "
            "needs root (run: sudo apt-get install -y slurm-wlm munge)"
        )
    sys.stderr.write(
        f"slurm_support: {', '.join(missing)} missing; installing with apt-get install -y {' '.join(APT_PACKAGES)}\n"
    )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in ([apt, "update"], [apt, "install", "-y", *APT_PACKAGES]):
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, check=False)
        if done.returncode != 0:
            raise SlurmUnavailable(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")
    still = missing_binaries()
    if still:
        raise SlurmUnavailable(f"apt-get installed {' '.join(APT_PACKAGES)} but {', '.join(still)} is missing")
    sys.stderr.write(f"slurm_support: installed {installed_versions()}\n")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _slurm_conf(root: Path, node: str, ctld_port: int, slurmd_port: int, socket_path: Path) -> str:
    """The smallest configuration that runs jobs in a container: no cgroups, no accounting."""
    return "\n".join(
        [
            "ClusterName=bnbdoctor-test",
            f"SlurmctldHost={node}(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            f"SlurmdPort={slurmd_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={socket_path}",
            f"StateSaveLocation={root / 'state'}",
            f"SlurmdSpoolDir={root / 'spool'}",
            f"SlurmctldPidFile={root / 'slurmctld.pid'}",
            f"SlurmdPidFile={root / 'slurmd.pid'}",
            f"SlurmctldLogFile={root / 'slurmctld.log'}",
            f"SlurmdLogFile={root / 'slurmd.log'}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SwitchType=switch/none",
            "MpiDefault=none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",
            "SchedulerType=sched/builtin",
            "InactiveLimit=0",
            "KillWait=5",
            "MinJobAge=10",
            f"NodeName={node} NodeAddr=127.0.0.1 CPUs=1 RealMemory=100 State=UNKNOWN",
            f"PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


class LocalSlurm:
    """``with LocalSlurm(tmp) as cluster:`` — a running one-node cluster; every daemon stops on exit."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.node = socket.gethostname().split(".")[0]
        self.conf = root / "slurm.conf"
        self.munge_socket = root / "munge" / "munge.socket.2"
        self._daemons: list[tuple[str, subprocess.Popen[bytes], Path | None]] = []

    @property
    def env(self) -> dict[str, str]:
        """The environment clients (``srun``, ``sbatch``, ``sinfo``) need to reach this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def log(self, name: str) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace")[-4000:] if path.is_file() else f"(no {path.name})"

    def __enter__(self) -> LocalSlurm:
        ensure_installed()
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    def _start(self) -> None:
        munge_dir = self.root / "munge"
        for folder in (munge_dir, self.root / "state", self.root / "spool"):
            folder.mkdir(parents=True, exist_ok=True)
            folder.chmod(0o700)
        key = munge_dir / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.conf.write_text(_slurm_conf(self.root, self.node, _free_port(), _free_port(), self.munge_socket))
        self._spawn(
            "munged",
            [
                str(_which("munged")),
                "--foreground",
                "--force",
                f"--socket={self.munge_socket}",
                f"--key-file={key}",
                f"--pid-file={munge_dir / 'munged.pid'}",
                f"--log-file={self.root / 'munged.log'}",
                f"--seed-file={munge_dir / 'munged.seed'}",
            ],
            None,
        )
        self._wait(self.munge_socket.exists, "munged to open its socket", "munged")
        self._spawn(
            "slurmctld", [str(_which("slurmctld")), "-D", "-i", "-f", str(self.conf)], self.root / "slurmctld.pid"
        )
        self._wait(lambda: self._client("sinfo", "-h").returncode == 0, "slurmctld to answer sinfo", "slurmctld")
        self._spawn(
            "slurmd", [str(_which("slurmd")), "-D", "-f", str(self.conf), "-N", self.node], self.root / "slurmd.pid"
        )
        self._wait(self._node_ready, f"node {self.node} to become idle", "slurmd")

    def _spawn(self, name: str, command: list[str], pid_file: Path | None) -> None:
        out = open(self.root / f"{name}.out", "wb")  # noqa: SIM115 - closed when the daemon is reaped
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        out.close()
        self._daemons.append((name, process, pid_file))

    def _client(self, name: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(_which(name)), *args], capture_output=True, text=True, env=self.env, timeout=30, check=False
        )

    def _node_ready(self) -> bool:
        state = self._client("sinfo", "-h", "-N", "-o", "%T").stdout.strip().lower()
        return state.startswith(("idle", "mixed", "allocated"))

    def _wait(self, ready: Callable[[], bool], what: str, daemon: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, process, _ in self._daemons:
                if process.poll() is not None:
                    raise SlurmUnavailable(
                        f"{name} exited ({process.returncode}) while waiting for {what}:\n"
                        f"{self.log(name)}\n{self._out(name)}"
                    )
            if ready():
                return
            time.sleep(0.3)
        raise SlurmUnavailable(
            f"timed out after {timeout:.0f} s waiting for {what}:\n{self.log(daemon)}\n{self._out(daemon)}"
        )

    def _out(self, name: str) -> str:
        path = self.root / f"{name}.out"
        return path.read_text(errors="replace")[-2000:] if path.is_file() else ""

    def running(self) -> list[str]:
        """Names of the daemons this cluster started that are still alive."""
        return [name for name, process, _ in self._daemons if process.poll() is None]

    def stop(self) -> None:
        """Stop every daemon this cluster started, newest first: SIGTERM, then SIGKILL after 15 s."""
        for _name, process, _ in reversed(self._daemons):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=15)
