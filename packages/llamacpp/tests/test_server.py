"""The launcher without a model: configuration, profile, failure paths, the command line."""

from __future__ import annotations

import builtins
import sys
from pathlib import Path
from typing import Any

import pytest

from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.errors import UserError
from ferrule.core.messages import ModelRequest
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import ToolDefinition
from ferrule.core.settings import ModelSettings
from ferrule.providers.llamacpp import LlamaCppServer
from ferrule.providers.llamacpp import LlamaCppServerError
from ferrule.providers.llamacpp import LocalLlamaCppModel
from ferrule.providers.llamacpp import MissingServerDependencyError
from ferrule.providers.llamacpp import UnknownLocalModelError
from ferrule.providers.llamacpp import default_threads
from ferrule.providers.llamacpp import infer_model
from ferrule.providers.llamacpp import local_model_profile
from ferrule.providers.llamacpp.__main__ import main
from ferrule.providers.llamacpp._server import _apply_params


def test_default_threads_is_half_the_cpus_and_at_least_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FERRULE_LLAMACPP_THREADS", raising=False)
    for cpus, threads in ((2, 1), (1, 1), (16, 8)):

        def affinity(_pid: int, cpus: int = cpus) -> set[int]:
            return set(range(cpus))

        monkeypatch.setattr("os.sched_getaffinity", affinity, raising=False)
        assert default_threads() == threads


@pytest.mark.parametrize(
    ("value", "ok"), [("1", True), ("3", True), ("0", False), ("-2", False), ("two", False)]
)
def test_threads_environment_variable(monkeypatch: pytest.MonkeyPatch, value: str, ok: bool) -> None:
    monkeypatch.setenv("FERRULE_LLAMACPP_THREADS", value)
    if ok:
        assert default_threads() == int(value)
    else:
        with pytest.raises(UserError, match="FERRULE_LLAMACPP_THREADS"):
            default_threads()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threads": 0}, "threads must be at least 1"),
        ({"context_size": 255}, "at least 256"),
        ({"parallel": 0}, "parallel must be at least 1"),
        ({"params": {"x": object()}}, "plain JSON values"),
    ],
)
def test_invalid_configuration_fails_at_construction(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        LlamaCppServer("qwen2.5-coder-0.5b", **kwargs)


def test_limits_at_the_boundary_are_accepted() -> None:
    server = LlamaCppServer("qwen2.5-coder-0.5b", threads=1, context_size=256, parallel=1)
    assert server.context_size == 256
    assert server.profile.context_window == 256


def test_construction_starts_nothing() -> None:
    server = LlamaCppServer.start("qwen2.5-coder-0.5b", threads=1)
    assert not server.running
    assert server.pid is None
    assert "stopped" in repr(server)
    assert server.api_key not in repr(server)
    with pytest.raises(UserError, match="not running"):
        _ = server.base_url
    with pytest.raises(UserError, match="not running"):
        server.model()


def test_unknown_model_name_fails_at_construction() -> None:
    with pytest.raises(UnknownLocalModelError):
        LlamaCppServer("gpt-5")


def test_missing_model_file_is_a_user_error(tmp_path: Path) -> None:
    server = LlamaCppServer(tmp_path / "nope.gguf")
    assert server.model_name == "nope"
    with pytest.raises(UserError, match="does not exist"):
        server.open()


def test_missing_binding_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real_import = builtins.__import__

    def no_xllamacpp(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "xllamacpp":
            raise ImportError("no xllamacpp")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "xllamacpp", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_xllamacpp)
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"GGUF")
    for in_process in (True, False):
        with pytest.raises(MissingServerDependencyError, match=r"ferrule-llamacpp\[server\]"):
            LlamaCppServer(model_file, in_process=in_process).open()


class _Sampling:
    def __init__(self) -> None:
        self.top_k = 40


class _Params:
    def __init__(self) -> None:
        self.n_ctx = 0
        self.sampling = _Sampling()


def test_params_are_applied_by_dotted_name() -> None:
    params = _Params()
    _apply_params(params, {"n_ctx": 512, "sampling.top_k": 1})
    assert params.n_ctx == 512
    assert params.sampling.top_k == 1
    with pytest.raises(UserError, match=r"unknown llama\.cpp parameter 'n_ctxx'"):
        _apply_params(params, {"n_ctxx": 1})
    with pytest.raises(UserError, match=r"unknown llama\.cpp parameter 'nope\.top_k'"):
        _apply_params(params, {"nope.top_k": 1})


def test_not_a_gguf_file_fails_to_start_in_process(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"this is not a model")
    with pytest.raises(LlamaCppServerError, match="could not load"):
        LlamaCppServer(bad, threads=1).open()


def test_not_a_gguf_file_fails_to_start_in_a_child(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"this is not a model")
    server = LlamaCppServer(bad, threads=1, in_process=False)
    with pytest.raises(LlamaCppServerError, match="exited before it was ready"):
        server.open()
    assert not server.running
    assert server.pid is None


# --- the profile ----------------------------------------------------------------------------------


def _call(**kwargs: Any) -> ModelCall:
    return ModelCall(messages=[ModelRequest.user_text_prompt("hi")], **kwargs)


def test_profile_emulates_tools_and_has_native_json_schema() -> None:
    profile = local_model_profile(4096)
    assert profile.tools_emulated_via_output
    assert not profile.supports_tools
    assert profile.supports_json_schema_output
    assert profile.default_structured_output_mode == "native"
    assert profile.context_window == 4096
    tool = ToolDefinition(name="t")
    profile.check(_call(tools=[tool], settings=ModelSettings(tool_choice="required", top_k=5)), model="m")
    profile.check(_call(output=JsonSchemaFormat(name="x", schema={"type": "object"})), model="m")


@pytest.mark.parametrize(
    "settings",
    [
        ModelSettings(parallel_tool_calls=True),
        ModelSettings(reasoning_effort="high"),
        ModelSettings(logprobs=True),
    ],
)
def test_profile_fails_closed(settings: ModelSettings) -> None:
    with pytest.raises(UnsupportedFeatureError):
        local_model_profile().check(_call(tools=[ToolDefinition(name="t")], settings=settings), model="m")


# --- model strings and the command line -----------------------------------------------------------


def test_infer_model_builds_without_starting_anything() -> None:
    model = infer_model("qwen2.5-coder-0.5b")
    assert isinstance(model, LocalLlamaCppModel)
    assert model.system == "llamacpp:qwen2.5-coder-0.5b"
    assert not model.server.running
    assert model.profile.tools_emulated_via_output
    path_model = infer_model("/models/My-Model.Q4.gguf")
    assert path_model.model_name == "My-Model.Q4"
    with pytest.raises(UnknownLocalModelError):
        infer_model("no-such-model")


def test_entry_point_is_registered() -> None:
    from importlib.metadata import entry_points

    [entry] = [e for e in entry_points(group="ferrule.providers") if e.name == "llamacpp"]
    assert entry.value == "ferrule.providers.llamacpp._entry:llamacpp"
    assert entry.load() is infer_model


def test_cli_list(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FERRULE_CACHE_DIR", str(tmp_path))
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "qwen2.5-coder-1.5b (default)" in out
    assert "qwen2.5-coder-0.5b" in out
    assert "not fetched" in out


def test_cli_reports_errors_without_a_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"x")
    assert main(["serve", "--model-path", str(bad), "--threads", "1"]) == 1
    assert "could not load" in capsys.readouterr().err
