"""What a process reads from its machine at start: the engine's settings, from the environment.

Each entry point (the worker, the ``skills`` commands, the dev launcher, the adapters) reads
them once and hands the frozen :class:`~config.settings.Settings` to what it builds; nothing
below the entry points reads the environment.
"""
