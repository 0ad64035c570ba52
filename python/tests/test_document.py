"""The typed methods against the node's own OpenAPI document: each calls an
operation the node has, with fields its input schema names and every field
it requires; and the package type-checks (mypy --strict), as installed."""

from __future__ import annotations

import importlib.util
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import agora
from conftest import Node

ID = "ab" * 32

# Each typed method with arguments for every parameter it has.
CALLS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "propose": (("text",), {}),
    "support": ((ID, "text"), {}),
    "contradict": ((ID, "text"), {}),
    "refine": ((ID, "text"), {"resolves": [ID]}),
    "synthesize": (([ID, ID], "text"), {}),
    "ask": (("text",), {}),
    "resolve": ((ID, "text"), {}),
    "reframe": ((ID, "text"), {}),
    "park": ((ID, "why"), {}),
    "resume": ((ID,), {}),
    "connect": ((ID, ID, "text"), {}),
    "tension": ((ID, ID, "text"), {}),
    "accept": ((ID, 3), {}),
    "dispute": ((ID, "reason"), {"counter": "instead"}),
    "withdraw": ((ID,), {}),
    "identity": ((), {}),
    "orient": (("topic",), {"include_superseded": True, "limit": 5}),
    "status": ((ID,), {}),
    "trace": ((ID,), {}),
    "latest": ((ID,), {}),
    "search": (("query",), {"all": True, "current": True, "limit": 5}),
    "history": ((1_700_000_000_000,), {"target": ID}),
    "questions": ((), {}),
    "decisions": ((), {}),
    "disagreements": ((), {}),
    "graph": ((), {"format": "dot"}),
    "perspective": ((), {"agent": ID, "as_of": "2024-03-15", "summary": True}),
    "consensus": ((2,), {"agents": [ID], "as_of": 5, "summary": True}),
    "disputes": ((), {"agents": [ID], "as_of": 5, "summary": True}),
    "audit": ((ID,), {}),
    "view_hash": ((), {}),
    "admit": ((ID, "note"), {}),
    "remove": ((ID, "reason"), {"at": ID}),
    "admins": (([ID, ID], 2), {"note": "two of them"}),
    "roster": ((), {}),
    "key_history": ((), {"agent": ID}),
    "key_recover": ((ID, ID, "a" * 64), {"note": "both keys lost"}),
}

NOT_OPERATIONS = {"call", "node_status", "openapi", "operations", "with_agent", "from_home", "base_url", "agent", "export_traces"}

# Each integration's module, its test and the package of its framework: the
# two are type-checked where the framework is installed.
INTEGRATIONS = {"openai_agents": "agents", "langgraph": "langgraph", "crewai": "crewai"}
TESTS_NEED = {"test_openai_agents": ["agents"], "test_langgraph": ["langgraph"], "test_crewai": ["crewai"], "test_swarm": ["agents", "langgraph"]}


class Recorder(agora.Client):
    """A client that records its requests instead of sending them."""

    def __init__(self) -> None:
        super().__init__("127.0.0.1:1", "token")
        self.sent: list[tuple[str, str, dict[str, Any] | None]] = []

    def _request(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        self.sent.append((method, path, None if body is None else dict(body)))
        return {"result": []}


def resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].removeprefix("#/components/schemas/")
        schema = doc["components"]["schemas"][name]
    return schema


def test_every_typed_method_is_listed() -> None:
    public = {n for n, _ in inspect.getmembers(agora.Client) if not n.startswith("_")}
    assert public - NOT_OPERATIONS == set(CALLS), "a typed method without a case here, or a case without a method"


def test_export_traces_posts_to_the_otlp_receiver() -> None:
    recorder = Recorder()
    recorder.export_traces({"resourceSpans": []})
    assert recorder.sent == [("POST", "/v1/traces", {"resourceSpans": []})]


def test_typed_methods_call_the_documented_operations(node: Node) -> None:
    doc = node.client().openapi()
    for name, (args, kwargs) in CALLS.items():
        recorder = Recorder()
        getattr(recorder, name)(*args, **kwargs)
        ((method, path, body),) = recorder.sent
        assert method == "POST" and path in doc["paths"], f"{name}: {path} is not in the document"
        schema = resolve(doc, doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"])
        fields = set(schema.get("properties", {}))
        assert body is not None and set(body) <= fields, f"{name}: {sorted(set(body or {}) - fields)} are not input fields of {path}"
        assert set(schema.get("required", [])) <= set(body), f"{name}: leaves out required {schema.get('required')}"
        for field, value in body.items():
            declared = resolve(doc, schema["properties"][field])
            kinds = declared.get("type")
            kinds = kinds if isinstance(kinds, list) else [kinds] if kinds else []
            python = {str: "string", bool: "boolean", int: "integer", list: "array", float: "number"}[type(value)]
            assert not kinds or python in kinds or (python == "integer" and "number" in kinds), (
                f"{name}: `{field}` is sent as {python}, the document says {kinds}"
            )


def test_the_package_type_checks(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    package = Path(agora.__file__).parent
    assert (package / "py.typed").is_file(), "the installed package is marked typed"
    tests = Path(__file__).parent
    installed = {name for name, framework in INTEGRATIONS.items() if importlib.util.find_spec(framework) is not None}
    modules = [m.name for m in pkgutil.walk_packages([str(package)], "agora.")]
    modules = [m for m in modules if m.rpartition(".")[2] in installed or not m.startswith("agora.integrations.")]
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", "/dev/null", "-m", "agora",
         *(a for m in modules for a in ("-m", m))],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    # The tests use the installed package through its py.typed marker.
    missing = {name for name in TESTS_NEED if any(importlib.util.find_spec(f) is None for f in TESTS_NEED[name])}
    files = [str(f) for f in sorted(tests.glob("*.py")) if f.stem not in missing]
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", "/dev/null", *files],
        capture_output=True, text=True, timeout=600, cwd=tests,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
