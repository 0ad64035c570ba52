"""The node's one error shape as exceptions.

Every answer of the control channel that is not a success is one JSON
object, ``{"code", "rule", "message", "entry"}``: ``code`` is the kind of
failure and decides the HTTP status, ``rule`` names the rule broken
(always), ``entry`` is the entry concerned or null. :class:`AgoraError`
carries the four fields and the status; its subclasses follow ``code``
(and, for :class:`UnknownAgent`, the rule), so a program catches the kind
it can handle and reads ``rule`` for the rest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


class AgoraError(Exception):
    """A failure the node answered (or, for :class:`NodeUnreachable`, no answer).

    Attributes:
        code: the kind of failure (``bad_input``, ``refused``, ``not_found``, ...).
        rule: the rule broken, by name (``wrong_state``, ``unknown_entry``, ...).
        message: what went wrong, in words.
        entry: the entry concerned, or None.
        status: the HTTP status, or None when no answer came.
    """

    code: str
    rule: str
    message: str
    entry: str | None
    status: int | None

    def __init__(self, code: str, rule: str, message: str, entry: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.rule = rule
        self.message = message
        self.entry = entry
        self.status = status

    def __str__(self) -> str:
        where = f"; entry: {self.entry}" if self.entry else ""
        return f"{self.message} ({self.code}, rule: {self.rule}{where})"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, rule={self.rule!r}, "
            f"message={self.message!r}, entry={self.entry!r}, status={self.status!r})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The error in the node's shape."""
        return {"code": self.code, "rule": self.rule, "message": self.message, "entry": self.entry}


class BadRequest(AgoraError):
    """400: the input breaks an input rule (``bad_input``: not hex, not a time,
    over a limit, not the operation's schema) or the request is malformed
    (``bad_request``)."""


class Unauthorized(AgoraError):
    """401: the bearer token is missing or wrong (rule ``credentials``)."""


class Forbidden(AgoraError):
    """403: not allowed with these credentials (rule ``reads_only``)."""


class NotFound(AgoraError):
    """404: an entry not held here (``not_found``), an operation or route the
    node does not have (``unknown_operation``, ``unknown_route``)."""


class UnknownAgent(NotFound):
    """404 with rule ``unknown_agent``: the ``Agora-Agent`` header names no
    agent of the node's keyring (``agora agent new NAME`` makes one)."""


class Refused(AgoraError):
    """422: a rule of the log was broken; ``rule`` names it (``wrong_state``,
    ``founder_only``, ``self_accept``, ...) and ``entry`` the entry concerned."""


class Unavailable(AgoraError):
    """503: the node is shutting down, or at a limit."""


class ServerError(AgoraError):
    """500, or any other answer of a kind this client does not know."""


class NodeUnreachable(AgoraError, ConnectionError):
    """No answer: no node listens at the address (or no ``node.json`` names
    one), the connection failed, or the request timed out. ``status`` is
    None, ``code`` is ``unreachable``."""

    def __init__(self, message: str) -> None:
        super().__init__("unreachable", "connection", message, None, None)


_BY_CODE: dict[str, type[AgoraError]] = {
    "bad_input": BadRequest,
    "bad_request": BadRequest,
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "unknown_operation": NotFound,
    "unknown_route": NotFound,
    "refused": Refused,
    "unavailable": Unavailable,
    "internal": ServerError,
}

_BY_STATUS: dict[int, type[AgoraError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    422: Refused,
    503: Unavailable,
}


def error_from_answer(status: int, body: bytes) -> AgoraError:
    """The exception for an error answer of ``status`` with ``body``: the
    node's error object when the body is one, else one made from the status."""
    shape: Mapping[str, Any] | None = None
    try:
        parsed = json.loads(body.decode("utf-8")) if body else None
        if isinstance(parsed, dict) and isinstance(parsed.get("code"), str):
            shape = parsed
    except (UnicodeDecodeError, ValueError):
        shape = None
    if shape is None:
        text = body.decode("utf-8", "replace").strip()[:4096]
        cls = _BY_STATUS.get(status, ServerError)
        return cls(f"http_{status}", "unknown", text or f"HTTP status {status}", None, status)
    code = str(shape["code"])
    rule = str(shape.get("rule") or code)
    message = str(shape.get("message") or code)
    entry = shape.get("entry")
    cls = UnknownAgent if rule == "unknown_agent" else _BY_CODE.get(code) or _BY_STATUS.get(status, ServerError)
    return cls(code, rule, message, entry if isinstance(entry, str) else None, status)
