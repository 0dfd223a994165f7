"""The dashboard's session state, declared once: every key a page keeps, with its type.

A page never writes ``st.session_state["..."]``: it reads and writes the attributes of its
accessor (``view = state.Compare()``; ``view.hit_k``, ``view.hit_k = 8``, ``del
view.matrix_configs``), and draws a widget bound to a key with :func:`bound`
(``bound(st.toggle, label, key=state.Compare.holm)``). A :class:`Key` read on the class is
the key itself (its ``name``, :meth:`Key.present`, :meth:`Key.pop`); read on an accessor it is
the value (the key's default when the session has none).

The key strings are the ones the address (:mod:`evalcore_app.ui.url`), the tests and the
browser journeys use; a key is renamed nowhere but here.

Canonical keys are never widget keys: Streamlit drops the state of a widget that a run does
not draw, so :func:`bound` draws every bound widget with the key ``w_<key>``, copies the
canonical value into it before drawing and back on change. Page-local widgets drawn without
:func:`bound` (New run's ``nr_*``, Questions' ``qs_*``) keep their own keys; their accessors
declare the keys the page also reads or writes itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

import streamlit as st

T = TypeVar("T")


class Key(Generic[T]):
    """One session-state key: its string (``name``) and the value read when the session has
    none (``default``)."""

    def __init__(self, name: str, default: T) -> None:
        self.name = name
        self.default = default

    @overload
    def __get__(self, obj: None, owner: type) -> Key[T]: ...

    @overload
    def __get__(self, obj: object, owner: type) -> T: ...

    def __get__(self, obj: object | None, owner: type) -> Key[T] | T:
        if obj is None:
            return self
        return self.get()

    def __set__(self, obj: object, value: T) -> None:
        self.set(value)

    def __delete__(self, obj: object) -> None:
        st.session_state.pop(self.name, None)

    def get(self) -> T:
        """The value (the default when the session has none)."""
        return st.session_state.get(self.name, self.default)  # type: ignore[no-any-return]

    def set(self, value: T) -> None:
        st.session_state[self.name] = value

    def present(self) -> bool:
        """Whether the session holds the key (a value was chosen or seeded)."""
        return self.name in st.session_state

    def setdefault(self, value: T) -> T:
        """The value, after seeding the session with ``value`` when it has none."""
        return st.session_state.setdefault(self.name, value)  # type: ignore[no-any-return]

    def pop(self) -> T:
        """The value, removed from the session (the default when there was none)."""
        return st.session_state.pop(self.name, self.default)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"Key({self.name!r})"


def _sync(key: str) -> None:
    st.session_state[key] = st.session_state["w_" + key]


def bound(
    widget: Callable[..., Any],
    label: str,
    *args: Any,
    key: Key[Any],
    default: Any = None,
    on_change: Callable[[], None] | None = None,
    **kwargs: Any,
) -> Any:
    """Draw ``widget`` bound to the canonical key ``key`` (see the module docstring);
    ``default`` seeds the key on first use (widgets get no default of their own)."""
    name = key.name
    if name not in st.session_state and default is not None:
        st.session_state[name] = default
    if name in st.session_state:
        st.session_state["w_" + name] = st.session_state[name]

    def changed() -> None:
        _sync(name)
        if on_change is not None:
            on_change()

    value = widget(label, *args, key="w_" + name, on_change=changed, **kwargs)
    st.session_state[name] = value
    return value


# --- what every page shares ---------------------------------------------------------------------


class SelectionState:
    """The sidebar's choice, shared by every page."""

    #: the store shown: the operator's ($EVALCORE_STORE, else runs/evalcore.duckdb) or another
    #: existing ``*.duckdb`` file in its folder
    store_path = Key[str | None]("store_path", None)
    #: the selected run (default: the newest complete run)
    run_id = Key[str | None]("run_id", None)
    #: the selected configuration label "E/dense"; defaults to the configuration of the run's
    #: latest saved decision, else the best by recall@4
    config = Key[str | None]("config", None)
    #: why the default configuration was chosen (shown on Threshold)
    config_why = Key[str | None]("config_why", None)
    #: the run the configuration was chosen for (a change of run recomputes it)
    config_run = Key[str | None]("config_run", None)


