"""Fault campaigns: seeded fault schedules run over sample missions, and an invariant checker
that reads only a finished (or killed) log directory and counts, per invariant, what it checked
and what it found broken.

* ``logdir``: read a sandbox directory (the DuckDB log, the Organization, the persisted record
  of external calls and of acknowledged Commands when present) into a ``LogView``;
* ``invariants`` (log-level) and ``work_invariants`` (WorkItem-level, over ``tracker``'s own fold
  of the signed Events): the table of invariants and ``check_directory``;
* ``schedule``: seeded fault schedules as data; ``delivery_faults``: their delivery-bus half;
* ``forgery``: forged and stale Commands and the section-19 code each must be refused with;
* ``runner``: runs trials and whole campaigns;
* ``acks``: the record of acknowledged Commands that a killed run leaves behind.
"""
