"""Datasets and their runs: repetitions, retries, bounded concurrency, source-ordered reports."""

from __future__ import annotations

import functools
import inspect
import sys
import time
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any
from typing import Final
from typing import TypeAlias

import anyio
import msgspec

from ferrule.agent import Agent
from ferrule.agent import AgentRunResult
from ferrule.agent.pricing import Pricing
from ferrule.agent.pricing import nano_usd
from ferrule.core.messages import ModelResponse
from ferrule.core.usage import RunUsage

from ._case import Case
from ._errors import DuplicateCaseName
from ._errors import DuplicateEvaluatorName
from ._errors import InvalidCase
from ._errors import InvalidExecutionOptions
from ._errors import TraceEvaluationRequiresTelemetry
from ._evaluators import Evaluator
from ._evaluators import ReportEvaluator
from ._evaluators import TraceContext
from ._evaluators import TraceEvaluator
from ._evaluators import run_evaluator
from ._evaluators import run_report_evaluator
from ._evaluators import run_trace_evaluator
from ._events import EvalEvent
from ._events import EvalHook
from ._report import CaseResult
from ._report import EvaluationResult
from ._report import Report
from ._report import ReportCase
from ._spans import SpanRecord
from ._spans import attach
from ._spans import capturable
from ._spans import collecting

__all__ = [
    "MAX_CASES",
    "MAX_RUNS",
    "Dataset",
    "EvalEvent",
    "EvalHook",
    "ExecutionOptions",
    "RetryEvent",
    "RetryPolicy",
    "Task",
]

MAX_CASES: Final = 10_000
"""Cases of one dataset: a dataset file with more could not be read back (`bounded_json.CLI_CONFIG`)."""

MAX_RUNS: Final = 10_000
"""Runs (cases times repetitions) of one dataset run: a report with more could not be read back."""

Task: TypeAlias = "Agent[Any, Any] | Callable[[Any], Awaitable[Any]]"
"""What a dataset runs: an `Agent` (inputs are its prompt) or `async fn(inputs) -> output`.

A function may return an `AgentRunResult`; its output and usage are then recorded.
"""


class RetryEvent(msgspec.Struct, frozen=True, kw_only=True):
    """A failed attempt about to be retried, as `RetryPolicy.before_retry` sees it."""

    error: BaseException
    """What the attempt raised."""
    attempt: int
    """The attempt that failed (1-based); the next one is `attempt + 1`."""
    case_index: int
    """The case's index."""
    repetition: int
    """The repetition (1-based)."""
    evaluator: str | None
    """The evaluator's name, or `None` for the task."""


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How often an attempt (of the task, or of one evaluator) may be made, and which errors retry.

    Distinct from `ferrule.core.retry.RetryPolicy`, which retries provider requests inside a model.
    """

    max_attempts: int = 1
    """Attempts in all, at least 1 (1: no retry)."""
    should_retry: Callable[[BaseException], bool] | None = None
    """Whether the completed attempt's error deserves another attempt; `None` retries every `Exception`."""
    before_retry: Callable[[RetryEvent], Awaitable[None] | None] | None = None
    """Runs before the next attempt, sync or async (sleep, wait for a rate limit, log)."""

    def retries(self, error: BaseException) -> bool:
        """Whether `error` (from an attempt that was not the last) is retried."""
        if self.should_retry is None:
            return isinstance(error, Exception)
        return bool(self.should_retry(error))


class ExecutionOptions(msgspec.Struct, frozen=True, kw_only=True):
    """How a dataset runs; every field is checked before the task is called."""

    repetitions: int = 1
    """Runs per case, at least 1."""
    task_retry: RetryPolicy = RetryPolicy()
    """Attempts of the task per run."""
    evaluator_retry: RetryPolicy = RetryPolicy()
    """Attempts of each evaluator (ordinary and trace) per run."""
    max_concurrency: int = 1
    """Runs in flight at once, at least 1; reports stay in source order whatever finishes first."""
    hooks: Sequence[EvalHook] = ()
    """Synchronous lifecycle hooks, called in order."""
    progress: bool | None = None
    """A progress bar on stderr: `None` shows one only when stderr is a terminal."""
    pricing: Pricing | bool = True
    """Prices runs whose agent reported no cost (the bundled snapshot for `True`; `False`: never)."""
    tracer_provider: Any = None
    """For a function task with trace evaluators: the SDK `TracerProvider` its spans go to."""


def _positive(value: object, what: str) -> None:
    if type(value) is not int or value < 1:
        raise InvalidExecutionOptions(f"{what} must be an integer of at least 1, got {value!r}")


