"""The `ferrule` command line: the parser and the dispatch to subcommands.

Only the standard library is imported here; each subcommand imports what it needs when it runs, so
`ferrule --help` and `ferrule completion` start quickly.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS = ("run", "chat", "eval", "models", "completion")
"""The subcommands; `run` is the default."""

_EPILOG = """\
exit codes: 0 success, 1 other failure, 2 usage, 3 config/file, 4 missing credential,
5 provider failure, 10 approval required (the paused run was written), 130 interrupted.
`ferrule PROMPT` is `ferrule run PROMPT`. Docs: docs/cli.md."""


class _Version(argparse.Action):
    """`--version`, looking the version up only when asked (importlib.metadata costs ~20 ms to import)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        from importlib import metadata

        try:
            version = metadata.version("ferrule-cli")
        except metadata.PackageNotFoundError:
            version = "0"
        sys.stdout.write(f"ferrule {version}\n")
        parser.exit()


def _agent_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the agent")
    group.add_argument(
        "-m", "--model", help="provider:name, e.g. openai:gpt-5-mini or llamacpp:qwen2.5-coder-0.5b"
    )
    group.add_argument("--provider", help="the provider prefix when --model is a bare name")
    group.add_argument("-c", "--config", metavar="FILE", help="a JSON configuration file (docs/cli.md)")
    group.add_argument(
        "--spec", metavar="FILE", help="an agent specification (JSON or YAML) that defines the agent"
    )
    group.add_argument("-s", "--system", metavar="TEXT", help="instructions (system prompt)")
    group.add_argument("--api-key-env", metavar="NAME", help="the environment variable holding the API key")
    group.add_argument(
        "--base-url", metavar="URL", help="the provider's API root (proxies, compatible servers)"
    )
    group.add_argument(
        "--allow-local-url", action="store_true", help="allow --base-url on this machine or a private network"
    )
    group.add_argument("--max-tokens", type=int, metavar="N", help="most tokens per response")
    group.add_argument("--temperature", type=float, metavar="T", help="sampling temperature")
    group.add_argument("--timeout", type=float, metavar="SECONDS", help="seconds one run may take")
    group.add_argument(
        "--history", metavar="FILE", help="load the conversation from FILE and save it back (atomically)"
    )
    group.add_argument(
        "--require-tool-approval", action="store_true", help="every manifest and MCP tool needs approval"
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand (also the source of the shell completions)."""
    parser = argparse.ArgumentParser(
        prog="ferrule",
        description="Run ferrule agents from the shell: one prompt, a chat, an eval, or model discovery.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run one prompt (the default command)",
        description="Run one prompt, or continue a paused run with --resume.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("prompt", nargs="?", help="the prompt, or '-' to read it from standard input")
    _agent_options(run)
    out = run.add_argument_group("output")
    modes = out.add_mutually_exclusive_group()
    modes.add_argument("--output", choices=("text", "json", "events"), help="text (default), json or events")
    modes.add_argument("--json", dest="output", action="store_const", const="json", help="one JSON result")
    modes.add_argument(
        "--events", dest="output", action="store_const", const="events", help="newline-delimited AG-UI events"
    )
    approvals = run.add_argument_group("approvals")
    approvals.add_argument(
        "--approval-mode",
        choices=("deferred", "deny", "prompt"),
        help="deferred (default): write the paused run and exit 10; deny; prompt: ask on the terminal",
    )
    approvals.add_argument("--paused-state", metavar="FILE", help="where the paused run is written and read")
    approvals.add_argument(
        "--signing-key-env", metavar="NAME", help="sign paused states with the key in NAME"
    )
    approvals.add_argument("--resume", action="store_true", help="continue the paused run")
    approvals.add_argument(
        "--approval", choices=("approve", "deny"), help="the decision for every pending call"
    )
    approvals.add_argument(
        "--external-result",
        action="append",
        metavar="CALL_ID=JSON",
        help="the result of an external call (repeatable); external calls without one are denied",
    )

    chat = commands.add_parser(
        "chat",
        help="an interactive session in the terminal",
        description="Chat with an agent: streamed Markdown, tool calls as they run, approvals asked inline. "
        "Ctrl-C cancels the current turn, Ctrl-D (or /exit) leaves.",
    )
    _agent_options(chat)
    chat.add_argument(
        "--plain", action="store_true", help="print text as it is instead of rendering Markdown"
    )
    chat.add_argument(
        "--approval-mode", choices=("prompt", "deny"), help="prompt (default): ask y/n for each call; deny"
    )

    evaluate = commands.add_parser(
        "eval",
        help="run an evaluation dataset (needs ferrule-evals)",
        description="Run a dataset file against an agent, print the report, write JSON/HTML, compare with a baseline.",
    )
    evaluate.add_argument("dataset", help="the dataset file (JSON or YAML)")
    _agent_options(evaluate)
    evaluate.add_argument("--report", dest="report_json", metavar="FILE", help="write the report as JSON")
    evaluate.add_argument("--html", metavar="FILE", help="write the report as HTML")
    evaluate.add_argument("--baseline", metavar="FILE", help="a saved report: exit 1 unless regression-free")
    evaluate.add_argument("--ci-json", metavar="FILE", help="write the comparison's CI verdict as JSON")
    evaluate.add_argument("--repetitions", type=int, metavar="N", help="runs per case")
    evaluate.add_argument("--concurrency", type=int, metavar="N", help="cases run at the same time")
    evaluate.set_defaults(output=None)

    models = commands.add_parser(
        "models",
        help="list installed providers, or a provider's models",
        description="Without PROVIDER: the installed provider prefixes. With it: the models the provider lists "
        "(needs its credentials).",
    )
    models.add_argument("provider_name", nargs="?", metavar="PROVIDER", help="a provider prefix, e.g. openai")
    models.add_argument("--api-key-env", metavar="NAME", help="the environment variable holding the API key")
    models.add_argument("--base-url", metavar="URL", help="the provider's API root")
    models.add_argument("--allow-local-url", action="store_true", help="allow --base-url on this machine")
    models.add_argument("--json", action="store_true", help="print JSON")

    completion = commands.add_parser("completion", help="print a shell completion script")
    completion.add_argument("shell", choices=("bash", "zsh", "fish"))
    return parser


def _with_default_command(argv: list[str]) -> list[str]:
    """`ferrule PROMPT ...` and `ferrule --model X PROMPT` mean `ferrule run ...`."""
    if not argv or argv[0] in COMMANDS or argv[0] in ("-h", "--help", "--version"):
        return argv
    return ["run", *argv]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns (and, as a console script, exits with) the exit code."""
    args_list = _with_default_command(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser()
    if not args_list:
        parser.print_help(sys.stderr)
        return 2
    args = parser.parse_args(args_list)
    match args.command:
        case "run":
            from ._run import run_command

            return run_command(args)
        case "chat":
            from ._chat import chat_command

            return chat_command(args)
        case "eval":
            from ._eval import eval_command

            return eval_command(args)
        case "models":
            from ._models import models_command

            return models_command(args)
        case "completion":
            from ._completion import completion_script

            sys.stdout.write(completion_script(args.shell, parser))
            return 0
        case _:
            parser.print_help(sys.stderr)
            return 2
