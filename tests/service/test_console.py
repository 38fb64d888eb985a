"""The owner's console (service/console), through real HTTP, on a real worker, store and Temporal dev server.

The attack tests come first: each fails with its protection taken out (autoescape off, the CSRF check or
the token check skipped), as docs/console.md records."""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import re
import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx2
import uvicorn
from temporalio.client import Client

from config.settings import Settings
from service.console import pages
from service.console.app import build_app
from skills.spec.models import Skill
from skills.when.calendar import forecast
from skills.when.outlook import outlook
from tests.conftest import Engine, eventually, free_port
from tests.starter.test_cli import SKILLS, clean_env, options, run_skills
from tests.workflows.test_approvals import finished, sender, waiting

TOKEN = "owner-token-for-the-console-tests"
MONDAY = datetime(2026, 12, 21, 10, 0, tzinfo=UTC)
"""The week pinned: Monday 21 December 2026, so Christmas (Friday 25) is in it."""
CSRF = re.compile(r'name="csrf" value="([0-9a-f]{64})"')


@contextlib.asynccontextmanager
async def console(engine: Engine, now: datetime | None = None) -> AsyncIterator[str]:
    """The console's application served by uvicorn on a free loopback port, in this test's event loop (its
    SkillsClient is the engine's); its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    clock = (lambda: now) if now is not None else (lambda: datetime.now(UTC))
    app = build_app(engine.skills, TOKEN, zone=ZoneInfo("UTC"), clock=clock, settings=engine.settings)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await eventually(lambda: server.started or task.done(), timeout=15)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()


@contextlib.asynccontextmanager
async def signed_in(base: str) -> AsyncIterator[httpx2.AsyncClient]:
    """A browser that signed in with the login form: it holds the session cookie."""
    async with httpx2.AsyncClient(base_url=base, follow_redirects=False, timeout=30) as http:
        done = await http.post("/login", data={"token": TOKEN})
        assert done.status_code == 303 and done.headers["location"] == "/", done.text
        cookie = done.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict"), cookie
        yield http


async def csrf_of(http: httpx2.AsyncClient, path: str = "/waiting") -> str:
    page = await http.get(path)
    assert page.status_code == 200, page.text
    return CSRF.findall(page.text)[0]


def assert_no_script(response: httpx2.Response) -> None:
    """No script on the page, and a policy that would run none."""
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy and "script-src" not in policy
    assert "<script" not in response.text.lower()
    assert not re.search(r"<[^>]+\son[a-z]+\s*=", response.text, re.IGNORECASE)


# --- attacks ----------------------------------------------------------------------------------


async def test_a_missing_or_wrong_token_is_refused(engine: Engine) -> None:
    await engine.skills.register(sender("pay the rent"))
    await engine.skills.run("pay the rent", wait=False)
    [approval] = await waiting(engine)
    async with console(engine) as base, httpx2.AsyncClient(base_url=base, timeout=30) as http:
        for path in ("/", "/waiting", "/trouble", f"/skills/{approval.skill_id}"):
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {TOKEN}x"},
                            {"Cookie": "skills_console=1767000000.forged"}):
                refused = await http.get(path, headers=headers)
                assert refused.status_code == 401, (path, headers)
                assert "pay the rent" not in refused.text and 'name="token"' in refused.text
        wrong = await http.post("/login", data={"token": "guess"})
        assert wrong.status_code == 401 and "set-cookie" not in wrong.headers
        # An action without the token changes nothing.
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            posted = await http.post(f"/approvals/{approval.id}/approve", data={"csrf": "0" * 64}, headers=headers)
            assert posted.status_code == 401
        assert (await engine.skills.approval(approval.id)).pending
        owner = await http.get("/waiting", headers={"Authorization": f"Bearer {TOKEN}"})
        assert owner.status_code == 200 and "pay the rent" in owner.text


async def test_a_skill_named_script_is_shown_as_text(engine: Engine) -> None:
    name = "<script>alert(1)</script>"
    skill = (await engine.skills.register(sender(name, message="<img src=x onerror=alert(2)>",
                                                 description="<b onmouseover=alert(3)>hi</b>"))).skill
    assert skill is not None and skill.name == name
    await engine.skills.run(skill.id, wait=False)
    await waiting(engine)
    async with console(engine) as base, signed_in(base) as http:
        for path in ("/", "/waiting", "/trouble", f"/skills/{skill.id}"):
            page = await http.get(path)
            assert page.status_code == 200, (path, page.text)
            assert_no_script(page)
            assert "<img" not in page.text and "<b " not in page.text
        page = await http.get(f"/skills/{skill.id}")
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
        assert "&lt;b onmouseover=alert(3)&gt;hi&lt;/b&gt;" in page.text
        css = await http.get("/static/console.css")
        assert css.status_code == 200 and "default-src 'none'" in css.headers["content-security-policy"]


async def test_a_forged_post_is_refused(engine: Engine) -> None:
    await engine.skills.register(sender())
    await engine.skills.run("send report", wait=False)
    [approval] = await waiting(engine)
    async with console(engine) as base, signed_in(base) as http:
        csrf = await csrf_of(http)
        url = f"/approvals/{approval.id}/approve"
        # What a page of another site can make the owner's browser send: no token, a guessed one,
        # another session's, or the right one from another origin.
        other = await csrf_of(await _other_session(base, http))
        for data, headers in (({}, {}), ({"csrf": "0" * 64}, {}), ({"csrf": other}, {}),
                              ({"csrf": csrf}, {"Origin": "http://evil.example"})):
            refused = await http.post(url, data=data, headers=headers)
            assert refused.status_code == 403, (data, headers, refused.text)
        assert (await engine.skills.approval(approval.id)).pending and engine.outbox() == []


async def _other_session(base: str, http: httpx2.AsyncClient) -> httpx2.AsyncClient:
    """A second signing-in, a second later (another session, another CSRF token)."""
    first = http.cookies.get("skills_console")
    other = httpx2.AsyncClient(base_url=base, follow_redirects=False, timeout=30)

    async def new_session() -> bool:
        await other.post("/login", data={"token": TOKEN})
        return other.cookies.get("skills_console") not in (None, first)

    await eventually(new_session, timeout=5, interval=0.3)
    return other


# --- waiting for you --------------------------------------------------------------------------


async def test_an_approval_from_the_page_is_made_once_and_seen_by_skills_approvals(engine: Engine) -> None:
    await engine.skills.register(sender())
    await engine.skills.run("send report", wait=False)
    [approval] = await waiting(engine)
    async with console(engine) as base, signed_in(base) as http:
        page = await http.get("/waiting")
        # The engine's account of the call: its summary, tool and arguments.
        assert approval.summary.split("\n")[0] in page.text.replace("&#39;", "'").replace("&#34;", '"')
        assert "outbox_send_message" in page.text and "Report sent" in page.text
        csrf = CSRF.findall(page.text)[0]
        # A double click: two posts at once.
        first, second = await asyncio.gather(
            *(http.post(f"/approvals/{approval.id}/approve", data={"csrf": csrf}) for _ in range(2)))
        assert sorted([first.status_code, second.status_code]) == [200, 409], (first.text, second.text)
        assert "already answered" in (first if first.status_code == 409 else second).text
    run = await finished(engine, "send report")
    assert run.status == "success"
    assert [m["message"] for m in engine.outbox()] == ["Report sent"]
    listed = await asyncio.to_thread(run_skills, "approvals", "--all", "--json", *options(engine))
    [answered] = [a for a in json.loads(listed.stdout) if a["id"] == approval.id]
    assert (answered["status"], answered["decided_by"]) == ("approved", "console")


async def test_a_denial_from_the_page_says_why(engine: Engine) -> None:
    await engine.skills.register(sender())
    await engine.skills.run("send report", wait=False)
    [approval] = await waiting(engine)
    async with console(engine) as base, signed_in(base) as http:
        denied = await http.post(f"/approvals/{approval.id}/deny",
                                 data={"csrf": await csrf_of(http), "reason": "not today"})
        assert denied.status_code == 200 and "denied" in denied.text
    run = await finished(engine, "send report")
    assert run.status == "denied" and "not today" in run.summary and engine.outbox() == []
    after = await engine.skills.approval(approval.id)
    assert (after.status, after.reason, after.decided_by) == ("denied", "not today", "console")


# --- the week ---------------------------------------------------------------------------------


def daily(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "instructions": "x", "schedule": "0 9 * * *", "timezone": "UTC",
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": name}}], **extra}


def section(text: str, marker: str, end: str | None = None) -> str:
    start = text.index(marker)
    return text[start:text.index(end, start) if end else len(text)]


async def test_the_week_draws_fires_skipped_days_and_paused_skills_apart(engine: Engine) -> None:
    water = (await engine.skills.register(daily("water"))).skill
    await engine.skills.register(daily("standup", business_days_only=True, skip_holidays="US"))
    await engine.skills.register(daily("sleeping"))
    await engine.skills.pause("sleeping")
    await engine.skills.register({**daily("ticker"), "schedule": "* * * * *"})
    assert water is not None
    async with console(engine, now=MONDAY) as base, signed_in(base) as http:
        page = await http.get("/")
        assert page.status_code == 200
        assert_no_script(page)
        text = page.text
    days = section(text, 'class="week"', 'id="frequent"')
    # The calendar `skills next` reads: water's next seven fires, each under its day.
    expected = [fire.at for fire in forecast(water, now=MONDAY, count=7).fires]
    assert [f"{at:%a %d %b}" for at in expected] == [f"{d:%a %d %b}" for d in
                                                     [datetime(2026, 12, day, tzinfo=UTC) for day in range(22, 29)]]
    for at in expected:
        assert "water" in section(days, f"{at:%a %d %b}</h2>", "</section>")
    christmas = section(days, "Fri 25 Dec</h2>", "</section>")
    assert "standup" in christmas and "skipped: Christmas Day" in christmas
    assert "skipped: weekend" in section(days, "Sat 26 Dec</h2>", "</section>")
    assert "standup" in section(days, "Tue 22 Dec</h2>", "</section>")
    # Paused skills are drawn apart; a skill firing every minute is listed once, not 10,080 times.
    assert "sleeping" not in days and "ticker" not in days
    assert "sleeping" in section(text, 'id="paused"') and "disabled (by user)" in section(text, 'id="paused"')
    assert "ticker" in section(text, 'id="frequent"', 'id="paused"')


# --- what went wrong, a skill ---------------------------------------------------------------------


async def test_what_went_wrong_lists_the_open_incident_and_the_failing_skill(engine: Engine) -> None:
    await engine.skills.register({"name": "broken", "instructions": "x", "execution_plan": [
        {"toolName": "outbox_send_message", "parameters": {"message": "  ", "chat_id": "c1"}}]})
    run = await engine.skills.run("broken")
    assert run.status == "error"
    [incident] = await engine.skills.incidents("broken")
    async with console(engine) as base, signed_in(base) as http:
        page = await http.get("/trouble")
    assert page.status_code == 200
    incidents = section(page.text, 'id="incidents"', 'id="failing"')
    assert f"<td>{incident.id}</td>" in incidents and "broken" in incidents and "message is empty" in incidents
    failing = section(page.text, 'id="failing"', 'id="disabled"')
    assert "broken" in failing and "1 in a row" in failing


async def test_a_skill_page_shows_its_reach_next_fires_and_last_runs(engine: Engine) -> None:
    skill = (await engine.skills.register(daily("water", deliver_to=[]))).skill
    assert skill is not None
    await engine.skills.run("water")
    async with console(engine, now=MONDAY) as base, signed_in(base) as http:
        page = await http.get(f"/skills/{skill.id}")
        by_name = await http.get("/skills/water")
        missing = await http.get("/skills/nothing-here")
    assert page.status_code == 200 and by_name.status_code == 200 and missing.status_code == 404
    text = page.text.replace("&#34;", '"')
    reach = section(text, 'id="reach"', 'id="next"')
    assert "<code>execution_plan</code>" in reach and "outbox_send_message" in reach
    assert "registered through the engine" in text
    fires = section(text, 'id="next"', "</section>")
    assert [line for line in forecast(skill, now=MONDAY, count=10).lines() if line in fires] \
        == forecast(skill, now=MONDAY, count=10).lines()
    runs = section(text, 'id="runs"', "</section>")
    assert "success" in runs and "<code>outbox_send_message</code> ok" in runs


# --- a skill's next 30 days, its revisions ------------------------------------------------------------


def svg(text: str, metric: str) -> str:
    return section(text, f'aria-labelledby="chart-{metric}-title', "</svg>")


async def test_a_skill_page_charts_the_next_30_days_as_the_forecast_counts_them(engine: Engine) -> None:
    skill = (await engine.skills.register(daily("standup", business_days_only=True, skip_holidays="US",
                                                description="<script>alert(4)</script>"))).skill
    ticker = (await engine.skills.register({**daily("ticker"), "schedule": "*/5 * * * *"})).skill
    assert skill is not None and ticker is not None
    async with console(engine, now=MONDAY) as base, signed_in(base) as http:
        page = await http.get(f"/skills/{skill.id}")
        often = await http.get(f"/skills/{ticker.id}")
    # 8,640 fires: the totals, not a bar a day.
    assert "next 30 days: 8,640 runs" in often.text and 'class="chart"' not in often.text
    assert "more often than the chart counts by day" in often.text
    assert page.status_code == 200
    assert_no_script(page)
    totals = outlook(skill, MONDAY, anchor=skill.created_at, done=0, notifier_tool=engine.settings.notifier_tool)
    found = pages.ahead(skill, now=MONDAY, zone=ZoneInfo("UTC"), notifier_tool=engine.settings.notifier_tool,
                        own_tokens=[], similar_tokens=[])
    # Mon 21 Dec 10:00 to Wed 20 Jan 10:00: 31 days touched; the business days less Christmas, New Year's Day
    # and Martin Luther King Jr. Day (Mon 18 Jan); today's 09:00 has passed.
    assert len(found.days) == 31 and sum(d.runs for d in found.days) == totals.runs == 19
    assert sum(d.messages for d in found.days) == totals.messages
    runs = svg(page.text, "runs")
    assert runs.count('<rect class="bar"') == len([d for d in found.days if not d.skipped]) == 20
    assert runs.count('<rect class="skipped"') == len(found.skipped) == 11
    assert "<title>Mon 18 Jan: skipped (Martin Luther King Jr. Day)</title>" in runs
    assert "<title>Tue 22 Dec: 1 run, 1 message</title>" in runs
    assert "<title>Mon 21 Dec: 0 runs, 0 messages</title>" in runs  # 09:00 was before now
    assert "<title>Fri 25 Dec: skipped (Christmas Day)</title>" in runs
    assert "<title>Sat 26 Dec: skipped (weekend)</title>" in runs
    assert 'id="chart-tokens-title"' not in page.text  # a Direct skill: no tokens to estimate
    assert f"next 30 days: {totals.runs} runs" in section(page.text, 'id="ahead"')
    # The numbers as text too, and the description escaped in the chart.
    table = section(page.text, 'class="ahead"', "</table>")
    assert "<th scope=\"row\">Thu 31 Dec</th><td>1</td><td>1</td><td>-</td>" in table
    assert "skipped: New Year&#39;s Day" in table or "skipped: New Year's Day" in html.unescape(table)
    assert "&lt;script&gt;alert(4)&lt;/script&gt;" in runs and "<script" not in runs


def test_the_days_sum_to_the_forecast_of_skills_get() -> None:
    """Day by day, the runs, messages and tokens ``skills get`` counts for the 30 days: across skipped days, an
    hourly skill, max_runs left, an end, a disabled skill and an Agent skill's tokens."""
    agent = stored(7, "0 8 * * *", execution_plan=None)
    skills = [stored(1, "0 9 * * *"), stored(2, "30 8,17 * * *", business_days_only=True, skip_holidays="DE-BY"),
              stored(3, "15 * * * *", deliver_to=[{"tool": "outbox_send_message", "parameters": {}}]),
              stored(4, "0 12 * * *", enabled=False, disabled_reason="by user"),
              stored(5, "0 7 * * *", max_runs=4, scheduled_runs=1),
              stored(6, "0 6 * * *", end_at=MONDAY + timedelta(days=9)), agent]
    for skill in skills:
        for own, similar in (([], []), ([1200, 800, 1000], []), ([], [500])):
            totals = outlook(skill, MONDAY, anchor=skill.created_at, done=skill.scheduled_runs,
                             notifier_tool="outbox_send_message", own_tokens=own, similar_tokens=similar)
            found = pages.ahead(skill, now=MONDAY, zone=ZoneInfo("Europe/Berlin"), notifier_tool="outbox_send_message",
                                own_tokens=own, similar_tokens=similar)
            assert found.outlook == totals
            assert sum(d.runs for d in found.days) == totals.runs, skill.id
            assert sum(d.messages for d in found.days) == totals.messages, skill.id
            tokens = [d.tokens for d in found.days]
            assert (sum(t or 0 for t in tokens) if totals.tokens is not None else None) == totals.tokens, skill.id
    # Every five minutes (8,640 fires) is past what is counted by day: the totals alone, still outlook's.
    often = stored(8, "*/5 * * * *")
    found = pages.ahead(often, now=MONDAY, zone=ZoneInfo("UTC"), notifier_tool="x", own_tokens=[], similar_tokens=[])
    assert (found.drawn, found.days, found.outlook.runs) == (False, [], 8640)
    assert sum(d.runs for d in pages.ahead(skills[4], now=MONDAY, zone=ZoneInfo("UTC"), notifier_tool="x",
                                           own_tokens=[], similar_tokens=[]).days) == 3


