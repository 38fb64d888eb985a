"""The Kubernetes manifests (deploy/) and the Dockerfile, checked offline.

Every rendered resource is validated against Kubernetes' own OpenAPI schemas (the PyPI package
kubernetes-validate bundles them; strict: an unknown field is an error). Then what the manifests
say about the engine is checked against the engine itself: every environment variable is a setting,
a variable of Temporal's env config (read back through the SDK) or one a process reads; the values
parse as the worker would parse them; the commands are real `skills` commands; the probes are on the
health server's port; the grace period covers the worker's drain; every ConfigMap, Secret, volume
and service account referred to exists. Renaming a setting, a command or a port breaks a test here.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import re
import shlex
import shutil
import subprocess
import tomllib
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from temporalio.envconfig import ClientConfigProfile

from adapters.mcp.config import load_mcp_config
from config.settings import ENV_PREFIX, Settings
from starter import telegram_bot
from starter.cli import cli
from tests.deploy.kustomize import build, pod_spec, secret_data

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
BASE = DEPLOY / "base"
EXAMPLE = DEPLOY / "overlays" / "example"
KUSTOMIZATIONS = [BASE, DEPLOY / "telegram", EXAMPLE]

OLDEST_K8S = "1.32"
"""The oldest Kubernetes still supported by its makers when this was written: the manifests must be valid on it
and on the newest the validator knows (:func:`k8s_versions`)."""


def k8s_versions() -> list[str]:
    """The validator is imported by the tests that validate, not as each xdist worker collects."""
    import kubernetes_validate

    return [OLDEST_K8S, kubernetes_validate.latest_version()]


TEMPORAL_ENV = {
    "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_TLS",
    "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_CERT_DATA", "TEMPORAL_TLS_CLIENT_KEY_PATH",
    "TEMPORAL_TLS_CLIENT_KEY_DATA", "TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_DATA",
    "TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION", "TEMPORAL_PROFILE", "TEMPORAL_CONFIG_FILE",
}
"""Temporal's env config (docs.temporal.io/references/client-environment-configuration); each one
the manifests use is also read back through the SDK below."""

PROCESS_ENV = {telegram_bot.TOKEN_ENV, telegram_bot.API_BASE_ENV}
"""Variables a process reads itself, not through Settings: the Telegram adapter's token and API."""


def settings_env_names() -> set[str]:
    """Every variable Settings.from_env reads: SKILLS_<FIELD>, or a field's own aliases."""
    names: set[str] = set()
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        if alias is None:
            names.add(ENV_PREFIX + name.upper())
        else:
            names.update(str(choice) for choice in getattr(alias, "choices", [alias]))
    return names


@pytest.fixture(scope="module")
def rendered() -> dict[Path, list[dict[str, Any]]]:
    return {folder: build(folder) for folder in KUSTOMIZATIONS}


