"""The programs here are run as scripts by tests/test_pydantic_ai_programs.py, never collected as tests
(one of them defines a `test_...` function, as PydanticAI's testing docs write it)."""

collect_ignore_glob = ["*.py"]
