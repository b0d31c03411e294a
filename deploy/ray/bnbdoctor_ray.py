"""bnbdoctor once on every alive node of a Ray cluster; the reports come back to the driver.

    python deploy/ray/bnbdoctor_ray.py --address auto --out reports/
    bnbdoctor fleet reports/

Each node runs one task pinned to it (``NodeAffinitySchedulingStrategy``, not soft), asking for no CPU so
that it runs beside busy workers; it runs ``bnbdoctor --json`` in the task's own environment (the Ray
runtime env your jobs use) and returns the report text, which the driver writes as
``<out>/<short hostname>.json``. Ray hides the GPUs from a task that asks for none (it sets
``CUDA_VISIBLE_DEVICES`` to an empty string), so the task drops that one setting before running the doctor;
the doctor reads the driver through NVML either way. Exit status: 0 when every node answered (with or
without error findings; ``bnbdoctor fleet`` says which), 2 when the doctor could not run on some node.
Tested with a stand-in for ``ray`` in tests/test_deploy.py.
"""

from __future__ import annotations

import argparse
import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

DOCTOR_SECONDS = 120


@ray.remote(num_cpus=0)  # type: ignore[untyped-decorator, unused-ignore]  # ray is untyped
def diagnose(command: list[str]) -> tuple[str, int, str, str]:
    """(short hostname, exit code, report JSON, end of stderr) for this node."""
    env = dict(os.environ)
    if env.get("CUDA_VISIBLE_DEVICES") == "":
        del env["CUDA_VISIBLE_DEVICES"]
    try:
        # The command is the operator's own --bnbdoctor, not untrusted input.
        done = subprocess.run(  # noqa: S603 - the operator's own command line
            [*command, "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=DOCTOR_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return socket.gethostname().split(".")[0], 2, "", str(error)
    return socket.gethostname().split(".")[0], done.returncode, done.stdout, done.stderr[-2000:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--address", default="auto", help="the Ray cluster (ray.init address)")
    parser.add_argument("--out", type=Path, default=Path("reports"), help="folder for <host>.json")
    parser.add_argument("--bnbdoctor", default="bnbdoctor", help="the doctor's command line on the nodes")
    parser.add_argument("--python", help="the interpreter the doctor examines on the nodes")
    args = parser.parse_args(argv)
    command = shlex.split(args.bnbdoctor) + (["--python", args.python] if args.python else [])

    ray.init(address=args.address)
    nodes = [node for node in ray.nodes() if node.get("Alive")]
    pending = [
        diagnose.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)).remote(
            command
        )
        for node in nodes
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for host, code, report, errors in ray.get(pending):
        if code in (0, 1) and report:
            (args.out / f"{host}.json").write_text(report)
        else:
            failed += 1
            sys.stderr.write(f"bnbdoctor: {host}: the doctor did not run (exit {code}): {errors}\n")
    sys.stderr.write(f"bnbdoctor: {len(nodes) - failed} of {len(nodes)} node report(s) in {args.out}\n")
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
