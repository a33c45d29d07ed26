"""Writes 09_prototype_your_own_mission.ipynb (kept as code so the notebook's source is
reviewable).

Notebook 09 uses only the public API (``from mwp_local import ...``, ``docs/prototyping.md``),
the documented widgets of ``mwp_local.notebook`` and SQL over the logs' documented views: what
a user prototyping their own Mission and agents has. ``tests/notebooks/test_prototype.py``
checks its comparison table against its own fold of the two logs' Events.
"""

from pathlib import Path

import nbformat as nbf

import nbwrite

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
    md(
        "# Prototype your own Mission and agents\n\n"
        "Everything so far ran mission files with the built-in agents. Here you write a "
        "**Mission** in Python, give it two **Workers** of your own (one really computes its "
        "result from the **Artifact** its dependency delivered), try your own **Coordinator** "
        "strategy, run it step by step, and then compare your strategy with the built-in one "
        "by SQL over the two runs' logs. Only the public API is used "
        "([docs/prototyping.md](../docs/prototyping.md)): whatever your code decides is signed "
        "and sent as a **Command**, and the same **Group Authority** accepts or refuses it."
    ),
    code("%load_ext mwp_local.notebook"),
    md(
        "## A Mission in Python\n\n"
        "Three WorkItems in a chain: `fetch` the day's orders, `sum` them (it depends on "
        "`fetch`, so it starts only once `fetch` is verified), write a `report` (it depends "
        "on `sum`). Two Workers: `ana` can do all three, `bob` can sum and report. One fault: "
        "`bob` steps away 25 minutes into the run, for half an hour (a `pause`: he stops "
        "acting, Events still reach him). Every field is a key of a mission file "
        "([docs/mission-files.md](../docs/mission-files.md)); `check()` reports a mistake with "
        "its place before anything runs, and `to_toml()` gives the same Mission as a file."
    ),
    code(
        "import tempfile\n"
        "from pathlib import Path\n"
        "\n"
        "from mwp_local import (Admission, Agent, CoordinatorPolicy, Deliverable, Evidence, Fault,\n"
        "                       Mission, Result, Sandbox, Scenario, WorkerPolicy, WorkItem)\n"
        "\n"
        "scenario = Scenario(\n"
        "    name='totals',\n"
        "    seed=1,\n"
        "    agents=[\n"
        "        Agent(name='coordinator', capabilities=['mwp.coordination@1.0.0', 'mwp.review@1.0.0']),\n"
        "        Agent(name='ana', capabilities=['mwp.data.fetch@1.0.0', 'mwp.data.sum@1.0.0',\n"
        "                                        'mwp.data.report@1.0.0']),\n"
        "        Agent(name='bob', capabilities=['mwp.data.sum@1.0.0', 'mwp.data.report@1.0.0']),\n"
        "    ],\n"
        "    faults=[Fault(agent='bob', kind='pause', at='25m', for_='30m')],\n"
        "    missions=[\n"
        "        Mission(\n"
        "            id='totals',\n"
        "            objective=\"Total the day's orders\",\n"
        "            owner='alice',\n"
        "            coordinator='coordinator',\n"
        "            deadline='1d',\n"
        "            budget={'financial': 100, 'tool_calls': 100, 'compute_seconds': 100_000},\n"
        "            work=[\n"
        "                WorkItem(id='fetch', goal='Fetch the orders',\n"
        "                         capability='mwp.data.fetch@1.0.0', duration='20m'),\n"
        "                WorkItem(id='sum', goal='Sum the orders', capability='mwp.data.sum@1.0.0',\n"
        "                         depends_on=['fetch'], duration='30m'),\n"
        "                WorkItem(id='report', goal='Report the total',\n"
        "                         capability='mwp.data.report@1.0.0', depends_on=['sum'],\n"
        "                         duration='20m'),\n"
        "            ],\n"
        "        )\n"
        "    ],\n"
        ")\n"
        "scenario.check()  # a MissionFileError here would name the place and suggest a fix\n"
        "print(scenario.to_toml())"
    ),
    md(
        "## Two Workers of your own\n\n"
        "A Worker is the built-in `WorkerPolicy` with the hooks you override. `ana` overrides "
        "`work`, the work itself: for `fetch` she writes the orders as a Markdown table; for "
        "`sum` she reads the content of `fetch`'s Artifact (`request.input('fetch')`: the "
        "dependency's deliverable, re-hashed and checked against its signed manifest on read), "
        "adds the amounts up, and returns the total with **Evidence** for the contract's "
        "acceptance criteria. Anything else (the report) she leaves to the built-in, simulated "
        "work. `bob` overrides `admit`, **admission control**: he declines report writing, "
        "with one of the structured reasons of §11.1."
    ),
    code(
        "ORDERS = {'A-1': 12, 'A-2': 30, 'A-3': 8}\n"
        "computed = []  # what ana's function really computed, to look at below\n"
        "\n"
        "\n"
        "class Ana(WorkerPolicy):\n"
        "    \"\"\"Fetches and sums for real; the report is the built-in simulated work.\"\"\"\n"
        "\n"
        "    def work(self, request):\n"
        "        capability = request.contract['requiredCapabilities'][0]['id']\n"
        "        if capability == 'mwp.data.fetch':\n"
        "            rows = ''.join(f'| {order} | {amount} |\\n' for order, amount in ORDERS.items())\n"
        "            return '# Orders\\n\\n| order | amount |\\n| --- | --- |\\n' + rows\n"
        "        if capability == 'mwp.data.sum':\n"
        "            table = request.input('fetch').text()  # verified content of fetch's Artifact\n"
        "            amounts = [int(line.split('|')[2]) for line in table.splitlines()\n"
        "                       if line.startswith('| A-')]\n"
        "            computed.append({'attempt': request.attempt, 'orders': len(amounts),\n"
        "                             'total': sum(amounts)})\n"
        "            return Result(\n"
        "                [Deliverable(f'# Total\\n\\n{sum(amounts)} over {len(amounts)} orders\\n')],\n"
        "                evidence=[Evidence(criteria=request.criteria,\n"
        "                                   method=f'summed the {len(amounts)} rows of the fetched table',\n"
        "                                   details={'orders': len(amounts), 'total': sum(amounts)})],\n"
        "            )\n"
        "        return super().work(request)\n"
        "\n"
        "\n"
        "class Bob(WorkerPolicy):\n"
        "    \"\"\"Sums, but declines report writing.\"\"\"\n"
        "\n"
        "    def admit(self, view, item, now_us):\n"
        "        if item.contract['requiredCapabilities'][0]['id'] == 'mwp.data.report':\n"
        "            return Admission.decline('capability', 'I do not write reports')\n"
        "        return super().admit(view, item, now_us)"
    ),
    md(
        "## A Coordinator strategy of your own\n\n"
        "The built-in Coordinator offers each WorkItem to the eligible Worker expected to "
        "deliver a verified result soonest (the `rank` hook receives them in that order; ties "
        "keep the roster's order, so `ana` first). Suppose you want to share the work out "
        "instead: offer each WorkItem to the Worker who has delivered the fewest verified "
        "WorkItems so far. That is one override of `rank`."
    ),
    code(
        "class LeastDone(CoordinatorPolicy):\n"
        "    \"\"\"Offer to the Worker with the fewest verified WorkItems so far.\"\"\"\n"
        "\n"
        "    def rank(self, view, item, candidates, now_us):\n"
        "        done = {}\n"
        "        for other in view.state.work_items.values():\n"
        "            if other.owner and str(other.state) == 'verified':\n"
        "                agent = other.owner['agentId']\n"
        "                done[agent] = done.get(agent, 0) + 1\n"
        "        return sorted(candidates, key=lambda c: done.get(c.agent_id, 0))  # stable: ties keep order\n"
        "\n"
        "\n"
        "def sandbox(name, coordinator=None):\n"
        "    \"\"\"A fresh sandbox of the scenario, with our Workers and, if given, our Coordinator.\"\"\"\n"
        "    policies = {'ana': Ana, 'bob': Bob}\n"
        "    if coordinator is not None:\n"
        "        policies['coordinator'] = coordinator\n"
        "    return Sandbox(Path(tempfile.mkdtemp()) / name, scenario, policies=policies)"
    ),
    md(
        "## Step by step\n\n"
        "The **Stepper** performs one agent action per **next** (**step mode**: a virtual "
        "clock, deterministic for the seed). The cell below steps until `sum` changes hands: "
        "your strategy offered it to `bob` (nobody had verified anything for him yet, `ana` had "
        "`fetch`); he accepted, started it, and then paused. He no longer renewed his "
        "**Execution Lease**, so it expired, and the Coordinator offered `sum` again under a "
        "new **Ownership Epoch** (the old owner is fenced: anything he sends under the old "
        "epoch is refused); "
        "`ana` took it. Click through the history to see each of those steps."
    ),
    code(
        "from mwp_local.notebook.graphs import MissionGraph, ProvenanceGraph\n"
        "from mwp_local.notebook.widgets import Stepper\n"
        "\n"
        "sb = sandbox('stepped', coordinator=LeastDone)\n"
        "SUM = 'urn:mwp-local:work:totals:sum'\n"
        "stepper = Stepper(sb)\n"
        "while not (SUM in sb.log.state.work_items and sb.log.state.work_items[SUM].ownership_epoch >= 2):\n"
        "    stepper.next()\n"
        "stepper"
    ),
    md("`sum` now, as the log leaves it: owned by `ana` under Ownership Epoch 2."),
    code("sb.log.state.work_items[SUM]"),
    md(
        "Every transition of §10.2 so far, straight from the log (`work_item_transitions`, "
        "[docs/sql.md](../docs/sql.md)): `sum` went `open` → `offered` → `queued` → `active` "
        "(bob's), back to `offered` when his lease expired, and `queued` again (ana's)."
    ),
    code(
        "%%mwp_sql sb\n"
        "SELECT sequence, replace(work_item_id, 'urn:mwp-local:work:totals:', '') AS work_item,\n"
        "       kind, from_state, to_state, replace(actor_id, 'urn:missionweaveprotocol:', '') AS actor\n"
        "FROM work_item_transitions ORDER BY position"
    ),
    md(
        "## The Mission's DAG\n\n"
        "The WorkItems and their dependencies, coloured by state; it follows the Stepper (press "
        "**next** above and it redraws). Click a WorkItem to see its record."
    ),
    code("MissionGraph(sb, stepper=stepper)"),
    md(
        "## Run to the end\n\n"
        "`bob` declines the report (his `admit`), so it goes to `ana`; the MissionOwner "
        "approves. What `ana`'s function computed (on the second attempt at `sum`, the "
        "first was `bob`'s), and `sum`'s deliverable read back as the MissionOwner reads it, "
        "its content checked against its hash (`sb.deliverables('sum')`):"
    ),
    code("summary = stepper.run()\n"
         "print(computed)\n"
         "print(sb.deliverables('sum')[0].text())\n"
         "summary"),
    md(
        "The provenance graph: `sum`'s Artifact is derived from `fetch`'s (dashed), because "
        "`ana`'s function read it. Click the `sum` Artifact: its signed manifest, the Evidence "
        "citing it (your `method` text) and a fresh re-hash of its content."
    ),
    code("ProvenanceGraph(sb)"),
    md(
        "## Two strategies, two logs, one query\n\n"
        "Now the same Mission twice from scratch, once under the built-in Coordinator and once "
        "under `LeastDone`: two sandboxes, two DuckDB logs. Closing a sandbox lets another "
        "connection open its log; DuckDB `ATTACH`es both, read-only, and one query compares "
        "them through the views every log carries (`events`, `offers`)."
    ),
    code(
        "import duckdb\n"
        "\n"
        "logs = {}\n"
        "for name, coordinator in (('builtin', None), ('least_done', LeastDone)):\n"
        "    run = sandbox(name, coordinator)\n"
        "    print(name, run.run().missions)\n"
        "    run.close()\n"
        "    logs[name] = run.directory / 'group.duckdb'\n"
        "\n"
        "con = duckdb.connect()\n"
        "for name, path in logs.items():\n"
        "    con.execute(f\"ATTACH '{path}' AS {name} (READ_ONLY)\")"
    ),
    md(
        "Per strategy: the **cycle time** (Mission created to approved), the **declines** "
        "(offers a Worker declined), the **reassignments** (acceptances of a WorkItem after "
        "its first: ownership passed to another epoch)."
    ),
    code(
        "COMPARE = '''\n"
        "WITH events AS (\n"
        "    SELECT 'built-in' AS strategy, kind, occurred_at FROM builtin.events\n"
        "    UNION ALL SELECT 'least-done', kind, occurred_at FROM least_done.events\n"
        "), offers AS (\n"
        "    SELECT 'built-in' AS strategy, work_item_id, status FROM builtin.offers\n"
        "    UNION ALL SELECT 'least-done', work_item_id, status FROM least_done.offers\n"
        ")\n"
        "SELECT strategy,\n"
        "       max(occurred_at) FILTER (WHERE kind = 'mission.approved')\n"
        "         - min(occurred_at) FILTER (WHERE kind = 'mission.created') AS cycle_time,\n"
        "       declines, reassignments\n"
        "FROM events\n"
        "JOIN (SELECT strategy,\n"
        "             count(*) FILTER (WHERE status = 'declined') AS declines,\n"
        "             count(*) FILTER (WHERE status = 'accepted')\n"
        "               - count(DISTINCT work_item_id) FILTER (WHERE status = 'accepted') AS reassignments\n"
        "      FROM offers GROUP BY strategy) USING (strategy)\n"
        "GROUP BY strategy, declines, reassignments ORDER BY strategy\n"
        "'''\n"
        "comparison = con.sql(COMPARE).to_arrow_table()\n"
        "comparison"
    ),
    code(
        "from mwp_local.notebook import charts\n"
        "\n"
        "charts.comparison(comparison, by='strategy', title='Built-in vs LeastDone')"
    ),
    md(
        "## Why the numbers differ\n\n"
        "Under the built-in strategy `ana` is offered every WorkItem (she ranks first and the "
        "chain never keeps her busy when the next item becomes eligible), so no offer is "
        "declined, nothing changes hands, and `bob`'s pause costs nothing. `LeastDone` offers "
        "`sum` to `bob`, who has done nothing yet: he accepts and starts at 09:21 and pauses "
        "at 09:25; the work waits until his unrenewed Execution Lease has expired, and at "
        "09:31 `sum` is offered again, to `ana` (one reassignment, ten minutes lost: the whole "
        "difference in cycle time). Then `report` goes to `bob` too (still nothing "
        "verified for him), and he declines it (one decline; this costs no simulated time, "
        "the re-offer is immediate). Who was offered what, per strategy, shows it:"
    ),
    code(
        "con.sql('''\n"
        "SELECT 'built-in' AS strategy, replace(work_item_id, 'urn:mwp-local:work:totals:', '') AS work_item,\n"
        "       replace(agent_id, 'urn:missionweaveprotocol:agent:', '') AS worker, status, decline_reason,\n"
        "       offered_at, settled_at FROM builtin.offers\n"
        "UNION ALL\n"
        "SELECT 'least-done', replace(work_item_id, 'urn:mwp-local:work:totals:', ''),\n"
        "       replace(agent_id, 'urn:missionweaveprotocol:agent:', ''), status, decline_reason,\n"
        "       offered_at, settled_at FROM least_done.offers\n"
        "ORDER BY strategy, offered_at, status DESC\n"
        "''').to_arrow_table()"
    ),
    md(
        "## Try it\n\n"
        "* Remove `bob`'s pause (`faults=[]`) and run the comparison again: `bob` delivers "
        "`sum` himself (with the built-in simulated work: `ana`'s function is not his), "
        "`report` is then a tie that `ana` wins, so there is no decline and no reassignment, "
        "and `LeastDone` even finishes a little sooner.\n"
        "* Let `bob` write reports (delete his `admit`): the decline goes, and `bob` writes "
        "the report.\n"
        "* Make `rank` return `[]` for some WorkItem: no Worker is offered it, and the run "
        "stops once nothing has changed state for `stall_after` (`Sandbox(..., "
        "stall_after='2h')`), naming what each WorkItem waits for.\n"
        "* Break a rule on purpose (override `review` to accept a submission without the §13.2 "
        "review): the Authority refuses it, and `sb.sql('SELECT * FROM rejections')` says why.\n\n"
        "The lesson for this notebook is "
        "[tutorials/09_prototype_your_own_mission.md](../tutorials/09_prototype_your_own_mission.md)."
    ),
]
nbwrite.write(Path(__file__).with_name("09_prototype_your_own_mission.ipynb"), cells, "09")
