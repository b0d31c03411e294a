"""Write a rule case from what the rule concludes today (then review the expectation by hand).

    python tools/make_rule_case.py BNB103 fires-kepler --fixture kepler-k80 [--example]
    python tools/make_rule_case.py BNB512 fires-triton --log tests/data/real_logs/triton_ops_module_missing.txt
    python tools/make_rule_case.py BNB207 fires-0450 --fixture a100-healthy \
        --set python.bitsandbytes.version='"0.45.0"' --set 'python.packages.triton="3.2.0"' -d "..."
    python tools/make_rule_case.py BNB207 passes-0451 --from-case BNB207/fires-0450 --set ...

``--set PATH=JSON`` edits the base facts (format: bnbdoctor/ruledocs/cases.py). ``--inline`` stores
the whole facts object instead of a reference to the fixture or log. The expectation written is the
rule's current result: a case records behaviour someone has checked, so read it before committing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bnbdoctor.ruledocs.cases import CASES, RuleCase, base_data, load_case, run_case  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rule")
    parser.add_argument("name")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--fixture")
    source.add_argument("--log")
    source.add_argument("--from-case", help="start from another case's base and edits (RULE/NAME)")
    parser.add_argument("--set", action="append", default=[], metavar="PATH=JSON")
    parser.add_argument("-d", "--description", default="")
    parser.add_argument("--example", action="store_true")
    parser.add_argument("--inline", action="store_true")
    args = parser.parse_args()

    edits: dict[str, object] = {}
    if args.from_case:
        other = load_case(CASES / f"{args.from_case}.json")
        base, edits = other.base, dict(other.edits)
    else:
        base = {"fixture": args.fixture} if args.fixture else {"log": args.log}
    for item in args.set:
        path, _, value = item.partition("=")
        edits[path] = json.loads(value)
    path = CASES / args.rule / f"{args.name}.json"
    case = RuleCase(args.rule, args.name, path, args.description, base, edits)
    if args.inline:
        case.base = {"facts": base_data(case)}
    diagnosis = run_case(case)
    expect: dict[str, object] = {"fires": bool(diagnosis.findings)}
    if diagnosis.findings:
        first = diagnosis.findings[0]
        expect.update(severity=first.severity.value, covers=sorted(first.covers), title=first.title)
    elif diagnosis.skipped:
        print(f"note: the rule did not run: {diagnosis.skipped[0].reason}", file=sys.stderr)
    data: dict[str, object] = {"description": args.description, "base": case.base}
    if edits:
        data["set"] = edits
    data["expect"] = expect
    if args.example:
        data["example"] = True
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{path.relative_to(ROOT)}: {json.dumps(expect, ensure_ascii=False)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
