"""Identifiers the simulated Organization gives to what a mission file declares."""

from __future__ import annotations


def mission_id(name: str) -> str:
    """The Mission ID of mission ``name``."""
    return f"urn:mwp-local:mission:{name}"


def group_id(name: str) -> str:
    """The Group ID of mission ``name``."""
    return f"urn:mwp-local:group:{name}"


def work_item_id(mission: str, work: str) -> str:
    """The WorkItem ID of WorkItem ``work`` of mission ``mission``."""
    return f"urn:mwp-local:work:{mission}:{work}"


def agent_id(name: str) -> str:
    """The Agent ID of Agent ``name``."""
    return f"urn:missionweaveprotocol:agent:{name}"


def human_id(name: str) -> str:
    """The Principal ID of human ``name``."""
    return f"urn:missionweaveprotocol:human:{name}"


def short(identifier: str) -> str:
    """The last segment of an identifier, for messages (``…:work:checkout:tests`` → ``tests``)."""
    return identifier.rsplit(":", 1)[-1]


def review_item_id(reviewed: str, ownership_epoch: int) -> str:
    """The review WorkItem that assesses the submission of ``reviewed`` made under its
    Ownership Epoch ``ownership_epoch`` (one submission per epoch)."""
    return f"{reviewed}.review-e{ownership_epoch}"


def proposal_item_id(mission: str, proposal_id: str) -> str:
    """The WorkItem a Coordinator authorizes from Work Proposal ``proposal_id``."""
    return work_item_id(mission, "proposal-" + short(proposal_id))
