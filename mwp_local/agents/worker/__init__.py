"""The Worker, a sans-IO policy (§10.3, §11, §12, §13): ``core`` (the policy), ``admission``
(admission control before accepting an offer), ``slots`` (isolated execution slots),
``execution`` (running one slot), ``retries`` (bounded retries), ``documents`` (progress,
manifests and Evidence it writes), ``index`` (what it holds and is offered) and ``offline``
(bounded offline execution, §11.5)."""
