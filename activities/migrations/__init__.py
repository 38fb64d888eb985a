"""The old home of the store's migrations, kept for one release so that ``python -m activities.migrations
revision "..."`` still works; they live in :mod:`adapters.store.migrations` now."""
