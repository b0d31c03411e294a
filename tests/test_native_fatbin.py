"""torch's arch list from the ``.nv_fatbin`` headers of its CUDA library: a real ELF built by
tools/make_torch_stub.py (the recorded machine's libtorch_cuda.so), bounded reads, corrupt input,
the probe through both hosts, and the same list read from torch's own warning in a log."""

from __future__ import annotations

import struct
from pathlib import Path

from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from bnbdoctor.explain import explain_text
from bnbdoctor.hosts.base import FileReader, open_file_reader
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.knowledge.torch_wheels import TORCH_BUILDS, arch_runs_on, builds_for, recorded_list
from bnbdoctor.native.fatbin import FATBIN_MAGIC, read_fatbin_archs
from bnbdoctor.probes import PROBES, ProbeContext, run_probes

FIXTURE = "pascal-gtx1080-torch-cu128"
STUB = (
    ROOT
    / "platform_fixtures"
    / FIXTURE
    / "root/home/carol/venvs/qlora/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so"
)
BNB_STUB = STUB.parents[2] / "bitsandbytes" / "libbitsandbytes_cuda128.so"


class BytesReader:
    """A reader over bytes that records every read (offset, count)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.size, self.reads = data, len(data), []  # type: ignore[var-annotated]

    def read_at(self, offset: int, count: int) -> bytes:
        self.reads.append((offset, count))
        return self.data[offset : offset + count] if offset >= 0 else b""


def _read(path: Path) -> FileReader:
    reader = open_file_reader(str(path))
    assert reader is not None
    return reader


def test_the_stub_reads_as_its_arch_list() -> None:
    with _read(STUB) as reader:
        found = read_fatbin_archs(reader)
    assert found.error is None and found.complete
    assert found.sass == (75, 80, 86, 90, 100, 120) and found.ptx == (120,)
    # 6 full containers + 1 with the extra entry share the list; the sm_80+ one does not
    assert (found.containers, found.sharing) == (8, 7)


def test_only_headers_are_read() -> None:
    data = STUB.read_bytes()
    reader = BytesReader(data)
    found = read_fatbin_archs(reader)
    assert found.section_offset is not None and found.section_size is not None
    start, end = found.section_offset, found.section_offset + found.section_size
    inside = [(o, c) for o, c in reader.reads if start <= o < end]
    # every read inside the section is a container header, an entry header or alignment padding
    assert inside and all(c <= 68 for _, c in inside)
    payload_bytes = found.section_size - 16 * found.containers - 64 * found.entries
    assert sum(c for _, c in inside) < found.section_size + 68 * 8
    assert payload_bytes > 0


def test_a_library_without_device_code() -> None:
    with _read(BNB_STUB) as reader:
        found = read_fatbin_archs(reader)
    assert found.error == "no .nv_fatbin section (no CUDA device code in this library)"
    assert found.sass == ()


def test_not_elf_and_empty() -> None:
    assert (read_fatbin_archs(BytesReader(b"MZ\x90\x00" + b"\0" * 200)).error or "").startswith("not an ELF file")
    assert read_fatbin_archs(BytesReader(b"")).error


def test_a_wrong_magic_stops_with_what_was_read() -> None:
    data = bytearray(STUB.read_bytes())
    found = read_fatbin_archs(BytesReader(bytes(data)))
    assert found.section_offset is not None
    # break the third container's magic: the first two still count
    at, seen = found.section_offset, 0
    magic = struct.pack("<I", FATBIN_MAGIC)
    while seen < 3:
        at = data.index(magic, at + (1 if seen else 0))
        seen += 1
    data[at : at + 4] = b"\xde\xad\xbe\xef"
    broken = read_fatbin_archs(BytesReader(bytes(data)))
    assert broken.error and "no fatbin container" in broken.error
    assert broken.containers == 2 and broken.sass == found.sass and not broken.complete


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_corrupt_bytes_never_raise(data: st.DataObject) -> None:
    raw = bytearray(STUB.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    found = read_fatbin_archs(BytesReader(bytes(raw[:cut])))
    assert found.error is None or isinstance(found.error, str)


def test_probe_reads_the_recorded_machine() -> None:
    host = FixtureHost.named(FIXTURE)
    facts = run_probes(PROBES, ProbeContext(host))
    arch = facts.torch_arch
    assert arch is not None and arch.source == "fatbin" and arch.error is None
    assert arch.sass == [75, 80, 86, 90, 100, 120] and arch.ptx == [120]
    assert arch.library and arch.library.endswith("/torch/lib/libtorch_cuda.so")


def test_probe_without_the_library_says_why() -> None:
    facts = run_probes(PROBES, ProbeContext(FixtureHost.named("rtx5090-torch-cu124")))
    arch = facts.torch_arch
    assert arch is not None and arch.source == "none" and arch.sass == []
    assert arch.error and "libtorch_cuda.so is not there" in arch.error


def test_cpu_torch_has_nothing_to_read() -> None:
    facts = run_probes(PROBES, ProbeContext(FixtureHost.named("rtx4090-torch-cpu")))
    assert facts.torch_arch is None


# ------------------------------------------------------------------------------ the table
def test_cuda_compatibility_rules() -> None:
    assert arch_runs_on((60,), (), (6, 1)) and not arch_runs_on((61,), (), (6, 0))
    assert not arch_runs_on((75, 80, 86, 90), (), (12, 0))
    assert arch_runs_on((75,), (90,), (12, 0))  # PTX JIT
    assert not arch_runs_on((80, 86), (), (8, 7)) and arch_runs_on((87,), (), (8, 7))  # Jetson Orin


def test_table_rows_and_fixes() -> None:
    assert len({(b.release, b.cuda) for b in TORCH_BUILDS}) == len(TORCH_BUILDS)
    exact = recorded_list("2.8.0+cu128", "12.8")
    assert exact is not None and exact.exact and exact.build.sass[0] == 70
    guess = recorded_list("2.11.0+cu128", "12.8")
    assert guess is not None and not guess.exact and guess.build.release == "2.9.0"
    assert recorded_list("2.3.0+cu121", "12.1") is None
    pascal = builds_for((6, 1))
    assert pascal[0].flavor == "cu126" and all(b.flavor not in ("cu128", "cu129", "cu130") for b in pascal)
    assert builds_for((12, 0)) and all(b.flavor in ("cu128", "cu129", "cu130", "cu132") for b in builds_for((12, 0)))


# ------------------------------------------------------------------------------ the log
def test_torch_213_warning_gives_the_list() -> None:
    log = "\n".join(
        [
            "Found GPU0 NVIDIA GeForce GTX 1080 which is of compute capability (CC) 6.1.",
            "The following list shows the CCs this version of PyTorch was built for and the hardware CCs it supports:",
            "- 7.5 which supports hardware CC >=7.5",
            "- 8.0 which supports hardware CC >=8.0,!=8.7",
            "- 12.0 which supports hardware CC >=12.0",
            "Your installed torch==2.13.0+cu129 does not include kernels for this GPU. Reinstall the same version",
            "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        ]
    )
    report = explain_text(log)
    assert report.facts.torch_arch is not None and report.facts.torch_arch.sass == [75, 80, 120]
    assert report.findings and report.findings[0].rule_id == "BNB120"
