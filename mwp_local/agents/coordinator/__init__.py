"""The Coordinator, a sans-IO policy (§7.2, §7.3, §10, §13.2, §14): ``core`` (the policy),
``plan`` (the evolving WorkItem graph), ``contracts`` (the Work Contracts it writes), ``offers``
(whom it offers work to and why), ``review`` (its ordered review of submissions), ``handover``
(Coordinator failure and replacement) and ``index`` (the indexes that keep it cheap)."""
