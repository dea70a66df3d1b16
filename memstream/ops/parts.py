"""The stack's parts as the commands see them: their endpoints, and the one error a failing
part raises. Imports nothing of memstream: ``stack`` and ``health`` both build on it.
"""

from __future__ import annotations

from dataclasses import dataclass


class StackError(RuntimeError):
    """One part of the stack failed; the message says which and how to fix it."""

    def __init__(self, part: str, problem: str, fix: str) -> None:
        super().__init__(f"{part}: {problem}. Fix: {fix}")
        self.part = part
        self.problem = problem
        self.fix = fix


@dataclass(frozen=True, slots=True)
class Endpoints:
    broker: str
    postgres_dsn: str
    redis_url: str
    vectors: str

    def describe(self) -> str:
        return (
            f"broker {self.broker} · postgres {self.postgres_dsn} · redis {self.redis_url} · "
            f"vectors {self.vectors}"
        )