class Link:
    """What the address (:mod:`evalcore_app.ui.url`, :mod:`evalcore_app.ui.lang`) already applied."""

    #: the URL's run, configuration and query parameters already applied
    params = Key[tuple[tuple[str, str], ...] | None]("_params", None)
    #: the URL's Compare parameters already applied
    compare_params = Key[tuple[tuple[str, tuple[str, ...]], ...] | None]("_compare_params", None)
    #: the chosen language (a code of evalcore.i18n.LANGUAGES)
    lang = Key[str | None]("lang", None)
    #: the ``?lang=`` value already applied
    lang_param = Key[str | None]("_lang_param", None)


class Threshold:
    """The one refusal threshold (Threshold, Query, Export and Traffic show it) and the
    Threshold screen's claim and suggestion inputs."""

    #: the refusal threshold, ONE value for Threshold, Query and Export
    threshold = Key[float | None]("threshold", None)
    #: "run_id|config" the threshold belongs to
    threshold_for = Key[str | None]("threshold_for", None)
    #: where it came from (saved decision, suggestion, the slider)
    threshold_source = Key[str]("threshold_source", "")
    #: the threshold claim's inputs: max bluff rate, max lost rate, confidence
    claim_alpha = Key[float | None]("claim_alpha", None)
    claim_beta = Key[float | None]("claim_beta", None)
    claim_confidence = Key[float | None]("claim_confidence", None)
    #: the message shown once after a decision is saved or deployed
    saved_flash = Key[str | None]("saved_flash", None)
    #: the suggestion rule, and its inputs
    rule = Key[str | None]("rule", None)
    cost_ratio = Key[float | None]("cost_ratio", None)
    max_bluff_rate = Key[float | None]("max_bluff_rate", None)


class Compare:
    """The Compare screen's choice (Export and the review pack use it too)."""

    #: a second run ("" for none)
    run_id_b = Key[str]("run_id_b", "")
    #: the k of hit@k
    hit_k = Key[int]("hit_k", 4)
    #: Holm correction
    holm = Key[bool]("holm", True)
    #: the compared configurations ("RUN_ID|E/dense" keys)
    matrix_configs = Key[list[str] | None]("matrix_configs", None)
    #: the matrix cell whose queries are listed (labels)
    pair_first = Key[str | None]("pair_first", None)
    pair_second = Key[str | None]("pair_second", None)
    #: the last heatmap click applied
    last_cell = Key[tuple[str, str] | None]("_last_cell", None)


class Query:
    """The Query screen's search text and chosen query."""

    search = Key[str]("query_search", "")
    query_id = Key[str | None]("query_id", None)


class RunsState:
    """The Runs screen: run id -> status last drawn (a change redraws all)."""

    statuses = Key[dict[str, str] | None]("_statuses", None)


class Traffic:
    """The Traffic screen: the ``?deployment=`` already applied, and the label message."""

    #: (deployment, version) whose run and configuration were put in the address
    deployment_applied = Key[tuple[str, int] | None]("_deployment_applied", None)
    #: ("run|config", deployment, version) whose threshold was set
    deployment_threshold = Key[tuple[str, str, int] | None]("_deployment_threshold", None)
    #: the message shown once after a label is saved
    flash = Key[str | None]("traffic_flash", None)


class Review:
    """The Review screen: the deployment and version shown, the lines skipped in this session,
    the line marked answerable whose hits are asked about next, and the message of the last label."""

    #: the deployment whose review sample is shown (None: the address's, else the first by name)
    deployment = Key[str | None]("review_deployment", None)
    #: the version shown (None: the deployment's current version)
    version = Key[int | None]("review_version", None)
    #: line ids skipped in this session (they stay in the sample, and are offered again on request)
    skipped = Key[tuple[str, ...]]("review_skipped", ())
    #: the line id marked answerable, waiting for "do its hits hold the answer?"
    pending = Key[str | None]("review_pending", None)
    #: the message shown once after a label is saved or a line skipped
    flash = Key[str | None]("review_flash", None)
    #: the keyboard element's state (:mod:`evalcore_app.partials.review_keys`): the key just pressed
    keys = Key[Any]("review_keys", None)


