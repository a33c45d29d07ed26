"""Writes 01_quickstart.ipynb (kept as code so the notebook's source is reviewable)."""

from pathlib import Path

import nbformat as nbf

import nbwrite

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
    md(
        "# Quickstart: your first stepped transitions\n\n"
        "A **Mission** is run by agents that cooperate only through signed **Commands**. The "
        "**Group Authority** checks each Command (signature, epochs, leases, revision, the state "
        "tables) and either appends signed **Events** to the Mission's **Group** log, or refuses "
        "it with a section-19 error code and changes nothing.\n\n"
        "Here a small mission file (`sample_missions/learn.toml`: one human **MissionOwner**, one "
        "**Coordinator**, two **Workers**, three **WorkItems**) runs in **step mode**: one agent "
        "action per step, on a virtual clock, deterministic for a given seed. Every word in bold "
        "that you do not know is in the [glossary](../tutorials/glossary.md) (linked where it is "
        "first used)."
    ),
    code("%load_ext mwp_local.notebook"),
    code(
        "import tempfile\n"
        "from pathlib import Path\n"
        "from mwp_local.drivers.sandbox import Sandbox\n"
        "from mwp_local.notebook.widgets import Stepper, TimeTravel\n"
        "from mwp_local.notebook.graphs import MissionGraph, ProvenanceGraph\n"
        "from mwp_local.notebook.sql_console import SqlConsole\n\n"
        "ROOT = Path.cwd() if (Path.cwd() / 'sample_missions').exists() else Path.cwd().parent\n"
        "mission_file = ROOT / 'sample_missions' / 'learn.toml'\n"
        "sb = Sandbox(Path(tempfile.mkdtemp()) / 'sandbox', mission_file, seed=1)\n"
        "sb"
    ),
    md(
        "## One step\n\nThe MissionOwner creates the Mission: one Group, a Coordinator lease, "
        "two Memberships. The step shows who acted, **why**, the Command, the Events the "
        "Authority appended, and the Mission before and after (it did not exist before)."
    ),
    code("report = sb.step()\nreport"),
    md(
        "## The Stepper\n\nPress **next** to perform one agent action at a time. The "
        "**history** lists every step since the start (step 1 above included): its Command, "
        "its outcome and why the agent took it. Click a row, or press **◀ back** and "
        "**forward ▶**, to see a step again: it is redrawn from the log as it was then. Each "
        "step shows its Events (or its refusal) and a before/after of the one WorkItem or "
        "Mission the Command names (a WorkItem's first step, `work.authorize`, creates it: "
        "before, it did not exist). The state machine below the step is drawn from the §10.2 "
        "table itself; the WorkItem's state is outlined and the transitions allowed from it "
        "are red. The progress bar counts the WorkItems done."
    ),
    code("stepper = Stepper(sb)\nstepper"),
    md(
        "The Mission's WorkItems, coloured by state, follow the Stepper: the DAG is redrawn at "
        "the step the Stepper shows (an arrow runs from a WorkItem to the one that waits for "
        "it). Before the Coordinator authorizes any WorkItem it says so. Click a WorkItem to "
        "see its record."
    ),
    code("MissionGraph(sb, stepper=stepper)"),
    md(
        "## A refused Command\n\nA delayed Command that cites an **old Execution Lease ID** is "
        "refused even when its Ownership Epoch is current (**MWP-WRK-013**). This cell first "
        "lets the agents act until a Worker is executing a WorkItem under an Execution Lease "
        "(those steps appear in the Stepper's history above), then the Worker that owns the "
        "active WorkItem sends a lease renewal with a made-up old Lease ID: the Authority "
        "answers `WORK_LEASE_EXPIRED`, explains why, and changes nothing."
    ),
    code(
        "from mwp_local.client import Client\n"
        "from mwp_local.drivers.clock import timestamp\n"
        "while not any(str(i.state) == 'active' for i in sb.log.state.work_items.values()):\n"
        "    stepper.next()\n"
        "item = next(i for i in sb.log.state.work_items.values() if str(i.state) == 'active')\n"
        "worker = Client(sb.log, sb.log.org.get(item.owner['agentId']))\n"
        "before = sb.log.store.event_count()\n"
        "outcome = worker.send('ext.missionweaveprotocol.core.work_execution_lease_renew',\n"
        "    {'workItemId': item.work_item_id, 'ownershipEpoch': item.ownership_epoch,\n"
        "     'leaseId': 'urn:uuid:00000000-0000-4000-8000-0000000000ff'},\n"
        "    now=timestamp(sb.clock.now_us()), group=item.group_id)\n"
        "assert not outcome.ok and sb.log.store.event_count() == before\n"
        "outcome  # drawn by %load_ext mwp_local.notebook: code, explanation, rule"
    ),
    md("The WorkItem is exactly as it was (`%load_ext mwp_local.notebook` draws records, Events "
       "and rejections as HTML):"),
    code("sb.log.state.work_items[item.work_item_id]"),
    md(
        "## Ask the log\n\nThe log is the truth, and it is SQL. The refusal above appended no "
        "Event, but the log keeps it in the `rejections` view. The console below reads `sb`, the "
        "sandbox you stepped: the `WORK_LEASE_EXPIRED` you caused is there. Type your own "
        "query and press **run**; parameters are bound as `$name`, never pasted into the SQL."
    ),
    code(
        "SqlConsole(sb, 'SELECT code, kind, explanation, rule FROM rejections')"
    ),
    md(
        "## Run to the end\n\nThe Stepper above stays where you left it: press **next** again "
        "whenever you like. To see a whole run, a second Sandbox with the same mission file runs "
        "to the end (its progress bar fills as it goes, and its history keeps every step); the "
        "agents finish the Mission and the human approves it."
    ),
    code(
        "done = Sandbox(Path(tempfile.mkdtemp()) / 'sandbox', mission_file, seed=1)\n"
        "runner = Stepper(done)\n"
        "summary = runner.run()\n"
        "runner"
    ),
    md(
        "## What came out: the provenance graph\n\nEvery **Artifact** is named by its `sha256:` "
        "content hash (its box shows the media type and the start of the hash; hover for all "
        "of it); its content lives beside the log. Arrows run the way work flows: the Mission "
        "plans WorkItems, a WorkItem produced an Artifact, an Artifact was derived into another "
        "(dashed). Drag to pan, use −/+ to zoom, filter by Mission, Group or state. **Click a "
        "node**: an Artifact shows its signed manifest, the **Evidence** that cites it, and a "
        "fresh re-hash of its content (MWP-WRK-023, MWP-WRK-024)."
    ),
    code("provenance = ProvenanceGraph(done)\nprovenance"),
    md(
        "The `%%mwp_sql` cell magic queries from a cell, binding `$name` from your variables "
        "(`%%mwp_sql?` shows its help):"
    ),
    code("item_id = 'urn:mwp-local:work:export-button:implementation'"),
    code(
        "%%mwp_sql done -o transitions\n"
        "SELECT sequence, kind, from_state, to_state, occurred_at\n"
        "FROM work_item_transitions WHERE work_item_id = $item_id ORDER BY position"
    ),
    md(
        "## Travel in time\n\nDrag the slider (or press ◀ ▶): the Event at that sequence of "
        "the Group, and every WorkItem's state, owner, Ownership Epoch and lease just after it, "
        "rebuilt from the log by replay."
    ),
    code("TimeTravel(done, 'urn:mwp-local:group:export-button')"),
]
nbwrite.write(Path(__file__).with_name("01_quickstart.ipynb"), cells, "01")
