""":class:`Client`: one method a resource of the API, every call under one deadline and a cap
on its answer (evalcore/client/transport.py), and :meth:`Client.deployment`, the cached value
production reads on every request, which never raises while it has a value to serve."""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import quote

import httpx

from evalcore.boundary.files import read_user_file
from evalcore.client.origin import service_url
from evalcore.client.records import (
    LiveDeployment,
    claim_from_json,
    deployment_from_json,
    evaluation_from_json,
    history_from_json,
    live_from_json,
)
from evalcore.client.transport import Exchange, ServiceAnswer, bound_http, check_seconds
from evalcore.errors import ConfigError, ServiceError, ServiceUnavailable, ServiceUnknownDeployment
from evalcore.measures.claim import Claim
from evalcore.service.deployments import Deployment, DeploymentHistory
from evalcore.service.evaluations import QueuedEvaluation
from evalcore.service.ingest import LineResult, Status

log = logging.getLogger("evalcore.client")

PREFIX = "/api/v1"
MAX_LINES = 1000  #: lines of one traffic post (the service's limit)
MAX_BYTES = 5 * 1024 * 1024  #: bytes of one traffic post (the service's limit)
MAX_UPLOAD = 4 << 30  #: bytes of a run file sent (the service states its own limit)
TIMEOUT = 5.0  #: seconds a call may take, all of it (connect, send, the whole answer), unless told
MAX_ANSWER = 1 << 20  #: bytes of a deployment's answer, unless told
MAX_REPORT = 64 << 20  #: bytes of any other answer (a run's summary, a gate report, a page of runs)
RETRY_UNREACHABLE = 5.0  #: seconds before a failed look at a deployment is tried again (at most max_age)
REVALIDATE_TIMEOUT = TIMEOUT  #: the former name of the default deadline of a deployment's revalidation

STATUSES = ("stored", "duplicate", "problem")  #: what became of a posted line
T = TypeVar("T")


def _segment(value: str) -> str:
    return quote(str(value), safe="")


@dataclass
class _Cached:
    value: LiveDeployment | None = None
    etag: str | None = None
    checked: float = float("-inf")  # time.monotonic() of the last look at the service
    busy: bool = False
    error: ServiceError | None = None  # the last look's failure while no value is known
    reported: str | None = None  # the failure last logged (logged again only when it changes)