class NewRun:
    """The New run screen's own state. Its widgets keep their ``nr_*`` keys (:data:`WIDGETS`);
    the keys below are those the page reads or writes itself."""

    #: the page's widget keys: the inputs (``nr_source``: upload, demo or folder; the uploads;
    #: the server paths; ``nr_questions_from``: question files or a question set of the store,
    #: ``nr_set`` and ``nr_set_version``), what to run (``nr_strategies``, A-G; ``nr_custom``,
    #: empty by default; ``nr_retrievers``; ``nr_languages``, the BM25 analyzers; ``nr_models``,
    #: model folders; ``nr_mode``, built-in or endpoint, and the endpoint's fields) and the name
    WIDGETS = (
        "nr_source", "nr_corpus", "nr_questions", "nr_ood", "nr_corpus_dir", "nr_questions_path",
        "nr_ood_path", "nr_questions_from", "nr_set", "nr_set_version", "nr_strategies", "nr_custom",
        "nr_retrievers", "nr_languages", "nr_name", "nr_mode", "nr_models", "nr_url", "nr_body",
        "nr_hits", "nr_chunk_id", "nr_text", "nr_document", "nr_score", "nr_score_kind",
        "nr_chunker", "nr_retriever",
    )  # fmt: skip

    #: old unused upload folders were removed (once a session)
    cleaned = Key[bool]("nr_cleaned", False)
    #: validated inputs (evalcore.jobs.Prepared) until they are started or an input changes
    prepared = Key[Any]("nr_prepared", None)
    #: a validation that found no needle to score (message, report, document ids, notes)
    nothing = Key[dict[str, Any] | None]("nr_nothing", None)
    #: the job started last
    last_job = Key[str | None]("nr_last_job", None)
    #: the question set version picked (newest first)
    set_version = Key[str | None]("nr_set_version", None)
    #: server folders typed (widgets' keys, read when validating)
    corpus_dir = Key[str]("nr_corpus_dir", "")
    questions_path = Key[str]("nr_questions_path", "")
    ood_path = Key[str]("nr_ood_path", "")


class Questions:
    """The Questions screen's draft and choices (its widgets keep their ``qs_*`` keys)."""

    #: the draft: in-domain items and off-topic queries
    items = Key[list[Any] | None]("qs_items", None)  # seeded by the page (Key.setdefault)
    ood = Key[list[Any] | None]("qs_ood", None)
    #: the version the draft came from, and which version (or "(new set)") was loaded
    parent = Key[int | None]("qs_parent", None)
    loaded = Key[str | None]("qs_loaded", None)
    #: an uploaded corpus and the digest of its files
    corpus = Key[Any]("qs_corpus", None)
    corpus_key = Key[str | None]("qs_corpus_key", None)
    #: the set and version picked (set after a save)
    set_name = Key[str | None]("qs_set", None)
    version = Key[str | None]("qs_version", None)
    section = Key[str | None]("qs_section", None)
    #: (doc, start, end) the current selection
    sel = Key[tuple[str, int, int] | None]("qs_sel", None)
    #: a candidate's cloze draft (a hint, never a question unedited)
    hint = Key[str | None]("qs_hint", None)
    #: a real query chosen as a phrasing of the next item
    pending = Key[str | None]("qs_pending", None)
    phrasings = Key[str]("qs_phrasings", "")
    variant = Key[str]("qs_variant", "")
    #: an add refused because a phrasing was the cloze draft unedited
    draft_refused = Key[bool]("qs_draft_refused", False)
    ood_text = Key[str]("qs_ood_text", "")
    ood_kind = Key[str]("qs_ood_kind", "near")
    note = Key[str]("qs_note", "")
    #: the last save's ("ok" | "error", message)
    saved = Key[tuple[str, str] | None]("qs_saved", None)


class Triage:
    """The Questions screen's "From real queries" (:mod:`evalcore_app.partials.triage`)."""

    #: the paste box
    real = Key[str]("qs_real", "")
    #: (digest, set, author) of the file already added
    file_done = Key[tuple[str, str, str] | None]("qs_real_file_done", None)
    #: (store, set, author, loaded version) whose kept off-topic decisions were restored
    restored = Key[tuple[str, str, str, str | None] | None]("qs_triage_restored", None)

    @staticmethod
    def decision(position: int) -> Key[str]:
        """The decision of the list's ``position``-th query (0-based): ``qs_triage_N``."""
        return Key(f"qs_triage_{position}", "")
