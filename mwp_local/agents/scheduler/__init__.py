"""The Worker-owned global Scheduler (§11.1–11.3): ``core`` (the Scheduler), ``model`` (its
values), ``order`` (its two orderings), ``round`` (its ledger and one decision round),
``disclosure`` (the schedule estimate a Worker publishes, §11.2) and ``snapshot`` (frozen
pictures for widgets). The fairness and starvation argument is in ``docs/scheduler.md``."""
