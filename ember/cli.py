"""The `ember` command: one sub-command per tool, each in the module that owns it.

    ember summary vgg16 --input 3,224,224 --batch 128 --device "GTX 1080"
    ember run -n 2 train.py

A sub-command's module defines `add_arguments(parser)` and `main(args) -> int`; it is imported only when
that sub-command runs, so `ember --help` stays fast and needs no optional extra.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module, one-line help). Add a tool by adding a line here.
COMMANDS: dict[str, tuple[str, str]] = {
    "train-gpt": ("ember.lm.train", "train a character GPT on Shakespeare, resume it, or sample from it"),
    "summary": ("ember.planner.cli", "plan a model: per-layer table, memory and FLOPs, will it fit a device"),
    "run": ("ember.distributed.launch", "run a script on N processes (mpiexec -n N python script.py)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ember", description="Ember's command-line tools.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module)
        importlib.import_module(module).add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return int(importlib.import_module(args._module).main(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
