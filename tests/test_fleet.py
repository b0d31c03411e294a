"""``bnbdoctor fleet``: reading reports (the fast path agrees with a full decode), groups, formats,
exit codes, --nagios, --pseudonymize-nodes, and ``-o DIR/%N.json``."""

from __future__ import annotations

import codecs
import io
import json
import os
import random
import threading
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import ROOT, fixture_names

from bnbdoctor.contract import expand_output_path
from bnbdoctor.doctor import diagnose
from bnbdoctor.fleet import cli as fleet_cli
from bnbdoctor.fleet.aggregate import aggregate, pseudonym
from bnbdoctor.fleet.decode import decode_summary
from bnbdoctor.fleet.extract import summarize, summarize_dict
from bnbdoctor.fleet.inputs import iter_reports
from bnbdoctor.fleet.schema import fleet_schema
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.probes import ProbeOptions
from bnbdoctor.redact import Redactor
from bnbdoctor.render.json import render_json
from bnbdoctor.report_io import MAX_REPORT_BYTES, ReportError, redact_report


def _report_text(name: str) -> str:
    host = FixtureHost.named(name)
    report = diagnose(host, ProbeOptions(load=True))
    return render_json(redact_report(report, Redactor.for_machine(host.os_info())))


@pytest.fixture(scope="module")
def reports() -> dict[str, str]:
    return {name: _report_text(name) for name in fixture_names()}


