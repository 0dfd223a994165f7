"""Named errors. The CLI turns each into one line on stderr and exit code 2."""

from __future__ import annotations

import signal
import unicodedata


def control_characters(text: str) -> bool:
    """Whether ``text`` holds a control character (C0, DEL, C1, or Unicode format/bidi
    controls): such a name or id would move the cursor or hide text in a terminal, break
    XML, or read differently than it is."""
    if text.isprintable():  # the quick answer: no Cc or Cf character is printable
        return False
    return any(unicodedata.category(ch) in ("Cc", "Cf") for ch in text)


class EvalcoreError(Exception):
    """Base class: a problem the user can fix; message names the file, line or field."""


class InputError(EvalcoreError):
    """An input file (corpus, questions, ood) is missing or malformed."""


class ConfigError(EvalcoreError):
    """An unknown strategy, retriever, metric or option value."""


class ClaimError(ConfigError):
    """An option outside its range, or a set the claim cannot be made on (no off-topic or no
    answerable query); the message names the option or the set."""


class EmptyClaimSet(ClaimError):
    """A claim cannot be made: the run has no off-topic query, or no answerable one."""


class ModelError(EvalcoreError):
    """The embedding or cross-encoder model cannot be loaded, or vectors of two models were mixed."""


class NotAModelFolder(ModelError):
    """A model folder holds no sentence-transformers model (no config.json, no modules.json)."""


class ClusterError(EvalcoreError):
    """The Ray cluster of a ``--ray`` run lost what the run needed (an actor's worker process,
    a node, an object): the run ends failed with this reason and stores none of its results."""


class StoreError(EvalcoreError):
    """The run store cannot be opened, or a run id is unknown or not comparable."""


class StoreBusy(StoreError):
    """Another process held the run store's lock for longer than the wait allowed: nothing was
    read or written; the same operation may succeed once it lets go."""


class NotRunning(StoreError):
    """A run's results cannot be written: the run is no longer running (the message names it)."""


class QueueFull(EvalcoreError):
    """The job queue holds as many jobs as its cap allows (per key or in all): nothing was queued.
    ``retry_after``: seconds after which a place is likely free (about one job's duration)."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RunInterrupted(EvalcoreError):
    """A run was cancelled or interrupted before it completed."""


class Cancelled(RunInterrupted):
    """A run (or a replay) was cancelled by the user: it ends ``cancelled``, not ``failed``."""


class NotComparable(EvalcoreError):
    """Two runs cannot be paired: they did not answer the same queries."""


class Interrupted(RunInterrupted):
    """A run or command was stopped by SIGTERM or SIGINT; ``signum`` says which, ``reason``
    what is recorded ("interrupted by SIGTERM during E: embedding")."""

    def __init__(self, signum: int, where: str = "", note: str = "") -> None:
        self.signum = signum
        self.reason = f"interrupted by {signal.Signals(signum).name}{' ' + where if where else ''}"
        super().__init__(self.reason + (f"; {note}" if note else ""))


class UnknownDecision(StoreError):
    """A deployment names a decision the store does not hold (never saved, deleted, or saved in
    another store), or one whose run is no longer complete."""


class UnknownDeployment(StoreError):
    """No deployment of that name in the store."""


class ServiceError(EvalcoreError):
    """The evaluation service (``evalcore.Client``) answered with a problem: ``status`` is its
    HTTP status, the message its title and detail (never the API key)."""

    def __init__(self, message: str, status: int | None = None, problem: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.problem = problem or {}


class ServiceUnavailable(ServiceError):
    """The evaluation service could not be reached (refused, timed out, or answered 5xx), or
    answered what the API never answers (not JSON, another shape, too large, too slow, a redirect
    to another origin)."""


class ServiceUnknownDeployment(ServiceError, UnknownDeployment):
    """The service has no deployment of that name (404): a ServiceError from the client, and an
    UnknownDeployment as the local store's."""