async def test_a_skill_is_reverted_from_its_page_once_as_skills_revert_does(engine: Engine) -> None:
    skill = (await engine.skills.register(daily("water"))).skill
    assert skill is not None
    await engine.skills.update("water", {"schedule": "0 18 * * *"})
    await engine.skills.pause("water")
    assert (await engine.skills.get("water")).revision == 3
    async with console(engine, now=MONDAY) as base, signed_in(base) as http:
        page = await http.get(f"/skills/{skill.id}")
        assert page.status_code == 200
        assert_no_script(page)
        revisions = section(page.text, 'id="revisions"', "</section>")
        # Each revision against the one before: the changed field, as escaped text with +/- classes.
        second = section(revisions, 'id="rev-2"', "</article>")
        assert "<code>trigger_config</code>" in second
        assert '<span class="del">-    &#34;schedule&#34;: &#34;0 9 * * *&#34;,</span>' in second
        assert '<span class="add">+    &#34;schedule&#34;: &#34;0 18 * * *&#34;,</span>' in second
        assert '<span class="add">+  &#34;enabled&#34;: false,</span>' in section(revisions, 'id="rev-3"', "</article>")
        # The skill now (revision 3) has no button; reverting to 1 would enable it, and says so.
        assert f'action="/skills/{skill.id}/revert/3"' not in revisions
        first = section(revisions, 'id="rev-1"', "</article>")
        assert "enables it" in first and f'action="/skills/{skill.id}/revert/1"' in first
        csrf = CSRF.findall(page.text)[0]
        # A forged post (no CSRF token, or another origin) changes nothing.
        for data, headers in (({"at": "3"}, {}), ({"csrf": csrf, "at": "3"}, {"Origin": "http://evil.example"})):
            forged = await http.post(f"/skills/{skill.id}/revert/1", data=data, headers=headers)
            assert forged.status_code == 403, forged.text
        assert (await engine.skills.get("water")).revision == 3
        # A double submit: two posts of the same form at once; one reverts.
        done, again = await asyncio.gather(
            *(http.post(f"/skills/{skill.id}/revert/1", data={"csrf": csrf, "at": "3"}) for _ in range(2)))
        assert sorted([done.status_code, again.status_code]) == [200, 409], (done.text, again.text)
        if done.status_code == 409:
            done, again = again, done
        said = html.unescape(done.text)
        assert f"reverted to 1: skill {skill.id} 'water' (agent {skill.agent_id}, direct tier)" in said
        assert "next fire: " in said and "schedule: " in said
        assert "not reverted: skill" in html.unescape(again.text) and "at revision 4 now" in html.unescape(again.text)
    after = await engine.skills.get("water")
    assert (after.revision, after.enabled, after.trigger_config and after.trigger_config.schedule) == (4, True, "0 9 * * *")
    [newest, *_] = await engine.skills.history("water")
    assert (newest.rev, newest.action, newest.by) == (4, "reverted", "console")