class Client:
    """The evaluation service at ``url`` (``https://host[/base]``; the API is under ``/api/v1``),
    authenticated by ``key`` (``evk_...``; None for ``/health`` only).

    ``max_age``: seconds :meth:`deployment` serves its cached value before revalidating;
    ``timeout``: seconds one call may take in all, wall-clock (the lookup, connect, send and the
    whole answer; default 5); ``max_answer``: bytes of a deployment's answer (default 1 MB;
    other answers stop at 64 MB); ``allow_insecure``: accept ``http://`` to a host other than
    this machine (the key and the answers then cross the network in clear). ConfigError for a
    URL or option it refuses, before any connection is made."""

    def __init__(
        self,
        url: str,
        key: str | None,
        max_age: float = 30,
        *,
        timeout: float = TIMEOUT,
        max_answer: int = MAX_ANSWER,
        allow_insecure: bool = False,
    ) -> None:
        base, origin = service_url(url, key, allow_insecure=allow_insecure)
        if not (max_age >= 0):
            raise ConfigError(f"max_age must be 0 or more seconds, got {max_age!r}")
        if isinstance(max_answer, bool) or not isinstance(max_answer, int) or max_answer < 1:
            raise ConfigError(f"max_answer must be a number of bytes (1 or more), got {max_answer!r}")
        self.url = base
        self.max_age = float(max_age)
        self.timeout = check_seconds(timeout, "timeout")
        self.max_answer = max_answer
        headers = {"Accept": "application/json", "Accept-Encoding": "identity", "User-Agent": "evalcore-client"}
        if key:
            headers["Authorization"] = f"Bearer {key.strip()}"
        self._http = bound_http(httpx.Client(base_url=base + PREFIX + "/", headers=headers, follow_redirects=False))
        self._exchange = Exchange(self._http, base, origin, PREFIX)
        self._cache: dict[str, _Cached] = {}
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)

    def __repr__(self) -> str:
        return f"evalcore.Client({self.url!r}, key=<hidden>, max_age={self.max_age:g}, timeout={self.timeout:g})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- HTTP --------------------------------------------------------------------------------
    def _request(self, method: str, path: str, max_bytes: int = MAX_REPORT, **kwargs: Any) -> ServiceAnswer:
        """The answer to ``method path``; a problem the service answers (4xx, 5xx) raised."""
        answer = self._exchange.call(method, path, timeout=self.timeout, max_bytes=max_bytes, **kwargs)
        if answer.status >= 300 and answer.status != 304:
            raise self._problem(answer, method, path)
        return answer

    def _problem(self, answer: ServiceAnswer, method: str, path: str) -> ServiceError:
        status = answer.status
        problem: dict[str, Any] = {}
        try:
            found = answer.json()
            if isinstance(found, dict):
                problem = found
        except (ValueError, RecursionError):
            pass
        title = str(problem.get("title") or answer.reason or "error")[:200]
        detail = str(problem.get("detail") or "")[:1000]
        message = f"{method} {PREFIX}{path}: {status} {title}" + (f": {detail}" if detail and detail != title else "")
        if status == 404 and path.startswith("/deployments/") and method == "GET":
            return ServiceUnknownDeployment(message, status, problem)
        kind = ServiceUnavailable if status >= 500 or status == 429 or status < 400 else ServiceError
        return kind(message, status, problem)

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        answer = self._request(method, path, **kwargs)
        try:
            return answer.json()
        except (ValueError, RecursionError):
            raise ServiceError(f"{method} {PREFIX}{path}: the answer is not JSON", answer.status) from None

    def _shaped(self, convert: Callable[[Any], T], data: Any, what: str) -> T:
        """``convert(data)``; ServiceError when the answer is not of the shape the API answers."""
        try:
            return convert(data)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ServiceError(f"{what}: not an answer of the API ({str(exc)[:200]})") from None

    # -- resources ---------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """``GET /health``: status, evalcore and schema version (no key needed)."""
        return self._shaped(_dict, self._json("GET", "/health"), "GET /health")

    def runs(self, limit: int | None = None, page: int = 200) -> list[dict[str, Any]]:
        """``GET /runs``, newest first, every page followed (at most ``limit`` runs)."""
        out: list[dict[str, Any]] = []
        cursor = None
        while limit is None or len(out) < limit:
            params: dict[str, Any] = {"limit": page if limit is None else min(page, limit - len(out))}
            if cursor:
                params["cursor"] = cursor
            found = self._shaped(_dict, self._json("GET", "/runs", params=params), "GET /runs")
            out += self._shaped(_list_of_dicts, found.get("data") or [], "GET /runs")
            cursor = found.get("next_cursor")
            if not cursor:
                break
        return out

    def run(self, ref: str) -> dict[str, Any]:
        """``GET /runs/{ref}``: the run and its per-configuration summary (``show --json``)."""
        return self._shaped(_dict, self._json("GET", f"/runs/{_segment(ref)}"), "GET /runs/{ref}")

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
        return self._shaped(_claims, found, "GET /runs/{ref}/claim")

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
        found = self._json("POST", f"/runs/{_segment(ref)}/decisions", json=body)
        return self._shaped(_dict, found, "POST /runs/{ref}/decisions")

    def upload_run(self, path: str | Path) -> dict[str, Any]:
        """``POST /runs``: a run file as ``export-run`` writes it; ``loaded`` false when the
        service held the run already (nothing duplicated). The client's ``timeout`` covers the
        whole upload: give one that fits the file."""
        resolved = read_user_file(path, field="run file", max_bytes=MAX_UPLOAD)
        with open(resolved, "rb") as fh:  # streamed, with its length
            found = self._json("POST", "/runs", content=fh, headers={"Content-Type": "application/zip"})
        return self._shaped(_dict, found, "POST /runs")

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
        return self._shaped(_dict, self._json("POST", "/gate", json=body), "POST /gate")

    def deploy(self, name: str, decision_id: str) -> Deployment:
        """``PUT /deployments/{name}``: point the deployment at a saved decision."""
        found = self._json("PUT", f"/deployments/{_segment(name)}", json={"decision_id": decision_id})
        with self._lock:
            self._cache.pop(name, None)
        return self._shaped(deployment_from_json, found, "PUT /deployments/{name}")

    def deployments(self) -> list[DeploymentHistory]:
        """``GET /deployments``: every deployment with its moves, newest first."""
        found = self._json("GET", "/deployments")
        return self._shaped(_histories, found, "GET /deployments")

    def deployment(self, name: str) -> LiveDeployment:
        """Deployment ``name``: the cached value while younger than ``max_age`` seconds, else
        revalidated with ``If-None-Match`` (one caller at a time; the others get the cached value
        meanwhile), within the client's ``timeout``.

        When the service cannot be reached, or answers anything that is not a valid deployment
        (not JSON, another shape, a threshold that is not a finite number, an HTML page, a 4xx
        or 5xx, a redirect to another origin, more than ``max_answer`` bytes, too slow): the last
        known value with ``stale`` true, the reason logged once (on the logger
        ``evalcore.client``, again only when it changes), and the service tried again after at
        most 5 s. It raises only when it has no value to serve, and then only
        :class:`~evalcore.errors.ServiceError`: ServiceUnavailable (unreachable, or an answer that
        is not a deployment), ServiceUnknownDeployment (the service has no such deployment; also
        an UnknownDeployment), or a ServiceError with the status of another refusal (a key
        without ``read``)."""
        deadline = time.monotonic() + self.timeout
        with self._lock:
            entry = self._cache.setdefault(name, _Cached())
            while True:
                fresh = time.monotonic() - entry.checked < self.max_age
                if entry.value is not None and (fresh or entry.busy):
                    return entry.value
                if entry.value is None and entry.error is not None and fresh and not entry.busy:
                    raise copy.copy(entry.error)  # failed a moment ago: not tried again yet
                if not entry.busy:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ServiceUnavailable(
                        f"{self.url}: deployment {name[:80]!r}: no answer within {self.timeout:g} s "
                        "(another caller's first look is under way)"
                    )
                self._done.wait(timeout=left)  # the first look is under way: wait for its answer
            entry.busy = True
            etag = entry.etag if entry.value is not None else None
        try:
            value, new_etag = self._revalidate(name, etag, entry)
        except ServiceError as exc:
            with self._lock:
                entry.busy = False
                self._done.notify_all()
                self._report(name, entry, exc)
                entry.checked = time.monotonic() - self.max_age + min(self.max_age, RETRY_UNREACHABLE)
                if entry.value is None:
                    entry.error = exc
                    raise
                if not entry.value.stale:
                    entry.value = replace(entry.value, stale=True)
                return entry.value
        except BaseException:
            with self._lock:
                entry.busy = False
                self._done.notify_all()
            raise
        with self._lock:
            if entry.reported is not None:
                log.warning("deployment %r: the service answers again (version %d)", name, value.version)
            entry.value, entry.etag, entry.error, entry.reported = value, new_etag, None, None
            entry.checked = time.monotonic()
            entry.busy = False
            self._done.notify_all()
            return value

    def _report(self, name: str, entry: _Cached, exc: ServiceError) -> None:
        """Log why the look failed, once: again only when the reason changes."""
        reason = str(exc)
        if reason == entry.reported:
            return
        entry.reported = reason
        serving = "serving the last known value (stale)" if entry.value is not None else "no value known yet"
        log.warning("deployment %r: %s; %s", name, reason, serving)

    def _revalidate(self, name: str, etag: str | None, entry: _Cached) -> tuple[LiveDeployment, str | None]:
        path = f"/deployments/{_segment(name)}"
        headers = {"If-None-Match": etag} if etag else {}
        answer = self._request("GET", path, max_bytes=self.max_answer, headers=headers)
        what = f"{self.url}: GET {PREFIX}{path}"
        if answer.status == 304:
            if entry.value is None or etag is None:
                raise ServiceUnavailable(f"{what}: answered 304 to a request that had no ETag", 304)
            return replace(entry.value, stale=False, checked_at=time.time()), etag
        if answer.status != 200:
            raise ServiceUnavailable(f"{what}: answered {answer.status}, not a deployment", answer.status)
        if not answer.is_json:
            kind = answer.headers.get("Content-Type", "no Content-Type").split(";", 1)[0][:60]
            raise ServiceUnavailable(f"{what}: answered {kind!r}, not JSON (a login page?)", 200)
        try:
            live = live_from_json(answer.json(), str(name), time.time())
        except (ValueError, RecursionError) as exc:
            raise ServiceUnavailable(f"{what}: not a deployment ({str(exc)[:200]})", 200) from None
        return live, answer.etag or live.etag()

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
            out += self._shaped(lambda d: _results(d, offset), found, "POST /deployments/{name}/traffic")  # noqa: B023
        return out

    def evaluate(self, spec: Mapping[str, Any]) -> QueuedEvaluation:
        """``POST /evaluations``: a run spec (``{"dataset": "docs@3", "strategies": "A,E"}``);
        the queued :class:`~evalcore.service.evaluations.QueuedEvaluation` (its ``evaluation_id``)."""
        found = self._json("POST", "/evaluations", json=dict(spec))
        return self._shaped(evaluation_from_json, found, "POST /evaluations")

    def evaluation(self, evaluation_id: str) -> QueuedEvaluation:
        """``GET /evaluations/{id}``: status, stage, progress, and ``run_id`` once complete."""
        found = self._json("GET", f"/evaluations/{_segment(evaluation_id)}")
        return self._shaped(evaluation_from_json, found, "GET /evaluations/{id}")

    def cancel(self, evaluation_id: str) -> QueuedEvaluation:
        """``POST /evaluations/{id}/cancel``: the evaluation after the request (a queued one is
        cancelled at once, a running one is asked to stop)."""
        found = self._json("POST", f"/evaluations/{_segment(evaluation_id)}/cancel")
        return self._shaped(evaluation_from_json, found, "POST /evaluations/{id}/cancel")


