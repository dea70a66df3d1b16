"""The ``memstream`` command line: one sub-command per job, settings from the environment.

Every failure the user can fix ends with one line (``memstream: <part>: <problem>. Fix: …``)
and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from memstream.services.kafka_security import KAFKA_ENVIRONMENT
from memstream.services.settings import ENVIRONMENT, Settings, SettingsError

EXIT_CONFIG = 2
EXIT_USAGE = 2
EXIT_FAILED = 1


class _Parser(argparse.ArgumentParser):
    """argparse that suggests the closest command or flag for a mistyped one."""

    def error(self, message: str) -> NoReturn:
        hint = ""
        if "invalid choice:" in message:
            wrong = message.split("invalid choice:", 1)[1].split("'")[1:2]
            choices = [c for action in self._actions if action.choices for c in action.choices]
            close = difflib.get_close_matches(wrong[0], choices, n=1) if wrong else []
            hint = f" (did you mean {close[0]!r}?)" if close else ""
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}{hint}\n")

    def suggest_flags(self, extras: Sequence[str]) -> NoReturn:
        known = [o for action in self._actions for o in action.option_strings]
        hints = []
        for extra in extras:
            close = difflib.get_close_matches(extra.split("=", 1)[0], known, n=1)
            if close:
                hints.append(f"{extra} (did you mean {close[0]}?)")
        self.error("unrecognized arguments: " + (", ".join(hints) or " ".join(extras)))


def _parser() -> _Parser:
    listed = [(name, text) for name, _, text in ENVIRONMENT] + list(KAFKA_ENVIRONMENT)
    settings_help = "\n".join(f"  {name:<36} {text}" for name, text in listed)
    parser = _Parser(
        prog="memstream",
        description="memstream: versioned, trust-scored memory for AI agents, over Kafka.",
        epilog=f"settings (environment variables):\n{settings_help}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    sub.add_parser(
        "demo",
        help="the main job: publish a realistic history and show, side by side, what plain "
        "vector search and memstream answer",
    )
    up_cmd = sub.add_parser(
        "up", help="run the stack and one worker in the foreground (Ctrl-C stops)"
    )
    up_cmd.add_argument(
        "--drain-timeout",
        type=float,
        default=300.0,
        help="on a stop, seconds the worker may take to ingest what the embedded broker holds "
        "(default 300)",
    )
    sub.add_parser("worker", help="run one more worker against a running stack")
    sub.add_parser("health", help="check every part of a running stack and print its status")

    publish = sub.add_parser("publish", help="publish MemoryEvents from a JSON-lines file")
    publish.add_argument("file", type=Path, help="one MemoryEvent JSON object per line")
    publish.add_argument(
        "--wait",
        action="store_true",
        help="return only when every event is ingested or dead-lettered",
    )
    publish.add_argument("--topic", help="topic to publish to (default: the events topic)")
    publish.add_argument("--key", help="producer credential (default MEMSTREAM_KEY / data dir)")
    publish.add_argument(
        "--timeout", type=float, default=900.0, help="seconds --wait waits at most (default 900)"
    )

    ask = sub.add_parser("ask", help="ask memstream a question (or a batch) over Kafka")
    ask.add_argument("query", nargs="?", help="the question, as an agent would ask it")
    ask.add_argument("--tenant", help="tenant id (default: the credential's)")
    ask.add_argument("--user", help="the user / customer the question is about")
    ask.add_argument("--as-of", dest="as_of", help="valid time: what was true then (ISO)")
    ask.add_argument("--known-at", dest="known_at", help="transaction time (ISO)")
    ask.add_argument("--window", nargs=2, metavar=("FROM", "TO"), help="occurred between (ISO)")
    ask.add_argument("--limit", type=int, default=5, help="results (1-50, default 5)")
    ask.add_argument("--force", action="store_true", help="skip the gate")
    ask.add_argument("--json", action="store_true", help="print the reply as JSON")
    ask.add_argument("--batch", help="JSON-lines requests in, one JSON reply per line out")
    ask.add_argument("--timeout", type=float, default=15.0, help="seconds per request")
    ask.add_argument(
        "--concurrency",
        type=int,
        default=16,
        help="--batch: requests in flight at once (default 16)",
    )
    ask.add_argument("--key", help="agent credential (default MEMSTREAM_KEY / data dir)")

    bench = sub.add_parser(
        "bench", help="benchmarks that print figures (ingest, query, replay, quality)"
    )
    bench.add_argument(
        "what",
        choices=[
            "ingest",
            "query",
            "replay",
            "quality",
            "erasure",
            "soak",
            "broker",
            "rescore",
            "scale",
        ],
    )
    bench.add_argument("--events", type=int, default=20_000, help="events end to end")
    bench.add_argument(
        "--model-sample", type=int, default=2_000, help="texts for the raw model throughput"
    )
    bench.add_argument("--memories", type=int, default=10_000, help="memories (query bench)")
    bench.add_argument("--questions", type=int, default=200, help="questions (query bench)")
    bench.add_argument(
        "--encoders",
        default="torch,onnx,onnx-int8",
        help="encoders side by side (ingest, query benches; the first is the reference)",
    )
    bench.add_argument(
        "--burst", type=int, default=5_000, help="events ingested under queries (query bench)"
    )
    bench.add_argument(
        "--via-http", action="store_true", help="query bench: also through the HTTP gateway"
    )
    bench.add_argument(
        "--versions",
        type=int,
        default=100_000,
        help="current versions (replay bench: 1.24 events each, default 100,000)",
    )
    soak = bench.add_argument_group("soak bench (requests under ingest bursts and worker churn)")
    soak.add_argument("--requests", type=int, default=100_000, help="default 100,000")
    soak.add_argument("--concurrency", type=int, default=32, help="in flight (default 32)")
    soak.add_argument("--soak-burst", type=int, default=200, help="events every 5 s (default 200)")
    soak.add_argument(
        "--churn",
        type=int,
        default=2,
        help="times a second worker joins and leaves, spread over the run (default 2)",
    )
    broker = bench.add_argument_group("broker bench (one embedded-broker partition as it grows)")
    broker.add_argument(
        "--batches",
        default="0,10000,100000",
        help="partition sizes to measure at, in record batches (default 0,10000,100000)",
    )
    erasure = bench.add_argument_group("erasure bench (--versions: the whole store)")
    erasure.add_argument(
        "--subject-versions", type=int, default=1_000, help="the subject's versions (1,000)"
    )
    erasure.add_argument(
        "--vector-points", type=int, help="points in the shard (default: one per version)"
    )
    scale = bench.add_argument_group("scale bench (one tenant growing; many small tenants)")
    scale.add_argument(
        "--sizes",
        default="10000,100000,1000000",
        help="memories (default 10000,100000,1000000: 21-60 min on 2 cores, ~5 GB RSS)",
    )
    scale.add_argument(
        "--rescore-budget",
        type=float,
        default=900.0,
        help="seconds the rescoring catch-up of each size may take (900: it must end for the "
        "next pass to be the timer's steady cost)",
    )
    scale.add_argument("--tenants", type=int, default=1000, help="small tenants (default 1000)")
    scale.add_argument("--scale-questions", type=int, default=100, help="per figure (100)")
    scale.add_argument("--json", action="store_true", help="print the JSON document only")
    scale.add_argument("--plot", help="write a PNG of each curve into this folder")
    quality = bench.add_argument_group("quality bench (default: the full run; limits subsample)")
    quality.add_argument("--traps-per-family", type=int, default=20, help="default 20")
    quality.add_argument("--locomo-conversations", type=int, help="default all 10")
    quality.add_argument("--locomo-questions", type=int, help="default all (1,982)")
    quality.add_argument("--sgd-cases", type=int, help="slot chains, default all (2,629)")
    quality.add_argument(
        "--suites", default="traps,heldout,locomo,sgd,timeqa", help="comma-separated"
    )
    quality.add_argument("--seed", type=int, default=7, help="traps and sampling (default 7)")
    quality.add_argument("--out", default="results", help="report folder root (default results)")
    quality.add_argument(
        "--via-kafka",
        action="store_true",
        help="LoCoMo also through a real stack + worker (publish, ask --batch), beside in-process",
    )

    model = sub.add_parser("model", help="export the embedding model to ONNX (model cache)")
    model.add_argument("action", choices=["build"])
    model.add_argument(
        "--encoder",
        choices=["onnx", "onnx-int8", "all"],
        help="which export (default: MEMSTREAM_ENCODER's)",
    )

    rules = sub.add_parser("rules", help="a tenant's half-lives and authorities (run time)")
    rules.add_argument("action", choices=["set", "show"])
    rules.add_argument("kind", nargs="?", choices=["half_life", "authority"])
    rules.add_argument("name", nargs="?", help="fact type (half_life) or source (authority)")
    rules.add_argument("value", nargs="?", help="a duration (3d, 6h) or an authority in (0, 1]")
    rules.add_argument("--tenant", required=True)
    rules.add_argument(
        "--create", action="store_true", help="set: allow a tenant that has no memories yet"
    )

    dlq = sub.add_parser("dlq", help="list, show and redrive dead-lettered events")
    dlq.add_argument("action", choices=["list", "show", "redrive"])
    dlq.add_argument("ids", nargs="*", help="dead letter ids (show, redrive)")
    dlq.add_argument("--tenant", help="only this tenant's")
    dlq.add_argument("--reason", help="only this reason (e.g. invalid_field)")
    dlq.add_argument("--limit", type=int, help="list: at most this many")
    dlq.add_argument(
        "--all", action="store_true", help="redrive: every one not redriven yet (with filters)"
    )
    dlq.add_argument("--json", action="store_true", help="list: one JSON object per line")
    dlq.add_argument(
        "--key", help="redrive: producer credential (default MEMSTREAM_KEY / data dir)"
    )

    audit = sub.add_parser("audit", help="what an agent was told for one request, and why")
    audit.add_argument("request_id")
    audit.add_argument("--json", action="store_true", help="the logged request and reply as JSON")

    replay = sub.add_parser(
        "replay",
        help="rebuild derived state from the Postgres ledger or the events topic (the vector "
        "index, an audit copy in another schema, lost versions) and verify it",
    )
    what = replay.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--index",
        action="store_true",
        help="rebuild the live vector index from Postgres (Qdrant Edge: stop the worker first)",
    )
    what.add_argument(
        "--into-schema",
        dest="into_schema",
        metavar="NAME",
        help="replay the ledger into an audit copy in schema NAME (created, migrated; resumable)",
    )
    what.add_argument(
        "--into-live",
        dest="into_live",
        action="store_true",
        help="with --from-topic: record into the live store what its ledger lacks (after a "
        "restore from an older backup; what it holds already changes nothing)",
    )
    replay.add_argument(
        "--from-topic",
        dest="from_topic",
        action="store_true",
        help="read the events from the events topic by the offset ranges the ledger recorded "
        "(or --offsets) instead of from the ledger",
    )
    replay.add_argument("--topic", help="with --from-topic: the topic (default: the events topic)")
    replay.add_argument(
        "--offsets",
        action="append",
        metavar="P:FIRST-LAST",
        help="with --from-topic: offsets FIRST..LAST of partition P (P:FIRST- reads to the "
        "partition's end; repeatable; default: the ranges the ledger recorded)",
    )
    replay.add_argument(
        "--tenant",
        action="append",
        metavar="T",
        help="only this tenant (repeatable; default: every tenant)",
    )
    replay.add_argument(
        "--until", metavar="ISO", help="only events received up to then (transaction time)"
    )
    replay.add_argument(
        "--into-dsn",
        dest="into_dsn",
        metavar="DSN",
        help="put the copy in this database (default: the live one)",
    )
    replay.add_argument(
        "--into-vectors",
        dest="into_vectors",
        metavar="DIR",
        type=Path,
        help="Qdrant Edge root of the copy's vectors (default DATA_DIR/replay-NAME)",
    )
    replay.add_argument(
        "--no-vectors", dest="no_vectors", action="store_true", help="the copy without vectors"
    )
    replay.add_argument(
        "--verify",
        action="store_true",
        help="only compare, a sha256 per tenant: the copy against the live state, or with "
        "--index the live index against Postgres (exit 0 identical, 1 not)",
    )
    replay.add_argument(
        "--batch", type=int, default=256, metavar="N", help="events per batch (default 256)"
    )

    forget = sub.add_parser(
        "forget",
        help="erase a data subject everywhere (versions, ledger content, vectors, caches, "
        "query log, dead letters), keeping ids, positions and digests; logged without the data",
    )
    forget.add_argument("--tenant", required=True)
    subject = forget.add_mutually_exclusive_group(required=True)
    subject.add_argument("--entity", metavar="TYPE:ID", help="every memory anchored to it")
    subject.add_argument("--memory", metavar="KEY", help="every version of one memory")
    forget.add_argument("--reason", help="why (kept in the erasure log: no personal data)")
    forget.add_argument("--dry-run", dest="dry_run", action="store_true", help="only count")
    forget.add_argument(
        "--actor", help="who asks, as recorded (default: the admin key's id, else cli:USER)"
    )
    forget.add_argument(
        "--key", help="admin credential (default MEMSTREAM_KEY / data dir): signs the hand-off"
    )
    forget.add_argument("--json", action="store_true", help="the result as JSON")

    from memstream.ops.identity import add_parsers as identity_parsers

    identity_parsers(sub)  # tenants, keys

    history = sub.add_parser("history", help="the version chain of one memory")
    history.add_argument("memory_key")
    history.add_argument("--tenant", required=True)
    history.add_argument("--json", action="store_true", help="one JSON object per version")
    history.add_argument("--as-of", dest="as_of", help="the version true at this time (ISO)")
    history.add_argument(
        "--known-at", dest="known_at", help="the chain as memstream knew it at this time (ISO)"
    )

    gateway = sub.add_parser(
        "gateway", help="serve the HTTP gateway (REST, MCP at /mcp, timeline at /ui)"
    )
    gateway.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    gateway.add_argument("--port", type=int, help="port (default MEMSTREAM_GATEWAY_PORT, 7070)")
    sub.add_parser("mcp", help="serve the MCP tools over stdio (credential: MEMSTREAM_KEY)")
    link = sub.add_parser(
        "ui-link", help="a one-page link to a timeline page (no credential in it; good once)"
    )
    link.add_argument("page", nargs="?", default="/ui", help="e.g. /ui/memories/spec:X1")
    link.add_argument("--url", help="the gateway (default http://127.0.0.1:GATEWAY_PORT)")
    link.add_argument("--tenant", help="whose agent credential in credentials.json")
    link.add_argument("--key", help="the credential (default MEMSTREAM_KEY, credentials.json)")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = _parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        chosen = _subparser(parser, args.command)
        (chosen or parser).suggest_flags(extras)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # The commands report a broker they cannot reach in one line of their own.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    sys.exit(run(args))


def _subparser(parser: _Parser, command: str) -> _Parser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(command)
            return found if isinstance(found, _Parser) else None
    return None


def run(args: argparse.Namespace) -> int:
    """Dispatch, and turn every failure into one line and an exit status (2: usage, 1: the
    command failed), never a traceback (``MEMSTREAM_LOG_LEVEL=debug`` shows it)."""
    from memstream.ops.ask import UsageError
    from memstream.ops.stack import StackError
    from memstream.services.ports import AdapterError
    from memstream.streams.client import BrokerUnavailable, MemoryClientError

    try:
        settings = Settings.from_env()
        return _dispatch(args, settings)
    except SettingsError as exc:
        return _fail(f"settings: {exc}", EXIT_CONFIG)
    except UsageError as exc:
        return _fail(f"{args.command}: {exc}", EXIT_USAGE)
    except StackError as exc:
        return _fail(str(exc), EXIT_CONFIG)
    except BrokerUnavailable as exc:
        return _fail(f"broker: {exc}", EXIT_CONFIG)
    except MemoryClientError as exc:
        return _fail(f"{args.command}: {exc}", EXIT_FAILED)
    except AdapterError as exc:
        return _fail(f"{args.command}: {exc}. Fix: check that the stack is up (memstream health)")
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _quiet_pipe()
    except Exception as exc:
        if os.environ.get("MEMSTREAM_LOG_LEVEL", "").lower() == "debug":
            raise
        return _fail(
            f"{args.command}: {type(exc).__name__}: {exc}. Fix: if this persists, rerun with "
            "MEMSTREAM_LOG_LEVEL=debug and report the traceback"
        )


def _fail(line: str, status: int = EXIT_FAILED) -> int:
    with contextlib.suppress(BrokenPipeError):
        print(f"memstream: {line}", file=sys.stderr, flush=True)
    return status


def _quiet_pipe() -> int:
    """The reader went away (``… | head``): stop quietly, as Unix tools do."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # Python's flush at exit must not raise again
    return 0


