"""The ``lagless`` command: global options, sub-commands, one-line errors."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.core
from confluent_kafka import KafkaException
from typer.exceptions import Abort, Exit, TyperException

from lagless.cli import (
    broker,
    consume,
    demo,
    deploy,
    dlq,
    group,
    lab,
    lag,
    pipeline,
    plan,
    produce,
    report,
    tail,
    topic,
    ui,
)
from lagless.cli import run as run_app
from lagless.cli.common import GlobalOptions, setup_logging, warn
from lagless.cli.globals import hoist, librdkafka_properties
from lagless.config import unknown_variables
from lagless.engine.loop import UNCLOSED
from lagless.errors import ConfigError, LaglessError
from lagless.signals import Terminated, ending


class Commands(typer.core.TyperGroup):
    """The commands: a Ctrl-C or SIGTERM that reaches a command's code (its start-up, before
    it takes the signal over) ends with one line and exit 130 or 143 (see
    :mod:`lagless.cli.entry`); typer alone exits 130 silently, and SIGTERM killed silently."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (KeyboardInterrupt, Terminated) as exc:
            what, code = ending(
                signal.SIGINT if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM
            )
            sys.stderr.write(f"lagless: {what}\n")
            raise Exit(code) from None


app = typer.Typer(
    cls=Commands,
    name="lagless",
    help="Kafka pipelines that keep consumer lag near zero.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=True,
)


def show_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        import confluent_kafka

        typer.echo(
            f"lagless {version('lagless')} (confluent-kafka {confluent_kafka.version()}, "
            f"librdkafka {confluent_kafka.libversion()[0]})"
        )
        raise typer.Exit()


@app.callback()
def main_options(
    ctx: typer.Context,
    bootstrap: Annotated[
        str | None,
        typer.Option(
            "--bootstrap",
            "-b",
            help="HOST:PORT[,...]; default: env LAGLESS_BOOTSTRAP, "
            "the config file, else the embedded broker",
        ),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="TOML settings file (or env LAGLESS_CONFIG)")
    ] = None,
    state_dir: Annotated[
        Path | None,
        typer.Option(
            "--state-dir",
            help="embedded broker state (default: $LAGLESS_HOME, else "
            "$XDG_STATE_HOME/lagless, else ~/.local/state/lagless)",
        ),
    ] = None,
    properties: Annotated[
        list[str] | None,
        typer.Option(
            "-X",
            metavar="KEY=VALUE",
            help="any librdkafka property, for every client the command creates (repeat)",
        ),
    ] = None,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="more logs")] = 0,
    _version: Annotated[
        bool,
        typer.Option(
            "--version", callback=show_version, is_eager=True, help="print the version and exit"
        ),
    ] = False,
) -> None:
    """Kafka pipelines that keep consumer lag near zero. The global options (-b, --config,
    -X, --state-dir, -v) are accepted anywhere on the line: `lagless tail T -b HOST:PORT`."""
    setup_logging(verbose)
    for line in unknown_variables():
        warn(line)
    ctx.obj = GlobalOptions(bootstrap, config, state_dir, librdkafka_properties(properties or []))


app.add_typer(broker.app, name="broker")
app.add_typer(topic.app, name="topic")
app.add_typer(group.app, name="group")
app.add_typer(dlq.app, name="dlq")
app.command("tail")(tail.tail)
app.command("produce")(produce.produce)
app.command("consume")(consume.consume)
app.command("run")(run_app.run)
app.add_typer(pipeline.app, name="pipeline")
app.command("lag")(lag.lag)
app.command("plan")(plan.plan)
app.command("report")(report.report)
app.command("demo")(demo.demo)
app.add_typer(lab.app, name="lab")
app.command("ui")(ui.ui)
app.add_typer(deploy.app, name="deploy")


def main() -> None:
    """Entry point: runs the app; errors become one line on stderr and a non-zero exit."""
    leave(run())


def run() -> int:
    """The app's exit code."""
    try:
        code = app(args=hoist(sys.argv[1:]), standalone_mode=False)
    except Exit as exc:
        return int(exc.exit_code)
    except Abort:
        sys.stderr.write("lagless: aborted\n")
        return 130
    except TyperException as exc:
        sys.stderr.write(f"lagless: error: {exc.format_message()}\n")
        return int(exc.exit_code)
    except ConfigError as exc:
        sys.stderr.write(f"lagless: error: {exc}\n")
        return 2
    except LaglessError as exc:
        sys.stderr.write(f"lagless: error: {exc}\n")
        return 1
    except KafkaException as exc:
        sys.stderr.write(f"lagless: kafka error: {exc.args[0]}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("lagless: interrupted\n")
        return 130
    return code if isinstance(code, int) else 0


def leave(code: int) -> None:
    """Exit with ``code``. A consumer kept open to stop without leaving its group
    (``--no-leave-group``) must not be closed nor destroyed: exit without cleanup then."""
    if UNCLOSED:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
