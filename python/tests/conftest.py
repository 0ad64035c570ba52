"""The harness: homes made with `agora init`, and real `agora node run`
processes on 127.0.0.1 (mdns off, a free port for libp2p and one for the
control channel), stopped in the fixtures' teardown. Every wait is bounded.

The binary is `$AGORA_BIN`, else `$CARGO_TARGET_DIR/release/agora` (the
target directory defaulting to `$HOME/.cache/agora-target`, as
scripts/env.sh sets it).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

import agora

WAIT = 60.0
"""Seconds any wait lasts at most."""

WORKSPACE = "py"

T = TypeVar("T")


def agora_bin() -> Path:
    explicit = os.environ.get("AGORA_BIN")
    if explicit:
        return Path(explicit)
    target = os.environ.get("CARGO_TARGET_DIR") or str(Path.home() / ".cache" / "agora-target")
    return Path(target) / "release" / "agora"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGORA_")}
    env["AGORA_LOG"] = "agora=info,warn"
    return env


def wait_for(what: str, check: Callable[[], T | None], timeout: float = WAIT) -> T:
    """`check()` until it gives something other than None, for at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


def run(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`agora --home HOME ARGS...`, bounded."""
    out = subprocess.run(
        [str(agora_bin()), "--home", str(home), *args],
        env=_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    if check and out.returncode != 0:
        raise AssertionError(f"agora {' '.join(args)} failed ({out.returncode}): {out.stderr}{out.stdout}")
    return out


def run_json(home: Path, *args: str) -> Any:
    """`agora --home HOME --json ARGS...`, its answer parsed."""
    return json.loads(run(home, "--json", *args).stdout)


class Home:
    """A home with its own agent (`agora init`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.id: str = run_json(path, "init")["agent"]

    def new_agent(self, name: str) -> str:
        """`agora agent new NAME`: a keyring agent; its id."""
        agent_id: str = run_json(self.path, "agent", "new", name)["id"]
        return agent_id


class Node:
    """A running `agora node run` on a home."""

    def __init__(self, home: Home, founder: str, bootstrap: Sequence[str] = ()) -> None:
        self.home = home
        ready = home.path / "ready.json"
        ready.unlink(missing_ok=True)
        args = [
            str(agora_bin()), "--home", str(home.path), "node", "run",
            "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns",
            "--workspace", WORKSPACE, "--founder", founder,
            "--ready-file", str(ready),
        ]  # fmt: skip
        for b in bootstrap:
            args += ["--bootstrap", b]
        self.log = home.path.with_suffix(".log")
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(args, env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)

        def started() -> tuple[str, dict[str, Any]] | None:
            if self.process.poll() is not None:
                raise AssertionError(f"the node exited with {self.process.returncode}: {self.log.read_text(errors='replace')}")
            try:
                listen = json.loads(ready.read_text())["listen"][0]
                node = json.loads((home.path / "node.json").read_text())
            except (OSError, ValueError, KeyError, IndexError):
                return None
            return (listen, node) if node.get("pid") == self.process.pid else None

        self.addr, node_file = wait_for("the node to be ready", started)
        self.control: str = node_file["control"]
        self.token: str = node_file["token"]

    def client(self, agent: str | None = None) -> agora.Client:
        return agora.Client(self.control, self.token, agent, timeout=WAIT)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


@pytest.fixture(scope="session")
def binary() -> Path:
    path = agora_bin()
    if not os.access(path, os.X_OK):
        pytest.fail(f"no agora binary at {path}: build it (scripts/test.sh does) or set AGORA_BIN", pytrace=False)
    return path


@pytest.fixture
def make_home(binary: Path, tmp_path: Path) -> Callable[[], Home]:
    """Homes in this test's temporary directory."""
    count = 0

    def make() -> Home:
        nonlocal count
        count += 1
        return Home(tmp_path / f"home{count}")

    return make


@pytest.fixture
def start_node() -> Iterator[Callable[..., Node]]:
    """Starts nodes; every one is stopped at the test's end."""
    nodes: list[Node] = []

    def start(home: Home, founder: str | None = None, bootstrap: Sequence[str] = ()) -> Node:
        node = Node(home, founder or home.id, bootstrap)
        nodes.append(node)
        return node

    yield start
    for node in nodes:
        node.stop()


@pytest.fixture
def founder(make_home: Callable[[], Home]) -> Home:
    """A home whose agent founds the workspace."""
    return make_home()


@pytest.fixture
def node(founder: Home, start_node: Callable[..., Node]) -> Node:
    """The founder's running node."""
    return start_node(founder)


@pytest.fixture
def client(node: Node) -> agora.Client:
    """A client of the founder's node, as its own agent."""
    return node.client()