def _dispatch(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "demo":
        from memstream.ops.demo import demo

        return demo(settings)
    if args.command == "up":
        from memstream.ops.up import up

        return up(settings, drain_timeout=args.drain_timeout)
    if args.command == "worker":
        from memstream.ops.up import worker

        return worker(settings)
    if args.command == "health":
        from memstream.ops.stack import print_health

        return print_health(settings)
    if args.command == "publish":
        from memstream.ops.publish import publish

        return publish(
            settings,
            args.file,
            topic=args.topic,
            wait=args.wait,
            timeout=args.timeout,
            key=args.key,
        )
    if args.command == "ask":
        from memstream.ops.ask import ask

        return ask(settings, args)
    if args.command == "bench":
        from memstream.bench.command import bench

        return bench(settings, args)
    if args.command == "model":
        from memstream.ops.model import model_build

        return model_build(settings, args.encoder or settings.encoder)
    if args.command == "rules":
        from memstream.ops.rules import rules

        if args.action == "set" and not (args.kind and args.name and args.value):
            from memstream.ops.ask import UsageError

            raise UsageError("rules set needs KIND NAME VALUE")
        return rules(settings, args)
    if args.command == "dlq":
        from memstream.ops.dlq import dlq

        return dlq(settings, args)
    if args.command == "audit":
        from memstream.ops.audit import audit

        return audit(settings, args.request_id, as_json=args.json)
    if args.command == "history":
        from memstream.ops.ask import moment
        from memstream.ops.history import history

        return history(
            settings,
            args.tenant,
            args.memory_key,
            as_json=args.json,
            as_of=moment(args.as_of, "--as-of"),
            known_at=moment(args.known_at, "--known-at"),
        )
    if args.command == "forget":
        from memstream.ops.forget import forget

        return forget(settings, args, as_json=args.json)
    if args.command in ("tenants", "keys"):
        from memstream.ops.identity import run as identity

        return identity(settings, args)
    if args.command == "replay":
        from memstream.ops.replay import options_from, replay

        return replay(settings, options_from(args))
    if args.command in ("gateway", "mcp", "ui-link"):
        from memstream.gateway.serve import gateway, mcp_stdio, ui_link

        if args.command == "ui-link":
            port = settings.gateway_port or 7070
            url = args.url or f"http://127.0.0.1:{port}"
            return ui_link(settings, args.page, url=url, key=args.key, tenant=args.tenant)
        if args.command == "mcp":
            return mcp_stdio(settings)
        return gateway(settings, host=args.host, port=args.port or settings.gateway_port or 7070)
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    main()