# --- the command ----------------------------------------------------------------------------------


async def test_skills_console_wants_the_token_and_serves_on_loopback(engine: Engine) -> None:
    await engine.skills.register(daily("water"))
    refused = await asyncio.to_thread(run_skills, "console", *options(engine))
    assert refused.returncode == 2 and "needs the owner's token" in refused.stderr
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        str(SKILLS), "console", "--port", str(port), *options(engine),
        env=clean_env(SKILLS_MCP_TOKEN=TOKEN), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            async def answered() -> httpx2.Response | None:
                with contextlib.suppress(httpx2.TransportError):
                    return await http.get("/")
                return None

            first = await eventually(answered, timeout=60)
            assert first.status_code == 401
            page = await http.get("/", headers={"Authorization": f"Bearer {TOKEN}"})
            assert page.status_code == 200 and "water" in page.text
    finally:
        process.terminate()
        _, err = await process.communicate()
    assert f"the console at http://127.0.0.1:{port}/" in err.decode()


# --- the week's cache -----------------------------------------------------------------------------


def stored(i: int, schedule: str, **fields: Any) -> Skill:
    return Skill.model_validate({
        "id": i, "agent_id": "default", "name": f"s{i}", "instructions": "x", "trigger_type": "cron",
        "trigger_config": {"schedule": schedule, "timezone": "Europe/Berlin"},
        "execution_plan": [{"id": "s1", "toolName": "outbox_send_message", "parameters": {"message": "x"}}],
        "created_at": MONDAY - timedelta(days=3), "updated_at": MONDAY - timedelta(days=3), **fields})


