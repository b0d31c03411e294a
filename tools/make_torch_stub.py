#!/usr/bin/env python3
"""A small, REAL stand-in for torch's ``libtorch_cuda.so``: a shared library whose ``.nv_fatbin``
section holds fatbin containers with the entry headers nvcc writes (kind, header size, payload
size, architecture), for a given arch list.

A real libtorch_cuda.so is about 1 GB and not ours to redistribute; what bnbdoctor reads of it is
only the ELF section headers and the fatbin headers (``bnbdoctor/native/fatbin.py``), and this file
has exactly those. Each payload is a few placeholder bytes (``stub sm_61``), not device code.

The containers imitate a real build: ``--containers`` of them carry the full arch list (one entry
per SASS target, plus PTX for the ``+PTX`` targets), then one container is built for sm_80+ only
(as torch's flash-attention kernels are), which a reader taking the intersection would get wrong,
and one holds a second entry for the newest target.

Usage: ``make_torch_stub.py --arch-list "7.0;7.5;8.0;8.6;9.0;10.0;12.0" -o .../torch/lib/libtorch_cuda.so``
(the ``TORCH_CUDA_ARCH_LIST`` spelling of ``.ci/manywheel/build_cuda.sh``). Needs GNU binutils
(as, ld, strip). Deterministic: the same arguments give the same bytes.
"""

from __future__ import annotations

import argparse
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

MAGIC = 0xBA55ED50
ENTRY_HEADER = 64
KIND_PTX, KIND_ELF = 1, 2


def parse_arch_list(text: str) -> tuple[list[int], list[int]]:
    """ "7.5;8.0;12.0+PTX" -> ([75, 80, 120], [120])."""
    sass: list[int] = []
    ptx: list[int] = []
    for item in text.replace(" ", ";").split(";"):
        if not item:
            continue
        plus = item.endswith("+PTX")
        major, minor = item.removesuffix("+PTX").split(".")
        arch = int(major) * 10 + int(minor)
        sass.append(arch)
        if plus:
            ptx.append(arch)
    return sass, ptx


def entry(kind: int, arch: int) -> bytes:
    payload = f"stub {'sm' if kind == KIND_ELF else 'compute'}_{arch}".encode()
    payload += b"\0" * (-len(payload) % 8)
    header = struct.pack("<HHIQII", kind, 0x0101, ENTRY_HEADER, len(payload), 0, 0)
    header += struct.pack("<HHI", 0, 0, arch)  # PTX version minor/major (unused), arch at offset 28
    header += b"\0" * (ENTRY_HEADER - len(header))
    return header + payload


def container(sass: list[int], ptx: list[int]) -> bytes:
    body = b"".join(entry(KIND_ELF, a) for a in sass) + b"".join(entry(KIND_PTX, a) for a in ptx)
    return struct.pack("<IHHQ", MAGIC, 1, 16, len(body)) + body


def fatbin(sass: list[int], ptx: list[int], count: int) -> bytes:
    blobs = [container(sass, ptx) for _ in range(count)]
    blobs.append(container([a for a in sass if a >= 80] or sass[-1:], []))  # sm_80+ only kernels
    blobs.append(container([*sass, sass[-1]], ptx))  # a second entry for the newest target
    out = b""
    for blob in blobs:
        out += blob + b"\0" * (-len(blob) % 16)  # the linker aligns each input section
    return out


def run(cmd: list[str]) -> None:
    try:
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    except FileNotFoundError:
        sys.exit(f"error: {cmd[0]} is not installed")
    except subprocess.CalledProcessError as exc:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{exc.stderr}")


def build(arch_list: str, out: Path, containers: int) -> None:
    sass, ptx = parse_arch_list(arch_list)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "fatbin.bin").write_bytes(fatbin(sass, ptx, containers))
        (work / "stub.s").write_text(
            '\t.section .nv_fatbin,"a"\n\t.p2align 4\n\t.incbin "fatbin.bin"\n'
            "\t.text\n\t.globl bnbdoctor_torch_stub\n\t.type bnbdoctor_torch_stub, %function\n"
            "bnbdoctor_torch_stub:\n\tret\n"
        )
        # `as` resolves .incbin against its working directory or -I folders
        run(["as", "--64", "-I", str(work), "-o", str(work / "stub.o"), str(work / "stub.s")])
        flags = ["-shared", "--hash-style=gnu", "--build-id=none", "-z", "noseparate-code"]
        link = ["ld", "-m", "elf_x86_64", *flags, "-soname", "libtorch_cuda.so"]
        run([*link, "-o", str(work / "out"), str(work / "stub.o")])
        run(["strip", "--strip-unneeded", "-R", ".comment", str(work / "out")])
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(work / "out", out)
        out.chmod(0o755)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch-list", required=True, help='TORCH_CUDA_ARCH_LIST, e.g. "7.5;8.0;12.0+PTX"')
    parser.add_argument("--containers", type=int, default=6, help="containers with the full list (default 6)")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    build(args.arch_list, args.output, args.containers)


if __name__ == "__main__":
    main()
