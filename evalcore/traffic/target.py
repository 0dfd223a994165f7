"""The run and configuration traffic is replayed against, named ``RUN`` or ``RUN:STRATEGY/RETRIEVER``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.configurations import read
from evalcore.errors import ConfigError
from evalcore.read.decisions import latest_decision
from evalcore.read.refs import parse_ref, resolve_run
from evalcore.records import Configuration

if TYPE_CHECKING:
    from evalcore.configurations import ConfigInfo
    from evalcore.store import Store


@dataclass(frozen=True, slots=True)
class Target:
    """The run and configuration traffic is replayed against."""

    run_id: str
    configuration: Configuration
    info: ConfigInfo
    top_n: int

    @property
    def key(self) -> list[str]:
        return [self.run_id, self.configuration.strategy, self.configuration.retriever]


def resolve_target(store: Store, reference: str) -> Target:
    """``RUN`` or ``RUN:STRATEGY/RETRIEVER`` -> the run's configuration; ``RUN`` alone names
    the configuration of the run's latest saved decision, or its only one. ConfigError naming
    the choices otherwise."""
    ref = parse_ref(reference)
    run = resolve_run(store, ref.run)
    run_id = run.run_id
    configs = read(store, run_id)
    labels = sorted(c.label for c in configs)
    if ref.configuration is not None:
        configuration = Configuration.parse(ref.configuration)
    else:
        decision = latest_decision(store, run_id)
        if decision is not None:
            configuration = decision.configuration
        elif len(configs) == 1:
            configuration = next(iter(configs))
        else:
            raise ConfigError(
                f"run {run_id} has {len(configs)} configurations and no saved decision; name one as "
                f"RUN:STRATEGY/RETRIEVER ({', '.join(labels[:8])}{' ...' if len(labels) > 8 else ''})"
            )
    found = configs.get(configuration)
    if found is None:
        raise ConfigError(f"run {run_id} has no configuration {configuration.label} (it has {', '.join(labels)})")
    return Target(run_id, configuration, found, int(run.settings.get("top_n", 20)))


def refuse(target: Target) -> None:
    info = target.info
    where = f"run {target.run_id} configuration {target.configuration.label}"
    if info.source == "import":
        raise ConfigError(f"{where} was imported from rankings made elsewhere: it has no retriever to replay")
    if info.source == "python":
        raise ConfigError(f"{where} was made by a Python retriever function, which is not stored: nothing to replay")
