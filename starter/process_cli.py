"""The commands that run a process of the engine: `skills dev`, `skills worker`, `skills setup`."""

from __future__ import annotations

from pathlib import Path

import click

from starter.command import current, prepare_process, process_command, refuse_json


@click.command(short_help="The dev server, the worker and the bundled skills (make run).")
@click.option("--config", "config", default="temporal-dev.yaml", show_default=True, type=click.Path(path_type=Path),
              help="The dev server profile: ports, db file, namespace, search attributes.")
@process_command
def dev(config: Path) -> int:
    """The local dev server, the worker and the bundled skills (what `make run` runs).

    --address and --namespace choose where the dev server listens and its namespace,
    over the profile's; --task-queue the worker's queue.
    """
    refuse_json("dev")
    from starter.dev import run_dev

    options = current()
    return run_dev(config, task_queue=options.task_queue, address=options.address, namespace=options.namespace)


@click.command(short_help="The worker alone (what runs in Kubernetes).")
@process_command
def worker() -> int:
    """The worker alone (what runs in Kubernetes): connects with Temporal's env config."""
    refuse_json("worker")
    import worker as worker_process

    options = current()
    settings = options.settings()
    prepare_process(settings, long_running=True)
    worker_process.main(settings, address=options.address, namespace=options.namespace)
    return 0


@click.command(short_help="Migrate the store; register the search attributes on the namespace.")
@process_command
def setup() -> int:
    """Create and migrate the store (SKILLS_DATABASE_URL), then register the engine's search
    attributes on the namespace (safe to repeat)."""
    refuse_json("setup")
    from starter.setup import run_setup

    options = current()
    settings = options.settings()
    prepare_process(settings)
    import asyncio

    return asyncio.run(run_setup(settings, address=options.address, namespace=options.namespace))


COMMANDS = [dev, worker, setup]
"""In the order `skills --help` lists them."""
