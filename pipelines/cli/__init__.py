"""The `axialrope` command line: one subcommand per module.

Each module named in COMMANDS defines `add_arguments(parser)` and `run(args)`.
It is imported only when its subcommand runs, so `axialrope check` does not pay
for importing the training stack.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# subcommand -> (module under axialrope.pipelines.cli, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("train", "train a DiT with accelerate on procedural shapes or your own folder"),
    "check": ("check", "run the RoPE factorization checks on axialrope and peers' rotary embeddings"),
    "sample": ("sample", "sample images or videos at any size with RoPE extrapolation, from a trained DiT or a "
                         "diffusers pipeline (Flux, Qwen-Image, Wan, HunyuanVideo, CogVideoX, LTX-Video)"),
    "compare": ("compare", "sample the same seeds with every extrapolation method into one labelled PNG"),
}


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
    module_name, help_text = COMMANDS[argv[0]]
    module = importlib.import_module(f"axialrope.pipelines.cli.{module_name}")
    parser = argparse.ArgumentParser(prog=f"axialrope {argv[0]}", description=help_text)
    module.add_arguments(parser)
    return int(module.run(parser.parse_args(argv[1:])) or 0)


if __name__ == "__main__":
    sys.exit(main())
