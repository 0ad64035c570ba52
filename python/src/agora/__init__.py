"""Agora from Python: a client of a node's JSON API.

Agora is a distributed provenance log of signed reasoning events for agent
swarms. A running node (``agora node run``) serves every operation at
``POST /v1/ops/<name>``; :class:`Client` calls them, and every failure is
an :class:`AgoraError` carrying the node's ``code``, ``rule``, ``message``
and ``entry``.

    import agora

    node = agora.Client.from_home("~/.agora")      # <home>/node.json: control and token
    p = node.propose("Ship on Friday")
    bob = node.with_agent("bob")                   # another agent of the node's keyring
    bob.contradict(p["id"], "Not before the audit")
    node.status(p["id"])["status"]                 # "contested"

Framework integrations live under :mod:`agora.integrations`.
"""

from . import types
from .client import AGENT_HEADER, DEFAULT_CONTROL, DEFAULT_TIMEOUT, Client, default_home
from .errors import (
    AgoraError,
    BadRequest,
    Forbidden,
    NodeUnreachable,
    NotFound,
    Refused,
    ServerError,
    Unauthorized,
    Unavailable,
    UnknownAgent,
)

__version__ = "0.1.0"

__all__ = [
    "AGENT_HEADER",
    "DEFAULT_CONTROL",
    "DEFAULT_TIMEOUT",
    "AgoraError",
    "BadRequest",
    "Client",
    "Forbidden",
    "NodeUnreachable",
    "NotFound",
    "Refused",
    "ServerError",
    "Unauthorized",
    "Unavailable",
    "UnknownAgent",
    "default_home",
    "types",
]
