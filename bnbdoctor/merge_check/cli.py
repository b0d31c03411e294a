"""``bnbdoctor merge-check ADAPTER [--base MODEL]``: how much of a LoRA adapter survives each way of merging.

Follows bnbdoctor's contract: stdout is data (``--json`` is one JSON document, ``--markdown`` an issue
body; every format redacted unless ``--no-redact``, as the doctor's), messages go to stderr, bad input is
one line and exit 2. Exit 1 when merging into the 4-bit model keeps less than half of the update (or nothing
could be measured), 0 otherwise.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from bnbdoctor import __version__
from bnbdoctor.argparsing import Parser, options_from
from bnbdoctor.contract import guarded
from bnbdoctor.merge_check.core import BLOCKSIZES, QUANT_TYPES, MergeInputError, MergeOptions
from bnbdoctor.merge_check_result import LOW_KEPT, WAYS, MergeCheck
from bnbdoctor.render import OutputFormat, ReportKind
from bnbdoctor.render.options import add_output_arguments, emit
from bnbdoctor.report import ExitCode
from bnbdoctor.report_io import add_redaction_arguments

if TYPE_CHECKING:
    from bnbdoctor.redact import Redactor


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="bnbdoctor merge-check",
        description=(
            "Measure, with your own torch and bitsandbytes (CPU is enough), how much of a LoRA adapter's update "
            "each way of merging keeps: into the 4-bit model, into the 16-bit base, into the dequantized base, "
            "or into the 16-bit base then quantized once."
        ),
    )
    parser.add_argument("adapter", metavar="ADAPTER", help="a LoRA adapter folder saved by peft")
    parser.add_argument(
        "--base", metavar="MODEL", help="the base model: a folder or a cached Hub id (default: the adapter config's)"
    )
    parser.add_argument("--quant-type", choices=QUANT_TYPES, default="nf4", help="the 4-bit type trained under")
    parser.add_argument("--blocksize", type=int, choices=BLOCKSIZES, default=64, help="4-bit blocksize (default 64)")
    parser.add_argument("--double-quant", action="store_true", help="bnb_4bit_use_double_quant=True")
    parser.add_argument("--python", metavar="PATH", help="the interpreter whose torch/bitsandbytes to use")
    parser.add_argument("--max-layers", type=int, metavar="N", help="measure only the first N adapted layers")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="S", help="time limit (default 600 s)")
    add_output_arguments(parser, ReportKind.MERGE_CHECK)
    add_redaction_arguments(parser)
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"bnbdoctor {__version__}")
    return parser


def exit_code(check: MergeCheck) -> ExitCode:
    kept = check.overall.get("4bit")
    if check.error or kept is None or kept.kept is None or kept.kept < LOW_KEPT:
        return ExitCode.FINDINGS
    return ExitCode.OK


def redacted(check: MergeCheck, redactor: Redactor) -> MergeCheck:
    """A copy of ``check`` with identity and secrets replaced in every string (the home folder becomes ``~``):
    what ``--markdown`` shows, to be pasted into a public issue."""
    from bnbdoctor.serde import field_names, from_dict, to_jsonable

    return from_dict(MergeCheck, redactor.walk(to_jsonable(check), field_names(MergeCheck) | frozenset(WAYS)))


def main(argv: list[str]) -> int:
    os.environ["HF_HUB_OFFLINE"] = "1"  # inherited by the engine: never the network
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else int(ExitCode.FAILURE)

    def body() -> int:
        from bnbdoctor.merge_check.core import run_merge_check
        from bnbdoctor.progress import status

        options = options_from(MergeOptions, args, timeout_s=args.timeout)
        with status(f"bnbdoctor merge-check: reading {args.adapter}") as progress:
            check = run_merge_check(options, progress=progress)
        fmt = args.format or OutputFormat.TEXT
        from bnbdoctor.report_io import redacted_for_output, redactor_for_this_machine

        shown = redacted_for_output(check, redactor_for_this_machine, redacted, args)  # every format, as the doctor's
        emit(shown, fmt, ReportKind.MERGE_CHECK, args.output, error=MergeInputError)
        return int(exit_code(check))

    return guarded(body, (MergeInputError,), args.debug)
