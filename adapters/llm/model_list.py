"""The LLM endpoint's model list (``GET /v1/models`` through the OpenAI client), for the registration's
check of a skill's ``model`` and ``fallback_models`` (``skills.spec.llm_models``).

Asked only when a skill names a model, with a short timeout, and kept for a minute: a bulk registration
of a hundred skills asks once. An endpoint that has no list (404, 405, an answer without ``data``), one
that refuses the key, or one that cannot be reached gives no list: the names are accepted, with a note
saying why they were not checked (a run on a model the endpoint does not know fails, or falls back).
"""

from __future__ import annotations

import threading
import time

from adapters.llm.endpoint import client_options
from config.settings import Settings
from skills.spec.llm_models import ModelList

LIST_TIMEOUT = 3.0
"""Seconds the endpoint may take to list its models before the registration goes on without the list."""
KEEP_FOR = 60.0
"""Seconds a list is kept: models come and go rarely, registrations may come in bursts."""


class EndpointModels:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._kept: tuple[float, ModelList] | None = None

    def __call__(self, fresh: bool = False) -> ModelList:
        """The list, kept from an earlier call unless ``fresh``."""
        with self._lock:  # one request at a time; the others wait for its answer
            if not fresh and self._kept is not None and time.monotonic() - self._kept[0] < KEEP_FOR:
                return self._kept[1]
            found = self._ask()
            self._kept = (time.monotonic(), found)
            return found

    def _ask(self) -> ModelList:
        if not self.settings.llm_configured:
            return ModelList(None, "no LLM is configured")
        import openai

        client = openai.OpenAI(**client_options(self.settings, LIST_TIMEOUT))
        try:
            page = client.models.list()
            names = frozenset(model.id for model in page.data if isinstance(getattr(model, "id", None), str))
        except openai.APIStatusError as e:
            return ModelList(None, f"the endpoint has no model list: GET /models answered {e.status_code}")
        except (openai.APIConnectionError, openai.APITimeoutError):
            return ModelList(None, "the endpoint did not answer GET /models")
        except (ValueError, TypeError, AttributeError):
            return ModelList(None, "the endpoint's answer to GET /models is not a model list")
        finally:
            client.close()
        return ModelList(names) if names else ModelList(None, "the endpoint lists no models")
