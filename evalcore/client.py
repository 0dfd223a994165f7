"""``evalcore.Client``: the evaluation service over HTTP (``/api/v1``), for CI, production and scripts.

Usage::

    import evalcore

    client = evalcore.Client("https://evalcore.example.org", key=os.environ["EVALCORE_API_KEY"])
    live = client.deployment("production")      # cheap: call it on every request
    refuse = live.threshold is not None and best_distance >= live.threshold
    if live.stale: ...                         # the service was unreachable: the last known value

    client.upload_run("run.evalcore.zip")      # as `evalcore load-run`, on the service's store
    report = client.gate("main", "pr-42", min_effect=0.02)   # `gate --format json` + passed

Every method mirrors one resource of the API and returns the library's own records where it
has one (:class:`~evalcore.service.deployments.Deployment`,
:class:`~evalcore.service.deployments.DeploymentHistory`,
:class:`~evalcore.service.ingest.LineResult`, :class:`~evalcore.measures.claim.Claim`), else the
JSON object the CLI's ``--json`` prints. A problem the service answers (RFC 9457
problem+json) is raised as :class:`~evalcore.errors.ServiceError` with its status, title and
detail; a service that cannot be reached is :class:`~evalcore.errors.ServiceUnavailable`.

:meth:`Client.deployment` revalidates its cached value with ``If-None-Match`` at most every
``max_age`` seconds (the service answers 304 while nothing moved); one caller revalidates while
the others get the cached value, and when the service cannot be reached it returns the last
known value with ``stale`` true. It is safe to share one client between threads.

The key is sent only as ``Authorization: Bearer ...``; it never appears in the client's
``repr``, a log line or an exception.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from evalcore.boundary.files import read_user_file
from evalcore.errors import ConfigError, EvalcoreError, ServiceError, ServiceUnavailable, UnknownDeployment
from evalcore.measures.claim import Claim
from evalcore.records import Configuration
from evalcore.service.deployments import Deployment, DeploymentHistory, Move
from evalcore.service.evaluations import QueuedEvaluation
from evalcore.service.ingest import LineResult

PREFIX = "/api/v1"
MAX_LINES = 1000  #: lines of one traffic post (the service's limit)
MAX_BYTES = 5 * 1024 * 1024  #: bytes of one traffic post (the service's limit)
MAX_UPLOAD = 4 << 30  #: bytes of a run file sent (the service states its own limit)
RETRY_UNREACHABLE = 5.0  #: seconds before an unreachable service is tried again (at most max_age)
REVALIDATE_TIMEOUT = 5.0  #: seconds a deployment's revalidation may take before the cached value is served


@dataclass(frozen=True)
class LiveDeployment(Deployment):
    """A deployment as the client last knew it: ``stale`` when the service could not be reached
    at the last revalidation (the value is the last one it answered); ``checked_at`` is when
    the service last confirmed it (``time.time()``)."""

    stale: bool = False
    checked_at: float = 0.0


def _parse_time(value: Any) -> datetime:
    text = str(value)
    return datetime.fromisoformat(text[:-1] if text.endswith("Z") else text)


def deployment_from_json(data: Mapping[str, Any]) -> Deployment:
    """A :class:`Deployment` from its JSON (:meth:`Deployment.to_json`)."""
    return Deployment(
        name=str(data["name"]),
        decision_id=str(data["decision_id"]),
        threshold=float(data["threshold"]),
        run_id=str(data["run_id"]),
        configuration=Configuration.parse(str(data["configuration"])),
        claim=data.get("claim"),
        decided_by=data.get("decided_by"),
        decided_at=_parse_time(data["decided_at"]),
        deployed_by=data.get("deployed_by"),
        deployed_at=_parse_time(data["deployed_at"]),
        version=int(data["version"]),
    )


def history_from_json(data: Mapping[str, Any]) -> DeploymentHistory:
    moves = [
        Move(
            version=int(m["version"]),
            moved_by=m.get("moved_by"),
            moved_at=_parse_time(m["moved_at"]),
            from_decision_id=m.get("from_decision_id"),
            from_threshold=m.get("from_threshold"),
            to_decision_id=str(m["to_decision_id"]),
            to_threshold=float(m["to_threshold"]),
        )
        for m in data.get("moves") or []
    ]
    return DeploymentHistory(deployment_from_json(data), moves)


def claim_from_json(data: Mapping[str, Any]) -> Claim:
    names = {f.name for f in fields(Claim)}
    return Claim(**{k: v for k, v in data.items() if k in names})


def _segment(value: str) -> str:
    return quote(str(value), safe="")


@dataclass
class _Cached:
    value: LiveDeployment | None = None
    etag: str | None = None
    checked: float = float("-inf")  # time.monotonic() of the last look at the service
    busy: bool = False


class Client:
    """The evaluation service at ``url`` (``https://host[/base]``; the API is under
    ``/api/v1``), authenticated by ``key`` (``evk_...``; None for ``/health`` only).
    ``max_age``: seconds :meth:`deployment` serves its cached value before revalidating;
    ``timeout``: seconds for one request (a deployment's revalidation: at most 5)."""

    def __init__(self, url: str, key: str | None, max_age: float = 30, *, timeout: float = 30.0) -> None:
        parts = urlsplit(str(url).strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"--server must be an http:// or https:// URL, got {str(url)[:80]!r}")
        if parts.username or parts.password:
            raise ConfigError("--server: give the key in EVALCORE_API_KEY, not in the URL")
        if parts.query or parts.fragment:
            raise ConfigError("--server: a URL without ?query or #fragment")
        if key is not None and (not key.isascii() or not key.isprintable() or not key.strip()):
            raise ConfigError("the API key holds characters a key never has (check EVALCORE_API_KEY)")
        if not (max_age >= 0):
            raise ConfigError(f"max_age must be 0 or more seconds, got {max_age!r}")
        base = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        self.url = base
        self.max_age = float(max_age)
        self.timeout = float(timeout)
        headers = {"Accept": "application/json", "User-Agent": "evalcore-client"}
        if key:
            headers["Authorization"] = f"Bearer {key.strip()}"
        self._http = httpx.Client(base_url=base + PREFIX, headers=headers, timeout=timeout, follow_redirects=False)
        self._cache: dict[str, _Cached] = {}
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)

    def __repr__(self) -> str:
        return f"evalcore.Client({self.url!r}, key=<hidden>, max_age={self.max_age:g})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- HTTP --------------------------------------------------------------------------------
    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise ServiceUnavailable(f"{self.url}: no answer in time ({method} {PREFIX}{path})") from None
        except httpx.TransportError as exc:
            reason = type(exc).__name__
            raise ServiceUnavailable(f"{self.url}: cannot reach the service ({reason})") from None
        if response.status_code >= 400 and response.status_code != 304:
            raise self._problem(response, method, path)
        return response

    def _problem(self, response: httpx.Response, method: str, path: str) -> EvalcoreError:
        status = response.status_code
        problem: dict[str, Any] = {}
        try:
            found = response.json()
            if isinstance(found, dict):
                problem = found
        except ValueError:
            pass
        title = str(problem.get("title") or response.reason_phrase or "error")
        detail = str(problem.get("detail") or "")
        message = f"{method} {PREFIX}{path}: {status} {title}" + (f": {detail}" if detail and detail != title else "")
        kind = ServiceUnavailable if status >= 500 or status == 429 else ServiceError
        if status == 404 and path.startswith("/deployments/") and method == "GET":
            return UnknownDeployment(message)
        return kind(message, status, problem)

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise ServiceError(f"{method} {PREFIX}{path}: the answer is not JSON", response.status_code) from None

    # -- resources ---------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """``GET /health``: status, evalcore and schema version (no key needed)."""
        found: dict[str, Any] = self._json("GET", "/health")
        return found

    def runs(self, limit: int | None = None, page: int = 200) -> list[dict[str, Any]]:
        """``GET /runs``, newest first, every page followed (at most ``limit`` runs)."""
        out: list[dict[str, Any]] = []
        cursor = None
        while limit is None or len(out) < limit:
            params: dict[str, Any] = {"limit": page if limit is None else min(page, limit - len(out))}
            if cursor:
                params["cursor"] = cursor
            found = self._json("GET", "/runs", params=params)
            out += found.get("data") or []
            cursor = found.get("next_cursor")
            if not cursor:
                break
        return out

    def run(self, ref: str) -> dict[str, Any]:
        """``GET /runs/{ref}``: the run and its per-configuration summary (``show --json``)."""
        found: dict[str, Any] = self._json("GET", f"/runs/{_segment(ref)}")
        return found

    def claim(
        self,
        ref: str,
        configuration: str | None = None,
        max_bluff_rate: float | None = None,
        max_lost_rate: float | None = None,
        confidence: float | None = None,
    ) -> list[Claim]:
        """``GET /runs/{ref}/claim``: the threshold claim of each configuration (``threshold --json``)."""
        params = {
            k: v
            for k, v in {
                "configuration": configuration,
                "max_bluff_rate": max_bluff_rate,
                "max_lost_rate": max_lost_rate,
                "confidence": confidence,
            }.items()
            if v is not None
        }
        found = self._json("GET", f"/runs/{_segment(ref)}/claim", params=params)
        items = found if isinstance(found, list) else found.get("data") or found.get("claims") or [found]
        return [claim_from_json(c) for c in items]

    def decide(
        self,
        ref: str,
        configuration: str,
        threshold: float,
        note: str = "",
        max_bluff_rate: float | None = None,
        max_lost_rate: float | None = None,
        confidence: float | None = None,
    ) -> dict[str, Any]:
        """``POST /runs/{ref}/decisions``: save a decision with its claim; the saved decision
        (``decision_id``, run, configuration, threshold, note, author, claim)."""
        body: dict[str, Any] = {"configuration": configuration, "threshold": float(threshold), "note": note}
        for k, v in (("max_bluff_rate", max_bluff_rate), ("max_lost_rate", max_lost_rate), ("confidence", confidence)):
            if v is not None:
                body[k] = v
        found: dict[str, Any] = self._json("POST", f"/runs/{_segment(ref)}/decisions", json=body)
        return found

    def upload_run(self, path: str | Path) -> dict[str, Any]:
        """``POST /runs``: a run file as ``export-run`` writes it; ``loaded`` false when the
        service held the run already (nothing duplicated)."""
        resolved = read_user_file(path, field="run file", max_bytes=MAX_UPLOAD)
        with open(resolved, "rb") as fh:  # streamed, with its length
            found: dict[str, Any] = self._json("POST", "/runs", content=fh, headers={"Content-Type": "application/zip"})
        return found

    def gate(
        self,
        baseline: str,
        candidate: str,
        metric: str | None = None,
        min_effect: float | None = None,
        threshold_from_decision: bool = False,
        alpha: float | None = None,
        holm: bool | None = None,
    ) -> dict[str, Any]:
        """``POST /gate``: ``gate --format json``'s report and ``passed`` (a regression is
        ``passed: false``, not an error)."""
        body: dict[str, Any] = {
            "baseline": baseline,
            "candidate": candidate,
            "threshold_from_decision": threshold_from_decision,
        }
        for k, v in (("metric", metric), ("min_effect", min_effect), ("alpha", alpha), ("holm", holm)):
            if v is not None:
                body[k] = v
        found: dict[str, Any] = self._json("POST", "/gate", json=body)
        return found

    def deploy(self, name: str, decision_id: str) -> Deployment:
        """``PUT /deployments/{name}``: point the deployment at a saved decision."""
        found = self._json("PUT", f"/deployments/{_segment(name)}", json={"decision_id": decision_id})
        with self._lock:
            self._cache.pop(name, None)
        return deployment_from_json(found)

    def deployments(self) -> list[DeploymentHistory]:
        """``GET /deployments``: every deployment with its moves, newest first."""
        found = self._json("GET", "/deployments")
        items = found if isinstance(found, list) else found.get("data") or found.get("deployments") or []
        return [history_from_json(d) for d in items]

    def deployment(self, name: str) -> LiveDeployment:
        """Deployment ``name``: the cached value while younger than ``max_age`` seconds, else
        revalidated with ``If-None-Match`` (one caller at a time; the others get the cached
        value meanwhile). When the service cannot be reached: the last known value with
        ``stale`` true (tried again after at most 5 s), or ServiceUnavailable when there is
        none yet. UnknownDeployment when the service has no such deployment; ServiceError for
        another refusal (a key without ``read``)."""
        with self._lock:
            entry = self._cache.setdefault(name, _Cached())
            while True:
                fresh = time.monotonic() - entry.checked < self.max_age
                if entry.value is not None and (fresh or entry.busy):
                    return entry.value
                if not entry.busy:
                    break
                self._done.wait(timeout=1.0)  # the first look is under way: wait for its answer
            entry.busy = True
            etag = entry.etag if entry.value is not None else None
        try:
            value, new_etag = self._revalidate(name, etag, entry)
        except ServiceUnavailable:
            with self._lock:
                entry.busy = False
                self._done.notify_all()
                if entry.value is None:
                    raise
                entry.checked = time.monotonic() - self.max_age + min(self.max_age, RETRY_UNREACHABLE)
                if not entry.value.stale:
                    entry.value = _with(entry.value, stale=True)
                return entry.value
        except BaseException:
            with self._lock:
                entry.busy = False
                self._done.notify_all()
            raise
        with self._lock:
            entry.value, entry.etag = value, new_etag
            entry.checked = time.monotonic()
            entry.busy = False
            self._done.notify_all()
            return value

    def _revalidate(self, name: str, etag: str | None, entry: _Cached) -> tuple[LiveDeployment, str | None]:
        headers = {"If-None-Match": etag} if etag else {}
        wait = min(self.timeout, REVALIDATE_TIMEOUT)  # a RAG request waits on this: never long
        response = self._request("GET", f"/deployments/{_segment(name)}", headers=headers, timeout=wait)
        if response.status_code == 304 and entry.value is not None:
            return _with(entry.value, stale=False, checked_at=time.time()), etag
        try:
            found = response.json()
        except ValueError:
            raise ServiceError(
                f"GET {PREFIX}/deployments/{name}: the answer is not JSON", response.status_code
            ) from None
        base = deployment_from_json(found)
        live = LiveDeployment(**{f.name: getattr(base, f.name) for f in fields(Deployment)}, checked_at=time.time())
        return live, response.headers.get("ETag") or base.etag()

    def post_traffic(self, name: str, lines: Iterable[Mapping[str, Any] | str | bytes]) -> list[LineResult]:
        """``POST /deployments/{name}/traffic``: NDJSON lines ``{id, query, time, label?}`` (a
        mapping is written as JSON), sent in posts of at most 1,000 lines and 5 MB; one
        :class:`LineResult` a line, numbered across the whole call."""
        out: list[LineResult] = []
        for chunk in _chunks(lines):
            found = self._json(
                "POST",
                f"/deployments/{_segment(name)}/traffic",
                content=b"\n".join(chunk) + b"\n",
                headers={"Content-Type": "application/x-ndjson"},
            )
            offset = len(out)
            for r in found.get("results") or []:
                out.append(LineResult(offset + int(r["line"]), r.get("id"), r["status"], r.get("reason")))
        return out

    def evaluate(self, spec: Mapping[str, Any]) -> QueuedEvaluation:
        """``POST /evaluations``: a run spec (``{"dataset": "docs@3", "strategies": "A,E"}``);
        the queued :class:`~evalcore.service.evaluations.QueuedEvaluation` (its ``evaluation_id``)."""
        return evaluation_from_json(self._json("POST", "/evaluations", json=dict(spec)))

    def evaluation(self, evaluation_id: str) -> QueuedEvaluation:
        """``GET /evaluations/{id}``: status, stage, progress, and ``run_id`` once complete."""
        return evaluation_from_json(self._json("GET", f"/evaluations/{_segment(evaluation_id)}"))

    def cancel(self, evaluation_id: str) -> QueuedEvaluation:
        """``POST /evaluations/{id}/cancel``: the evaluation after the request (a queued one is
        cancelled at once, a running one is asked to stop)."""
        return evaluation_from_json(self._json("POST", f"/evaluations/{_segment(evaluation_id)}/cancel"))


