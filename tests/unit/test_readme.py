"""The documentation, checked against the repository and the command line.

- every relative link and image in README.md, ``docs/*.md`` and the schemas' README points at a
  file that exists, and a ``#anchor`` into a Markdown file at one of its headings (GitHub's
  slugs); so does every repository path they quote as code (``memstream/streams/app.py``);
- every ``memstream <command>`` quoted in README.md and ``docs/*.md`` (in shell blocks and inline
  code) is a command: ``python -m memstream.cli <command> --help`` exits 0 (each command once,
  all in one subprocess), a quoted subcommand is one of its choices, and every quoted ``--flag``
  is one of its options;
- ``docs/settings.md`` names every setting ``Settings.from_env`` reads, ``docs/index.md`` lists
  every page, and README.md stays a front door (at most 250 lines).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from memstream.services.kafka_security import KAFKA_ENVIRONMENT
from memstream.services.settings import ENVIRONMENT

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
LINKED = [*PAGES, ROOT / "memstream" / "schemas" / "README.md"]
README_MAX_LINES = 250
# A hang guard, not a speed test: every `--help` together takes ~1 s here; a host 15x slower
# still fits.
HELP_TIMEOUT_S = 120

FENCE = re.compile(r"^(```+|~~~+)\s*([\w-]*)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
SHELL = {"", "sh", "bash", "shell", "console"}
# `memstream` as a command word: at the start, after a space or a path (.venv/bin/memstream).
COMMAND = re.compile(r"(?:^|(?<=[\s/]))memstream[ \t]+([a-z][a-z-]*)([^\n]*)")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
# A repository path quoted as inline code: `memstream/streams/app.py`, `tests/e2e/`.
REPO_PATH = re.compile(r"^(?:\.\./)*((?:memstream|tests|docs)/[\w./-]*)$")


@dataclass(frozen=True)
class Quote:
    """One ``memstream …`` command as the docs quote it."""

    page: str
    command: str
    words: tuple[str, ...]  # what follows the command, shell-split where possible

    def __str__(self) -> str:
        return f"{self.page}: memstream {self.command} {' '.join(self.words)}".rstrip()


def _split(text: str) -> tuple[list[tuple[str, str]], str]:
    """(fenced blocks as (language, body)) and the prose with the blocks removed."""
    blocks: list[tuple[str, str]] = []
    prose: list[str] = []
    fence: str | None = None
    language = ""
    body: list[str] = []
    for line in text.splitlines():
        opened = FENCE.match(line.strip())
        if fence is None and opened:
            fence, language, body = opened.group(1), opened.group(2).lower(), []
        elif fence is not None and line.strip().startswith(fence):
            blocks.append((language, "\n".join(body)))
            fence = None
        elif fence is not None:
            body.append(line)
        else:
            prose.append(line)
    return blocks, "\n".join(prose)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    found: set[str] = set()
    _, prose = _split(page.read_text(encoding="utf-8"))
    for line in prose.splitlines():
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def _links(page: Path) -> list[str]:
    _, prose = _split(page.read_text(encoding="utf-8"))
    return LINK.findall(INLINE_CODE.sub("", prose))


def broken_links(page: Path) -> list[str]:
    problems = []
    for target in _links(page):
        if EXTERNAL.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        resolved = (page.parent / path_part).resolve() if path_part else page
        where = f"{page.relative_to(ROOT)}: ({target})"
        if not resolved.exists():
            problems.append(f"{where}: {path_part} does not exist")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{where}: no heading #{anchor} in {resolved.relative_to(ROOT)}")
    return problems


def _words(rest: str) -> tuple[str, ...]:
    rest = re.split(r"\s(?:#|\||;|&&)\s?", " " + rest)[0]
    try:
        return tuple(shlex.split(rest))
    except ValueError:  # an unbalanced quote in prose: plain words are enough
        return tuple(rest.split())


def quotes(page: Path) -> list[Quote]:
    blocks, prose = _split(page.read_text(encoding="utf-8"))
    texts = [body for language, body in blocks if language in SHELL]
    texts += [" ".join(span.split()) for _, span in INLINE_CODE.findall(prose)]
    name = str(page.relative_to(ROOT))
    return [
        Quote(name, match.group(1), _words(match.group(2)))
        for text in texts
        for match in COMMAND.finditer(text)
    ]


QUOTES = [quote for page in PAGES for quote in quotes(page)]
COMMANDS = sorted({quote.command for quote in QUOTES})


# ``python -m memstream.cli <command> --help`` for each command, in one subprocess: runpy runs
# the module as ``-m`` does, and the imports are paid once instead of once per command.
DRIVER = """
import contextlib, io, json, runpy, sys
results = {}
for command in sys.argv[1:]:
    sys.argv = ["memstream", command, "--help"]
    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module("memstream.cli", run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    results[command] = {"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}
json.dump(results, sys.__stdout__)
"""


@dataclass(frozen=True)
class Help:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def helps() -> dict[str, Help]:
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, *COMMANDS],
        capture_output=True,
        text=True,
        timeout=HELP_TIMEOUT_S,
        env=dict(os.environ),  # PYTHONPATH and the rest, as they are
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {command: Help(**result) for command, result in json.loads(done.stdout).items()}


def subcommands(help_text: str) -> frozenset[str] | None:
    """The choices of a command's first positional argument, when it has them."""
    section = help_text.partition("positional arguments:")[2]
    first = section.strip().splitlines()[0].strip() if section.strip() else ""
    match = re.match(r"\{([^}]*)\}", first)
    return frozenset(match.group(1).split(",")) if match else None


def test_readme_is_a_front_door() -> None:
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES})"


