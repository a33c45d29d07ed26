"""A provisional Membership's signed Context Package (§8 just-in-time Membership, §13.3).

§8: the Coordinator grants a candidate scoped provisional Membership, and the Worker receives an
expiring offer *and a signed Context Package*; ``membership.schema.json`` requires a provisional
Membership to name its ``contextPackageId`` and its ``provisionalExpiresAt``. So a Command that
grants one (a ``work.offer`` to an Agent with no Membership in the Group, or a provisional
``membership.change``) or widens one (a ``work.offer`` of a WorkItem its member's scopes do not
cover yet) carries the package itself, as ``payload.contextPackage``;
``context_package`` checks it and the Membership Event embeds it, so the package the Membership
names is in the log beside it. The checks: it verifies (§6.4) as signed by the sender, it is
about this Mission and Group (and, when it names one, this WorkItem), it summarizes history the
Group already has, and it holds no private reasoning. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from ..protocol.reasoning import ensure_no_private_reasoning
from ..protocol.signing import profile_for, verify_parsed
from .command import CommandView
from .context import Context, invalid

_RULE = "§8 a provisional Membership comes with a signed Context Package"


def context_package(
    ctx: Context,
    cmd: CommandView,
    *,
    mission_id: str,
    group_id: str,
    work_item_id: str | None = None,
    why: str,
) -> dict[str, Any]:
    """The checked ``payload.contextPackage`` of ``cmd`` (``INVALID_COMMAND`` when it is missing
    or is not a package for this grant; its own signature stage's code when it does not
    verify). ``why`` says what needs it, for the explanation."""
    package = cmd.payload.get("contextPackage")
    if not isinstance(package, dict):
        raise invalid(
            f"{why}: a new or widened Membership names the signed Context Package of what it "
            "discloses, which the member receives (membership.schema.json requires a "
            "provisional one's contextPackageId). Send the package as payload.contextPackage "
            "(mwp_local.artifacts.context_packages builds one).",
            rule=_RULE,
        )
    verified = verify_parsed(profile_for("context-package"), package, ctx.state.registry)
    problems = []
    if verified.principal.id != cmd.actor_id:
        problems.append(f"it is signed by {verified.principal.id}, not by you")
    if (package["missionId"], package["groupId"]) != (mission_id, group_id):
        problems.append("it is about another Mission or Group")
    scope = package.get("workItemId")
    if work_item_id is not None and scope not in (None, work_item_id):
        problems.append(f"it is scoped to WorkItem {scope}, not {work_item_id}")
    last = ctx.group(group_id).last_sequence
    if package["sourceEventRange"]["toSequence"] > last:
        problems.append(
            f"it cites Events up to sequence {package['sourceEventRange']['toSequence']}, but "
            f"the Group's log ends at {last}"
        )
    if problems:
        raise invalid(
            f"{why}: the Context Package {package['contextPackageId']} was refused: "
            + "; ".join(problems)
            + ".",
            rule=_RULE,
        )
    ensure_no_private_reasoning(package, "The Context Package", rule=_RULE)
    return package
