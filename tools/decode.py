"""Decode one raw provider response body with ferrule's codec and print it as ferrule history JSON.

Usage:

    python tools/decode.py --api API [--stream] [--model-name NAME] FILE

FILE holds the body exactly as the provider sent it: the JSON of a buffered response, or with
`--stream` the SSE text of a streamed one (`-` reads standard input). On success the response is
printed as `ferrule.core.history.dumps([response])`; when it cannot be decoded, one line on stderr
says why and the exit status is 1 (`--traceback` adds the traceback, for codec development).

APIs: `ferrule-test` (ferrule's own test codec), `openai-chat`, `openai-responses`, `anthropic`,
`gemini`. Each is a [`Codec`][ferrule.core.codec.Codec] class, made with `model_name=` and used
through the protocol alone: `decode` for a buffered body, a `stream_decoder` fed every server-sent
event for a stream. A provider's codec is imported only when asked for, so the tool works with
whichever provider packages are installed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import cast

if TYPE_CHECKING:
    from ferrule.core.codec import Codec

APIS: dict[str, str] = {
    "ferrule-test": "ferrule.core._test_codec:FerruleTestCodec",
    "openai-chat": "ferrule.providers.openai.chat_codec:ChatCodec",
    "openai-responses": "ferrule.providers.openai.responses_codec:ResponsesCodec",
    "anthropic": "ferrule.providers.anthropic.codec:AnthropicCodec",
    "gemini": "ferrule.providers.google.codec:GoogleCodec",
}
"""Each API name and its codec class, as `module:class`."""

_PACKAGES = {"openai": "ferrule-openai", "anthropic": "ferrule-anthropic", "google": "ferrule-google"}


class DecodeFailed(Exception):
    """The body could not be decoded; the message is the one line the tool prints."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _codec(api: str, model_name: str | None) -> Codec:
    module_name, _, class_name = APIS[api].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        package = (
            _PACKAGES.get(module_name.split(".")[2], module_name)
            if module_name.startswith("ferrule.providers.")
            else module_name
        )
        if exc.name and module_name.startswith(exc.name):
            raise DecodeFailed(
                f"the {api!r} codec is not installed ({module_name}); install {package}"
            ) from exc
        raise DecodeFailed(f"the {api!r} codec cannot be imported: missing module {exc.name!r}") from exc
    factory: Any = getattr(module, class_name, None)
    if not callable(factory):
        raise DecodeFailed(f"{module_name} has no codec {class_name}; it cannot decode {api!r} bodies")
    # The registry names codec classes; what they make is checked by the protocol calls that follow.
    return cast("Codec", factory(model_name=model_name))


def decode(api: str, body: bytes, *, stream: bool = False, model_name: str | None = None) -> bytes:
    """Decode `body` with the `api` codec and return the response as ferrule history JSON."""
    from ferrule.core import codec as codecs
    from ferrule.core import history
    from ferrule.core.errors import FerruleError

    codec = _codec(api, model_name)
    try:
        response = codecs.decode_stream(codec.stream_decoder(), body) if stream else codec.decode(body)
    except FerruleError as exc:
        raise DecodeFailed(f"{api}: {exc}") from exc
    except Exception as exc:
        # Malformed input must raise ResponseDecodeError; anything else is a bug in the codec.
        raise DecodeFailed(
            f"{api}: codec bug: {type(exc).__name__}: {exc} (malformed input must raise ResponseDecodeError)"
        ) from exc
    return history.dumps([response])


def main(argv: list[str] | None = None) -> int:
    """Run the tool; returns the exit status."""
    parser = argparse.ArgumentParser(prog="decode.py", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--api", required=True, choices=sorted(APIS), help="the wire API of the body")
    parser.add_argument("--stream", action="store_true", help="FILE is the SSE text of a streamed response")
    parser.add_argument("--model-name", default=None, help="model name for codecs that need one")
    parser.add_argument("--traceback", action="store_true", help="print the traceback of a failure")
    parser.add_argument("file", metavar="FILE", help="the raw body; '-' for standard input")
    args = parser.parse_args(argv)
    try:
        try:
            body = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
        except OSError as exc:
            raise DecodeFailed(f"cannot read {args.file}: {exc.strerror or exc}") from exc
        out = decode(args.api, body, stream=args.stream, model_name=args.model_name)
    except DecodeFailed as exc:
        if args.traceback:
            traceback.print_exception(exc.__cause__ or exc, file=sys.stderr)
        print(f"decode: {_one_line(str(exc))}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(out + b"\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
