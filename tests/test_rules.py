"""Rules against constructed facts: the edges that recorded machines do not reach."""

from __future__ import annotations

from collections.abc import Sequence

from bnbdoctor.facts import BnbFacts, Facts, GpuDevice, GpuFacts, PlatformFacts, PythonFacts, TorchFacts
from bnbdoctor.findings import Severity
from bnbdoctor.rules import all_rules, get_rule, run_rules

BNB_050 = ["libbitsandbytes_cpu.so"] + [f"libbitsandbytes_cuda{v}.so" for v in (118, 121, 124, 126, 128, 130, 132)]


def make_facts(
    *,
    gpus: Sequence[tuple[str, tuple[int, int]]] = (),
    driver_cuda: str | None = "12.2",
    torch: str | None = "2.5.1+cu121",
    torch_cuda: str | None = "12.1",
    bnb: str | None = "0.50.2",
    packages: dict[str, str | None] | None = None,
    os_name: str = "linux",
    arch: str = "x86_64",
    python: str = "3.11.9",
    legacy: bool = False,
    libs: list[str] | None = None,
    requires_torch: str | None = "<3,>=2.4",
    requires_python: str | None = ">=3.10",
) -> Facts:
    devices = [GpuDevice(i, name, list(cc)) for i, (name, cc) in enumerate(gpus)]
    return Facts(
        platform=PlatformFacts(os=os_name, arch=arch),
        gpu=GpuFacts(
            nvml_available=bool(gpus),
            nvml_error=None if gpus else "NVML Shared Library Not Found",
            nvml_error_kind=None if gpus else "library_not_found",
            driver_version="535.129.03" if gpus else None,
            driver_cuda_version=driver_cuda if gpus else None,
            devices=devices,
        ),
        python=PythonFacts(
            executable="/home/u/venv/bin/python",
            selected_by="VIRTUAL_ENV",
            version=python,
            torch=TorchFacts(installed=torch is not None, version=torch, cuda=torch_cuda),
            bitsandbytes=BnbFacts(
                installed=bnb is not None,
                version=bnb,
                native_libraries=libs if libs is not None else BNB_050,
                has_metadata=True,
                requires_torch=requires_torch if bnb else None,
                requires_python=requires_python if bnb else None,
                legacy_cuda_setup=legacy,
            ),
            packages=packages or {},
        ),
    )


def ids(facts: Facts) -> dict[str, Severity]:
    return {f.rule_id: f.severity for f in run_rules(facts, all_rules()).findings}


def test_healthy_a100_has_no_findings() -> None:
    assert ids(make_facts(gpus=[("NVIDIA A100-SXM4-80GB", (8, 0))])) == {}


def test_driver_major_too_old_is_an_error_minor_is_a_warning() -> None:
    gpus = [("NVIDIA GeForce RTX 3090", (8, 6))]
    assert (
        ids(make_facts(gpus=gpus, driver_cuda="11.8", torch="2.4.0+cu124", torch_cuda="12.4"))["BNB102"]
        is Severity.ERROR
    )
    assert (
        ids(make_facts(gpus=gpus, driver_cuda="12.2", torch="2.4.0+cu124", torch_cuda="12.4"))["BNB102"]
        is Severity.WARNING
    )
    assert "BNB102" not in ids(make_facts(gpus=gpus, driver_cuda="12.4", torch_cuda="12.4"))


def test_driver_finding_suggests_an_index_the_driver_can_run() -> None:
    facts = make_facts(
        gpus=[("NVIDIA GeForce RTX 3090", (8, 6))], driver_cuda="11.8", torch="2.4.0+cu124", torch_cuda="12.4"
    )
    finding = next(f for f in run_rules(facts, all_rules()).findings if f.rule_id == "BNB102")
    assert any("whl/cu118" in c and "torch==2.4.0" in c for c in finding.remediation.commands)


def test_no_gpu_is_info_on_cpu_torch_and_error_on_cuda_torch() -> None:
    assert ids(make_facts(torch="2.5.1+cpu", torch_cuda=None))["BNB101"] is Severity.INFO
    assert ids(make_facts())["BNB101"] is Severity.ERROR


def test_compute_capability_thresholds() -> None:
    # torch cu118 still builds sm_37; torch cu121 has no Kepler kernels, so BNB120 is the root cause there
    kepler_cu118 = ids(make_facts(gpus=[("Tesla K80", (3, 7))], torch="2.5.1+cu118", torch_cuda="11.8"))
    assert kepler_cu118["BNB103"] is Severity.ERROR
    kepler_cu121 = ids(make_facts(gpus=[("Tesla K80", (3, 7))]))
    assert kepler_cu121["BNB120"] is Severity.ERROR and "BNB103" not in kepler_cu121
    found = ids(make_facts(gpus=[("Tesla P100-PCIE-16GB", (6, 0))]))
    assert "BNB103" not in found and found["BNB104"] is Severity.WARNING
    assert "BNB104" not in ids(make_facts(gpus=[("Tesla T4", (7, 5))]))


