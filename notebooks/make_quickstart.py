"""Writes 01_quickstart.ipynb (kept as code so the notebook's source is reviewable)."""

from pathlib import Path

import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
    md(
        "# Quickstart: your first stepped transitions\n\n"
        "A **Mission** is run by agents that cooperate only through signed **Commands**. The "
        "**Group Authority** checks each Command (signature, epochs, leases, revision, the state "
        "tables) and either appends signed **Events** to the Mission's Group log, or refuses it "
        "with a section-19 error code and changes nothing.\n\n"
        "Here a small mission file (`sample_missions/learn.toml`: one human, one Coordinator, "
        "two Workers, three WorkItems) runs in **step mode**: one agent action per step, on a "
        "virtual clock, deterministic for a given seed."
    ),
    code("%load_ext mwp_local.notebook"),
    code(
        "import tempfile\n"
        "from pathlib import Path\n"
        "from IPython.display import HTML, SVG, display\n"
        "from mwp_local.drivers.sandbox import Sandbox\n"
        "from mwp_local.render.html import step_html, summary_html\n"
        "from mwp_local.render.svg import state_machine_svg\n"
        "from mwp_local.notebook.widgets import Stepper, TimeTravel\n\n"
        "ROOT = Path.cwd() if (Path.cwd() / 'sample_missions').exists() else Path.cwd().parent\n"
        "mission_file = ROOT / 'sample_missions' / 'learn.toml'\n"
        "sb = Sandbox(Path(tempfile.mkdtemp()) / 'sandbox', mission_file, seed=1)\n"
        "sb"
    ),
    md(
        "## One step\n\nThe MissionOwner (a human) creates the Mission: one Group, a Coordinator "
        "lease, two Memberships."
    ),
    code("report = sb.step()\nHTML(step_html(report))"),
    md(
        "## The Stepper\n\nPress **next** to perform one agent action at a time. Each step shows "
        "who acted and why, the Command, and its Events (or its rejection), and how the "
        "affected WorkItem changed. The state machine below is drawn from the §10.2 table "
        "itself; the current state is outlined and the transitions allowed from it are red."
    ),
    code(
        "stepper = Stepper(sb)\n"
        "# step until some WorkItem is being executed under an Execution Lease\n"
        "while not any(str(i.state) == 'active' for i in sb.log.state.work_items.values()):\n"
        "    stepper.next()\n"
        "stepper"
    ),
    md(
        "## A refused Command\n\nA delayed Command that cites an **old Execution Lease ID** is "
        "refused even when its Ownership Epoch is current (**MWP-WRK-013**). Here the "
        "Worker that owns the active WorkItem sends a lease renewal with a made-up old lease "
        "ID: the Authority answers `WORK_LEASE_EXPIRED`, explains why, and changes nothing."
    ),
    code(
        "from mwp_local.client import Client\n"
        "from mwp_local.drivers.clock import timestamp\n"
        "active = [i for i in sb.log.state.work_items.values() if str(i.state) == 'active']\n"
        "item = active[0] if active else next(iter(sb.log.state.work_items.values()))\n"
        "owner = (item.owner or {}).get('agentId', 'urn:missionweaveprotocol:agent:ana')\n"
        "worker = Client(sb.log, sb.log.org.get(owner))\n"
        "before = sb.log.store.event_count()\n"
        "outcome = worker.send('ext.missionweaveprotocol.core.execution_lease_renew',\n"
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
        "## Run to the end\n\nThe Stepper above stays where you left it: press **next** again "
        "whenever you like. To see a whole run, a second Sandbox with the same mission file runs "
        "to the end (its progress bar fills as it goes); the agents finish the Mission and the "
        "human approves it."
    ),
    code(
        "done = Sandbox(Path(tempfile.mkdtemp()) / 'sandbox', mission_file, seed=1)\n"
        "runner = Stepper(done)\n"
        "summary = runner.run()\n"
        "runner"
    ),
    md(
        "## What came out: the provenance graph\n\nEvery Artifact is named by its `sha256:` "
        "content hash; its content lives beside the log. **Click a node**: an Artifact shows its "
        "signed manifest, the Evidence that cites it, and a fresh re-hash of its content "
        "(MWP-WRK-023, MWP-WRK-024)."
    ),
    code(
        "from mwp_local.notebook.graphs import ProvenanceGraph\n"
        "provenance = ProvenanceGraph(done)\n"
        "provenance"
    ),
    md(
        "## Ask the log\n\nThe log is the truth, and it is SQL. Type a query in the console and "
        "press **run**; parameters are bound as `$name`, never pasted into the SQL."
    ),
    code(
        "from mwp_local.notebook.sql_console import SqlConsole\n"
        "SqlConsole(done, \"SELECT sequence, kind, from_state, to_state FROM work_item_transitions\\n\"\n"
        "           \"WHERE work_item_id = $item ORDER BY position\",\n"
        "           params='item=urn:mwp-local:work:export-button:implementation')"
    ),
    md("Or use the `%%mwp_sql` cell magic, which binds `$name` from your variables:"),
    code("item_id = 'urn:mwp-local:work:export-button:implementation'"),
    code(
        "%%mwp_sql done -o transitions\n"
        "SELECT sequence, kind, from_state, to_state, occurred_at\n"
        "FROM work_item_transitions WHERE work_item_id = $item_id ORDER BY position"
    ),
    md(
        "## Travel in time\n\nDrag the slider: every WorkItem's state, owner, Ownership Epoch "
        "and lease at that point of the Group's sequence, rebuilt from the log by replay."
    ),
    code("TimeTravel(done, 'urn:mwp-local:group:export-button')"),
]
for n, cell in enumerate(cells, 1):
    cell["id"] = f"01-{n:03d}"  # stable IDs: regenerating gives a clean diff
nb = nbf.v4.new_notebook(
    cells=cells,
    metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
)
nbf.write(nb, Path(__file__).with_name("01_quickstart.ipynb"))