def test_every_relative_link_exists() -> None:
    problems = [problem for page in LINKED for problem in broken_links(page)]
    assert not problems, "\n".join(problems)


def test_every_quoted_repository_path_exists() -> None:
    missing = []
    for page in LINKED:
        _, prose = _split(page.read_text(encoding="utf-8"))
        for _, span in INLINE_CODE.findall(prose):
            path = REPO_PATH.match(span.strip())
            if path and not (ROOT / path.group(1)).exists():
                missing.append(f"{page.relative_to(ROOT)}: `{span.strip()}` does not exist")
    assert not missing, "\n".join(missing)


def test_the_docs_quote_commands() -> None:
    # The extraction itself works: the README's own examples are found.
    readme = {quote.command for quote in quotes(README)}
    assert {"publish", "ask", "history", "mcp"} <= readme, readme


@pytest.mark.parametrize("command", COMMANDS)
def test_quoted_command_exists(command: str, helps: dict[str, Help]) -> None:
    done = helps[command]
    pages = sorted({quote.page for quote in QUOTES if quote.command == command})
    assert done.returncode == 0, f"{', '.join(pages)}: memstream {command} --help: {done.stderr}"


def test_quoted_subcommands_and_flags_exist(
    helps: dict[str, Help],
) -> None:
    problems = []
    for quote in QUOTES:
        done = helps[quote.command]
        if done.returncode != 0:
            continue  # reported by test_quoted_command_exists
        choices = subcommands(done.stdout)
        first = quote.words[0] if quote.words else ""
        if choices is not None and re.fullmatch(r"[a-z][a-z_-]*", first) and first not in choices:
            problems.append(f"{quote}: {first!r} is not one of {sorted(choices)}")
        options = set(FLAG.findall(done.stdout))
        for word in quote.words:
            flag = re.match(r"--[a-z][a-z0-9-]*", word.lstrip("[("))
            if flag and flag.group() not in options:
                problems.append(f"{quote}: memstream {quote.command} has no {flag.group()}")
    assert not problems, "\n".join(problems)


def test_every_setting_is_documented() -> None:
    page = (DOCS / "settings.md").read_text(encoding="utf-8")
    names = [name for name, _, _ in ENVIRONMENT] + [name for name, _ in KAFKA_ENVIRONMENT]
    missing = [name for name in names if f"`{name}`" not in page]
    assert not missing, f"docs/settings.md does not name {missing}"


def test_the_index_lists_every_page() -> None:
    listed = {target.partition("#")[0] for target in _links(DOCS / "index.md")}
    pages = {page.name for page in DOCS.glob("*.md")} - {"index.md"}
    assert sorted(pages - listed) == []


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Production: docker-compose.yml", "production-docker-composeyml"),
        ("`force` and the gate", "force-and-the-gate"),
        ("Identity: who may ask, who may write", "identity-who-may-ask-who-may-write"),
        ("LoCoMo through the real path", "locomo-through-the-real-path"),
    ],
)
def test_slugs_follow_github(heading: str, expected: str) -> None:
    assert slug(heading) == expected