def test_maxwell_remedy_names_a_release_that_still_has_kernels() -> None:
    facts = make_facts(gpus=[("Tesla M40", (5, 2))], torch="2.1.2+cu118", torch_cuda="11.8")
    finding = next(f for f in run_rules(facts, all_rules()).findings if f.rule_id == "BNB103")
    pip = f"{facts.python.executable} -m pip"  # type: ignore[union-attr]
    # 0.47.0 is the last release with Maxwell kernels, and it requires torch>=2.2: torch 2.1.2 goes
    # first (from the index of its own CUDA), or pip would replace it with PyPI's build.
    assert finding.remediation.commands == [
        f'{pip} install "torch>=2.2,<3" --index-url https://download.pytorch.org/whl/cu118',
        f'{pip} install "bitsandbytes==0.47.0"',
    ]
    assert "no bitsandbytes==0.47.0 release keeps this torch 2.1.2+cu118" in finding.remediation.text.lower()


def test_kepler_has_no_release_to_pin() -> None:
    facts = make_facts(gpus=[("Tesla K80", (3, 7))], torch="2.0.1+cu117", torch_cuda="11.7")
    finding = next(f for f in run_rules(facts, all_rules()).findings if f.rule_id == "BNB103")
    assert finding.remediation.commands == [] and "No bitsandbytes release" in finding.remediation.text


def test_gtx_1650_excluded_by_name_only_before_045() -> None:
    gpus = [("NVIDIA GeForce GTX 1650", (7, 5))]
    assert "BNB104" in ids(
        make_facts(
            gpus=gpus, bnb="0.44.1", libs=["libbitsandbytes_cuda121.so"], requires_torch=None, requires_python=None
        )
    )
    # supports_igemmlt() still exists in 0.45.x but is no longer called
    assert "BNB104" not in ids(
        make_facts(
            gpus=gpus, bnb="0.45.5", libs=["libbitsandbytes_cuda121.so"], requires_torch=None, requires_python=None
        )
    )
    assert "BNB104" not in ids(make_facts(gpus=gpus))


def test_mixed_generations_suggest_masking() -> None:
    facts = make_facts(
        gpus=[("NVIDIA GeForce GT 1030", (6, 1)), ("NVIDIA RTX A6000", (8, 6))],
        bnb="0.41.1",
        requires_torch=None,
        requires_python=None,
        libs=["libbitsandbytes_cuda121.so"],
    )
    finding = next(f for f in run_rules(facts, all_rules()).findings if f.rule_id == "BNB106")
    assert finding.remediation.commands[-1] == "export CUDA_VISIBLE_DEVICES=1"
    assert "BNB106" not in ids(make_facts(gpus=[("A", (8, 0)), ("B", (8, 6))]))
    # from 0.45 the library no longer depends on the GPUs' capability
    assert "BNB106" not in ids(make_facts(gpus=[("NVIDIA GeForce GT 1030", (6, 1)), ("NVIDIA RTX A6000", (8, 6))]))


def test_cuda_130_build_lacks_pascal() -> None:
    facts = make_facts(
        gpus=[("NVIDIA GeForce GTX 1080", (6, 1))], torch="2.9.0+cu130", torch_cuda="13.0", driver_cuda="13.0"
    )
    # torch's own cu130 wheels start at sm_75 too: BNB120 is the root cause, bitsandbytes' BNB105 follows from it
    root = next(f for f in run_rules(facts, all_rules()).findings if f.rule_id == "BNB120")
    assert root.severity is Severity.ERROR and "BNB105" in {f.rule_id for f in root.follows}


def test_cpu_torch_on_gpu_machine() -> None:
    assert ids(make_facts(gpus=[("NVIDIA GeForce RTX 4090", (8, 9))], torch="2.5.1+cpu", torch_cuda=None))["BNB202"]


def test_platform_support_by_release() -> None:
    assert "BNB204" in ids(
        make_facts(
            os_name="windows",
            bnb="0.42.0",
            requires_torch=None,
            requires_python=None,
            libs=["libbitsandbytes_cpu.so", "libbitsandbytes_cuda118.so"],
        )
    )
    assert "BNB204" not in ids(make_facts(os_name="windows", libs=[n.replace(".so", ".dll") for n in BNB_050]))
    assert "BNB204" in ids(make_facts(arch="aarch64", bnb="0.45.5", requires_torch=None, requires_python=None))
    assert "BNB204" in ids(make_facts(os_name="macos", arch="aarch64", bnb="0.48.2", torch_cuda=None, libs=[]))