@pytest.fixture(scope="module")
def example(rendered: dict[Path, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return rendered[EXAMPLE]


def find(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert found, f"no {kind} {name} in the rendered manifests"
    return found[0]


def workloads(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if pod_spec(d) is not None]


def container_env(docs: list[dict[str, Any]], container: dict[str, Any]) -> dict[str, str]:
    """The environment a container starts with, as Kubernetes builds it (envFrom, then env)."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env.update(find(docs, "ConfigMap", source["configMapRef"]["name"])["data"])
        else:
            env.update(secret_data(find(docs, "Secret", source["secretRef"]["name"])))
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
        else:
            ref = var["valueFrom"].get("secretKeyRef") or var["valueFrom"]["configMapKeyRef"]
            kind = "Secret" if "secretKeyRef" in var["valueFrom"] else "ConfigMap"
            source = find(docs, kind, ref["name"])
            values = secret_data(source) if kind == "Secret" else source["data"]
            if ref["key"] in values:
                env[var["name"]] = values[ref["key"]]
            else:
                assert ref.get("optional"), f"{var['name']}: {kind} {ref['name']} has no key {ref['key']}"
    return env


def containers(docs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(doc, c) for doc in workloads(docs) for c in pod_spec(doc)["containers"]]


def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions, (KEYWORD, arguments), continuation lines joined."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def instruction(keyword: str) -> str:
    """The last instruction of a kind (the final stage's, where it counts)."""
    found = [args for key, args in dockerfile() if key == keyword]
    assert found, f"the Dockerfile has no {keyword}"
    return found[-1]


# --- rendering and schemas ------------------------------------------------------------------------


def test_every_manifest_is_valid_kubernetes(rendered: dict[Path, list[dict[str, Any]]]) -> None:
    import kubernetes_validate

    kinds = set()
    for folder, docs in rendered.items():
        assert docs, f"{folder} renders nothing"
        for doc in docs:
            for version in k8s_versions():
                try:
                    kubernetes_validate.validate(doc, version, strict=True)
                except kubernetes_validate.ValidationError as e:
                    pytest.fail(f"{folder.relative_to(ROOT)}: {doc['kind']} {doc['metadata']['name']} is not "
                                f"valid Kubernetes {version}: {e.message} at {'.'.join(map(str, e.path))}")
            kinds.add((doc["kind"], doc["metadata"]["name"]))
    assert {("Deployment", "skills-worker"), ("Deployment", "skills-telegram"), ("Job", "skills-setup"),
            ("ConfigMap", "skills-mcp"), ("ConfigMap", "skills-config"), ("Secret", "skills-secrets")} <= kinds


def test_the_validator_refuses_a_broken_manifest(example: list[dict[str, Any]]) -> None:
    """The schemas are strict: a misspelt field or a wrong type is an error, offline."""
    import kubernetes_validate

    worker = json.loads(json.dumps(find(example, "Deployment", "skills-worker")))
    worker["spec"]["replica"] = worker["spec"].pop("replicas")
    with pytest.raises(kubernetes_validate.ValidationError, match="replica"):
        kubernetes_validate.validate(worker, k8s_versions()[-1], strict=True)
    job = json.loads(json.dumps(find(example, "Job", "skills-setup")))
    job["spec"]["backoffLimit"] = "four"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, k8s_versions()[-1], strict=True)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed: the Python renderer of "
                    "tests/deploy/kustomize.py is not compared with the real kustomize on this machine")
@pytest.mark.parametrize("folder", KUSTOMIZATIONS, ids=lambda f: str(f.relative_to(DEPLOY)))
def test_the_renderer_agrees_with_kustomize(folder: Path, rendered: dict[Path, list[dict[str, Any]]]) -> None:
    output = subprocess.run(["kubectl", "kustomize", str(folder)], capture_output=True, text=True, timeout=60,
                            check=True).stdout
    real = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(output) if d}
    ours = {(d["kind"], d["metadata"]["name"]): d for d in rendered[folder]}
    assert ours == real


# --- the engine the manifests describe --------------------------------------------------------------


def test_every_variable_is_one_the_engine_reads(example: list[dict[str, Any]]) -> None:
    known = settings_env_names() | TEMPORAL_ENV | PROCESS_ENV
    for doc, container in containers(example):
        unknown = set(container_env(example, container)) - known
        assert not unknown, (f"{doc['metadata']['name']}/{container['name']} sets {sorted(unknown)}, which no "
                             "setting, Temporal's env config or the process reads (a renamed setting?)")


def test_the_settings_parse_as_the_worker_reads_them(example: list[dict[str, Any]]) -> None:
    worker = pod_spec(find(example, "Deployment", "skills-worker"))["containers"][0]
    env = container_env(example, worker)
    settings = Settings.from_env(environ=env)
    assert settings.data_dir == Path("/data")
    assert settings.mcp_config == Path("/etc/skills/mcp.json")
    assert settings.task_queue == env["SKILLS_TASK_QUEUE"] == "team-a"
    assert settings.database_url and settings.database_url.startswith("postgresql+psycopg://")
    assert settings.telegram_chats == ["8675309"]
    assert settings.log_format == "json"
    base = pod_spec(find(build(BASE), "Deployment", "skills-worker"))["containers"][0]
    Settings.from_env(environ=container_env(build(BASE) + [find(example, "Secret", "skills-secrets")], base))


def test_temporal_reads_the_connection_from_the_manifests(example: list[dict[str, Any]]) -> None:
    """The SDK's own env config loader (what client.connect uses) sees the address, the namespace
    and the API key the ConfigMap and the Secret give, for every pod that connects."""
    for doc, container in containers(example):
        env = container_env(example, container)
        profile = ClientConfigProfile.load(disable_file=True, override_env_vars=env)
        assert profile.address == env["TEMPORAL_ADDRESS"] == "my-namespace.a1b2c.tmprl.cloud:7233", doc["metadata"]
        assert profile.namespace == env["TEMPORAL_NAMESPACE"]
        assert profile.api_key == env["TEMPORAL_API_KEY"]


def test_every_temporal_variable_used_is_read_by_the_sdk(rendered: dict[Path, list[dict[str, Any]]]) -> None:
    """A TEMPORAL_* variable the manifests set changes the profile the SDK loads."""
    empty = ClientConfigProfile.load(disable_file=True, override_env_vars={}).to_dict()
    used = {var["name"] for docs in rendered.values() for _, container in containers(docs)
            for var in container.get("env", []) if var["name"].startswith("TEMPORAL_")}
    for docs in rendered.values():
        for cm in (d for d in docs if d["kind"] in ("ConfigMap", "Secret")):
            used |= {k for k in {**cm.get("data", {}), **cm.get("stringData", {})} if k.startswith("TEMPORAL_")}
    assert used >= {"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY"}
    assert used <= TEMPORAL_ENV
    for name in used:
        loaded = ClientConfigProfile.load(disable_file=True, override_env_vars={name: "x.example:7233"}).to_dict()
        assert loaded != empty, f"the Temporal SDK ignores {name}"


def test_every_command_is_a_skills_command(rendered: dict[Path, list[dict[str, Any]]]) -> None:
    entrypoint = json.loads(instruction("ENTRYPOINT"))
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert entrypoint == ["skills"] and scripts["skills"] == "starter.cli:main"
    commands = [json.loads(instruction("CMD"))]
    for docs in rendered.values():
        for _, container in containers(docs):
            assert "command" not in container, "the image's entrypoint is `skills`: give the command as args"
            commands.append(container["args"])
    assert ["worker"] in commands and ["setup"] in commands and ["telegram"] in commands
    for args in commands:
        result = CliRunner().invoke(cli, [*args, "--help"])
        assert result.exit_code == 0, f"`skills {shlex.join(args)}` is not a command: {result.output}"


def test_the_job_runs_setup_and_the_worker_the_worker(example: list[dict[str, Any]]) -> None:
    assert pod_spec(find(example, "Job", "skills-setup"))["containers"][0]["args"] == ["setup"]
    assert pod_spec(find(example, "Deployment", "skills-worker"))["containers"][0]["args"] == ["worker"]
    assert json.loads(instruction("CMD")) == ["worker"]


def test_the_probes_are_on_the_health_server(example: list[dict[str, Any]]) -> None:
    field = Settings.model_fields.get("health_port")
    if field is None:
        pytest.skip("Settings has no health_port (the health server is not on this branch yet): the probes' "
                    "port cannot be checked against it")
    worker = find(example, "Deployment", "skills-worker")
    container = pod_spec(worker)["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    env = container_env(example, container)
    health_port = int(env.get("SKILLS_HEALTH_PORT", field.default))
    probes = {kind: container[kind]["httpGet"] for kind in ("startupProbe", "livenessProbe", "readinessProbe")}
    for kind, probe in probes.items():
        port = ports.get(probe["port"], probe["port"])
        assert port == health_port, f"{kind} asks port {port}, the health server listens on {health_port}"
    assert probes["livenessProbe"]["path"] == "/healthz" and probes["readinessProbe"]["path"] == "/readyz"
    # The kubelet and Prometheus come to the pod's IP: the worker must listen there, not on its default.
    assert Settings.model_fields["health_host"].default == "127.0.0.1"
    assert Settings.from_env(environ=env).health_host == "0.0.0.0"
    annotations = worker["spec"]["template"]["metadata"]["annotations"]
    assert int(annotations["prometheus.io/port"]) == health_port and annotations["prometheus.io/path"] == "/metrics"
    assert f"EXPOSE {health_port}" in [f"{k} {a}" for k, a in dockerfile()]


def drain_seconds() -> float:
    """The worker's graceful_shutdown_timeout, read from worker.py (``timedelta(seconds=N)``)."""
    for node in ast.walk(ast.parse((ROOT / "worker.py").read_text())):
        if isinstance(node, ast.keyword) and node.arg == "graceful_shutdown_timeout":
            value = node.value
            assert (isinstance(value, ast.Call) and getattr(value.func, "id", None) == "timedelta"), (
                "worker.py's graceful_shutdown_timeout is no longer a timedelta literal: read it here as it is now")
            return timedelta(**{k.arg: ast.literal_eval(k.value) for k in value.keywords}).total_seconds()
    raise AssertionError("worker.py passes no graceful_shutdown_timeout")


def test_the_grace_period_covers_the_drain(example: list[dict[str, Any]]) -> None:
    drain = drain_seconds()
    grace = pod_spec(find(example, "Deployment", "skills-worker"))["terminationGracePeriodSeconds"]
    assert drain + 5 <= grace <= drain + 60, f"drain {drain}s, grace {grace}s"


def test_references_resolve(example: list[dict[str, Any]]) -> None:
    names = {(d["kind"], d["metadata"]["name"]) for d in example}
    for doc in workloads(example):
        pod = pod_spec(doc)
        assert ("ServiceAccount", pod["serviceAccountName"]) in names
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for volume in volumes.values():
            if "configMap" in volume:
                assert ("ConfigMap", volume["configMap"]["name"]) in names
            if "secret" in volume:
                assert ("Secret", volume["secret"]["secretName"]) in names
        for container in pod["containers"]:
            for mount in container.get("volumeMounts", []):
                assert mount["name"] in volumes, f"{doc['metadata']['name']}: no volume {mount['name']}"
            for source in container.get("envFrom", []):
                ref = source.get("configMapRef") or source["secretRef"]
                kind = "ConfigMap" if "configMapRef" in source else "Secret"
                assert (kind, ref["name"]) in names or ref.get("optional")
            container_env(example, container)  # every secretKeyRef resolves, or is optional
    for budget in (d for d in example if d["kind"] == "PodDisruptionBudget"):
        selector = budget["spec"]["selector"]["matchLabels"]
        covered = [d for d in workloads(example)
                   if selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()]
        assert [d["metadata"]["name"] for d in covered] == ["skills-worker"], budget["metadata"]["name"]


def mounted_at(pod: dict[str, Any], container: dict[str, Any], path: Path) -> dict[str, Any]:
    """The volume that holds ``path`` in the container (the longest mount path above it)."""
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = [m for m in container.get("volumeMounts", []) if path.is_relative_to(m["mountPath"])]
    assert mounts, f"nothing is mounted at {path}"
    return volumes[max(mounts, key=lambda m: len(m["mountPath"]))["name"]]


def test_the_worker_writes_only_to_its_volumes(example: list[dict[str, Any]]) -> None:
    for doc in workloads(example):
        pod = pod_spec(doc)
        assert pod["securityContext"]["runAsNonRoot"] is True
        for container in pod["containers"]:
            assert container["securityContext"]["readOnlyRootFilesystem"] is True
            assert container["securityContext"]["allowPrivilegeEscalation"] is False
            assert "emptyDir" in mounted_at(pod, container, Path("/tmp"))
            env = container_env(example, container)
            if "SKILLS_DATA_DIR" in env:
                assert "emptyDir" in mounted_at(pod, container, Path(env["SKILLS_DATA_DIR"]))
    user = instruction("USER").split(":")[0]
    assert user.isdigit() and int(user) != 0, "USER must be a numeric uid, for runAsNonRoot"
    for doc in workloads(example):
        assert pod_spec(doc)["securityContext"]["runAsUser"] == int(user)


def test_the_mcp_config_is_the_mounted_file_and_loads(example: list[dict[str, Any]], tmp_path: Path) -> None:
    worker = pod_spec(find(example, "Deployment", "skills-worker"))
    container = worker["containers"][0]
    env = container_env(example, container)
    path = Path(env["SKILLS_MCP_CONFIG"])
    volume = mounted_at(worker, container, path)
    config_map = find(example, "ConfigMap", volume["configMap"]["name"])
    mount = next(m for m in container["volumeMounts"] if m["name"] == volume["name"])
    assert "subPath" not in mount, "a subPath mount is never updated: the worker would not see a changed config"
    text = config_map["data"][str(path.relative_to(mount["mountPath"]))]
    (tmp_path / "mcp.json").write_text(text)
    servers = load_mcp_config(tmp_path / "mcp.json", defaults={})
    assert "telegram" in servers
    for var in re.findall(r"\$\{(\w+)", text):
        assert var in env, f"mcp.json expands ${{{var}}}, which the worker's environment does not set"
    assert load_mcp_config(BASE / "mcp.json", defaults={}) == {}


def test_the_shapes_issue_13_asks_for(example: list[dict[str, Any]]) -> None:
    worker = find(example, "Deployment", "skills-worker")
    assert worker["spec"]["replicas"] == 2
    resources = pod_spec(worker)["containers"][0]["resources"]
    assert resources["requests"] and resources["limits"]
    telegram = find(example, "Deployment", "skills-telegram")
    assert telegram["spec"]["replicas"] == 1 and telegram["spec"]["strategy"]["type"] == "Recreate"
    telegram_env = container_env(example, pod_spec(telegram)["containers"][0])
    assert telegram_bot.TOKEN_ENV in telegram_env and "SKILLS_TELEGRAM_CHATS" in telegram_env
    assert "SKILLS_DATABASE_URL" not in telegram_env and "SKILLS_LLM_API_KEY" not in telegram_env


def test_the_example_secret_holds_no_real_value(example: list[dict[str, Any]]) -> None:
    for key, value in secret_data(find(example, "Secret", "skills-secrets")).items():
        assert "change-me" in value, f"{key}: the example Secret must hold placeholders only"


# --- the image --------------------------------------------------------------------------------------


def test_the_image_gets_the_packages_and_nothing_else() -> None:
    """.dockerignore keeps out tests, benchmarks and local state, and no package pyproject.toml installs."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    setuptools = project["tool"]["setuptools"]
    ignored = {line.strip().rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert not any(line.startswith("!") for line in ignored), "exceptions make this check unreliable"
    needed = [p.rstrip("*") for p in setuptools["packages"]["find"]["include"]]
    needed += [f"{module}.py" for module in setuptools["py-modules"]] + ["pyproject.toml", project["project"]["readme"]]
    for name in needed:
        assert name in {p.name for p in ROOT.iterdir()}, f"{name} is not in the repository"
        assert not any(fnmatch.fnmatch(name, pattern) for pattern in ignored), f".dockerignore keeps out {name}"
    assert {"tests", "bench", ".venv", ".data", ".git", "deploy"} <= ignored
    assert instruction("FROM").startswith("${PYTHON_IMAGE}")
    assert any(key == "ARG" and args.startswith("PYTHON_IMAGE=python:3.11-slim") for key, args in dockerfile())
