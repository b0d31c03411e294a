"""Hold bnbdoctor's loader model to what the releases really did (the table ``tools/oracle_bnb.py`` wrote).

For each row (a release's wheel, a simulated machine, and what its own import did) this builds the
:class:`~bnbdoctor.knowledge.selection.SelectionInput` the doctor would derive from that machine's
facts, asks :func:`~bnbdoctor.knowledge.selection.select_library`, and compares the observable
outcome: the library file the release ended up holding, whether ``import bitsandbytes`` raised, whether
the first native call fails, and the message the doctor says the user will see. A row where they differ
is a disagreement unless ``EXPLAINED`` gives the reason in words.

    python bench/oracle_selection.py      # R releases, N scenarios, D disagreements
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bnbdoctor.knowledge.selection import LEGACY_CUDART_MISSING, LibrarySelection, SelectionInput

TABLE = Path(__file__).resolve().parent.parent / "tests" / "data" / "oracle" / "bnb_loader.json"
OS_OF_PLATFORM = {"linux": "linux", "windows": "windows", "macos": "macos"}


@dataclass(frozen=True)
class Observed:
    """What a user of that release on that machine sees, reduced to what the doctor predicts."""

    loaded: str | None  # the library file the release holds after import
    import_raises: bool
    first_call_fails: bool

    def describe(self) -> str:
        if self.import_raises:
            return "import raises"
        if self.loaded is None:
            return "no library; first call fails" if self.first_call_fails else "no library"
        return f"holds {self.loaded}" + ("; first call fails" if self.first_call_fails else "")


def load(path: Path = TABLE) -> dict[str, Any]:
    table: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return table


def selection_input(row: dict[str, Any], shipped: list[str]) -> SelectionInput:
    scenario = row["scenario"]
    env = scenario.get("env") or {}
    ccs = [tuple(cc) for cc in scenario.get("ccs") or []]
    available = bool(scenario.get("available")) and bool(ccs or scenario.get("torch_xpu"))
    return SelectionInput(
        bnb_version=row["release"],
        os_name=OS_OF_PLATFORM[row["platform"].split("-")[0]],
        shipped=tuple(shipped),
        torch_cuda=scenario.get("torch_cuda"),
        torch_hip=scenario.get("torch_hip"),
        torch_xpu=scenario.get("torch_xpu"),
        gpu_available=available,
        highest_cc=max(ccs) if ccs else None,
        bnb_cuda_version=env.get("BNB_CUDA_VERSION"),
        bnb_rocm_version=env.get("BNB_ROCM_VERSION"),
        legacy_cudart=(scenario.get("system_cuda") if scenario.get("system_files") else LEGACY_CUDART_MISSING)
        if scenario.get("torch_cuda")
        else None,
    )


def with_fault(inputs: SelectionInput, row: dict[str, Any]) -> SelectionInput:
    """The scenario's loader fault, where it hits the file the release chooses: another architecture hits
    every library, a missing CUDA dependency only a GPU one."""
    fault = row["scenario"].get("fault")
    chosen = inputs.select()
    if fault is None or chosen is None or chosen.loaded_file is None:
        return inputs
    if fault == "missing_dependency" and chosen.loaded_file.startswith("libbitsandbytes_cpu"):
        return inputs
    return replace(inputs, load_fails=True)


def observed(row: dict[str, Any]) -> Observed:
    outcome = row["outcome"]
    first = outcome.get("first_call")
    return Observed(
        loaded=outcome.get("loaded"),
        import_raises=outcome["import"] != "ok",
        first_call_fails=first not in (None, "ok"),
    )


def predicted(selection: LibrarySelection, fault: str | None) -> Observed:
    """The observation bnbdoctor's prediction implies."""
    if selection.outcome == "import_error":
        return Observed(None, True, False)
    if selection.outcome in ("error_on_first_call", "override_error"):
        return Observed(None, False, True)
    return Observed(selection.loaded_file, False, selection.loaded_file is None)


def _plain(text: str) -> str:
    """A message as words: the package folder and pathlib's ``PosixPath('…')`` wrapping dropped (the doctor
    names the library by its file name), whitespace collapsed."""
    text = re.sub(r"(?:Posix|Windows)Path\('([^']*)'\)", r"'\1'", text)
    return re.sub(r"\s+", " ", text.replace("<package>/", "").replace("<package>\\", "")).strip()


def message_seen(selection: LibrarySelection, row: dict[str, Any]) -> bool:
    """Whether the message the doctor attributes to this outcome is among what the release said."""
    if not selection.message:
        return True
    said = " ".join(_plain(m) for m in row["outcome"]["messages"]) + " " + _plain(row["outcome"]["import"])
    wanted = _plain(selection.message).replace("'", "")
    return wanted in said.replace("'", "")


@dataclass(frozen=True)
class Disagreement:
    row: dict[str, Any]
    what: str
    reason: str | None = None  # why it is not a bug in bnbdoctor, when it is not

    def line(self) -> str:
        r = self.row
        return f"{r['release']} {r['wheel']} {r['platform']} [{r['label']}]: {self.what}"


#: Disagreements that are not bnbdoctor's to fix, each with its reason: (a test on the row, the reason).
EXPLAINED: list[tuple[Any, str]] = []


def _explain(row: dict[str, Any], what: str) -> Disagreement:
    for applies, reason in EXPLAINED:
        if applies(row):
            return Disagreement(row, what, reason)
    return Disagreement(row, what)


XPU_REASON = (
    "the harness's torch is a CPU build: bitsandbytes (0.47+) makes tensors on the XPU device at import, which only "
    "an XPU build of torch can; the loader's choice before that (the file asked for) agrees"
)


def _xpu_tensor_in_cpu_torch(row: dict[str, Any]) -> bool:
    return bool(row["scenario"].get("torch_xpu")) and "not linked with support for xpu" in row["outcome"]["import"]


def disagreements(table: dict[str, Any]) -> list[Disagreement]:
    shipped = table["header"]["shipped"]
    found = []
    for row in table["rows"]:
        if row["outcome"]["import"].startswith("harness:"):
            found.append(_explain(row, "the harness failed: " + row["outcome"]["import"]))
            continue
        inputs = with_fault(selection_input(row, shipped[f"{row['release']} {row['wheel']}"]), row)
        selection = inputs.select()
        if selection is None:
            found.append(_explain(row, "bnbdoctor has no prediction"))
            continue
        fault = row["scenario"].get("fault")
        if _xpu_tensor_in_cpu_torch(row):
            asked = [a for a in row["outcome"]["asked"] if "libbitsandbytes" in a]
            last = asked[-1] if asked else "nothing"
            what = f"bnbdoctor predicts {selection.expected_file}, the release asked for {last}"
            if asked and asked[-1] == selection.expected_file:
                found.append(Disagreement(row, what, XPU_REASON))
            else:
                found.append(_explain(row, what))
            continue
        want, got = predicted(selection, fault), observed(row)
        if want != got:
            found.append(_explain(row, f"bnbdoctor predicts {want.describe()}, the release {got.describe()}"))
        elif not message_seen(selection, row):
            found.append(_explain(row, f"bnbdoctor's message {selection.message!r} is not what the release said"))
    return found