def test_requirements_from_metadata_and_from_knowledge() -> None:
    assert "BNB206" in ids(make_facts(gpus=[("A100", (8, 0))], torch="2.2.0+cu121"))
    assert "BNB206" in ids(
        make_facts(gpus=[("A100", (8, 0))], python="3.9.18", requires_python=None, requires_torch=None)
    )


def test_triton_ops_and_scipy_and_legacy() -> None:
    gpus = [("A100", (8, 0))]
    assert "BNB207" in ids(make_facts(gpus=gpus, bnb="0.45.0", packages={"triton": "3.2.0"}, requires_torch=None))
    assert "BNB207" not in ids(make_facts(gpus=gpus, bnb="0.45.1", packages={"triton": "3.2.0"}, requires_torch=None))
    assert "BNB207" not in ids(make_facts(gpus=gpus, bnb="0.38.0", packages={"triton": "3.2.0"}, requires_torch=None))
    assert "BNB208" in ids(make_facts(gpus=gpus, bnb="0.41.1", packages={"scipy": None}, requires_torch=None))
    assert ids(make_facts(gpus=gpus, bnb="0.42.0", requires_torch=None))["BNB205"] is Severity.WARNING


def test_a_rule_that_crashes_is_an_error_of_the_report_not_raised_nor_skipped() -> None:
    """A check that raises is a bnbdoctor bug: the report says so as an error under that check's id (never a
    silent "skipped", never a green run), and the other checks still run."""
    from bnbdoctor.rules.engine import crashed

    facts = make_facts()
    assert facts.gpu is not None
    facts.gpu.devices = None  # type: ignore[assignment]  # malformed facts, e.g. from a hostile report
    diagnosis = run_rules(facts, all_rules())
    failed = crashed(diagnosis)
    assert failed and all(f.severity is Severity.ERROR for f in failed)
    assert all("a bnbdoctor bug" in f.title and "TypeError" in f.evidence[0].value for f in failed)
    assert not any(c.reason and "rule failed" in c.reason for c in diagnosis.skipped)
    assert diagnosis.passed, "the checks that do not read the GPU list still ran"


def test_missing_sections_skip_with_the_probe_error() -> None:
    from bnbdoctor.facts import ProbeRun

    facts = Facts(probes=[ProbeRun("gpu", False, 5.0, "timed out after 10s")])
    diagnosis = run_rules(facts, [get_rule("BNB103")])  # type: ignore[list-item]
    assert diagnosis.skipped[0].reason == "gpu: timed out after 10s"


def test_rule_ids_are_unique_stable_and_cover_known_catalog_ids() -> None:
    rules = all_rules()
    assert len({r.id for r in rules}) == len(rules) and len({r.name for r in rules}) == len(rules)
    assert all(r.id.startswith("BNB") and len(r.id) == 6 for r in rules)


def test_rules_for_loads_exactly_the_rules_a_diagnosis_with_those_sections_runs() -> None:
    """The doctor imports only the rules it can run (bnbdoctor.rules.mode_index): for every combination of
    mode sections, the rules it gets are those of all_rules() whose mode needs the facts hold."""
    from bnbdoctor.rules import rules_for
    from bnbdoctor.rules.engine import MODE_SECTIONS

    everything = all_rules()
    for present in ({"probes"}, {"log"}, {"fit"}, {"lint"}, set(), set(MODE_SECTIONS)):
        expected = [r.id for r in everything if set(r.needs) & MODE_SECTIONS <= present]
        assert [r.id for r in rules_for(present)] == expected, present
    doctor = [r.id for r in rules_for({"probes"})]
    assert "BNB101" in doctor and "BNB001" in doctor and not any(i.startswith(("BNB5", "BNB6")) for i in doctor)


def test_a_diagnosis_of_a_recorded_machine_is_the_same_with_only_its_rules() -> None:
    """The same findings, passed and skipped checks with every rule as with the ones the doctor loads."""
    from bnbdoctor.doctor import diagnose_facts, gather
    from bnbdoctor.hosts.fixture import FixtureHost

    for name in ("a100-healthy", "kepler-k80"):
        facts = gather(FixtureHost.named(name))
        every = diagnose_facts(facts, all_rules())
        loaded = diagnose_facts(facts)
        assert (loaded.findings and every.findings) or name == "a100-healthy"
        assert loaded.findings == every.findings, name
        assert [p.rule_id for p in loaded.passed] == [p.rule_id for p in every.passed], name
        assert [s.rule_id for s in loaded.skipped] == [s.rule_id for s in every.skipped], name