def _shuffled(value: object, rng: random.Random) -> object:
    """The same JSON value with every object's keys in another order."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {key: _shuffled(value[key], rng) for key in keys}
    if isinstance(value, list):
        return [_shuffled(item, rng) for item in value]
    return value


def test_every_layout_is_read_by_the_typed_decoder_as_a_full_decode_reads_it(reports: dict[str, str]) -> None:
    """Issue 26 item 2: indented, compact, shuffled keys: one typed decoder, the same summary as json.loads."""
    rng = random.Random(26)
    for name, text in reports.items():
        whole = summarize_dict(json.loads(text), name)
        data = json.loads(text)
        for layout in (text, json.dumps(data), json.dumps(_shuffled(data, rng), indent=4)):
            assert decode_summary(layout) is not None, f"{name}: the typed decoder gave up on a valid report"
            assert summarize(layout, name) == whole, name


def test_what_the_typed_decoder_cannot_type_is_decoded_whole_with_its_one_line() -> None:
    assert decode_summary('{"tool": "bnbdoctor", "facts": {"gpu": 5}}') is None  # a member of the wrong type
    assert decode_summary("not json") is None and decode_summary("[1, 2]") is None
    with pytest.raises(ReportError, match="not valid JSON"):
        summarize('{"tool": "bnbdoctor", "schema_version": 1,', "cut.json")


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


# -- issue 25, item 14: what a fleet's inputs may hold -------------------------------------------------


def test_a_node_name_is_printed_with_its_escapes_never_raw(
    reports: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Terminal escape sequences in a node's name reached the admin's terminal, and a newline forged a line."""
    lines = []
    for name in ("gpu1\x1b]0;pwned\x07\x1b[2J\x1b[31mEVIL", "gpu7\nBNBDOCTOR OK - 0 errors on 2 nodes", "n\u202egpj"):
        data = json.loads(reports["centos7-cxxabi"])
        data["facts"]["env"]["SLURMD_NODENAME"] = name
        lines.append(json.dumps(data))
    (tmp_path / "nodes.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    weird = tmp_path / "x\x1b[31mred.json"
    weird.write_text(reports["a100-healthy"], encoding="utf-8")
    for fmt in ("--text", "--markdown", "--json"):
        code, out = _run([str(tmp_path), fmt], capsys)
        assert code == 1
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
        assert not any(line.startswith("BNBDOCTOR OK") for line in out.splitlines())
    code, out = _run([str(tmp_path), "--text"], capsys)
    assert "gpu1\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mEVIL" in out and "gpu7\\nBNBDOCTOR OK" in out
    assert "x\\x1b[31mred" in out


def test_two_reports_naming_one_node_are_told_apart(
    reports: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two machines called gpu1 were 2 nodes, both shown as "gpu1", without a word."""
    for rack, machine in (("rack1", "centos7-cxxabi"), ("rack2", "a100-healthy")):
        (tmp_path / rack).mkdir()
        (tmp_path / rack / "gpu1.json").write_text(reports[machine], encoding="utf-8")
    code = fleet_cli.main([str(tmp_path / "rack1"), str(tmp_path / "rack2")])
    captured = capsys.readouterr()
    assert code == 1
    first, second = (str(tmp_path / rack / "gpu1.json") for rack in ("rack1", "rack2"))
    assert f"error: gpu1 ({first})" in captured.out and f"no findings: gpu1 ({second})" in captured.out
    assert f"duplicate node name: gpu1 is the name of 2 reports: gpu1 ({first}), gpu1 ({second})" in captured.out
    assert "duplicate node name: gpu1" in captured.err
    fleet = aggregate(iter_reports([str(tmp_path / "rack1"), str(tmp_path / "rack2")]), pseudonymize=True)
    assert [d.shown_as for d in fleet.duplicates] == [[f"{pseudonym('gpu1')} #1", f"{pseudonym('gpu1')} #2"]]
    assert str(tmp_path) not in json.dumps(fleet_report_json(fleet))


def fleet_report_json(fleet: Any) -> Any:
    from bnbdoctor.serde import to_jsonable

    return to_jsonable(fleet)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_in_a_folder_of_reports_is_unreadable_not_waited_on(
    reports: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "node1.json").write_text(reports["cpu-laptop"], encoding="utf-8")
    os.mkfifo(tmp_path / "node2.json")
    box: list[int] = []
    worker = threading.Thread(target=lambda: box.append(fleet_cli.main([str(tmp_path)])), daemon=True)
    worker.start()
    worker.join(20)
    assert box, "fleet blocked on the FIFO"
    assert "node2.json is not a regular file" in capsys.readouterr().err
    # named on the command line, a FIFO without a writer is read as what it holds: nothing
    named = list(iter_reports([str(tmp_path / "node2.json")]))
    assert [item.text for item in named] == [""]


class _Endless(io.RawIOBase):
    """``/dev/zero`` or ``/dev/urandom`` on stdin: bytes without end, counting how many were read."""

    def __init__(self, byte: int | None) -> None:
        self.byte, self.given = byte, 0
        self._random = __import__("random").Random(7)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size = len(buffer)
        buffer[:size] = bytes(size) if self.byte == 0 else self._random.randbytes(size)
        self.given += size
        return size


@pytest.mark.parametrize("byte", [0, None], ids=["dev-zero", "dev-urandom"])
def test_endless_bytes_on_stdin_are_one_unreadable_entry_in_bounded_memory(byte: int | None) -> None:
    """JSON Lines were read a whole line before the 32 MiB check: ``fleet - < /dev/zero`` grew without bound."""
    raw = _Endless(byte)
    stdin = io.TextIOWrapper(io.BufferedReader(raw))
    items = list(iter_reports(["-"], stdin=stdin))
    assert len(items) == 1 and items[0].error is not None and "the rest of stdin is not read" in items[0].error
    assert raw.given <= MAX_REPORT_BYTES + 2**20


def test_reports_saved_as_utf16_or_with_a_bom_are_read(reports: dict[str, str], tmp_path: Path) -> None:
    """Issue 25, item 18: what PowerShell 5's ``>`` writes (UTF-16 LE with a BOM) and UTF-8 with a BOM."""
    text = reports["centos7-cxxabi"]
    line = json.dumps(json.loads(text))
    (tmp_path / "ps5.json").write_bytes(codecs.BOM_UTF16_LE + text.encode("utf-16-le"))
    (tmp_path / "bom.json").write_bytes(codecs.BOM_UTF8 + text.encode("utf-8"))
    (tmp_path / "be.json").write_bytes(codecs.BOM_UTF16_BE + text.encode("utf-16-be"))
    (tmp_path / "ps5.jsonl").write_bytes(codecs.BOM_UTF16_LE + f"{line}\r\n{line}\r\n".encode("utf-16-le"))
    fleet = aggregate(iter_reports([str(tmp_path)]))
    assert not fleet.unreadable and fleet.nodes == 5 and len(fleet.groups) == 1