def drawn(found: pages.Week) -> list[Any]:
    return [[(f.skill.id, f.at, f.skipped) for f in day.fires] for day in found.days] + [
        [(p.skill.id, p.fires, p.more) for p in found.paused], [(f.skill.id, f.first) for f in found.frequent]]


def test_a_week_from_the_cache_is_the_week_computed_afresh() -> None:
    """Each later week, drawn with the fires kept from the first, is the one computed from nothing: across
    days skipped (a holiday's and the weekend's first fire passing), an hourly skill, a paused one and one
    whose max_runs count from now."""
    skills = [stored(1, "0 9 * * *"), stored(2, "30 8,17 * * *", business_days_only=True, skip_holidays="DE-BY"),
              stored(3, "15 * * * *"), stored(4, "0 12 * * *", enabled=False, disabled_reason="by user"),
              stored(5, "0 7 * * *", max_runs=4, scheduled_runs=1), stored(6, "0 6 * * 1-5", skip_holidays="DE")]
    cache = pages.FireCache()
    zone = ZoneInfo("Europe/Berlin")
    for hours in (0, 1, 4, 8.5, 12, 20, 23, 24, 30, 47, 80, 97):
        now = MONDAY + timedelta(hours=hours)
        assert drawn(pages.week(skills, now=now, zone=zone, cache=cache)) == drawn(
            pages.week(skills, now=now, zone=zone)), hours


