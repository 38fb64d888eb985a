"""The worker's ports to the world: the store, the MCP client, the script sandbox, schedule specs and
the engine's own schedules, the LLM endpoint, metrics, the installer and the safe folder copy.

Nothing here knows ``temporalio.activity``: an adapter is imported, built and tested on its own, and
the activities (``activities/``) are thin over the adapters the worker injects into them.
"""
