"""The `axialrope` command line: one subcommand per module.

Each module named in COMMANDS defines `add_arguments(parser)` and `run(args)`, and may define INTERRUPTED: what
it keeps when Ctrl-C or SIGTERM stops it (`interrupts.py`; exit code 130 or 143).
It is imported only when its subcommand runs, so `axialrope check` does not pay
for importing the training stack.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from .interrupts import interrupted, stoppable

# subcommand -> (module under axialrope.pipelines.cli, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("train", "train a DiT with accelerate on procedural shapes or your own folder"),
    "check": ("check", "run the RoPE factorization checks on axialrope and peers' rotary embeddings"),
    "sample": (
        "sample",
        "sample images or videos at any size with RoPE extrapolation, from a trained DiT or a "
        "diffusers pipeline (Flux, Qwen-Image, Wan, HunyuanVideo, CogVideoX, LTX-Video)",
    ),
    "compare": ("compare", "sample the same seeds with every extrapolation method into one labelled PNG"),
    "calibrate": (
        "calibrate",
        "measure which extrapolation method your own model should use at each scale, on "
        "your images, and record it as the model's default",
    ),
}


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps descriptions and epilogs as written, and shows each option's default unless its help
    already says it (or there is none to show: a flag, None, an empty list)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        shown = "default" in text.lower()
        nothing = any(action.default is value for value in (None, argparse.SUPPRESS, False)) or action.default == []
        return text if shown or nothing else text + " (default: %(default)s)"


class _NoCudaHomeNotice(logging.Filter):
    """torch.compile's CPU backend imports torch.utils.cpp_extension, which warns "No CUDA runtime is
    found, using CUDA_HOME=..." on any machine that has nvcc but no GPU. The CLI never builds CUDA
    extensions, so on such a machine the notice only alarms; every other message passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("No CUDA runtime is found")


def _quiet_known_notices() -> None:
    logging.getLogger("torch.utils.cpp_extension").addFilter(_NoCudaHomeNotice())


def _usage() -> str:
    lines = ["usage: axialrope COMMAND [options]", "", "commands:"]
    lines += [f"  {name:<10} {help_text}" for name, (_, help_text) in COMMANDS.items()]
    lines += ["", "Run 'axialrope COMMAND --help' for a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if argv[0] not in COMMANDS:
        print(f"axialrope: unknown command {argv[0]!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module, parser = command_parser(argv[0])
    _quiet_known_notices()
    args = parser.parse_args(argv[1:])
    with stoppable():  # SIGTERM unwinds as Ctrl-C does: locks released, temporaries and half-published files undone
        try:
            return int(module.run(args) or 0)
        except KeyboardInterrupt as stop:  # a command's own line (INTERRUPTED) says what it kept
            return interrupted(argv[0], stop, getattr(module, "INTERRUPTED", "nothing was written"))


def command_parser(command: str) -> tuple:
    """(the module of `command`, its argument parser)."""
    module_name, help_text = COMMANDS[command]
    module = importlib.import_module(f"axialrope.pipelines.cli.{module_name}")
    parser = argparse.ArgumentParser(prog=f"axialrope {command}", description=help_text, formatter_class=HelpFormatter)
    module.add_arguments(parser)
    return module, parser


if __name__ == "__main__":
    sys.exit(main())
