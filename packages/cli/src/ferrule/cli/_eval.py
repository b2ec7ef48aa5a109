"""`ferrule eval`: run an evaluation dataset against an agent (needs ferrule-evals)."""

from __future__ import annotations

import argparse
import importlib.util
import sys

from ._exit import ExitCode

__all__ = ["eval_command"]


def eval_command(args: argparse.Namespace) -> int:
    """`ferrule eval`; returns the exit code."""
    if importlib.util.find_spec("ferrule.evals") is None:
        sys.stderr.write(
            "ferrule: error: `ferrule eval` needs ferrule-evals, which is not installed: "
            "pip install 'ferrule-cli[evals]'\n"
        )
        return int(ExitCode.USAGE)
    sys.stderr.write(
        "ferrule: error: ferrule-evals is installed but this ferrule-cli does not drive it yet\n"
    )
    return int(ExitCode.USAGE)
