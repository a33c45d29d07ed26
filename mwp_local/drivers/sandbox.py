"""The Sandbox: one Organization, its Group log, and the agents of a mission file, run either
one action at a time on a virtual clock (``mode="step"``) or in real threads (``"threads"``).

Step mode is deterministic: time is virtual, keys derive from the seed, Ed25519 signatures are
deterministic, and a seeded generator picks which agent acts when several want to; the same seed
gives a byte-identical log. Each step performs one agent action and reports the Command, its
Events or its rejection (code, explanation, rule), and how the affected WorkItem or Mission
changed.

Each Worker keeps its per-Group inboxes, Cursors and work queues in its own file
``DIR/agents/<name>.duckdb`` (or in memory with ``worker_files=False``). Between actions the
Sandbox serves the Workers' slots: it obtains each capability token a slot asks for from the
Group's Authorization Service and performs the slots' external operations on a simulated
external system (``self.external``); neither counts as a step. ``restart_agent`` replaces a
Worker's runtime by one rebuilt from its file, or by replay of the Group log if the file is gone,
and has the control plane open a new Session for it (§6.3, §11.3).

Durability: ``step()`` returns once its action is durable; ``run()`` and ``write_behind()``
acknowledge first and write the log in batches; Workers' files are never durable ahead of the
log, Artifact blobs never behind it. What is on disk when: ``docs/durability.md``.

With a ``[delivery]`` table every committed Event reaches the agents through the delivery bus in
both modes (``delivery.driver.BusDriver``): step mode runs its rounds between actions, threads
mode has each agent's thread run its own session's rounds (``sim.threads``); Group-service
outages, offline buffering and reconciliation behave alike in both.
"""

from __future__ import annotations

import difflib
import json
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..agents.base import Policy
from ..agents.cast import cast_policies, wrap_worker
from ..agents.coordinator.core import CoordinatorPolicy
from ..agents.hooks import HOOKS, hook_names, required_hooks
from ..agents.naming import mission_id, short
from ..agents.owner import MissionOwnerPolicy
from ..agents.reviewer import ReviewerPolicy
from ..agents.runtime import AgentRuntime
from ..agents.scheduler.core import Scheduler
from ..agents.specs import AgentSpec, MissionFile
from ..agents.worker.core import WorkerPolicy
from ..agents.worker.execution import WorkFunction
from ..agents.worker.work import InputArtifact, read_artifact_as
from ..artifacts.context_packages import gate_cited_events
from ..artifacts.manifests import GatedContent
from ..authority import Accepted, AuthorityConfig, AuthorityState
from ..authority.tokens import CapabilityToken
from ..delivery.audience import DirectFeed, visible_history
from ..protocol.errors import ProtocolError
from ..protocol.ids import derived_uuid, sandbox_organization_id
from ..protocol.jsontext import parse_strict
from ..protocol.tables import MissionState
from ..protocol.timestamps import format_utc
from ..store.agent_store import DuckDBLocalStore, LocalStore, MemoryLocalStore, agent_file
from ..store.blobs import BlobStore
from ..store.duckdb_log import DuckDBLogStore
from ..store.group_log import GroupLog
from ..store.sandbox_dir import init_directory
from ..store.views import sql as run_sql
from .bus import BusDriver
from .cited import CommittedEvents
from .clock import VirtualClock, timestamp
from .external import ExternalSystem, token_check_for
from .mission_file import duration_seconds
from .mission_file import load as load_mission_file
from .mission_keys import suggestion
from .progress import Progress, Stall, Wait, refusals, stall_reason, waits
from .reports import RestartReport as RestartReport
from .reports import RunSummary as RunSummary
from .reports import StepReport as StepReport
from .scenario import Scenario
from .step import StepDriver

_TERMINAL = (MissionState.APPROVED, MissionState.CANCELLED, MissionState.FAILED)


