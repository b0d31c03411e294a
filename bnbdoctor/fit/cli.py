"""``bnbdoctor fit MODEL``: the command line of the placement check (see docs/fit.md).

Follows bnbdoctor's contract: stdout is data (``--json`` is one JSON document), messages go to
stderr, bad input is one line and exit 2, exit 1 when from_pretrained would raise (an error
finding), 0 otherwise.
"""

from __future__ import annotations

import argparse
import os

from bnbdoctor import __version__
from bnbdoctor.argparsing import Parser, options_from
from bnbdoctor.contract import guarded
from bnbdoctor.fit.options import (
    DEVICE_MAPS,
    QUANT_TYPES,
    QUANTS,
    FitInputError,
    FitOptions,
)
from bnbdoctor.render import OutputFormat, ReportKind
from bnbdoctor.render.options import add_output_arguments, emit
from bnbdoctor.report import ExitCode
from bnbdoctor.report_io import add_redaction_arguments, redacted_for_output


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="bnbdoctor fit",
        description=(
            "Predict, offline and without a GPU, whether from_pretrained(..., quantization_config="
            "BitsAndBytesConfig(...), device_map=...) places the model on the GPUs or raises 'Some modules "
            "are dispatched on the CPU or the disk', using your own transformers and accelerate."
        ),
    )
    parser.add_argument(
        "model",
        metavar="MODEL",
        help="a Hugging Face model id (org/name, read from the local Hugging Face cache), a local model folder, "
        "its config.json, or a Hugging Face cache folder (no network)",
    )
    parser.add_argument(
        "--quant", choices=QUANTS, help="bitsandbytes quantization (default: 4bit, or the checkpoint's own bnb config)"
    )
    parser.add_argument("--double-quant", action="store_true", help="bnb_4bit_use_double_quant=True")
    parser.add_argument("--quant-type", choices=QUANT_TYPES, default="nf4", help="bnb_4bit_quant_type (default nf4)")
    parser.add_argument("--dtype", help="dtype= for from_pretrained: auto (default), bfloat16, float16, float32")
    parser.add_argument("--device-map", choices=DEVICE_MAPS, default="auto", help="device_map= (default auto)")
    parser.add_argument(
        "--max-memory", metavar="SPEC", help='max_memory= as given to from_pretrained, e.g. "0=24GiB,1=24GiB,cpu=64GiB"'
    )
    parser.add_argument(
        "--gpus",
        metavar="SIZES",
        help="simulate GPUs with this much free memory, e.g. 24GiB,24GiB "
        "or 8x80GB (max_memory=None; default: the GPUs detected here)",
    )
    parser.add_argument(
        "--cpu-memory", metavar="SIZE", help="free CPU RAM when max_memory is not given (default: this machine's)"
    )
    parser.add_argument("--fp32-offload", action="store_true", help="llm_int8_enable_fp32_cpu_offload=True")
    parser.add_argument("--skip-modules", metavar="NAMES", help="llm_int8_skip_modules, comma-separated")
    parser.add_argument(
        "--python",
        metavar="PATH",
        help="the interpreter whose transformers to run: its path, a venv or conda folder, or a command on PATH "
        "(default: chosen as bnbdoctor chooses it)",
    )
    parser.add_argument("--trust-remote-code", action="store_true", help="allow a model's own code to run")
    parser.add_argument(
        "--compare-transformers",
        metavar="DIR",
        action="append",
        default=[],
        help="a folder holding another transformers (pip install --target DIR transformers), used "
        "to verify whether upgrading changes the verdict (repeatable)",
    )
    parser.add_argument("--no-remedies", action="store_true", help="only the verdict, no simulated remedies")
    parser.add_argument(
        "--timeout", type=float, default=180.0, metavar="S", help="time limit for the engine (default 180 s)"
    )
    add_output_arguments(parser, ReportKind.FIT)
    parser.add_argument("--strict", action="store_true", help="count warnings as errors in the exit code")
    add_redaction_arguments(parser)
    parser.add_argument("--standin", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"bnbdoctor {__version__}")
    return parser


def options_from_args(args: argparse.Namespace) -> FitOptions:
    return options_from(
        FitOptions,
        args,
        skip_modules=[s.strip() for s in (args.skip_modules or "").split(",") if s.strip()],
        compare_transformers=list(args.compare_transformers),
        remedies=not args.no_remedies,
        timeout_s=args.timeout,
        force_standin=args.standin,
    )


def main(argv: list[str]) -> int:
    os.environ["HF_HUB_OFFLINE"] = "1"  # inherited by the engine: never the network
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its one-line usage error
        return int(exc.code or 0) if exc.code in (0, None) else int(ExitCode.FAILURE)
    fmt = args.format or OutputFormat.TEXT

    def body() -> int:
        from bnbdoctor.fit.core import run_fit
        from bnbdoctor.progress import status

        with status(f"bnbdoctor fit: reading {args.model}") as progress:  # on a terminal's stderr only
            report = run_fit(options_from_args(args), progress=progress)
        from bnbdoctor.report_io import redact_report, redactor_for_this_machine

        report = redacted_for_output(report, redactor_for_this_machine, redact_report, args)
        emit(report, fmt, ReportKind.FIT, args.output, error=FitInputError)
        return int(report.exit_code(args.strict))

    return guarded(body, (FitInputError,), args.debug)