def _check_options(options: ExecutionOptions, cases: int) -> None:
    _positive(options.repetitions, "repetitions")
    _positive(options.max_concurrency, "max_concurrency")
    _positive(options.task_retry.max_attempts, "task_retry.max_attempts")
    _positive(options.evaluator_retry.max_attempts, "evaluator_retry.max_attempts")
    for hook in options.hooks:
        if not callable(hook):
            raise InvalidExecutionOptions(f"hooks must be callables, got {hook!r}")
        if inspect.iscoroutinefunction(hook) or inspect.iscoroutinefunction(getattr(hook, "__call__", None)):  # noqa: B004
            raise InvalidExecutionOptions(f"hooks are synchronous; {hook!r} is async")
    if cases * options.repetitions > MAX_RUNS:
        raise InvalidExecutionOptions(
            f"{cases} cases x {options.repetitions} repetitions = {cases * options.repetitions} runs exceeds "
            f"MAX_RUNS={MAX_RUNS} (the report could not be read back); split the dataset"
        )


def _names(
    evaluators: Sequence[Evaluator],
    trace_evaluators: Sequence[TraceEvaluator],
    report_evaluators: Sequence[ReportEvaluator],
) -> None:
    seen: set[str] = set()
    for kind, group, base in (
        ("evaluators", evaluators, Evaluator),
        ("trace_evaluators", trace_evaluators, TraceEvaluator),
        ("report_evaluators", report_evaluators, ReportEvaluator),
    ):
        for item in group:
            if not isinstance(item, base):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise TypeError(f"{kind} must be {base.__name__} instances, got {item!r}")
            name = getattr(item, "name", None)
            if not isinstance(name, str) or not name:
                raise TypeError(f"{item!r} has no name: set a non-empty `name`")
            if name in seen:
                raise DuplicateEvaluatorName(
                    f"evaluator name {name!r} is used twice; names must be unique across ordinary, trace and "
                    "report evaluators"
                )
            seen.add(name)


class Dataset:
    """Named cases and the evaluators that judge each run of them.

    ```python
    dataset = Dataset([Case("add", "What is 2 + 3? Answer with the number only.", expected="5")],
                      evaluators=[ExactMatch(strip=True)])
    report = await dataset.run(agent)
    ```
    """

    def __init__(
        self,
        cases: Sequence[Case],
        *,
        evaluators: Sequence[Evaluator] = (),
        report_evaluators: Sequence[ReportEvaluator] = (),
        trace_evaluators: Sequence[TraceEvaluator] = (),
        name: str | None = None,
    ) -> None:
        if len(cases) > MAX_CASES:
            raise InvalidCase(f"{len(cases)} cases exceed MAX_CASES={MAX_CASES}; split the dataset")
        names: set[str] = set()
        for case in cases:
            if not isinstance(case, Case):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise TypeError(f"cases must be Case instances, got {case!r}")
            if not isinstance(case.name, str) or not case.name:  # pyright: ignore[reportUnnecessaryIsInstance]
                raise InvalidCase(f"a case name must be a non-empty string, got {case.name!r}")
            if case.name in names:
                raise DuplicateCaseName(f"case name {case.name!r} is used twice; case names must be unique")
            names.add(case.name)
        _names(evaluators, trace_evaluators, report_evaluators)
        self.name = name
        """The dataset's name (shown in reports)."""
        self.cases: tuple[Case, ...] = tuple(cases)
        """The cases, in order."""
        self.evaluators: tuple[Evaluator, ...] = tuple(evaluators)
        """Per-run evaluators, in order."""
        self.trace_evaluators: tuple[TraceEvaluator, ...] = tuple(trace_evaluators)
        """Per-run span evaluators, run after the ordinary ones."""
        self.report_evaluators: tuple[ReportEvaluator, ...] = tuple(report_evaluators)
        """Report-wide evaluators, run once after every run."""

    def __repr__(self) -> str:
        return f"Dataset(name={self.name!r}, cases={len(self.cases)})"

    async def run(self, task: Task, *, options: ExecutionOptions | None = None) -> Report:
        """Run every case `options.repetitions` times and evaluate each run; returns the report.

        Errors of the task, evaluators and hooks propagate unchanged (after the retry policies).
        With `max_concurrency > 1`, no run starts after a failure, every admitted run is joined,
        and the error raised is the one at the lowest (case, repetition, evaluator) position.
        """
        options = options or ExecutionOptions()
        _check_options(options, len(self.cases))
        runner = _Runner(self, task, options)
        return await runner.run()


