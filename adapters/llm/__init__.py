"""The LLM endpoint (OpenAI-compatible): its client, chat completions streamed or whole, its failures as
the engine's errors, its model list.

- :mod:`adapters.llm.endpoint`: :class:`~adapters.llm.endpoint.LlmEndpoint`, one chat completion, the
  model's context, whether the endpoint answers.
- :mod:`adapters.llm.streaming`: a streamed answer put back together.
- :mod:`adapters.llm.errors`: the endpoint's statuses and connection failures as ``skills.errors``.
- :mod:`adapters.llm.model_list`: the model list the registration checks a skill's models against.

The activities over it are in :mod:`activities.agent`.
"""
