"""Dataset runs: ordering under repetitions and concurrency, retries, errors, hooks, usage and cost."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

import anyio
import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import AgentRunResult
from ferrule.agent import Pricing
from ferrule.agent import RunContext
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.agent.testing import TestModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import RequestUsage
from ferrule.core.usage import RunUsage
from ferrule.evals import MAX_CASES
from ferrule.evals import MAX_RUNS
from ferrule.evals import Analysis
from ferrule.evals import Case
from ferrule.evals import Contains
from ferrule.evals import Dataset
from ferrule.evals import DuplicateCaseName
from ferrule.evals import DuplicateEvaluatorName
from ferrule.evals import EvalEvent
from ferrule.evals import EvaluationResult
from ferrule.evals import ExactMatch
from ferrule.evals import ExecutionOptions
from ferrule.evals import FunctionEvaluator
from ferrule.evals import InvalidCase
from ferrule.evals import InvalidEvaluationResult
from ferrule.evals import InvalidExecutionOptions
from ferrule.evals import InvalidReportAnalysis
from ferrule.evals import MeanScore
from ferrule.evals import MinPassRate
from ferrule.evals import Report
from ferrule.evals import ReportEvaluator
from ferrule.evals import RetryEvent
from ferrule.evals import RetryPolicy
from ferrule.evals import RunOptions
from ferrule.evals import dump_report_json
from ferrule.evals import evaluator
from ferrule.evals import load_report_json

pytestmark = pytest.mark.anyio


def last_prompt(messages: Sequence[Message]) -> str:
    request = messages[-1]
    assert isinstance(request, ModelRequest)
    for part in reversed(request.parts):
        if isinstance(part, UserPromptPart) and isinstance(part.content, str):
            return part.content
    raise AssertionError("no user prompt")


class Calculator:
    """A FunctionModel answer function that evaluates `a + b` prompts and counts its calls."""

    def __init__(self, wrong: frozenset[str] = frozenset()) -> None:
        self.calls = 0
        self.wrong = wrong

    def __call__(self, messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        self.calls += 1
        prompt = last_prompt(messages)
        a, b = (int(x) for x in prompt.split("+"))
        answer = a + b + (1 if prompt in self.wrong else 0)
        return ModelResponse(
            parts=[TextPart(str(answer))], usage=RequestUsage(input_tokens=10, output_tokens=2)
        )


def sums(n: int) -> list[Case]:
    return [Case(f"sum-{i}", f"{i}+{i}", expected=str(2 * i)) for i in range(n)]


async def test_an_agent_runs_every_case_once_and_the_report_is_in_source_order() -> None:
    model = Calculator(wrong=frozenset({"1+1"}))
    dataset = Dataset(sums(3), evaluators=[ExactMatch()], name="sums")
    report = await dataset.run(Agent(FunctionModel(model)))
    assert model.calls == 3
    assert [(r.case_index, r.repetition, r.repetitions) for r in report.results] == [
        (0, 1, 1),
        (1, 1, 1),
        (2, 1, 1),
    ]
    assert [r.output for r in report.results] == ["0", "3", "4"]
    assert [r.passed for r in report.results] == [True, False, True]
    assert report.results[1].evaluations[0] == EvaluationResult(
        name="exact_match", passed=False, reason="expected '2', got '3'", attempts=1
    )
    assert [r.task_attempts for r in report.results] == [1, 1, 1]
    assert report.results[0].usage.input_tokens == 10
    assert report.results[0].usage.requests == 1
    summary = report.summary()
    assert (summary.total_runs, summary.passed_runs, summary.failed_runs) == (3, 2, 1)
    assert summary.pass_rate == pytest.approx(2 / 3)
    assert not report.passed()
    assert report.name == "sums"
    assert [c.name for c in report.cases] == ["sum-0", "sum-1", "sum-2"]


async def test_repetitions_times_concurrency_completion_order_never_changes_the_report_order() -> None:
    cases, repetitions, limit = 3, 4, 5
    total = cases * repetitions
    finished: list[int] = []
    release = [anyio.Event() for _ in range(total)]
    in_flight = peak = 0
    enough = anyio.Event()

    async def task(inputs: int) -> int:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if in_flight == limit:
            enough.set()
        index = len(started)
        started.append(inputs)
        if index < limit:
            await enough.wait()  # the first runs wait until the limit is reached: peak == limit
        # Each run waits for the next admitted run to finish first, so completion order is reversed
        # within every wave of admitted runs.
        if index + 1 < total and index % limit != limit - 1:
            await release[index + 1].wait()
        finished.append(index)
        release[index].set()
        in_flight -= 1
        return inputs * 10

    started: list[int] = []
    dataset = Dataset([Case(f"c{i}", i) for i in range(cases)])
    report = await dataset.run(task, options=ExecutionOptions(repetitions=repetitions, max_concurrency=limit))
    assert peak == limit
    assert finished != sorted(finished), "the runs should have finished out of order"
    assert [(r.case_index, r.repetition) for r in report.results] == [
        (c, rep) for c in range(cases) for rep in range(1, repetitions + 1)
    ]
    assert [r.output for r in report.results] == [c * 10 for c in range(cases) for _ in range(repetitions)]
    assert all(r.repetitions == repetitions for r in report.results)
    grouped = report.case_summary(1)
    assert grouped.case_name == "c1"
    assert [r.repetition for r in grouped.results] == [1, 2, 3, 4]
    assert grouped.summary.total_runs == 4


async def test_the_agent_is_called_once_per_case_and_repetition() -> None:
    model = Calculator()
    report = await Dataset(sums(2), evaluators=[ExactMatch()]).run(
        Agent(FunctionModel(model)), options=ExecutionOptions(repetitions=3, max_concurrency=2)
    )
    assert model.calls == 6
    assert len(report.results) == 6
    assert report.passed()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (ExecutionOptions(repetitions=0), "repetitions"),
        (ExecutionOptions(repetitions=True), "repetitions"),  # a bool is not a count
        (ExecutionOptions(max_concurrency=0), "max_concurrency"),
        (ExecutionOptions(task_retry=RetryPolicy(max_attempts=0)), "task_retry.max_attempts"),
        (ExecutionOptions(evaluator_retry=RetryPolicy(max_attempts=0)), "evaluator_retry.max_attempts"),
    ],
)
async def test_invalid_options_fail_before_any_model_call(options: ExecutionOptions, message: str) -> None:
    model = Calculator()
    hooked: list[EvalEvent] = []
    options = msgspec.structs.replace(options, hooks=[hooked.append])
    with pytest.raises(InvalidExecutionOptions, match=message):
        await Dataset(sums(2), evaluators=[ExactMatch()]).run(Agent(FunctionModel(model)), options=options)
    assert model.calls == 0
    assert hooked == []


async def test_async_hooks_are_refused_before_any_call() -> None:
    model = Calculator()

    async def hook(event: EvalEvent) -> None:
        raise AssertionError("never called")

    hooks: list[Any] = [hook]  # not an EvalHook: the refusal at run time is what is tested
    with pytest.raises(InvalidExecutionOptions, match="synchronous"):
        await Dataset(sums(1)).run(Agent(FunctionModel(model)), options=ExecutionOptions(hooks=hooks))
    assert model.calls == 0


def test_max_runs_is_accepted_exactly_and_its_report_reads_back() -> None:
    async def task(inputs: int) -> int:
        return inputs

    dataset = Dataset([Case(f"c{i}", i) for i in range(100)])
    report = anyio.run(lambda: dataset.run(task, options=ExecutionOptions(repetitions=MAX_RUNS // 100)))
    assert len(report.results) == MAX_RUNS
    assert load_report_json(dump_report_json(report)).summary().total_runs == MAX_RUNS


async def test_one_run_past_max_runs_is_refused_before_the_task_runs() -> None:
    calls = 0

    async def task(inputs: int) -> int:
        nonlocal calls
        calls += 1
        return inputs

    dataset = Dataset([Case(f"c{i}", i) for i in range(MAX_RUNS // 2 + 1)])
    with pytest.raises(InvalidExecutionOptions, match="MAX_RUNS"):
        await dataset.run(task, options=ExecutionOptions(repetitions=2))
    assert calls == 0


def test_max_cases_exactly_and_one_past() -> None:
    assert len(Dataset([Case(f"c{i}", i) for i in range(MAX_CASES)]).cases) == MAX_CASES
    with pytest.raises(InvalidCase, match="MAX_CASES"):
        Dataset([Case(f"c{i}", i) for i in range(MAX_CASES + 1)])


class Boom(Exception):
    pass


async def test_task_evaluator_and_hook_errors_propagate_unchanged() -> None:
    error = Boom("task")

    async def failing(inputs: Any) -> Any:
        raise error

    with pytest.raises(Boom) as raised:
        await Dataset(sums(1)).run(failing)
    assert raised.value is error

    evaluator_error = Boom("evaluator")

    def bad(case: Case, output: Any, usage: RunUsage) -> bool:
        raise evaluator_error

    with pytest.raises(Boom) as raised:
        await Dataset(sums(1), evaluators=[FunctionEvaluator("bad", bad)]).run(
            Agent(FunctionModel(Calculator()))
        )
    assert raised.value is evaluator_error

    hook_error = Boom("hook")

    def hook(event: EvalEvent) -> None:
        if event.kind == "case_end":
            raise hook_error

    with pytest.raises(Boom) as raised:
        await Dataset(sums(1)).run(Agent(FunctionModel(Calculator())), options=ExecutionOptions(hooks=[hook]))
    assert raised.value is hook_error


async def test_memory_errors_are_not_swallowed_or_wrapped() -> None:
    error = MemoryError()

    async def task(inputs: Any) -> Any:
        raise error

    with pytest.raises(MemoryError) as raised:
        await Dataset(sums(3)).run(task, options=ExecutionOptions(max_concurrency=3))
    assert raised.value is error


async def test_the_lowest_source_position_failure_wins_and_every_admitted_run_is_joined() -> None:
    # Runs 1 and 3 fail; run 3 fails first, run 1 only once run 3 has failed.
    third_failed = anyio.Event()
    started: list[int] = []
    finished: list[int] = []
    errors = {1: Boom("run 1"), 3: Boom("run 3")}

    async def task(inputs: int) -> int:
        started.append(inputs)
        try:
            if inputs == 1:
                await third_failed.wait()
                raise errors[1]
            if inputs == 3:
                third_failed.set()
                raise errors[3]
            for _ in range(5):
                await anyio.lowlevel.checkpoint()
            return inputs
        finally:
            finished.append(inputs)

    dataset = Dataset([Case(f"c{i}", i) for i in range(8)])
    with pytest.raises(Boom) as raised:
        await dataset.run(task, options=ExecutionOptions(max_concurrency=4))
    assert raised.value is errors[1]
    assert sorted(started) == [0, 1, 2, 3], "nothing may start after a failure"
    assert sorted(finished) == sorted(started), "every admitted run is joined before raising"


async def test_an_earlier_runs_evaluator_failure_beats_a_later_runs_task_failure() -> None:
    later = Boom("task of run 1")
    earlier = Boom("evaluator of run 0")
    task_failed = anyio.Event()

    async def task(inputs: int) -> int:
        if inputs == 1:
            task_failed.set()
            raise later
        return inputs

    async def judge(case: Case, output: Any, usage: RunUsage) -> bool:
        await task_failed.wait()
        raise earlier

    dataset = Dataset([Case("a", 0), Case("b", 1)], evaluators=[FunctionEvaluator("judge", judge)])
    with pytest.raises(Boom) as raised:
        await dataset.run(task, options=ExecutionOptions(max_concurrency=2))
    assert raised.value is earlier


async def test_sequential_runs_stop_at_the_first_failure() -> None:
    started: list[int] = []

    async def task(inputs: int) -> int:
        started.append(inputs)
        if inputs == 1:
            raise Boom
        return inputs

    with pytest.raises(Boom):
        await Dataset([Case(f"c{i}", i) for i in range(4)]).run(task)
    assert started == [0, 1]


async def test_task_retries_count_attempts_and_call_before_retry_first() -> None:
    attempts: dict[int, int] = {}
    seen: list[tuple[int, int, str | None, str]] = []

    async def flaky(inputs: int) -> int:
        attempts[inputs] = attempts.get(inputs, 0) + 1
        if attempts[inputs] <= inputs:  # case i fails i times
            raise Boom(f"case {inputs} attempt {attempts[inputs]}")
        return inputs

    async def before_retry(event: RetryEvent) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append((event.case_index, event.attempt, event.evaluator, str(event.error)))

    policy = RetryPolicy(max_attempts=3, before_retry=before_retry)
    report = await Dataset([Case(f"c{i}", i) for i in range(3)]).run(
        flaky, options=ExecutionOptions(task_retry=policy)
    )
    assert [r.task_attempts for r in report.results] == [1, 2, 3]
    assert seen == [
        (1, 1, None, "case 1 attempt 1"),
        (2, 1, None, "case 2 attempt 1"),
        (2, 2, None, "case 2 attempt 2"),
    ]


async def test_retries_stop_at_max_attempts_and_when_should_retry_says_no() -> None:
    calls = 0
    last = Boom()

    async def always(inputs: Any) -> Any:
        nonlocal calls, last
        calls += 1
        last = Boom(f"attempt {calls}")
        raise last

    with pytest.raises(Boom) as raised:
        await Dataset(sums(1)).run(always, options=ExecutionOptions(task_retry=RetryPolicy(max_attempts=2)))
    assert calls == 2
    assert raised.value is last

    calls = 0
    classified: list[BaseException] = []

    def never(error: BaseException) -> bool:
        classified.append(error)
        return False

    with pytest.raises(Boom):
        await Dataset(sums(1)).run(
            always, options=ExecutionOptions(task_retry=RetryPolicy(max_attempts=5, should_retry=never))
        )
    assert calls == 1
    assert classified == [last]


async def test_task_and_evaluator_retry_policies_are_independent() -> None:
    failures = {"judge": 0}

    def judge(case: Case, output: Any, usage: RunUsage) -> EvaluationResult:
        failures["judge"] += 1
        if failures["judge"] % 2 == 1:  # fails on every first try
            raise Boom("flaky judge")
        return EvaluationResult(passed=True, score=0.5)

    dataset = Dataset(sums(2), evaluators=[ExactMatch(), FunctionEvaluator("judge", judge)])
    agent = Agent(FunctionModel(Calculator()))
    with pytest.raises(Boom, match="flaky judge"):  # task retries do not apply to evaluators
        await dataset.run(agent, options=ExecutionOptions(task_retry=RetryPolicy(max_attempts=3)))
    failures["judge"] = 0
    report = await dataset.run(agent, options=ExecutionOptions(evaluator_retry=RetryPolicy(max_attempts=2)))
    assert [[(e.name, e.attempts) for e in r.evaluations] for r in report.results] == [
        [("exact_match", 1), ("judge", 2)],
        [("exact_match", 1), ("judge", 2)],
    ]
    assert all(r.task_attempts == 1 for r in report.results)


async def test_hooks_see_every_lifecycle_event_in_order() -> None:
    events: list[EvalEvent] = []
    report = await Dataset(sums(2)).run(
        Agent(FunctionModel(Calculator())), options=ExecutionOptions(repetitions=2, hooks=[events.append])
    )
    assert [(e.kind, e.case_index, e.repetition) for e in events] == [
        ("run_start", None, None),
        ("case_start", 0, 1),
        ("case_end", 0, 1),
        ("case_start", 0, 2),
        ("case_end", 0, 2),
        ("case_start", 1, 1),
        ("case_end", 1, 1),
        ("case_start", 1, 2),
        ("case_end", 1, 2),
        ("run_end", None, None),
    ]
    assert all(e.total_runs == 4 for e in events)
    assert [e.result for e in events if e.kind == "case_end"] == list(report.results)
    assert events[-1].report is report


async def test_agent_tasks_take_text_prompts_and_function_tasks_take_no_run_options() -> None:
    model = Calculator()
    with pytest.raises(InvalidCase, match="str"):
        await Dataset([Case("structured", {"a": 1})]).run(Agent(FunctionModel(model)))
    assert model.calls == 0

    async def task(inputs: Any) -> Any:
        raise AssertionError("never called")

    with pytest.raises(InvalidCase, match="run_options"):
        await Dataset([Case("x", 1, run_options=RunOptions(timeout=3.0))]).run(task)


async def test_run_options_reach_the_agent_run() -> None:
    seen: list[tuple[str | None, int | None]] = []

    def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if not any(
            isinstance(p, TextPart) for m in messages if not isinstance(m, ModelRequest) for p in m.parts
        ):
            seen.append((info.instructions, info.model_settings.max_tokens))
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(model), instructions="Be brief.")

    @agent.instructions
    def greeting(ctx: RunContext[str]) -> str:
        return f"Greet {ctx.deps}."

    options = RunOptions(deps="Ada", model_settings=ModelSettings(max_tokens=7), instructions="Use French.")
    await Dataset(
        [Case("a", "hi", run_options=options), Case("b", "hi", run_options=RunOptions(deps="Bob"))]
    ).run(agent)
    assert seen == [
        ("Be brief.\n\nGreet Ada.\n\nUse French.", 7),
        ("Be brief.\n\nGreet Bob.", None),
    ]


async def test_a_function_task_returning_an_agent_result_records_its_output_and_usage() -> None:
    agent = Agent(FunctionModel(Calculator()))

    async def task(inputs: tuple[int, int]) -> AgentRunResult[str]:
        return await agent.run(f"{inputs[0]}+{inputs[1]}")

    report = await Dataset([Case("a", (2, 3), expected="5")], evaluators=[ExactMatch()]).run(task)
    (result,) = report.results
    assert result.output == "5"
    assert result.passed
    assert (result.usage.requests, result.usage.input_tokens, result.usage.output_tokens) == (1, 10, 2)


async def test_a_plain_function_task_has_empty_usage_and_unknown_cost() -> None:
    async def task(inputs: int) -> int:
        return inputs

    report = await Dataset([Case("a", 1)]).run(task)
    assert report.results[0].usage == RunUsage()
    assert report.total_usage().cost_nano_usd is None


def priced_model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    return ModelResponse(
        parts=[TextPart("4")],
        usage=RequestUsage(input_tokens=1_000, output_tokens=500),
        model_name="gw-model",
    )


async def test_cost_comes_from_the_pricing_snapshot_or_overrides_per_case_and_in_total() -> None:
    pricing = Pricing(overrides={"function:gw-model": {"input_mtok": "2", "output_mtok": "10"}})
    agent = Agent(FunctionModel(priced_model))
    report = await Dataset(sums(3)).run(agent, options=ExecutionOptions(pricing=pricing, repetitions=2))
    # 1000 input tokens at $2/M + 500 output tokens at $10/M = $0.007 = 7,000,000 nano-USD per run.
    assert [r.usage.cost_nano_usd for r in report.results] == [7_000_000] * 6
    assert report.total_usage().cost_nano_usd == 42_000_000
    # The agent's own pricing wins when it knows the cost.
    own = Agent(FunctionModel(priced_model), pricing=pricing)
    report = await Dataset(sums(1)).run(own, options=ExecutionOptions(pricing=False))
    assert report.results[0].usage.cost_nano_usd == 7_000_000
    # Unknown prices stay unknown, and so does the total.
    report = await Dataset(sums(2)).run(Agent(FunctionModel(priced_model)))
    assert [r.usage.cost_nano_usd for r in report.results] == [None, None]
    assert report.total_usage().cost_nano_usd is None
    report = await Dataset(sums(1)).run(agent, options=ExecutionOptions(pricing=False))
    assert report.results[0].usage.cost_nano_usd is None


async def test_report_evaluators_run_once_after_every_case_and_gate_passed() -> None:
    seen: list[int] = []

    class CountRuns(ReportEvaluator):
        name = "count_runs"

        def evaluate(self, report: Report) -> Analysis:
            seen.append(len(report.results))
            return Analysis(value=len(report.results), unit="runs")

    def scored(case: Case, output: Any, usage: RunUsage) -> float:
        return int(output) / 10

    dataset = Dataset(
        sums(3),
        evaluators=[ExactMatch(), FunctionEvaluator("scored", scored)],
        report_evaluators=[CountRuns(), MinPassRate(0.9), MeanScore("scored", minimum=0.1)],
    )
    report = await dataset.run(
        Agent(FunctionModel(Calculator(wrong=frozenset({"2+2"})))), options=ExecutionOptions(repetitions=2)
    )
    assert seen == [6]
    assert [(a.name, a.assertion, a.value, a.unit) for a in report.analyses] == [
        ("count_runs", None, 6, "runs"),
        ("min_pass_rate", False, pytest.approx(4 / 6), "ratio"),
        ("mean_scored", True, pytest.approx((0 + 0.2 + 0.5) / 3), "score"),
    ]
    assert not report.passed()  # the failing runs and the false assertion


async def test_a_false_analysis_alone_fails_the_report() -> None:
    report = await Dataset(
        sums(1), evaluators=[ExactMatch()], report_evaluators=[MeanScore("x", minimum=0.5)]
    ).run(Agent(FunctionModel(Calculator())))
    assert all(r.passed for r in report.results)
    assert report.analyses[0].assertion is False
    assert not report.passed()


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, "0.5"])
async def test_non_finite_or_non_numeric_analysis_values_are_refused(value: Any) -> None:
    class Bad(ReportEvaluator):
        name = "bad"

        def evaluate(self, report: Report) -> Analysis:
            return Analysis(value=value)

    with pytest.raises(InvalidReportAnalysis, match="finite number"):
        await Dataset(sums(1), report_evaluators=[Bad()]).run(Agent(FunctionModel(Calculator())))


async def test_a_report_evaluator_must_return_an_analysis() -> None:
    class Wrong(ReportEvaluator):
        name = "wrong"

        async def evaluate(self, report: Report) -> Any:
            return 0.5

    with pytest.raises(InvalidReportAnalysis, match="Analysis"):
        await Dataset(sums(1), report_evaluators=[Wrong()]).run(Agent(FunctionModel(Calculator())))


async def test_score_statistics_ignore_absent_and_non_finite_scores() -> None:
    scores = {0: 0.25, 1: None, 2: math.nan, 3: 1.0, 4: math.inf, 5: 0.5}

    @evaluator("graded")
    def graded(case: Case, output: Any, usage: RunUsage) -> EvaluationResult:
        return EvaluationResult(score=scores[case.inputs])

    async def task(inputs: int) -> int:
        return inputs

    report = await Dataset([Case(f"c{i}", i) for i in scores], evaluators=[graded]).run(task)
    stats = report.score_statistics("graded")
    finite = [0.25, 1.0, 0.5]
    assert (stats.count, stats.min, stats.max) == (3, 0.25, 1.0)
    assert stats.mean == pytest.approx(statistics.fmean(finite))
    assert stats.std_dev == pytest.approx(statistics.pstdev(finite))
    missing = report.score_statistics("no-such-evaluator")
    assert (missing.count, missing.mean, missing.std_dev) == (0, None, None)


async def test_case_summaries_group_repetitions_with_their_statistics() -> None:
    attempt: dict[int, int] = {}

    async def task(inputs: int) -> int:
        attempt[inputs] = attempt.get(inputs, 0) + 1
        return attempt[inputs]

    @evaluator("rep")
    def rep(case: Case, output: Any, usage: RunUsage) -> EvaluationResult:
        return EvaluationResult(passed=output != 2, score=float(output))

    report = await Dataset([Case("a", 0), Case("b", 1)], evaluators=[rep]).run(
        task, options=ExecutionOptions(repetitions=3)
    )
    summary = report.case_summary(1)
    assert summary.case_name == "b"
    assert (summary.summary.total_runs, summary.summary.passed_runs) == (3, 2)
    assert summary.scores["rep"].mean == pytest.approx(2.0)
    assert summary.scores["rep"].std_dev == pytest.approx(statistics.pstdev([1.0, 2.0, 3.0]))
    with pytest.raises(IndexError):
        report.case_summary(2)


async def test_an_empty_dataset_has_a_null_pass_rate() -> None:
    async def task(inputs: Any) -> Any:
        raise AssertionError("never called")

    report = await Dataset([]).run(task)
    assert report.summary().pass_rate is None
    assert report.results == ()
    assert report.passed()


def test_names_are_unique_across_every_evaluator_kind_and_cases_are_unique() -> None:
    with pytest.raises(DuplicateEvaluatorName, match="contains"):
        Dataset(sums(1), evaluators=[Contains()], report_evaluators=[MinPassRate(0.5, name="contains")])
    with pytest.raises(DuplicateEvaluatorName):
        Dataset(sums(1), evaluators=[ExactMatch(), ExactMatch()])
    with pytest.raises(DuplicateCaseName, match="twice"):
        Dataset([Case("a", "1+1"), Case("a", "2+2")])
    with pytest.raises(InvalidCase):
        Dataset([Case("", "1+1")])


async def test_an_evaluator_returning_something_else_is_refused() -> None:
    @evaluator("odd")
    def odd(case: Case, output: Any, usage: RunUsage) -> Any:
        return "yes"

    with pytest.raises(InvalidEvaluationResult, match="'odd' returned str"):
        await Dataset(sums(1), evaluators=[odd]).run(Agent(FunctionModel(Calculator())))


async def test_evaluators_may_return_bools_numbers_or_results_sync_or_async() -> None:
    @evaluator("flag")
    def flag(case: Case, output: Any, usage: RunUsage) -> bool:
        return True

    @evaluator("number")
    async def number(case: Case, output: Any, usage: RunUsage) -> int:
        await anyio.lowlevel.checkpoint()
        return 3

    report = await Dataset(sums(1), evaluators=[flag, number]).run(Agent(TestModel(custom_output_text="0")))
    assert report.results[0].evaluations == (
        EvaluationResult(name="flag", passed=True),
        EvaluationResult(name="number", score=3.0),
    )