class _Runner:
    """The state of one `Dataset.run`."""

    def __init__(self, dataset: Dataset, task: Task, options: ExecutionOptions) -> None:
        self.dataset = dataset
        self.options = options
        self.agent: Agent[Any, Any] | None = task if isinstance(task, Agent) else None
        self.function: Callable[[Any], Awaitable[Any]] | None = None if isinstance(task, Agent) else task
        if self.function is not None and not callable(self.function):
            raise TypeError(f"a task is an Agent or an async function, got {task!r}")
        self.total = len(dataset.cases) * options.repetitions
        self.pricing: Pricing | None = (
            options.pricing
            if isinstance(options.pricing, Pricing)
            else Pricing()
            if options.pricing
            else None
        )
        self._check_cases()
        self.capture = self._capture_provider()
        self.progress: Any = None

    def _check_cases(self) -> None:
        for case in self.dataset.cases:
            if self.agent is not None:
                if not isinstance(case.inputs, str):
                    raise InvalidCase(
                        f"case {case.name!r}: an Agent task takes the prompt as a str, got "
                        f"{type(case.inputs).__name__}; use a function task to build prompts from other inputs"
                    )
            elif case.run_options is not None and not case.run_options.is_default():
                raise InvalidCase(
                    f"case {case.name!r} has run_options, which only an Agent task can use; pass them in your "
                    "function instead"
                )

    def _capture_provider(self) -> Any:
        """The tracer provider to copy spans from, or `None`; raises when trace evaluators need one."""
        provider: Any = None
        if self.agent is not None:
            settings = self.agent.instrumentation
            if settings is not None:
                provider = settings.tracer_provider
                if provider is None:
                    from opentelemetry import trace

                    provider = trace.get_tracer_provider()
        else:
            provider = self.options.tracer_provider
        if provider is not None and capturable(provider):
            attach(provider)
            return provider
        if self.dataset.trace_evaluators:
            if self.agent is not None and self.agent.instrumentation is None:
                why = "the agent is not instrumented: build it with Agent(instrument=InstrumentationSettings(...))"
            elif self.agent is not None:
                why = (
                    f"the agent's tracer provider {provider!r} cannot take span processors: pass an "
                    "opentelemetry-sdk TracerProvider in InstrumentationSettings(tracer_provider=...)"
                )
            else:
                why = (
                    "a function task's spans are captured from ExecutionOptions(tracer_provider=...), an "
                    "opentelemetry-sdk TracerProvider"
                )
            raise TraceEvaluationRequiresTelemetry(
                f"the dataset has trace evaluators ({', '.join(e.name for e in self.dataset.trace_evaluators)}) "
                f"but {why}"
            )
        return None

    def _emit(self, event: EvalEvent) -> None:
        for hook in self.options.hooks:
            hook(event)
        if self.progress is not None:
            self.progress.update(event)

    async def run(self) -> Report:
        dataset, options = self.dataset, self.options
        show = options.progress if options.progress is not None else sys.stderr.isatty()
        if show and self.total:
            from ._progress import Progress

            self.progress = Progress(self.total)
        try:
            self._emit(EvalEvent(kind="run_start", total_runs=self.total))
            results = await self._run_all()
            report = Report(
                name=dataset.name,
                cases=tuple(
                    ReportCase(name=c.name, inputs=c.inputs, expected=c.expected, metadata=c.metadata)
                    for c in dataset.cases
                ),
                evaluators=tuple(e.name for e in dataset.evaluators),
                trace_evaluators=tuple(e.name for e in dataset.trace_evaluators),
                report_evaluators=tuple(e.name for e in dataset.report_evaluators),
                results=results,
            )
            if dataset.report_evaluators:
                analyses = [await run_report_evaluator(e, report) for e in dataset.report_evaluators]
                report = msgspec.structs.replace(report, analyses=tuple(analyses))
            self._emit(EvalEvent(kind="run_end", total_runs=self.total, report=report))
            return report
        finally:
            if self.progress is not None:
                self.progress.close()

    async def _run_all(self) -> tuple[CaseResult, ...]:
        results: list[CaseResult | None] = [None] * self.total
        failures: dict[tuple[int, int], Exception] = {}
        slots = anyio.Semaphore(self.options.max_concurrency)
        async with anyio.create_task_group() as group:
            for index in range(self.total):
                await slots.acquire()
                if failures:  # nothing new is admitted after a failure
                    slots.release()
                    break
                group.start_soon(self._one, index, results, failures, slots)
        if failures:
            raise failures[min(failures)]
        done: list[CaseResult] = []
        for result in results:
            assert result is not None
            done.append(result)
        return tuple(done)

    async def _one(
        self,
        index: int,
        results: list[CaseResult | None],
        failures: dict[tuple[int, int], Exception],
        slots: anyio.Semaphore,
    ) -> None:
        position = _Position()
        try:
            case_index, repetition = divmod(index, self.options.repetitions)
            results[index] = await self._run_case(case_index, repetition + 1, position)
        except Exception as exc:
            # Kept, not raised: the task group would wrap it, and a lower position may still fail.
            failures[(index, position.step)] = exc
        finally:
            slots.release()

    async def _run_case(self, case_index: int, repetition: int, position: _Position) -> CaseResult:
        dataset, options = self.dataset, self.options
        case = dataset.cases[case_index]
        start = EvalEvent(
            kind="case_start",
            total_runs=self.total,
            case_index=case_index,
            repetition=repetition,
            case_name=case.name,
        )
        self._emit(start)
        (output, usage, spans, latency), attempts = await _attempts(
            options.task_retry, functools.partial(self._call_task, case), case_index, repetition, None
        )
        # Every evaluator in order (the trace evaluators last), each as a call and its name.
        checks = [
            (functools.partial(run_evaluator, evaluator, case, output, usage), evaluator.name)
            for evaluator in dataset.evaluators
        ]
        if dataset.trace_evaluators:
            context = TraceContext(case=case, output=output, usage=usage, spans=spans)
            checks += [
                (functools.partial(run_trace_evaluator, evaluator, context), evaluator.name)
                for evaluator in dataset.trace_evaluators
            ]
        evaluations: list[EvaluationResult] = []
        for check, name in checks:
            position.step += 1
            evaluation, tries = await _attempts(options.evaluator_retry, check, case_index, repetition, name)
            evaluations.append(msgspec.structs.replace(evaluation, attempts=tries))
        result = CaseResult(
            case_index=case_index,
            case_name=case.name,
            repetition=repetition,
            repetitions=options.repetitions,
            task_attempts=attempts,
            output=output,
            usage=usage,
            latency_seconds=latency,
            evaluations=tuple(evaluations),
            spans=spans,
        )
        position.step += 1
        self._emit(msgspec.structs.replace(start, kind="case_end", result=result))
        return result

    async def _invoke(self, case: Case) -> Any:
        if self.agent is None:
            assert self.function is not None
            return await self.function(case.inputs)
        extra = case.run_options
        if extra is None:
            return await self.agent.run(case.inputs)
        return await self.agent.run(
            case.inputs,
            deps=extra.deps,
            model_settings=extra.model_settings,
            usage_limits=extra.usage_limits,
            instructions=extra.instructions,
            message_history=extra.message_history,
            timeout=extra.timeout,
        )

    async def _call_task(self, case: Case) -> tuple[Any, RunUsage, tuple[SpanRecord, ...], float]:
        """One attempt of the task: output, usage, the attempt's spans and its latency."""
        spans: list[SpanRecord] = []
        started = time.perf_counter()
        if self.capture is not None:
            with collecting(spans):
                value = await self._invoke(case)
        else:
            value = await self._invoke(case)
        latency = time.perf_counter() - started
        if isinstance(value, AgentRunResult):
            run: AgentRunResult[Any] = value  # pyright: ignore[reportUnknownVariableType]
            return run.output, self._usage(run), tuple(spans), latency
        return value, RunUsage(), tuple(spans), latency

    def _usage(self, run: AgentRunResult[Any]) -> RunUsage:
        """A copy of the run's usage, priced from the snapshot when the agent reported no cost."""
        usage = run.usage
        cost = usage.cost_nano_usd
        if cost is None and self.pricing is not None:
            cost = _price(self.pricing, run)
        return msgspec.structs.replace(usage, details=dict(usage.details), cost_nano_usd=cost)


def _price(pricing: Pricing, run: AgentRunResult[Any]) -> int | None:
    total: Any = 0
    for message in run.new_messages():
        if isinstance(message, ModelResponse):
            amount = pricing.request_cost(message)
            if amount is None:
                return None
            total += amount
    return nano_usd(total)


class _Position:
    """Which step of a run is executing: 0 the task, then each evaluator, then the `case_end` hooks."""

    __slots__ = ("step",)

    def __init__(self) -> None:
        self.step = 0


async def _attempts(
    policy: RetryPolicy,
    call: Callable[[], Awaitable[Any]],
    case_index: int,
    repetition: int,
    evaluator: str | None,
) -> tuple[Any, int]:
    """Call `call` under `policy`; returns its result and the attempts it took."""
    attempt = 1
    while True:
        try:
            return await call(), attempt
        except Exception as exc:
            if attempt >= policy.max_attempts or not policy.retries(exc):
                raise
            if policy.before_retry is not None:
                waited = policy.before_retry(
                    RetryEvent(
                        error=exc,
                        attempt=attempt,
                        case_index=case_index,
                        repetition=repetition,
                        evaluator=evaluator,
                    )
                )
                if inspect.isawaitable(waited):
                    await waited
            attempt += 1
