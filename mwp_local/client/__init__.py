"""Hand-signed Commands for scripts and notebooks: send any Command as any Principal.

- ``Client`` (``signing``): one Principal's Commands, signed with the epochs it currently holds
  (or stale ones on purpose), submitted to a Group log;
- ``Reply`` (``replies``): the Authority's answer, drawn in a notebook (a receipt's Events, or a
  refusal's section-19 code, explanation and rule);
- ``Workbench`` (``workbench``): a Group log you drive by hand, fresh or a Sandbox's, with the
  usual Mission steps as one-liners.

See ``docs/prototyping.md`` ("Send Commands by hand").
"""

from __future__ import annotations

from .replies import Reply, UnexpectedReply
from .signing import Client
from .workbench import Workbench

__all__ = ["Client", "Reply", "UnexpectedReply", "Workbench"]