def evaluation_from_json(data: Mapping[str, Any]) -> QueuedEvaluation:
    """An :class:`~evalcore.service.evaluations.QueuedEvaluation` from its JSON."""

    def when(value: Any) -> datetime | None:
        return None if value is None else _parse_time(value)

    return QueuedEvaluation(
        evaluation_id=str(data["id"]),
        name=str(data.get("name") or ""),
        status=str(data["status"]),
        stage=data.get("stage"),
        progress=float(data.get("progress") or 0.0),
        run_id=data.get("run_id"),
        reason=data.get("reason"),
        created_at=when(data.get("created_at")),
        started_at=when(data.get("started_at")),
        finished_at=when(data.get("finished_at")),
        position=data.get("position"),
    )


def _with(value: LiveDeployment, **changes: Any) -> LiveDeployment:
    return replace(value, **changes)


def _chunks(lines: Iterable[Mapping[str, Any] | str | bytes]) -> Iterator[list[bytes]]:
    chunk: list[bytes] = []
    size = 0
    for line in lines:
        raw = (
            line
            if isinstance(line, bytes)
            else line.encode("utf-8")
            if isinstance(line, str)
            else json.dumps(dict(line), ensure_ascii=False).encode("utf-8")
        )
        if chunk and (len(chunk) >= MAX_LINES or size + len(raw) + 1 > MAX_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(raw)
        size += len(raw) + 1
    if chunk:
        yield chunk
