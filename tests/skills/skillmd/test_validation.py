"""Validation rules of the Agent Skills specification, with skills-ref's wording, and our extensions."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.skill_folders import discover, validate_path
from skills.skillmd import (
    FrontmatterError,
    Problem,
    check_agent_text,
    check_frontmatter,
    has_errors,
    parse_frontmatter,
    validate_text,
)

from .skill_files import skill_text


def messages(problems: list[Problem]) -> list[str]:
    return [p.message for p in problems]


def errors_for(frontmatter: dict | str, dir_name: str | None = None) -> list[str]:
    return [p.message for p in validate_text(skill_text(frontmatter), dir_name) if p.severity == "error"]


def test_a_valid_skill_has_no_problem() -> None:
    assert validate_text(skill_text({"name": "pdf-tools", "description": "Reads PDFs."}), "pdf-tools") == []


def test_every_problem_is_reported_at_once() -> None:
    found = errors_for(
        {
            "name": "-Bad--Name" + "x" * 60,
            "description": "d" * 1025,
            "compatibility": "c" * 501,
            "license": 3,
            "allowed-tools": 5,
            "metadata": ["not", "a", "mapping"],
            "colour": "blue",
        },
        dir_name="elsewhere",
    )
    name = "-Bad--Name" + "x" * 60
    assert found == [
        "Unexpected fields in frontmatter: colour. Only ['allowed-tools', 'brief_description', 'compatibility', "
        "'default_enabled', 'depends', 'description', 'license', 'metadata', 'name', 'scripts', 'toolsets', "
        "'triggers', 'version'] are allowed.",
        f"Skill name '{name}' exceeds 64 character limit (70 chars)",
        f"Skill name '{name}' must be lowercase",
        "Skill name cannot start or end with a hyphen",
        "Skill name cannot contain consecutive hyphens",
        f"Directory name 'elsewhere' must match skill name '{name}'",
        "Description exceeds 1024 character limit (1025 chars)",
        "Compatibility exceeds 500 character limit (501 chars)",
        "Field 'license' must be a string",
        "Field 'allowed-tools' must be either a string or a list of strings",
        "Field 'metadata' must be a mapping",
    ]


def test_each_problem_names_its_field() -> None:
    problems = validate_text(skill_text({"name": "ok", "description": "d" * 1025, "license": 1}), "ok")
    assert [p.field for p in problems] == ["description", "license"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a" * 64, []),
        ("a" * 65, [f"Skill name '{'a' * 65}' exceeds 64 character limit (65 chars)"]),
        ("tool-2", []),
        ("Tool", ["Skill name 'Tool' must be lowercase"]),
        ("-tool", ["Skill name cannot start or end with a hyphen"]),
        ("tool-", ["Skill name cannot start or end with a hyphen"]),
        ("my--tool", ["Skill name cannot contain consecutive hyphens"]),
        (
            "my_tool",
            [
                "Skill name 'my_tool' contains invalid characters. Only letters, digits, and hyphens are allowed."
            ],
        ),
        (
            "café",
            ["Skill name 'café' contains invalid characters. Only letters, digits, and hyphens are allowed."],
        ),
        ("", ["Field 'name' must be a non-empty string"]),
        (7, ["Field 'name' must be a non-empty string"]),
    ],
)
def test_name_rules(name: object, expected: list[str]) -> None:
    assert errors_for({"name": name, "description": "x"}) == expected


def test_name_must_equal_the_folder_name() -> None:
    assert errors_for({"name": "bar", "description": "x"}, dir_name="foo") == [
        "Directory name 'foo' must match skill name 'bar'"
    ]


def test_required_fields() -> None:
    assert errors_for({"license": "MIT"}) == [
        "Missing required field in frontmatter: name",
        "Missing required field in frontmatter: description",
    ]
    assert errors_for({"name": "x", "description": "   "}) == [
        "Field 'description' must be a non-empty string"
    ]


def test_description_limit_is_inclusive() -> None:
    assert errors_for({"name": "x", "description": "d" * 1024}) == []


def test_compatibility_rules() -> None:
    assert errors_for({"name": "x", "description": "x", "compatibility": "c" * 500}) == []
    assert errors_for({"name": "x", "description": "x", "compatibility": ""}) == [
        "Field 'compatibility' must be a non-empty string"
    ]


def test_allowed_tools_is_a_string_or_a_list_of_strings() -> None:
    assert errors_for({"name": "x", "description": "x", "allowed-tools": "Read Bash(git:*)"}) == []
    assert errors_for({"name": "x", "description": "x", "allowed-tools": ["Read", 2]}) == [
        "Field 'allowed-tools' list items must all be strings"
    ]
    manifest, _ = check_frontmatter({"name": "x", "description": "x", "allowed-tools": "Read  Write"})
    assert manifest is not None and manifest.allowed_tools == ["Read", "Write"]


def test_our_extension_fields_are_not_unexpected() -> None:
    frontmatter = {
        "name": "ext",
        "description": "Uses every extension.",
        "version": "1.0.0",
        "toolsets": {"hello": {"command": "hello-server", "args": ["--stdio"]}},
        "scripts": ["scripts/run.py"],
        "default_enabled": False,
        "brief_description": "Short.",
        "depends": ["other"],
        "triggers": {"keywords": ["hello"], "verbs": ["greet"], "patterns": [r"greet\s+\w+"]},
        "metadata": {
            "keywords": ["hi"],
            "priority": 5,
            "required_tools": ["send"],
            "trigger_config": {"schedule": "0 9 * * *"},
            "max_steps": 4,
            "author": "someone",
        },
    }
    assert errors_for(frontmatter, "ext") == []
    manifest, _ = check_frontmatter(frontmatter)
    assert manifest is not None
    assert manifest.metadata.priority == 5
    assert manifest.metadata.model_extra == {"author": "someone"}
    assert manifest.keywords == ["hello", "hi"]
    assert manifest.brief == "Short."


def test_extension_fields_of_the_wrong_type_are_errors_that_name_the_path() -> None:
    found = errors_for(
        {
            "name": "x",
            "description": "x",
            "metadata": {"priority": "high", "max_steps": 0, "trigger_config": "daily"},
            "triggers": {"keywords": "a, b", "colour": 1},
            "depends": [1],
        }
    )
    assert found == [
        "Field 'metadata.priority': must be a whole number between -1000 and 1000, got 'high'",
        "Field 'metadata.trigger_config': Input should be a valid dictionary",
        "Field 'metadata.max_steps': must be between 1 and 100 (got 0)",
        "Field 'triggers.colour': Extra inputs are not permitted",
        "Field 'depends.0': Input should be a valid string",
    ]


def test_an_invalid_pattern_is_an_error_naming_it_and_the_others_survive() -> None:
    manifest, problems = check_frontmatter(
        {"name": "x", "description": "x", "triggers": {"patterns": ["ok+", "broken(", "fine"]}}
    )
    assert messages(problems) == [
        "Field 'triggers.patterns.1': invalid regular expression 'broken(': "
        "missing ): broken("
    ]
    assert manifest is not None
    assert [p.pattern for p in manifest.triggers.patterns] == ["ok+", "fine"]


def test_a_pattern_re2_cannot_run_in_linear_time_or_too_big_is_refused_with_the_reason() -> None:
    manifest, problems = check_frontmatter(
        {
            "name": "x",
            "description": "x",
            "triggers": {"patterns": [r"(a)\1", r"(?=x)y", r"end\Z", "a" * 1001, r"\p{L}{50}", r"\p{L}{1000}", 7, r"fine\s+\d+"]},
        }
    )
    hint = r"(RE2 syntax: no backreferences, lookaround, possessive repeats, \Z (write \z) or (?x))"
    assert messages(problems) == [
        f"Field 'triggers.patterns.0': invalid regular expression '(a)\\1': invalid escape sequence: \\1 {hint}",
        f"Field 'triggers.patterns.1': invalid regular expression '(?=x)y': invalid perl operator: (?= {hint}",
        f"Field 'triggers.patterns.2': invalid regular expression 'end\\Z': invalid escape sequence: \\Z {hint}",
        "Field 'triggers.patterns.3': a pattern is 1,001 characters; the limit is 1,000",
        "Field 'triggers.patterns.4': pattern '\\p{L}{50}' compiles to 59,854 instructions; the limit is 2,000 "
        "(repeat a smaller piece, or use a shorter class)",
        "Field 'triggers.patterns.5': pattern '\\p{L}{1000}' is too large to compile within 1 MiB (1,048,576 bytes)",
        "Field 'triggers.patterns.6': a pattern is a string, not int",
    ]
    assert manifest is not None
    assert [p.pattern for p in manifest.triggers.patterns] == [r"fine\s+\d+"]


def test_metadata_strings_work_for_lists_and_numbers() -> None:
    # The specification makes metadata values strings; our extensions accept that form too.
    manifest, problems = check_frontmatter(
        {"name": "x", "description": "x", "metadata": {"keywords": "code review, audit", "priority": "3"}}
    )
    assert problems == []
    assert manifest is not None
    assert manifest.metadata.keywords == ["code review", "audit"]
    assert manifest.metadata.priority == 3


def test_no_manifest_without_a_usable_name_and_description() -> None:
    manifest, problems = check_frontmatter({"name": "x"})
    assert manifest is None
    assert messages(problems) == ["Missing required field in frontmatter: description"]


def test_version_written_as_a_number_is_kept_as_text() -> None:
    manifest, _ = check_frontmatter({"name": "x", "description": "x", "version": 1.5})
    assert manifest is not None and manifest.version == "1.5"


def test_the_registry_lists_the_whole_description_when_no_brief_is_given() -> None:
    """The spec's description says when to use the skill: none of it is cut, and an abbreviation
    is no sentence's end (a first-sentence rule made "Query the U.S." of usfiscaldata's)."""
    manifest, _ = check_frontmatter({"name": "x", "description": "Reads PDFs.  Use it for forms!"})
    assert manifest is not None and manifest.brief == "Reads PDFs. Use it for forms!"
    described = "Query the U.S. Treasury's Fiscal Data API: debt, deficits, revenue and spending, e.g. monthly."
    manifest, _ = check_frontmatter({"name": "x", "description": described})
    assert manifest is not None and manifest.brief == described


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\n", "SKILL.md must start with YAML frontmatter (---)"),
        ("---\nname: x\ndescription: y\n", "SKILL.md frontmatter not properly closed with ---"),
        ("---\n- a\n- b\n---\nbody", "SKILL.md frontmatter must be a YAML mapping"),
        ("---\nname: [unclosed\n---\nbody", "Invalid YAML in frontmatter: "),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    problems = validate_text(text)
    assert len(problems) == 1
    assert problems[0].severity == "error"
    assert problems[0].message.startswith(message)


def test_empty_frontmatter_reports_both_missing_fields() -> None:
    assert errors_for("") == [
        "Missing required field in frontmatter: name",
        "Missing required field in frontmatter: description",
    ]


@pytest.mark.parametrize(
    "tagged",
    [
        "!!python/object/apply:os.system ['touch /tmp/skillmd-pwned']",
        "!!python/object:builtins.dict {}",
        "!!python/name:os.system",
    ],
)
def test_yaml_tags_that_build_objects_are_refused_not_run(tagged: str, tmp_path: Path) -> None:
    text = f"---\nname: x\ndescription: {tagged}\n---\nbody"
    with pytest.raises(
        FrontmatterError, match="Invalid YAML in frontmatter: could not determine a constructor"
    ):
        parse_frontmatter(text)
    assert not Path("/tmp/skillmd-pwned").exists()
    assert "tags that build objects are refused" in validate_text(text)[0].message


def test_a_byte_order_mark_is_ignored() -> None:
    assert validate_text("\ufeff" + skill_text({"name": "x", "description": "y"}), "x") == []


def test_body_advice_is_a_warning() -> None:
    empty = validate_text(skill_text({"name": "x", "description": "y"}, body=""), "x")
    assert [(p.severity, p.message) for p in empty] == [
        ("warning", "SKILL.md has no instructions after the frontmatter")
    ]
    long = validate_text(skill_text({"name": "x", "description": "y"}, body="line\n" * 501), "x")
    assert [p.severity for p in long] == ["warning"]
    assert "501 lines; the specification recommends under 500" in long[0].message
    assert not has_errors(long)
    assert has_errors(long, strict=True)


def test_validate_path_on_a_folder_and_on_the_file(tmp_path: Path, write_skill) -> None:
    good = write_skill(tmp_path, "good")
    assert validate_path(good.parent) == []
    assert validate_path(good) == []
    bad = write_skill(tmp_path, "bad", folder="not-bad", description="d" * 2000)
    problems = validate_path(bad.parent)
    assert {p.path for p in problems} == {bad}
    assert messages(problems) == [
        "Directory name 'not-bad' must match skill name 'bad'",
        "Description exceeds 1024 character limit (2000 chars)",
    ]
    assert str(problems[0]) == f"{bad}: error: Directory name 'not-bad' must match skill name 'bad'"


def test_a_frontmatter_discovery_would_skip_as_too_large_is_an_error_for_validate(tmp_path: Path,
                                                                                 write_skill) -> None:
    # Found by the fuzzer: 5,000 approval tools made a 120 KB frontmatter; validate said valid, while
    # discovery (and so the sync) skipped the file for its size.
    big = write_skill(tmp_path, "big", metadata={"trigger_config": {"schedule": "0 9 * * *"},
                                                 "approval_required_tools": ["outbox_send_message"] * 5_000})
    assert "big" not in discover(user=tmp_path).skills
    assert messages(validate_path(big.parent)) == [f"{big}: frontmatter exceeds 65536 bytes"]


def test_validate_path_on_what_is_not_a_skill(tmp_path: Path) -> None:
    assert messages(validate_path(tmp_path / "nope")) == [f"Path does not exist: {tmp_path / 'nope'}"]
    assert messages(validate_path(tmp_path)) == ["Missing required file: SKILL.md"]
    other = tmp_path / "README.md"
    other.write_text("hi")
    assert messages(validate_path(other)) == [f"Not a SKILL.md file: {other}"]


def test_problems_serialise_for_json_output(tmp_path: Path, write_skill) -> None:
    path = write_skill(tmp_path, "x", folder="y")
    dumped = [p.model_dump(mode="json") for p in validate_path(path)]
    assert dumped == [
        {
            "severity": "error",
            "message": "Directory name 'y' must match skill name 'x'",
            "field": "name",
            "path": str(path),
        }
    ]


def laughs_frontmatter(name: str) -> str:
    """A SKILL.md frontmatter of about 400 bytes whose metadata expands to 9^9 strings."""
    lists = "".join(
        f"  {key}: &{key} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
        for prev, key in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
    )
    return f"name: {name}\ndescription: Laughs.\nmetadata:\n{lists}"


def test_an_alias_bomb_in_frontmatter_is_refused_by_validation_and_loading(tmp_path: Path) -> None:
    # Before, it passed `skills validate`; `skills show --json` then took 10 s, 1.7 GB and printed 345 MB.
    path = tmp_path / "laughs" / "SKILL.md"
    path.parent.mkdir()
    path.write_text(skill_text(laughs_frontmatter("laughs")))
    assert len(path.read_bytes()) < 500

    [problem] = validate_path(path.parent)
    assert problem.severity == "error" and problem.message.startswith(
        "Refused YAML in frontmatter: SKILL.md: YAML aliases (*name) would expand the document by ")
    catalog = discover(user=tmp_path)
    assert catalog.skills == {} and catalog.problems[0].message.startswith("Skipped: Refused YAML in frontmatter")


def test_an_alias_bomb_in_an_agent_definition_is_refused() -> None:
    _, problems = check_agent_text(f"---\n{laughs_frontmatter('analyst')}---\nYou analyse.\n", set())
    assert problems[0].message.startswith("Refused YAML in frontmatter: AGENT.md: YAML aliases")


@pytest.mark.parametrize(
    ("script", "field", "reason"),
    [
        ("../shared/run.sh", "scripts.0", "contains '..' (it would leave the skill folder)"),
        ("scripts/../../run.sh", "scripts.0", "contains '..' (it would leave the skill folder)"),
        ("/usr/bin/env", "scripts.0", "is absolute"),
        ("C:\\tools\\run.bat", "scripts.0", "is absolute"),
        ("~/bin/x.sh", "scripts.0", "starts in a home folder"),
        ({"path": "/etc/cron.daily/x"}, "scripts.0.path", "is absolute"),
    ],
)
def test_a_script_path_outside_the_scripts_folder_is_an_error_naming_the_field(
        script: object, field: str, reason: str, tmp_path: Path, write_skill) -> None:
    path = write_skill(tmp_path, "lint", scripts=["scripts/lint.py", script])
    (path.parent / "scripts").mkdir()
    (path.parent / "scripts" / "lint.py").write_text("print('lint')\n")
    problems = validate_path(path.parent)
    shown = script["path"] if isinstance(script, dict) else script
    assert [(p.severity, p.field, p.message) for p in problems] == [
        ("error", field.replace("0", "1", 1),
         f"Field '{field.replace('0', '1', 1)}': script path '{shown}' {reason}; give a file under scripts/, "
         "such as fetch.py")]
    assert has_errors(problems)
    assert "lint" in discover(user=tmp_path).skills  # lenient loading keeps the skill; the entry never runs


def test_a_declared_script_must_be_a_file_in_the_scripts_folder(tmp_path: Path, write_skill) -> None:
    path = write_skill(tmp_path, "tools", scripts=["fetch.py", "scripts/report.sh", {"path": "gone.py"},
                                                   "leak.py", "elsewhere.py", "folder"])
    scripts = path.parent / "scripts"
    (scripts / "folder").mkdir(parents=True)
    (scripts / "fetch.py").write_text("print(1)\n")
    (scripts / "report.sh").write_text("echo 1\n")
    (tmp_path / "secret.txt").write_text("outside")
    (scripts / "leak.py").symlink_to(tmp_path / "secret.txt")
    (scripts / "elsewhere.py").symlink_to(path)  # inside the skill, but not a script
    problems = validate_path(path.parent)
    assert [(p.field, p.message) for p in problems] == [
        ("scripts.2.path", "Field 'scripts.2.path': script 'gone.py': no file scripts/gone.py in the skill folder"),
        ("scripts.3", "Field 'scripts.3': script 'leak.py': Resource path 'scripts/leak.py' resolves outside the "
                      f"skill folder (to {(tmp_path / 'secret.txt').resolve()})"),
        ("scripts.4", "Field 'scripts.4': script 'elsewhere.py': script 'elsewhere.py' resolves outside the "
                      f"scripts folder (to {path.resolve()})"),
        ("scripts.5", "Field 'scripts.5': script 'folder': no file scripts/folder in the skill folder"),
    ]
    assert errors_for({"name": "x", "description": "x", "scripts": "fetch.py"}) == [
        "Field 'scripts': Input should be a valid list"]


def test_toolsets_are_mcp_server_entries_with_clear_errors() -> None:
    def messages(toolsets: object) -> list[str]:
        _, problems = check_frontmatter({"name": "n", "description": "d", "toolsets": toolsets})
        return [p.message for p in problems]

    manifest, problems = check_frontmatter(
        {"name": "n", "description": "d", "toolsets": {"lint": {"command": "lint-mcp", "env": {"T": "${TOKEN}"}}}}
    )
    assert problems == [] and manifest is not None
    assert manifest.toolsets["lint"].env == {"T": "${TOKEN}"}  # kept unexpanded
    assert messages(["toolsets/index:Hello"]) == [
        "Field 'toolsets': toolsets are MCP servers: a mapping of server name to an mcpServers entry "
        "({command, args, env} or {url, headers}), not a list"
    ]
    assert messages({"x": {"args": []}}) == [
        "Field 'toolsets.x': Value error, give either `command` (a stdio server) or `url` (a streamable-HTTP server)"
    ]
    assert messages({"a_b": {"command": "x"}}) == [
        "Field 'toolsets': toolset server name 'a_b' must be letters, digits and hyphens (its tools are called "
        "<name>_<tool>)"
    ]
    # Python's re took "lint\n" for a name ($ matched before a last newline); the name is matched by RE2 now.
    assert messages({"lint\n": {"command": "x"}}) == [
        "Field 'toolsets': toolset server name 'lint\n' must be letters, digits and hyphens (its tools are called "
        "<name>_<tool>)"
    ]


def test_a_toolset_may_say_it_needs_no_network() -> None:
    manifest, problems = check_frontmatter({"name": "n", "description": "d", "toolsets": {
        "offline": {"command": "python", "args": ["server.py"], "network": False},
        "online": {"command": "python", "args": ["server.py"]}}})
    assert problems == [] and manifest is not None
    assert not manifest.toolsets["offline"].network and manifest.toolsets["online"].network
    _, problems = check_frontmatter({"name": "n", "description": "d", "toolsets": {
        "x": {"command": "python", "network": "sometimes"}}})
    assert [p.message for p in problems] == ["Field 'toolsets.x.network': Input should be a valid boolean, unable to "
                                             "interpret input"]


def test_the_schedule_and_approval_numbers_of_a_scheduled_file_are_held_to_their_bounds() -> None:
    # Each was passed on to the registration unchecked, so `skills validate` said valid and only the
    # sync's registration refused it, later, in a log.
    frontmatter = (
        "name: x\ndescription: x\nmetadata:\n  trigger_config: {schedule: '0 9 * * *'}\n  max_steps: 500\n"
        "  jitter_seconds: 999999999\n  max_runs: 0\n  timeout_minutes: .nan\n"
        "  approval_timeout_minutes: 1.0e+22\n  end_at: '9999-12-31T23:59:59'\n  overlap: sometimes\n"
        "  catch_up: [all]\n  approval_required_tools: {send: yes}\n  business_days_only: maybe\n"
    )
    found = errors_for(frontmatter)
    assert "Field 'metadata.max_steps': must be between 1 and 100 (got 500)" in found
    for error in (
        "Field 'metadata.jitter_seconds': must be between 0 and 3600 (got 999999999)",
        "Field 'metadata.max_runs': must be between 1 and 1000000 (got 0)",
        "Field 'metadata.timeout_minutes': must be a number between 0.05 and 10080, got nan",
        "Field 'metadata.approval_timeout_minutes': must be between 1 and 10080 (got 10000000000000000000000)",
        "Field 'metadata.end_at': must be before 2101-01-01 (got 9999-12-31T23:59:59+00:00)",
        "Field 'metadata.overlap': must be one of skip, buffer_one, allow (got 'sometimes')",
        "Field 'metadata.catch_up': must be one of once, none, all (got \"['all']\")",
        "Field 'metadata.business_days_only': must be true or false, got 'maybe'",
    ):
        assert error in found
    assert any(e.startswith("Field 'metadata.approval_required_tools': ") for e in found), found


def test_a_timeout_too_small_to_run_anything_is_refused_by_validate_with_its_range() -> None:
    found = errors_for({"name": "x", "description": "x",
                        "metadata": {"trigger_config": {"interval_minutes": 60}, "timeout_minutes": 1e-300}})
    assert found == ["Field 'metadata.timeout_minutes': must be between 0.05 and 10080 (got 1e-300)"]


def test_a_valid_schedule_shape_in_a_file_has_no_problem() -> None:
    frontmatter = {"name": "x", "description": "x", "metadata": {
        "trigger_config": {"schedule": "0 9 * * 1-5", "timezone": "Asia/Tokyo"}, "timeout_minutes": 2.5,
        "end_at": "2099-01-01T00:00:00", "max_runs": 5, "jitter_seconds": 90, "overlap": "buffer-one",
        "catch_up": "all", "required_tools": ["send"], "approval_required_tools": ["send"],
        "approval_timeout_minutes": 60, "skip_holidays": "US", "business_days_only": True}}
    assert errors_for(frontmatter) == []


def test_the_file_fields_are_checked_only_in_a_scheduled_file() -> None:
    # Without trigger_config a file registers nothing: its metadata is its own (the specification's free form).
    assert errors_for({"name": "x", "description": "x", "metadata": {"max_runs": "many", "overlap": 3}}) == []


@pytest.mark.parametrize(("trigger", "field", "message"), [
    ({"schedule": "0 9 * * *", "interval_minutes": 5}, "metadata.trigger_config", "give exactly one of"),
    ({"schedule": "0 9 * * *", "event": "mail"}, "metadata.trigger_config", "give either event or a schedule"),
    ({"schedule": "61 * * * *"}, "metadata.trigger_config.schedule", "minute 61 is out of range"),
    ({"schedule": "0 9 * * *", "timezone": "Mars/Base"}, "metadata.trigger_config.timezone", "unknown time zone"),
    ({"at": "tomorrow-ish"}, "metadata.trigger_config.at", "is not an ISO 8601 date-time"),
    ({}, "metadata.trigger_config", "a cron skill needs one of"),
    ({"interval_minutes": 5, "every": 3}, "metadata.trigger_config.every", "unknown trigger field"),
], ids=["two-triggers", "event-and-schedule", "cron", "zone", "at", "empty", "unknown-key"])
def test_what_the_syncs_registration_refuses_validate_refuses_naming_the_field(
        trigger: dict[str, object], field: str, message: str) -> None:
    # Judged by the registration's own normalizer on the request the sync sends (file_request): a file
    # install and `skills validate` accepted these, and the sync then refused them.
    text = skill_text({"name": "x", "description": "d", "metadata": {"trigger_config": trigger}}, "Do it.")
    [problem] = [p for p in validate_text(text, "x") if p.severity == "error"]
    assert problem.field == field and message in problem.message, problem


def test_a_registration_problem_already_reported_by_the_frontmatter_check_is_reported_once() -> None:
    text = skill_text({"name": "x", "description": "d", "metadata": {
        "trigger_config": {"interval_minutes": 5}, "max_steps": 0}}, "Do it.")
    assert [p.field for p in validate_text(text, "x") if p.severity == "error"] == ["metadata.max_steps"]
