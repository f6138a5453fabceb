"""The method dispatch table: one handler for every protocol method, no more."""

from __future__ import annotations

from typing import cast

from orchestrator.protocol.requests import DIRECT_METHODS, METHOD_NAMES
from orchestrator.runtime.controller import Controller
from orchestrator.runtime.methods import Methods


def test_every_protocol_method_has_a_handler() -> None:
    methods = Methods(cast(Controller, object()))
    assert list(methods.handlers) == list(METHOD_NAMES)


def test_a_direct_method_is_not_a_plain_machine_event() -> None:
    methods = Methods(cast(Controller, object()))
    plain = {name for name, handler in methods.handlers.items() if handler == methods._plain}
    assert plain == {"resume", "pause", "cancel", "shutdown"}
    assert not plain & set(DIRECT_METHODS)
