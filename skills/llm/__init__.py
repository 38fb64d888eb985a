"""Talking to a model: the conversation, what fits its context, and calls it writes as text or JSON."""
