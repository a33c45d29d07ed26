"""The simulated agents of the sandbox: Coordinator, Workers (with their Scheduler) and the
MissionOwner, each a sans-IO policy that drivers run in step mode or in threads."""
