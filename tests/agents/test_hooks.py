"""The documented hook Protocols (issue 22.3): each built-in policy conforms to its part's
Protocol, hook by hook, with the same parameters (mypy checks the same in ``agents.hooks``)."""

from __future__ import annotations

import inspect

import pytest

import mwp_local
from mwp_local.agents.hooks import HOOKS, hook_names, required_hooks


@pytest.mark.parametrize("policy", sorted(HOOKS))
def test_each_built_in_policy_conforms_to_its_hooks_protocol(policy: str) -> None:
    builtin, protocol = getattr(mwp_local, policy), HOOKS[policy]
    assert issubclass(builtin, protocol)
    names = hook_names(protocol)
    assert names, f"{protocol.__name__} names no hook"
    for name in names:
        ours = inspect.signature(getattr(builtin, name))
        documented = inspect.signature(getattr(protocol, name))
        assert list(ours.parameters) == list(documented.parameters), (policy, name)
        assert getattr(protocol, name).__doc__, f"{protocol.__name__}.{name} has no docstring"
    assert required_hooks(builtin, protocol) == ()


def test_the_protocols_are_public_and_name_the_hooks_of_each_part() -> None:
    assert hook_names(mwp_local.WorkerHooks) == ("admit", "blocks", "work", "progress")
    assert hook_names(mwp_local.CoordinatorHooks) == ("rank", "plan", "discover", "review")
    assert hook_names(mwp_local.MissionOwnerHooks) == (
        "cancel",
        "request_changes",
        "approve",
        "approve_execution",
    )
    assert hook_names(mwp_local.ReviewerHooks) == ("assess",)


def test_what_a_class_lacks_is_named() -> None:
    class Half:
        def decide(self) -> None: ...

        def admit(self) -> None: ...

    assert required_hooks(Half, mwp_local.WorkerHooks) == ("blocks", "work", "progress")