async def test_a_skill_the_engine_disabled_is_listed_and_resumed_from_the_page(client: Client,
                                                                               settings: Settings) -> None:
    engine = await Engine(settings.model_copy(update={"failure_limit": 2}), client).start()
    try:
        await engine.skills.register({"name": "broken", "instructions": "x", "schedule": "0 9 * * *",
                                      "execution_plan": [{"toolName": "outbox_send_message",
                                                          "parameters": {"message": "  ", "chat_id": "c1"}}]})
        for _ in range(2):
            assert (await engine.skills.run("broken")).status == "error"
        skill = await engine.skills.get("broken")
        assert (skill.enabled, skill.disabled_reason) == (False, "failures")
        async with console(engine) as base, signed_in(base) as http:
            page = await http.get("/trouble")
            disabled = section(page.text, 'id="disabled"', 'id="overdue"')
            assert "broken" in disabled and "disabled (failures)" in disabled
            assert f'action="/skills/{skill.id}/resume"' in disabled
            forged = await http.post(f"/skills/{skill.id}/resume", data={})
            assert forged.status_code == 403 and not (await engine.skills.get("broken")).enabled
            resumed = await http.post(f"/skills/{skill.id}/resume", data={"csrf": CSRF.findall(page.text)[0]})
            assert resumed.status_code == 200 and f"resumed skill {skill.id} 'broken'" in html.unescape(resumed.text)
            assert (await engine.skills.get("broken")).enabled
            after = await http.get("/trouble")
            assert "broken" not in section(after.text, 'id="disabled"', 'id="overdue"')
    finally:
        await engine.stop()
