"""The console's HTTP application (Starlette, the stack `skills mcp --http` already runs), pages from Jinja2.

Routes: ``/`` the week, ``/waiting`` what waits for the owner's yes, ``/trouble`` what went wrong,
``/skills/<ref>`` one skill; the posts ``/approvals/<id>/approve|deny`` (what `skills approve`/`deny` do,
through the same client call, answered ``by="console"``), ``/skills/<id>/resume`` (`skills resume`),
``/skills/<id>/revert/<rev>`` (`skills revert`), ``/login`` and ``/logout``. Every response carries a Content-Security-Policy with no script at all, and
``no-store``: the pages hold what the owner's skills reach.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import jinja2
from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from client import SkillsClient
from client.base import ATTRIBUTION
from config.settings import Settings
from service.console import pages
from service.console.auth import COOKIE, SESSION_HOURS, Keys
from skills.chat.proposals import ChangeDecided, decided_sentence
from skills.display import shown, span
from skills.errors import SkillNotFoundError, SkillsError, TemporalUnavailableError

log = logging.getLogger("skills.console")

HERE = Path(__file__).resolve().parent
BY = "console"
"""``decided_by`` of an answer given on the console."""
MAX_FORM_BYTES = 16 * 1024
MAX_REASON_CHARS = 2000
REMEMBERED_ANSWERS = 1000
CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; "
       "base-uri 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


class SecurityHeaders:
    """Every response, the static files' and the errors' too, with :data:`SECURITY_HEADERS`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in SECURITY_HEADERS}
                message["headers"] = [*(h for h in message.get("headers", []) if h[0] not in names),
                                      *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


def templates(zone: ZoneInfo) -> Jinja2Templates:
    """Autoescaped whatever the file's name, undefined names an error: a skill's name or a tool's output is
    text on the page, never markup."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined)

    def when(value: datetime | None) -> str:
        return value.astimezone(zone).strftime("%a %Y-%m-%d %H:%M") if value else "-"

    env.filters.update(shown=lambda text: shown(str(text)), when=when, span=span,
                       json=lambda value: json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))
    return Jinja2Templates(env=env)


class Console:
    """The pages, over one :class:`SkillsClient`."""

    def __init__(self, skills: SkillsClient, token: str, *, zone: ZoneInfo, settings: Settings,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.skills = skills
        self.settings = settings
        """What ``skills get``'s forecast reads of the settings: the notifier, the default model, the price (the
        process's own, from its environment: a bare ``Settings()`` reads none, and would forecast other figures)."""
        self.keys = Keys(token)
        self.zone = zone
        self.clock = clock
        self.templates = templates(zone)
        self._fires = pages.FireCache()
        self._answering = asyncio.Lock()
        self._answered: OrderedDict[int, str] = OrderedDict()
        self._reverting = asyncio.Lock()

    # --- who asks -------------------------------------------------------------------------------

    def session_of(self, request: Request) -> str | None:
        """The request's session (``""`` for the bearer header), or None: not the owner."""
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            return "" if self.keys.token_matches(token.strip()) else None
        cookie = request.cookies.get(COOKIE, "")
        return cookie if cookie and self.keys.session_valid(cookie, self.clock()) else None

    def page(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        session = self.session_of(request)
        return self.templates.TemplateResponse(
            request, name, {"csrf": self.keys.csrf(session) if session is not None else "",
                            "signed_in": session is not None, "zone": str(self.zone), **context},
            status_code=status)

    def refused(self, request: Request, message: str = "") -> Response:
        return self.page(request, "login.html", 401, message=message)

    async def admitted_form(self, request: Request) -> FormData | Response:
        """The form of a post the owner made on a console page: signed in, same origin, its CSRF token."""
        session = self.session_of(request)
        if session is None:
            return self.refused(request)
        origin = request.headers.get("origin")
        if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
            return self.page(request, "message.html", 403, title="Refused", message="a post from another site")
        if int(request.headers.get("content-length") or 0) > MAX_FORM_BYTES:
            return self.page(request, "message.html", 413, title="Refused", message="the form is too large")
        form = await request.form(max_files=0, max_fields=10, max_part_size=MAX_FORM_BYTES)
        given = form.get("csrf")
        if not isinstance(given, str) or not self.keys.csrf_matches(session, given):
            return self.page(request, "message.html", 403, title="Refused",
                             message="this form was not made by the console (its CSRF token is missing or wrong)")
        return form

    # --- signing in -----------------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        if request.method == "GET":
            return self.page(request, "login.html", message="")
        form = await request.form(max_files=0, max_fields=2, max_part_size=MAX_FORM_BYTES)
        token = form.get("token")
        if not isinstance(token, str) or not self.keys.token_matches(token):
            return self.refused(request, "That is not the owner's token.")
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(COOKIE, self.keys.session(self.clock()), max_age=SESSION_HOURS * 3600, httponly=True,
                            samesite="strict", secure=request.url.scheme == "https", path="/")
        return response

    async def logout(self, request: Request) -> Response:
        form = await self.admitted_form(request)
        if isinstance(form, Response):
            return form
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return response

    # --- pages ----------------------------------------------------------------------------------

    async def week(self, request: Request) -> Response:
        if self.session_of(request) is None:
            return self.refused(request)
        listed = await self.skills.list()
        return self.page(request, "week.html", week=pages.week(listed, now=self.clock(), zone=self.zone,
                                                             cache=self._fires))

    async def waiting(self, request: Request) -> Response:
        if self.session_of(request) is None:
            return self.refused(request)
        return self.page(request, "waiting.html", approvals=await pages.waiting(self.skills))

    async def trouble(self, request: Request) -> Response:
        if self.session_of(request) is None:
            return self.refused(request)
        return self.page(request, "trouble.html", trouble=await pages.trouble(self.skills, now=self.clock()))

    async def skill(self, request: Request) -> Response:
        if self.session_of(request) is None:
            return self.refused(request)
        found = await pages.skill_page(self.skills, request.path_params["ref"], now=self.clock(), zone=self.zone,
                                       notifier_tool=self.settings.notifier_tool,
                                       llm_model=self.settings.llm_model, price=self.settings.llm_price)
        return self.page(request, "skill.html", page=found)

    # --- actions --------------------------------------------------------------------------------

    async def approve(self, request: Request) -> Response:
        return await self._answer(request, True)

    async def deny(self, request: Request) -> Response:
        return await self._answer(request, False)

    async def _answer(self, request: Request, approve: bool) -> Response:
        """What `skills approve ID` / `skills deny ID --reason` do: ``SkillsClient.answer``. One answer at a
        time, and an approval this console answered is not sent again (a double click is one answer)."""
        form = await self.admitted_form(request)
        if isinstance(form, Response):
            return form
        approval_id: int = request.path_params["id"]
        reason = str(form.get("reason") or "")[:MAX_REASON_CHARS]
        async with self._answering:
            if approval_id in self._answered:
                return self.page(request, "message.html", 409, title=f"Approval {approval_id}",
                                 message=f"already answered on this console: {self._answered[approval_id]}")
            try:
                said = await self.skills.answer(approval_id, approve, reason=reason, by=BY)
            except SkillsError as e:
                return self.page(request, "message.html", 409, title=f"Approval {approval_id}", message=str(e))
            sentence = decided_sentence(said) if isinstance(said, ChangeDecided) else said
            self._answered[approval_id] = sentence
            while len(self._answered) > REMEMBERED_ANSWERS:
                self._answered.popitem(last=False)
        log.info("approval %d %s on the console", approval_id, "approved" if approve else "denied")
        return self.page(request, "message.html", title=f"Approval {approval_id}", message=sentence)

    async def resume(self, request: Request) -> Response:
        """`skills resume ID`."""
        form = await self.admitted_form(request)
        if isinstance(form, Response):
            return form
        skill = await self.skills.resume(request.path_params["id"])
        return self.page(request, "message.html", title=f"Skill {skill.id}",
                         message=f"resumed skill {skill.id} '{skill.name}'", skill_id=skill.id)

    async def revert(self, request: Request) -> Response:
        """`skills revert ID REV`: ``SkillsClient.revert``, the same validation and records (the revision says
        ``by console``). The form says which revision the skill was at when its page was drawn; a revert
        posted from an older page (a second click after the first went through, a page left open while the
        skill changed) is refused and changes nothing, so a double submit reverts once."""
        form = await self.admitted_form(request)
        if isinstance(form, Response):
            return form
        skill_id: int = request.path_params["id"]
        rev: int = request.path_params["rev"]
        seen = str(form.get("at") or "")
        title = f"Skill {skill_id}"
        async with self._reverting:
            skill = await self.skills.get(skill_id)
            if not seen.isdigit() or int(seen) != skill.revision:
                return self.page(request, "message.html", 409, title=title, skill_id=skill_id, message=(
                    f"not reverted: skill {skill_id} is at revision {skill.revision} now, not the one this page "
                    f"showed ({seen or 'none said'}); look at its revisions again"))
            attributed = ATTRIBUTION.set(BY)
            try:
                result = await self.skills.revert(skill_id, rev)
            finally:
                ATTRIBUTION.reset(attributed)
        assert result.skill is not None
        log.info("skill %d reverted to revision %d on the console", skill_id, rev)
        first, *rest = pages.registered_lines(result, f"reverted to {rev}:", self.zone)
        return self.page(request, "message.html", title=title, skill_id=result.skill.id, message=first, lines=rest)

    # --- the application --------------------------------------------------------------------------

    def app(self) -> ASGIApp:
        async def not_found(request: Request, exc: Exception) -> Response:
            return self.page(request, "message.html", 404, title="Not found", message=str(exc))

        async def refused(request: Request, exc: Exception) -> Response:
            return self.page(request, "message.html", 409, title="Refused", message=str(exc))

        async def unavailable(request: Request, exc: Exception) -> Response:
            return self.page(request, "message.html", 503, title="Temporal is not answering", message=str(exc))

        routes = [
            Route("/", self.week),
            Route("/waiting", self.waiting),
            Route("/trouble", self.trouble),
            Route("/skills/{id:int}/resume", self.resume, methods=["POST"]),
            Route("/skills/{id:int}/revert/{rev:int}", self.revert, methods=["POST"]),
            Route("/skills/{ref}", self.skill),
            Route("/approvals/{id:int}/approve", self.approve, methods=["POST"]),
            Route("/approvals/{id:int}/deny", self.deny, methods=["POST"]),
            Route("/login", self.login, methods=["GET", "POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]
        handlers: dict[Any, Callable[..., Any]] = {
            SkillNotFoundError: not_found, TemporalUnavailableError: unavailable, SkillsError: refused}
        return SecurityHeaders(Starlette(routes=routes, exception_handlers=handlers))


def build_app(skills: SkillsClient, token: str, *, zone: ZoneInfo, settings: Settings,
              clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> ASGIApp:
    """The console as an ASGI application, for uvicorn (``skills console``) or a test's server; ``settings`` are
    the process's, as ``skills get`` reads them."""
    return Console(skills, token, zone=zone, clock=clock, settings=settings).app()

