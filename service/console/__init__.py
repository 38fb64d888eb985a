"""The owner's console: one web page for the week ahead, what waits for a yes, and what went wrong.

``skills console`` serves it on 127.0.0.1 (docs/console.md). :mod:`service.console.pages` reads what each page
shows from the engine, :mod:`service.console.auth` decides who may see it and which posts are the owner's,
:mod:`service.console.app` is the Starlette application; the pages are Jinja2 templates under ``templates/``.
"""