class Sandbox:
    """A mission file running against a real Group log in ``directory``.

    ``worker_options`` maps a Worker's name to ``WorkerPolicy`` fields (``queue_capacity``,
    ``eligibility``, ``cost``, ``setup_us``, ...) and optionally ``scheduler_config``; they
    survive ``restart_agent``.
    ``work_functions`` maps a capability ID to a function that really does the work of the
    WorkItems requiring it (``WorkRequest`` → the deliverable's bytes), in place of the
    simulated deliverable; see ``agents.worker_execution.WorkFunction``.
    ``policies`` maps an Agent's or MissionOwner's name to a subclass of the built-in policy
    its part runs (``MissionOwnerPolicy`` for a human owner, ``CoordinatorPolicy`` for a
    Coordinator, ``WorkerPolicy`` for any other Agent, or ``ReviewerPolicy`` for that Agent's
    reviews) whose hooks (``agents.hooks``) make one's own decisions; it is built with the
    built-in's arguments and meets the same Authority. A name that is no Principal of the
    mission file, or a class the driver cannot run for that part, is a ``TypeError`` at once
    naming what it lacks (never a silently idle agent).
    ``sql_external_access`` lets ``sql()`` read files outside the directory (off by default:
    ``store.sql_access``).
    """

    def __init__(
        self,
        directory: Path | str,
        mission: MissionFile | Scenario | Path | str,
        *,
        seed: int | None = None,
        mode: str = "step",
        config: AuthorityConfig | None = None,
        worker_files: bool = True,
        worker_options: Mapping[str, Mapping[str, Any]] | None = None,
        work_functions: Mapping[str, WorkFunction] | None = None,
        policies: Mapping[str, type[Policy]] | None = None,
        sql_external_access: bool = False,
        stall_after: str | int | None = "12h",
    ) -> None:
        if mode not in ("step", "threads"):
            raise ValueError("mode is 'step' or 'threads'")
        self.directory = Path(directory)
        self.worker_files = worker_files
        self.worker_options = {k: dict(v) for k, v in (worker_options or {}).items()}
        self.work_functions = dict(work_functions or {})
        self._memory_stores: dict[str, MemoryLocalStore] = {}
        self._restarts: dict[str, int] = {}
        if isinstance(mission, Scenario):
            mission = mission.check()
        self.spec = mission if isinstance(mission, MissionFile) else load_mission_file(mission)
        self.seed = self.spec.seed if seed is None else seed
        self.policies = self._checked_policies(policies or {})
        self.mode = mode
        self.clock = VirtualClock(self.spec.start_us)
        #: A run stops when no WorkItem or Mission has changed state for this long (virtual
        #: µs; None: never) and says what each unfinished WorkItem waits for (``stall``).
        self.stall_after_us = (
            None if stall_after is None else duration_seconds(stall_after, "stall_after") * 10**6
        )
        self.progress = Progress(last_change_us=self.spec.start_us)
        #: Why the last step or run stopped before every Mission finished (None otherwise).
        self.stall: Stall | None = None
        self.rng = random.Random(self.seed)
        #: The Organization ID, from the seed and the mission (its name and content hash) unless
        #: the file names one: the scope of every identifier the run derives, so two sandboxes of
        #: different missions or seeds share no Event, offer or frame ID (§2, §16).
        self.organization_id = self.spec.organization or sandbox_organization_id(
            self.seed, self.spec.name, self.spec.content_hash
        )
        agents = {
            a.name: {"capabilities": list(a.capabilities), "max_concurrency": a.max_concurrency}
            for a in self.spec.agents
        }
        self.log: GroupLog = init_directory(
            self.directory,
            seed=self.seed,
            now=timestamp(self.spec.start_us),
            agents=agents,
            humans=self.spec.humans,
            sql_external_access=sql_external_access,
            organization_id=self.organization_id,
        )
        if config is not None:
            self.log.authority.config = config
        #: The sandbox's Artifact content: ``_store_blobs`` puts Workers' deliverables in (inside
        #: write-behind their fsyncs wait for the log write that makes the Commands naming them
        #: durable) and the Coordinators read them to review.
        self._blobs = BlobStore(self.directory / "blobs")
        store = self.log.store
        assert isinstance(store, DuckDBLogStore)  # init_directory makes one
        store.before_write = self._blobs.sync
        self.external = ExternalSystem(check=token_check_for(self._check_token))
        #: Each Group's committed Events by ID, for late joiners' fetches (``drivers.cited``).
        self._committed = CommittedEvents()
        self.runtimes: list[AgentRuntime] = self._runtimes()
        #: Without a bus: what each agent was handed (a Group's Events reach its members only).
        self._feed = DirectFeed()
        #: The delivery bus, when the mission file has a ``[delivery]`` table (else Events go
        #: straight from the Group log to every agent).
        self.delivery: BusDriver | None = None
        if self.spec.delivery is not None:
            self.delivery = BusDriver(self.log.org, self.spec.delivery, seed=self.seed)
            for runtime in self.runtimes:
                self.delivery.attach(runtime, self.clock.now_us())
        #: Step mode: one seeded action at a time on the virtual clock.
        self.driver = StepDriver(
            self.log,
            self.runtimes,
            self.clock,
            self.rng,
            finished=self.finished,
            deliver=self.deliver,
            serve=self.serve,
            store_blobs=self._store_blobs,
            delivery=self.delivery,
            horizon=self._horizon,
        )
        self.deliver(self._log_documents())
        self._wall = 0.0
        self._write_behind = False

    # ------------------------------------------------------------------ set-up

    def _runtimes(self) -> list[AgentRuntime]:
        org = self.log.org
        policies = cast_policies(
            self.spec,
            content=self._blobs,
            # each Coordinator reads Artifact content behind the isolation gate
            content_for=lambda name: GatedContent(
                lambda: self.log.state, self._blobs, org.get(name).id
            ),
            make_worker=self._worker_policy,
            seed=self.seed,
            custom=self.policies,
        )
        runtimes = []
        for name, policy in policies.items():
            agent = next((a for a in self.spec.agents if a.name == name), None)
            if agent is not None and self.is_worker(name):
                runtimes.append(self._worker_runtime(agent, policy=policy))
            else:
                member = org.get(name)
                runtimes.append(
                    AgentRuntime(
                        org, member, policy, fetch_context=self._context_fetcher(member.id)
                    )
                )
        return sorted(runtimes, key=lambda r: r.member.id)

    def _checked_policies(self, policies: Mapping[str, type[Policy]]) -> dict[str, type[Policy]]:
        """``policies`` checked against the cast: each a subclass of the built-in policy of
        that Principal's part, so that the driver can serve it."""
        humans = list(self.spec.humans)
        names = [a.name for a in self.spec.agents] + humans
        coordinators = self.spec.coordinator_names()
        for name, kind in policies.items():
            if name not in names:
                close = difflib.get_close_matches(name, names, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise TypeError(
                    f"policies[{name!r}]: no Agent or MissionOwner of the mission file is called "
                    f"{name!r} (its Agents and owners: {', '.join(names)}){hint}"
                )
            parts: tuple[type[Any], ...]
            if name in humans:
                parts, role = (MissionOwnerPolicy,), "owns Missions"
            elif name in coordinators:
                parts, role = (CoordinatorPolicy,), "coordinates"
            else:
                parts, role = (WorkerPolicy, ReviewerPolicy), "works"
            if isinstance(kind, type) and issubclass(kind, parts):
                continue
            missing = required_hooks(kind, HOOKS[parts[0].__name__])
            lacks = (
                f"; it lacks {', '.join(missing)}"
                if missing
                else "; it has the hooks' names but is not a built-in policy the driver serves"
            )
            what = " or ".join(p.__name__ for p in parts)
            raise TypeError(
                f"policies[{name!r}] is {kind!r}: {name} {role}, so the Sandbox runs a "
                f"subclass of {what} for it{lacks}. Pass a class that subclasses "
                f"{parts[0].__name__} and overrides the hooks you change "
                f"({', '.join(hook_names(HOOKS[parts[0].__name__]))}); anything else would "
                "leave it unserved"
            )
        return dict(policies)

    def is_worker(self, name: str) -> bool:
        """Whether ``name`` is an Agent of the mission file that works rather than coordinates
        (the Workers keep local files and can be restarted)."""
        return any(a.name == name for a in self.spec.agents) and (
            name not in self.spec.coordinator_names()
        )

    def _worker_policy(self, agent: AgentSpec, incarnation: int = 0) -> WorkerPolicy:
        """A fresh Worker policy for ``agent`` (its generator seeded per incarnation)."""
        durations = {
            f"urn:mwp-local:work:{m.id}:{w.id}": w.duration_s
            for m in self.spec.missions
            for w in m.work
        }
        options = dict(self.worker_options.get(agent.name, {}))
        options.setdefault("work_functions", self.work_functions)
        options.setdefault("content", self._blobs)
        config = options.pop("scheduler_config", None)
        if config is not None:
            options["scheduler"] = Scheduler(config)
        suffix = f":restart:{incarnation}" if incarnation else ""
        chosen = self.policies.get(agent.name, WorkerPolicy)
        # a ReviewerPolicy subclass reviews for the built-in Worker (``_checked_policies``)
        kind = chosen if issubclass(chosen, WorkerPolicy) else WorkerPolicy
        return kind(
            capabilities=dict(agent.capabilities),
            max_concurrency=agent.max_concurrency,
            behaviour=agent.behaviour,
            rng=random.Random(f"{self.seed}:{agent.name}{suffix}"),
            durations=durations,
            **options,
        )

    def _worker_runtime(
        self, agent: AgentSpec, incarnation: int = 0, *, policy: Policy | None = None
    ) -> AgentRuntime:
        """A Worker's runtime on its local store (opened, so rebuilt from what it holds); its
        policy is the Worker as the mission file casts it (able to review, with its faults)."""
        local: LocalStore
        if self.worker_files:
            local = DuckDBLocalStore(agent_file(self.directory, agent.name))
        else:
            local = self._memory_stores.setdefault(agent.name, MemoryLocalStore())
        org = self.log.org
        if policy is None:
            chosen = self.policies.get(agent.name)
            policy = wrap_worker(
                self.spec,
                agent,
                self._worker_policy(agent, incarnation),
                seed=self.seed,
                reviewer=chosen
                if chosen is not None and issubclass(chosen, ReviewerPolicy)
                else ReviewerPolicy,
            )
        return AgentRuntime(
            org,
            org.get(agent.name),
            policy,
            local=local,
            incarnation=incarnation,
            flush_before_acting=False,  # the Sandbox flushes (``flush``), the log first
            # a file is never durable ahead of the log; memory is never durable at all
            durable_first=self.log.flush if self.worker_files else None,
            fetch_context=self._context_fetcher(org.get(agent.name).id),
        )

    def _context_fetcher(self, member_id: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
        """How ``member_id`` fetches the Events a Context Package cites: through the isolation
        gate (``gate_cited_events``) over the Authority's state, read under its lock, and the
        Group log, read before it (a late joiner seeds its replica with them)."""

        def fetch(package: dict[str, Any]) -> list[dict[str, Any]]:
            return self._fetch_indexed(member_id, package)

        return fetch

    def _fetch_plain(self, member_id: str, package: dict[str, Any]) -> list[dict[str, Any]]:
        """The gate over every Event of the package's Group as the log holds it."""
        events = [json.loads(r.document) for r in self.log.store.events(package["groupId"])]
        return self.log.read(lambda state: gate_cited_events(state, events, package, member_id))

    def _fetch_indexed(self, member_id: str, package: dict[str, Any]) -> list[dict[str, Any]]:
        """``_fetch_plain``, reading only the Events the gate looks at (``drivers.cited``)."""
        group = package["groupId"]
        committed = self._committed
        if not committed.holds(package):
            committed.note_records(self.log.store.events(group, committed.top(group)))

        def gate(state: AuthorityState) -> list[dict[str, Any]] | None:
            selected = committed.select(state, package)
            if selected is None:
                return None
            return gate_cited_events(state, selected, package, member_id)

        found = self.log.read(gate)
        return found if found is not None else self._fetch_plain(member_id, package)

    # ------------------------------------------------------------------ delivery

    def deliver(self, events: Sequence[str | dict[str, Any]]) -> None:
        """Deliver committed Events, each as its canonical JSON text (or as a document):
        Organization Events to every agent, a Group's Events to its members only (from sequence
        1, the granting Event included: ``delivery.audience``); through the delivery bus
        (frames, faults) when there is one, else directly and in order. Each agent folds its
        own copy."""
        self.progress.note(self.log.state, events, self.clock.now_us())
        self._committed.note_texts(events)
        if self.delivery is not None:
            self.delivery.publish(events, self.clock.now_us())
            return
        with self._feed.lock:
            self._feed.publish(events)
            for runtime in self.runtimes:
                runtime.deliver(self._feed.take(runtime.member.id))

    def _check_token(self, token: CapabilityToken, operation: str, now_us: int) -> None:
        self.log.check_token(token, operation, timestamp(now_us))

    def serve(self, runtime: AgentRuntime, now_us: int) -> None:
        """Serve one Worker's slots: hand out the capability tokens they ask for (issued by the
        Group's Authorization Service) and perform their external operations."""
        policy = runtime.policy
        for request in policy.token_requests(now_us):
            try:
                token = self.log.capability_token(
                    runtime.member.id, request.lease_id, timestamp(now_us), list(request.operations)
                )
            except ProtocolError:
                continue  # the lease is gone: the slot will learn it from the Events
            policy.grant_token(request.slot_id, token)
            runtime.changed()
        for call in policy.external_calls(now_us):
            record = self.external.perform(runtime.member.id, call, now_us)
            policy.on_external(call, ok=record.ok, refused=record.outcome == "refused")
            runtime.changed()

    def _store_blobs(self, blobs: dict[str, bytes]) -> None:
        for expected, content in blobs.items():
            ref = self._blobs.put(content, defer_sync=self._write_behind)
            if ref.sha256 != expected:  # a Worker bug, never silently accepted
                raise RuntimeError(f"blob hash mismatch: {expected} != {ref.sha256}")

    # ------------------------------------------------------------------ step mode

    def finished(self) -> bool:
        """Whether every Mission of the mission file has reached a terminal state."""
        state = self.log.state
        return all(
            (m := state.missions.get(mission_id(spec.id))) is not None and m.state in _TERMINAL
            for spec in self.spec.missions
        )

    def step(self) -> StepReport | None:
        """Perform one agent action (advancing virtual time as needed), durably unless inside
        ``write_behind``; None when done."""
        report = self._step()
        if not self._write_behind:
            self.flush()
        return report

    @contextmanager
    def write_behind(self) -> Iterator[None]:
        """Within the block, actions are acknowledged before they are durable and written in
        batches (see the module docstring): what a loop of many ``step()`` calls wants. Leaving
        it writes everything. Nests."""
        if self._write_behind:
            yield
            return
        self._write_behind = True
        try:
            with self.log.write_behind():
                yield
        finally:
            self._write_behind = False
            self.flush()

    def flush(self) -> None:
        """Make everything durable: Artifact blobs, the Group log, then each Worker's local
        file."""
        self._blobs.sync()
        self.log.flush()
        for runtime in self.runtimes:
            runtime.flush()

    def _horizon(self) -> int | None:
        if self.stall_after_us is None:
            return None
        return self.progress.last_change_us + self.stall_after_us

    def _step(self) -> StepReport | None:
        if self.stall is not None:  # reported once; going on starts a new quiet window
            self.stall = None
            self.progress.last_change_us = self.clock.now_us()
        started = time.perf_counter()
        try:
            report = self.driver.step()
        finally:
            self._wall += time.perf_counter() - started
        if report is None and not self.finished():
            self.stall = self._stalled(self.driver.stopped or "idle")
        return report

    def _stalled(self, kind: str) -> Stall:
        now = self.clock.now_us()
        return Stall(
            reason=stall_reason(
                kind, quiet_us=now - self.progress.last_change_us, steps=self.steps
            ),
            at=format_utc(now),
            waits=waits(self.log.state, self.spec, self.runtimes, now, self.progress),
            refusals=refusals(self.log.store.rejections(), self.progress.last_change_us),
        )

    def waits(self) -> tuple[Wait, ...]:
        """What every unfinished WorkItem and Mission waits for, now."""
        return waits(self.log.state, self.spec, self.runtimes, self.clock.now_us(), self.progress)

    def run(
        self,
        *,
        max_steps: int = 100_000,
        until: Callable[[Sandbox], bool] | None = None,
        progress: Callable[[int, StepReport], None] | None = None,
        timeout_s: float = 300.0,
        scale: float = 600.0,
    ) -> RunSummary:
        """Run until every Mission is terminal, ``until`` holds, or ``max_steps`` (step mode) /
        ``timeout_s`` real seconds (threads mode, where ``scale`` simulated seconds pass per
        real second)."""
        if self.mode == "threads":
            return self._run_threads(timeout_s, scale)
        with self.write_behind():
            while True:
                if until is not None and until(self):
                    break
                if self.steps >= max_steps:
                    if not self.finished():
                        self.stall = self._stalled("budget")
                    break
                report = self._step()
                if report is None:
                    break
                if progress is not None:
                    progress(self.steps, report)
        return self.summary()

    def _run_threads(self, timeout_s: float, scale: float) -> RunSummary:
        from .clock import ScaledClock
        from .threads import ThreadedRun

        started = time.perf_counter()
        clock = ScaledClock(start_us=self.clock.now_us(), scale=scale)
        self.stall = None
        self.progress.last_change_us = clock.now_us()
        quiet = False

        def done() -> bool:
            nonlocal quiet
            if self.finished():
                return True
            now = clock.now_us()
            self.log.read(lambda state: self.progress.scan(state, now))
            horizon = self._horizon()
            quiet = horizon is not None and now > horizon
            return quiet

        runner = ThreadedRun(
            self.log,
            self.runtimes,
            clock,
            done,
            self._store_blobs,
            serve=self.serve,
            delivery=self.delivery,
            feed=self._feed,
        )
        try:
            with self.write_behind():
                runner.run(timeout_s)
        finally:
            self.driver.steps += runner.actions
            self.clock.advance_to(clock.now_us())
            self._wall += time.perf_counter() - started
        if not self.finished():
            self.stall = self._stalled("quiet") if quiet else self._stalled("timeout")
        return self.summary()

    def settle_delivery(self) -> None:
        """Let the delivery bus deliver everything committed (no agent acts meanwhile; the
        virtual clock moves on): afterwards every agent has seen every Event."""
        if self.delivery is not None:
            self.clock.advance_to(self.delivery.settle(self.clock.now_us()))

    def stuck_agents(self) -> dict[str, tuple[str, ...]]:
        """Agent name → the Groups it cannot catch up on (every snapshot it was named for
        them failed verification): while any is stuck, the run is not a success."""
        if self.delivery is None:
            return {}
        return {
            c.runtime.name: tuple(sorted(c.stuck))
            for c in self.delivery.clients.values()
            if c.stuck
        }

    @property
    def steps(self) -> int:
        """Agent actions performed so far (both modes)."""
        return self.driver.steps

    @property
    def history(self) -> list[StepReport]:
        """The report of every step taken in step mode."""
        return self.driver.history

    # ------------------------------------------------------------------ reading

    def summary(self) -> RunSummary:
        """Where the run stands."""
        state = self.log.state
        items: dict[str, int] = {}
        for item in state.work_items.values():
            items[str(item.state)] = items.get(str(item.state), 0) + 1
        rejections: dict[str, int] = {}
        for r in self.log.store.rejections():
            rejections[r.code] = rejections.get(r.code, 0) + 1
        return RunSummary(
            steps=self.steps,
            # a run is a success only if every agent could follow it (none stuck behind)
            finished=self.finished() and not self.stuck_agents(),
            missions={m.mission_id: str(m.state) for m in state.missions.values()},
            work_items=items,
            events=self.log.store.event_count(),
            rejections=rejections,
            simulated_seconds=(self.clock.now_us() - self.spec.start_us) / 1e6,
            wall_seconds=self._wall,
            delivery=None if self.delivery is None else self.delivery.summary(),
            stall=self.stall,
            stuck=self.stuck_agents(),
            failed_attempts=tuple(
                (p["workItemId"], int(p.get("attempt", 0)), str(p.get("reason", "failed")))
                for p in (
                    parse_strict(r.document)["payload"]
                    for r in self.log.store.events()
                    if r.kind == "work.failed"
                )
            ),
        )

    def _repr_html_(self) -> str:
        """The Sandbox drawn in a notebook (without ``%load_ext mwp_local.notebook`` too)."""
        from ..render.reprs import sandbox_html

        return sandbox_html(self)

    def sql(self, query: str, params: dict[str, Any] | None = None) -> Any:
        """Query the log's views (read-only); returns a pyarrow Table."""
        return run_sql(self.log.store, query, params)  # type: ignore[arg-type]

    def deliverables(self, work_item: str, mission: str | None = None) -> tuple[InputArtifact, ...]:
        """The verified content of what WorkItem ``work_item`` submitted last (its short ID, as
        in the mission file, or its full ID), read as the Mission's owner reads it: through
        the isolation gate, each blob checked against its content hash.

        ``mission`` names the Mission when several have a WorkItem of that name.
        """
        state = self.log.state
        if work_item in state.work_items:
            item = state.work_items[work_item]
        else:
            named = [
                w
                for w in state.work_items.values()
                if short(w.work_item_id) == work_item
                and (mission is None or w.mission_id in (mission, mission_id(mission)))
            ]
            if len(named) != 1:
                known = sorted({short(w) for w in state.work_items})
                raise KeyError(
                    f"no WorkItem {work_item!r}{suggestion(work_item, known)}"
                    if not named
                    else f"several Missions have a WorkItem {work_item!r}: pass mission="
                )
            item = named[0]
        owner = state.missions[item.mission_id].owner_id
        return tuple(
            read_artifact_as(state, owner, item.work_item_id, h, self._blobs)
            for h in item.submitted_artifacts
        )

    def runtime(self, name: str) -> AgentRuntime:
        """The runtime of the agent or human ``name``."""
        for runtime in self.runtimes:
            if runtime.name == name:
                return runtime
        raise KeyError(name)

    def restart_agent(self, name: str, *, delete_local_file: bool) -> RestartReport:
        """Replace Worker ``name``'s runtime as after a crash, and open a new Session for it.

        The old runtime is dropped without flushing (what it had not committed is lost). The new
        one is rebuilt from its local file, or, if ``delete_local_file``, from nothing; either
        way the Group log then re-delivers every Event (its inbox drops the ones it has), so
        its queues are rebuilt by replay. Then the control plane opens a new Session for the
        Agent, which revokes the old runtime's active Execution Leases and returns those
        WorkItems to ``queued`` before the new runtime starts them under new leases.
        """
        index, old = next((i, r) for i, r in enumerate(self.runtimes) if r.name == name)
        spec = next((a for a in self.spec.agents if a.name == name), None)
        if spec is None or not self.is_worker(name):
            raise ValueError(f"{name} is not a Worker of this mission file")
        before = old.work_queues()
        old.close(flush=False)
        if delete_local_file:
            self._memory_stores.pop(name, None)
            path = agent_file(self.directory, name)
            for leftover in (path, path.with_name(path.name + ".wal")):
                leftover.unlink(missing_ok=True)
        incarnation = self._restarts[name] = self._restarts.get(name, 0) + 1
        new = self._worker_runtime(spec, incarnation)
        restored = new.restored
        if self.delivery is None:
            with self._feed.lock:
                history = self._feed.restart(new.member.id)
        else:
            history = visible_history(new.member.id, self._log_documents())
        redelivered = new.deliver(history)
        rebuilt = new.work_queues()
        new.flush()
        self.runtimes[index] = new
        now = self.clock.now_us()
        at = format_utc(now)
        org = self.log.org
        command = org.command(
            org.control_plane,
            "ext.missionweaveprotocol.identity.session_open",
            {"agentId": new.member.id},
            issued_at=at,
            action_id=derived_uuid(
                new.member.organization_id, "restart", new.member.id, str(incarnation), at
            ),
        )
        outcome = self.log.submit(command, timestamp(now))
        if not isinstance(outcome, Accepted):
            raise RuntimeError(f"the control plane could not open a Session: {outcome!r}")
        events = outcome.event_documents
        if self.delivery is not None:
            self.delivery.attach(new, now)  # a new session, subscribed after its Cursors
        self.deliver(_texts(outcome))
        return RestartReport(
            agent=name,
            deleted_local_file=delete_local_file,
            restored_events=restored.events if restored else 0,
            redelivered_events=redelivered,
            stored_queues_matched=restored.matches if restored else True,
            queues_before=before,
            queues_rebuilt=rebuilt,
            session_epoch=int(events[0]["payload"]["sessionEpoch"]),
            revoked_leases=tuple(
                e["payload"]["leaseId"]
                for e in events
                if e["kind"] == "ext.missionweaveprotocol.core.work_execution_lease_revoked"
            ),
        )

    def _log_documents(self) -> list[str]:
        texts = getattr(self.log.store, "event_documents", None)
        if callable(texts):
            return list(texts())
        return [e.document for e in self.log.store.events()]

    def crash(self) -> int:
        """Stop as ``kill -9`` would (for crash trials and tests): write nothing more, neither
        the batches staged under write-behind nor what a Worker had not committed to its file;
        the directory keeps what was durable (blobs already in it stay, as the operating system
        keeps them after a killed process). Returns how many staged Commands were dropped. The
        Sandbox is unusable afterwards; leaving a ``write_behind`` block then writes nothing."""
        for runtime in self.runtimes:
            runtime.close(flush=False)
        store = self.log.store
        assert isinstance(store, DuckDBLogStore)  # init_directory makes one
        return store.abandon()

    def close(self) -> None:
        """Flush blobs and the log, then flush and close every agent's local store, then the
        log (which writes a state snapshot when one is due: ``store.state_snapshot``)."""
        self._blobs.sync()
        self.log.flush()
        for runtime in self.runtimes:
            runtime.close()
        self.log.close()


def _texts(outcome: Accepted) -> list[str]:
    """The canonical JSON text of each Event an accepted Command appended (what is delivered)."""
    return [record.document for record in outcome.events]
