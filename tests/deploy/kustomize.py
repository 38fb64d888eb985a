"""`kustomize build`, for the features deploy/ uses, in Python: the tests render the manifests offline.

kustomize is a Go program (not on PyPI); `kubectl kustomize` has it built in. What deploy/ uses is
small: ``resources`` (files and folders), ``namespace``, ``images``, ``configMapGenerator`` (envs,
files, literals; behaviours create, merge and replace) with ``disableNameSuffixHash``. Anything else
in a kustomization is refused here, so a manifest that starts using another feature makes the tests
say so rather than render it wrong. ``test_manifests`` compares this with ``kubectl kustomize``
wherever kubectl is installed.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

SUPPORTED = {"apiVersion", "kind", "resources", "namespace", "images", "configMapGenerator", "generatorOptions"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "PersistentVolume",
                  "StorageClass", "PriorityClass"}


class KustomizeError(ValueError):
    pass


def build(folder: Path) -> list[dict[str, Any]]:
    """The resources ``kustomize build folder`` would print, in the order they are met."""
    folder = folder.resolve()
    path = folder / "kustomization.yaml"
    if not path.exists():
        raise KustomizeError(f"{folder}: no kustomization.yaml")
    spec = yaml.safe_load(path.read_text()) or {}
    unknown = set(spec) - SUPPORTED
    if unknown:
        raise KustomizeError(f"{path}: fields this renderer does not implement: {sorted(unknown)}")
    if spec.get("kind", "Kustomization") != "Kustomization":
        raise KustomizeError(f"{path}: kind {spec['kind']!r} (components are not implemented)")
    options = spec.get("generatorOptions") or {}
    if spec.get("configMapGenerator") and options.get("disableNameSuffixHash") is not True and not _inherits(spec):
        raise KustomizeError(f"{path}: generated names need `generatorOptions: disableNameSuffixHash: true` "
                             "(name hashes are not implemented)")

    resources: list[dict[str, Any]] = []
    for entry in spec.get("resources") or []:
        target = (folder / entry).resolve()
        if target.is_dir():
            found = build(target)
        elif target.is_file():
            found = [doc for doc in yaml.safe_load_all(target.read_text()) if doc]
        else:
            raise KustomizeError(f"{path}: resource {entry!r} does not exist")
        for doc in found:
            if _find(resources, doc) is not None:
                raise KustomizeError(f"{path}: {_id(doc)} is defined twice")
            resources.append(doc)

    for generator in spec.get("configMapGenerator") or []:
        _generate(folder, path, generator, resources)
    for image in spec.get("images") or []:
        _set_image(image, resources)
    if spec.get("namespace"):
        for doc in resources:
            if doc.get("kind") not in CLUSTER_SCOPED:
                doc.setdefault("metadata", {})["namespace"] = spec["namespace"]
    return resources


def _inherits(spec: dict[str, Any]) -> bool:
    """An overlay whose generators all merge into (or replace) a base's keep the base's name."""
    return all(g.get("behavior") in ("merge", "replace") for g in spec.get("configMapGenerator") or [])


def _generate(folder: Path, path: Path, generator: dict[str, Any], resources: list[dict[str, Any]]) -> None:
    unknown = set(generator) - {"name", "behavior", "envs", "files", "literals"}
    if unknown:
        raise KustomizeError(f"{path}: configMapGenerator fields not implemented: {sorted(unknown)}")
    data: dict[str, str] = {}
    for env_file in generator.get("envs") or []:
        for number, line in enumerate((folder / env_file).read_text().splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if "=" not in line:
                raise KustomizeError(f"{folder / env_file}:{number}: not KEY=VALUE: {line!r}")
            key, value = line.split("=", 1)
            data[key] = value
    for literal in generator.get("literals") or []:
        key, value = literal.split("=", 1)
        data[key] = value
    for file in generator.get("files") or []:
        key, _, source = file.partition("=")
        source = source or key
        data[Path(key).name] = (folder / source).read_text()
    made = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": generator["name"]}, "data": data}
    behavior = generator.get("behavior", "create")
    existing = _find(resources, made)
    if behavior == "create":
        if existing is not None:
            raise KustomizeError(f"{path}: {_id(made)} exists already (use behavior merge or replace)")
        resources.append(made)
    elif existing is None:
        raise KustomizeError(f"{path}: {_id(made)} to {behavior} does not exist")
    elif behavior == "merge":
        existing["data"] = {**existing.get("data", {}), **data}
    elif behavior == "replace":
        existing["data"] = data
    else:
        raise KustomizeError(f"{path}: behavior {behavior!r}")


def _set_image(image: dict[str, Any], resources: list[dict[str, Any]]) -> None:
    for doc in resources:
        pod = _pod_spec(doc)
        for container in (pod or {}).get("containers", []) + (pod or {}).get("initContainers", []):
            name, tag = _split_image(container["image"])
            if name != image["name"]:
                continue
            new_name = image.get("newName", name)
            new_tag = image.get("newTag", tag)
            if image.get("digest"):
                container["image"] = f"{new_name}@{image['digest']}"
            else:
                container["image"] = f"{new_name}:{new_tag}" if new_tag else new_name


def _split_image(image: str) -> tuple[str, str | None]:
    if "@" in image:
        return image.split("@", 1)[0], None
    head, _, last = image.rpartition("/")
    if ":" in last:
        last, tag = last.split(":", 1)
        return (f"{head}/{last}" if head else last), tag
    return image, None


def _pod_spec(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The pod spec of a workload (Deployment, Job, ...), or None."""
    spec = doc.get("spec") or {}
    if doc.get("kind") == "CronJob":
        spec = spec.get("jobTemplate", {}).get("spec", {})
    template = spec.get("template")
    return template.get("spec") if isinstance(template, dict) else None


pod_spec = _pod_spec


def _find(resources: list[dict[str, Any]], doc: dict[str, Any]) -> dict[str, Any] | None:
    return next((r for r in resources if _id(r) == _id(doc)), None)


def _id(doc: dict[str, Any]) -> str:
    return f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"


def secret_data(secret: dict[str, Any]) -> dict[str, str]:
    """A Secret's values as text, from ``stringData`` and (base64) ``data``."""
    values = {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}
    values.update(secret.get("stringData") or {})
    return values
