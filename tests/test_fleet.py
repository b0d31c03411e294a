"""``bnbdoctor fleet``: reading reports (the fast path agrees with a full decode), groups, formats,
exit codes, --nagios, --pseudonymize-nodes, and ``-o DIR/%N.json``."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import ROOT, fixture_names

from bnbdoctor.contract import expand_output_path
from bnbdoctor.doctor import diagnose
from bnbdoctor.fleet import cli as fleet_cli
from bnbdoctor.fleet.aggregate import aggregate, pseudonym
from bnbdoctor.fleet.extract import _fast, summarize, summarize_dict
from bnbdoctor.fleet.inputs import iter_reports
from bnbdoctor.fleet.schema import fleet_schema
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.probes import ProbeOptions
from bnbdoctor.redact import Redactor
from bnbdoctor.render.json import render_json
from bnbdoctor.report_io import ReportError, redact_report


def _report_text(name: str) -> str:
    host = FixtureHost.named(name)
    report = diagnose(host, ProbeOptions(load=True))
    return render_json(redact_report(report, Redactor.for_machine(host.os_info())))


@pytest.fixture(scope="module")
def reports() -> dict[str, str]:
    return {name: _report_text(name) for name in fixture_names()}


def test_the_fast_path_agrees_with_a_full_decode_on_every_recorded_machine(reports: dict[str, str]) -> None:
    for name, text in reports.items():
        fast = _fast(text, name)
        assert fast is not None, f"{name}: the fast path gave up on a report as --json writes it"
        assert fast == summarize_dict(json.loads(text), name), name
        compact = json.dumps(json.loads(text))  # JSON Lines: decoded whole
        assert _fast(compact, name) is None
        assert summarize(compact, name) == fast, name


def test_escapes_in_a_title_are_read_as_json_reads_them(reports: dict[str, str]) -> None:
    data = json.loads(reports["driver-cuda118-torch-cu124"])
    data["findings"][0]["title"] = 'a "quoted" title\nwith a \\ backslash and ü'
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    assert summarize(text).findings[0].title == data["findings"][0]["title"]


def _folder(tmp_path: Path, reports: dict[str, str], layout: dict[str, str]) -> Path:
    folder = tmp_path / "reports"
    folder.mkdir()
    for node, machine in layout.items():
        (folder / f"{node}.json").write_text(reports[machine], encoding="utf-8")
    return folder


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = fleet_cli.main(argv)
    return code, capsys.readouterr().out


@pytest.fixture
def cluster(tmp_path: Path, reports: dict[str, str]) -> Path:
    layout = {f"gpu{i:02d}": "a100-healthy" for i in range(1, 8)}
    layout["gpu08"] = "driver-cuda118-torch-cu124"
    layout["gpu09"] = "rtx4090-torch-cpu"
    return _folder(tmp_path, reports, layout)


def test_groups_largest_first_with_what_differs(cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run([str(cluster), "--json"], capsys)
    assert code == 1  # two nodes have error findings
    data = json.loads(out)
    jsonschema.validate(data, fleet_schema())
    assert data["nodes"] == 9
    assert [g["count"] for g in data["groups"]] == [7, 1, 1]
    assert data["groups"][0]["status"] == "ok" and data["groups"][0]["nodes"][0] == "gpu01"
    assert {g["nodes"][0] for g in data["groups"][1:]} == {"gpu08", "gpu09"}
    assert {"driver", "torch", "findings"} <= set(data["differs"])
    code, text = _run([str(cluster)], capsys)
    assert "9 nodes in 3 groups" in text
    assert "group 1: 7 nodes, no findings: gpu01" in text  # the healthy majority: one line
    assert "BNB102" in text and "BNB202" in text
    code, markdown = _run([str(cluster), "--markdown"], capsys)
    assert markdown.startswith("## bnbdoctor fleet") and "| driver |" in markdown


def test_nagios_states(
    cluster: Path, tmp_path: Path, reports: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _run([str(cluster), "--nagios"], capsys)
    assert code == 2 and out.startswith("BNBDOCTOR CRITICAL - 9 nodes") and "| nodes=9" in out
    healthy = tmp_path / "healthy"
    healthy.mkdir()
    (healthy / "a.json").write_text(reports["a100-healthy"], encoding="utf-8")
    assert _run([str(healthy), "--nagios"], capsys)[0] == 0
    assert _run([str(healthy)], capsys)[0] == 0
    (healthy / "b.json").write_text(reports["a100-healthy"][:500], encoding="utf-8")  # cut off
    assert _run([str(healthy), "--nagios"], capsys)[0] == 1
    assert _run([str(healthy)], capsys)[0] == 1
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "x.json").write_text("{", encoding="utf-8")
    assert _run([str(broken), "--nagios"], capsys)[0] == 3
    assert _run([str(broken)], capsys)[0] == 2


def test_pseudonymized_nodes_are_stable_and_hide_the_names(cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out = _run([str(cluster), "--json", "--pseudonymize-nodes"], capsys)
    assert "gpu0" not in out
    data = json.loads(out)
    assert data["pseudonymized"] is True
    assert pseudonym("gpu01") in data["groups"][0]["nodes"]
    assert _run([str(cluster), "--json", "--pseudonymize-nodes"], capsys)[1].count(pseudonym("gpu09")) == 1


def test_globs_files_and_json_lines(cluster: Path, reports: dict[str, str]) -> None:
    lines = []
    for node, machine in (("n1", "a100-healthy"), ("n2", "rtx4090-torch-cpu")):
        data = json.loads(reports[machine])
        data["facts"]["env"]["SLURMD_NODENAME"] = node
        lines.append(json.dumps(data))
    stdin = io.StringIO("\n".join(lines) + "\n\n")
    items = list(iter_reports([str(cluster / "gpu0[1-2].json"), str(cluster / "gpu09.json"), "-"], stdin=stdin))
    assert [item.node for item in items] == ["gpu01", "gpu02", "gpu09", "n1", "n2"]
    fleet = aggregate(iter(items))
    assert fleet.nodes == 5 and not fleet.unreadable


def test_a_path_that_names_nothing_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert fleet_cli.main([str(tmp_path / "nothing-*.json")]) == 2
    assert "no file matches" in capsys.readouterr().err
    assert fleet_cli.main([str(tmp_path / "missing.json"), "--nagios"]) == 3


def test_a_secret_in_a_title_is_masked(reports: dict[str, str], tmp_path: Path) -> None:
    data: dict[str, Any] = json.loads(reports["driver-cuda118-torch-cu124"])
    data["findings"][0]["title"] = "see https://alice:hunter2secret@example.com/x"
    path = tmp_path / "n.json"
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    fleet = aggregate(iter_reports([str(path)]))
    assert "hunter2secret" not in json.dumps([f.title for g in fleet.groups for f in g.findings])


def test_committed_fleet_schema_is_current() -> None:
    committed = json.loads((ROOT / "docs" / "fleet.schema.json").read_text(encoding="utf-8"))
    assert committed == fleet_schema(), "run: python -m bnbdoctor.fleet.schema > docs/fleet.schema.json"


def test_output_names_expand_node_and_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLURMD_NODENAME", raising=False)
    monkeypatch.delenv("NODE_NAME", raising=False)
    monkeypatch.setattr("bnbdoctor.contract.host_name", lambda: "box.example.org")
    assert expand_output_path("out/%N.json") == "out/box.example.org.json"
    monkeypatch.setenv("NODE_NAME", "k8s-node-3")
    assert expand_output_path("out/%N-%h.json") == "out/k8s-node-3-box.example.org.json"
    monkeypatch.setenv("SLURMD_NODENAME", "../gpu/07")
    assert expand_output_path("out/%N.json") == "out/_gpu_07.json"  # a name never adds a folder
    assert expand_output_path("100%%-%x.json") == "100%-%x.json"
    assert expand_output_path("plain.json") == "plain.json"


def test_the_doctor_writes_to_a_node_named_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bnbdoctor.cli import main

    monkeypatch.setenv("SLURMD_NODENAME", "gpu42")
    assert main(["--fixture", "a100-healthy", "--json", "-o", str(tmp_path / "%N.json")]) == 0
    assert json.loads((tmp_path / "gpu42.json").read_text(encoding="utf-8"))["tool"] == "bnbdoctor"


def test_a_report_unlike_the_layout_is_decoded_whole(reports: dict[str, str]) -> None:
    data = json.loads(reports["driver-cuda118-torch-cu124"])
    del data["findings"][0]["title"]
    text = json.dumps(data, indent=2) + "\n"
    deep = text.replace('"gpu": {', '"gpu": {"deep": ' + "[" * 100_000 + "]" * 100_000 + ",", 1)
    with pytest.raises(ReportError, match="nested too deeply"):
        summarize(deep)  # the fast path's decoder gives up; the whole decode says why in one line
    assert summarize(text) == summarize_dict(data)
    assert summarize(text).findings[0].title == ""


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(findings=7),
        lambda d: d["facts"].update(gpu=[1]),
        lambda d: d["facts"]["gpu"].update(devices=5),
        lambda d: d["facts"]["python"].update(torch="x"),
        lambda d: d["facts"].update(python=None),
        lambda d: d.update(schema_version="1"),
        lambda d: d.update(facts=None),
    ],
)
def test_a_report_of_the_wrong_shape_is_a_group_or_one_line_never_a_crash(
    change: Any, reports: dict[str, str], tmp_path: Path
) -> None:
    data = json.loads(reports["driver-cuda118-torch-cu124"])
    change(data)
    for name, text in (("pretty.json", json.dumps(data, indent=2) + "\n"), ("compact.jsonl", json.dumps(data))):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        fleet = aggregate(iter_reports([str(path)]))
        assert fleet.nodes + len(fleet.unreadable) == 1


def test_a_json_line_whose_node_name_was_redacted_is_named_by_its_line(reports: dict[str, str]) -> None:
    """Redaction turns a node name that is also the host name into <host>; no other name survives it
    (the env allowlist carries only SLURMD_NODENAME and NODE_NAME), so such a line is ``stdin:N``,
    and an unredacted NODE_NAME (a Kubernetes node, not the pod's host name) is used instead."""
    data = json.loads(reports["a100-healthy"])
    data["facts"]["env"]["SLURMD_NODENAME"] = "gpu017"
    redacted = Redactor(host="gpu017.cluster.example").walk(data)
    assert redacted["facts"]["env"]["SLURMD_NODENAME"] == "<host>"
    assert "gpu017" not in json.dumps(redacted)
    kubernetes = json.loads(json.dumps(redacted))
    kubernetes["facts"]["env"]["NODE_NAME"] = "k8s-node-3"
    stdin = io.StringIO(json.dumps(redacted) + "\n" + json.dumps(kubernetes) + "\n")
    assert [item.node for item in iter_reports(["-"], stdin=stdin)] == ["stdin:1", "k8s-node-3"]
