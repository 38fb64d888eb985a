"""The chat: what the assistant proposes, the engine's own account of a turn, and replies to results."""