def _dict(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError(f"a JSON object was expected, not {type(data).__name__}")
    return data


def _list_of_dicts(data: Any) -> list[dict[str, Any]]:
    if not isinstance(data, list):
        raise ValueError(f"a list was expected, not {type(data).__name__}")
    return [_dict(x) for x in data]


def _items(found: Any, *keys: str) -> list[Any]:
    """The records of a listing: the answer itself when it is a list, else its first key present."""
    if isinstance(found, list):
        return found
    found = _dict(found)
    for key in keys:
        if found.get(key):
            return list(found[key])
    return []


def _claims(found: Any) -> list[Claim]:
    items = found if isinstance(found, list) else _items(found, "data", "claims") or [found]
    return [claim_from_json(c) for c in items]


def _histories(found: Any) -> list[DeploymentHistory]:
    return [history_from_json(d) for d in _items(found, "data", "deployments")]


def _results(found: Any, offset: int) -> list[LineResult]:
    out = []
    for r in _items(found, "results"):
        r = _dict(r)
        status = r.get("status")
        if status not in STATUSES:
            raise ValueError(f"status: not a line's status ({str(status)[:40]!r})")
        out.append(LineResult(offset + int(r["line"]), r.get("id"), cast("Status", status), r.get("reason")))
    return out


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
