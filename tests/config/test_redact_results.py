"""Secrets blotted out of activity results (config.secrets.redact_value): every string in a
result, however nested, and nothing copied when nothing carries a secret."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from config.secrets import add_secrets, redact_value

SECRET = "sk-redact-results-5551234"


class Excerpt(BaseModel, frozen=True):
    tool: str
    text: str
    parts: list[dict[str, object]] = []


@dataclass(frozen=True)
class Output:
    stdout: str
    excerpts: tuple[Excerpt, ...] = ()
    meta: dict[str, str] = field(default_factory=dict)


def test_every_string_in_a_nested_result_is_redacted() -> None:
    add_secrets([SECRET])
    result = Output(stdout=f"token={SECRET}\n", meta={"note": f"from {SECRET}", "id": "42"},
                    excerpts=(Excerpt(tool="mail", text="fine"),
                              Excerpt(tool="mail", text="x", parts=[{"text": [f"a {SECRET} b"], "n": 3}])))
    clean = redact_value(result)
    assert SECRET not in repr(clean)
    assert clean.stdout == "token=***\n" and clean.meta == {"note": "from ***", "id": "42"}
    assert clean.excerpts[0] is result.excerpts[0]  # untouched parts are not copied
    assert clean.excerpts[1].parts == [{"text": ["a *** b"], "n": 3}]
    assert isinstance(clean.excerpts, tuple) and isinstance(clean.excerpts[1], Excerpt)


def test_a_result_without_a_secret_is_returned_as_is() -> None:
    add_secrets([SECRET])
    result = Excerpt(tool="mail", text="nothing to hide", parts=[{"a": ["b"]}])
    assert redact_value(result) is result
    assert redact_value(None) is None and redact_value(7) == 7
