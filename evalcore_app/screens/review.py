"""Review: label a deployment version's review sample, line by line, from the keyboard.

A deployment version's lines are cut into review periods; once a period has ended its sampling
frame is drawn (:mod:`evalcore.traffic.sampling`): two strata by what the gate did at the deployed
t (answered, refused), each in a seeded random order whose first n lines are the sample. This
screen shows the next sampled line (its query, its top 4 hits with their citations, what the gate
did), takes its label (off-topic, or answerable and whether its hits hold the answer: keys o, a,
y, n; s skips), and shows beside it the version's production rates with their exact bounds and
the monitor's verdict on the claim (:func:`evalcore.read.traffic.estimates.version_estimate`),
the progress of each stratum, and the agreement of the lines a second person labelled too.

The author of a label is the signed-in person the operator's trusted header names
(``EVALCORE_USER_HEADER``, :mod:`evalcore.authors`), never typed. Shareable:
``/review?deployment=production`` (``&version=2`` for an earlier version).
"""

from __future__ import annotations

import html

import streamlit as st

from evalcore import authors
from evalcore.measures.production import Bounds
from evalcore.measures.rounding import rate_bound_text, rate_lower_text, rate_text, threshold_text
from evalcore.read.traffic import estimates as reads
from evalcore.read.traffic import review as sample
from evalcore.service import deployments, review
from evalcore_app import ui
from evalcore_app.partials import review_keys
from evalcore_app.ui import lang
from evalcore_app.ui.lang import N_, _, ngettext
from evalcore_app.ui.sidebar import unread_message

#: the keys the screen answers (a key pressed while typing in a field is the field's)
KEYS = ("o", "a", "y", "n", "u", "s")
#: how the monitor's states read (translated where shown)
STATES = {"holding": N_("holding"), "breached": N_("breached"), "undecided": N_("undecided")}
STRATA = {"answered": N_("answered"), "refused": N_("refused")}

view = ui.state.Review()
Review = ui.state.Review  # its keys
ctx = ui.context()
store = ui.get_store(ctx.store_path)
tr = lang.tr()
st.title(_("Review"))
st.caption(
    _(
        "Label the review sample of a deployment version: each ended period's lines, split by what the gate did "
        "at the deployed t, in a seeded random order. The estimates beside it use only each stratum's labelled "
        "prefix, so they are unbiased whatever the labels say."
    )
)
if ctx.unread is not None:
    unread_message(ctx)
    st.stop()

names = ui.guarded(lambda: ui.cached(deployments.deployment_names, store)) or []
if not names:
    st.info(
        _(
            "This store has no deployment yet. Deploy a saved decision on the Threshold screen (or with "
            "PUT /api/v1/deployments/NAME); the lines it posts are sampled here for review once a period has ended."
        )
    )
    st.stop()
asked = st.query_params.get("deployment")
if asked in names and not Review.deployment.present():
    view.deployment = asked
if view.deployment not in names:
    view.deployment = names[0]


def _deployment_changed() -> None:
    view.version = None
    view.pending = None


def _version_changed() -> None:
    view.pending = None


cols = st.columns([2, 1])
with cols[0]:
    name = ui.bound(st.selectbox, _("Deployment"), names, key=Review.deployment, on_change=_deployment_changed)
found = ui.guarded(lambda: deployments.get_deployment(store, name))
if found is None:
    st.stop()
versions = list(range(found.version, 0, -1))
asked_version = st.query_params.get("version")
if view.version is None and asked_version and asked_version.isdigit() and int(asked_version) in versions:
    view.version = int(asked_version)
if view.version not in versions:
    view.version = found.version
with cols[1]:
    version = ui.bound(
        st.selectbox,
        _("Version"),
        versions,
        key=Review.version,
        format_func=lambda v: (_("version {v} (deployed now)") if v == found.version else _("version {v}")).format(v=v),
        on_change=_version_changed,
    )
st.query_params["deployment"] = name
if version == found.version:
    if "version" in st.query_params:
        del st.query_params["version"]
else:
    st.query_params["version"] = str(version)

author = authors.author_from_headers(st.context.headers)
skipped = tuple(view.skipped)
estimate = ui.guarded(lambda: ui.cached(reads.version_estimate, store, name, version))
if estimate is not None and any(p.ended and not p.drawn for p, _f in estimate.periods):
    # the periods that have ended without a sample get theirs now (as the review reads over HTTP do)
    ui.guarded(lambda: review.draw_missing(store, name, version, author))


def _next() -> sample.ReviewLine | None:
    got = sample.next_lines(store, name, version, None, 1, author, exclude=skipped)
    return got[0] if got else None


# --- labelling -----------------------------------------------------------------------------------


def _label_text(label: str, held: bool | None) -> str:
    if label == "off-topic":
        return _("off-topic")
    if held is None:
        return _("answerable (not sure whether its hits hold the answer)")
    return _("answerable, its hits hold the answer") if held else _("answerable, its hits miss the answer")


def _save(current: sample.ReviewLine, label: str, held: bool | None) -> None:
    """Store the label of the line shown (the writer checks it is still the line's to give) and say so."""
    if author is None:
        view.flash = "error:" + _("Not saved: no signed-in author (see above).")
        return
    who = author

    def write() -> list[review.LabelResult]:
        wanted = {"line_id": current.line_id, "label": label, "hits_hold_answer": held, "role": current.role}
        return review.label_lines(store, name, [wanted], who)

    results = ui.guarded(write)
    if results:
        got = results[0]
        if got.status == "problem":
            view.flash = "error:" + _("Not saved: {reason}").format(reason=ui.esc(got.reason))
        else:
            view.flash = "ok:" + _("Labelled {label}: {query} (by {author}).").format(
                label=_label_text(label, held), query=ui.esc(current.query[:80]), author=ui.esc(who)
            )
    view.pending = None


def _skip(line_id: str) -> None:
    view.skipped = (*view.skipped, line_id)
    view.pending = None
    view.flash = "ok:" + _("Skipped: the line stays in the sample and is offered again when you ask for it.")


def _act(key: str, current: sample.ReviewLine) -> None:
    """What a key (or its button) does to the line shown."""
    if key == "o":
        _save(current, "off-topic", None)
    elif key == "a":
        view.pending = current.line_id
    elif key in ("y", "n"):
        _save(current, "answerable", key == "y")
    elif key == "u":
        _save(current, "answerable", None)
    elif key == "s":
        _skip(current.line_id)


def _pressed() -> None:
    """A key came from the keyboard: act on the line it was pressed for, if that line is still the
    one shown (a key pressed twice before the page moved on acts once)."""
    got = review_keys.pressed()
    if got is not None and line is not None and got[1] == line.line_id:
        _act(got[0], line)


def _button(label: str, key: str, current: sample.ReviewLine) -> None:
    """A key's button (for a mouse): it does what the key does, to the line shown."""

    def act() -> None:
        _act(key, current)

    st.button(label, key=f"review-{key}", on_click=act, width="stretch", disabled=author is None and key != "s")


# a key's or a button's callback runs before the next run of this page, so the line read here is the one
# after the line labelled (and the figures below count its label)
line = ui.guarded(_next)
review_keys.listen(line.line_id if line else None, KEYS, _pressed)

ui.plain(
    _("Labels are given as {author} (the signed-in person the operator's trusted header names).").format(
        author=authors.shown(author)
    ),
    small=True,
    testid="review-author",
)
if author is None:
    st.warning(
        _(
            "No signed-in author: labels are saved only with the author the trusted header names. The operator sets "
            "EVALCORE_USER_HEADER to the header its sign-in proxy sets (docs/DEPLOY.md)."
        )
    )
flash = view.flash
if flash:
    del view.flash
    kind, _sep, said = flash.partition(":")
    (st.success if kind == "ok" else st.error)(said, icon=":material/label:")

# read again: a key's or a button's callback may have stored a label before this run
estimate = ui.guarded(lambda: ui.cached(reads.version_estimate, store, name, version))
left, right = st.columns([3, 2], gap="large")
with left:
    st.subheader(_("Next sampled line"))
    undrawn = [p for p, f in (estimate.periods if estimate else []) if p.ended and not p.drawn]
    if undrawn:
        st.info(
            ngettext(
                "{n} ended period has no sample drawn yet (`evalcore traffic sample` draws it).",
                "{n} ended periods have no sample drawn yet (`evalcore traffic sample` draws them).",
                len(undrawn),
            ).format(n=tr.integer(len(undrawn)))
        )
    if line is None:
        st.success(
            _("No line of this version's sample waits for your label.")
            if not skipped
            else _("Every line left is one you skipped.")
        )
    else:
        ui.plain(line.query, strong=True, testid="review-query")
        role = (
            " · " + _("offered to you as a second person (its first label is another person's)")
            if line.role == "second"
            else ""
        )
        ui.plain(
            _(
                "Period {start} to {end} · stratum {stratum}, place {rank} of its order · inclusion probability {p}"
            ).format(
                start=tr.date(line.period_start.date()),
                end=tr.date(line.period_end.date()),
                stratum=_(STRATA[line.stratum]),
                rank=tr.integer(line.rank),
                p=tr.number(line.inclusion_probability, 3),
            )
            + role,
            small=True,
            testid="review-meta",
        )
        gate = _("none (no hit)") if line.gate_value is None else tr.number(line.gate_value, 4)
        did = (
            _("The gate answered: gate value {value} at t = {t} ({rule}).")
            if line.stratum == "answered"
            else _("The gate refused (no answer): gate value {value} at t = {t} ({rule}).")
        )
        ui.plain(
            did.format(value=gate, t=tr.decimal_text(threshold_text(line.threshold, 4)), rule=_(line.keep_rule)),
            testid="review-gate",
        )
        for hit in line.hits[:4]:
            where = " · ".join(
                x
                for x in (
                    f"{hit.doc_id or ''}{hit.locator or ''}",
                    str(hit.section or ""),
                    "" if hit.value is None else tr.number(hit.value, 4),
                    _("kept by the gate") if hit.kept else "",
                )
                if x
            )
            st.html(
                f"<div data-testid='review-hit' style='font-size:0.85em'><b>#{hit.rank}</b> {html.escape(where)}"
                f"<pre style='white-space:pre-wrap;overflow-wrap:anywhere;max-height:12rem;overflow-y:auto'>"
                f"{html.escape(str(hit.content or ''))}</pre></div>"
            )
        if not line.hits:
            st.caption(_("The retriever returned no hit for this query."))
        st.markdown("**" + _("Label") + "**")
        b = st.columns(3)
        with b[0]:
            _button(_("Off-topic (o)"), "o", line)
        with b[1]:
            _button(_("Answerable (a)"), "a", line)
        with b[2]:
            _button(_("Skip (s)"), "s", line)
        if view.pending == line.line_id:
            st.markdown(_("Answerable. Do its hits hold the answer?"))
            c = st.columns(3)
            with c[0]:
                _button(_("Yes (y)"), "y", line)
            with c[1]:
                _button(_("No (n)"), "n", line)
            with c[2]:
                _button(_("Not sure (u)"), "u", line)
        st.caption(
            _(
                "Keys: o off-topic · a answerable, then y or n (do its hits hold the answer?) or u (not sure) · "
                "y and n also mark it answerable · s skip."
            )
        )
    st.caption(
        _(
            "A skipped line stays in the sample. The estimates use the labelled prefix of each stratum's order, so a "
            "skipped line holds back the lines after it until someone labels it."
        )
    )
    if skipped:
        if st.button(
            ngettext("Offer the {n} skipped line again", "Offer the {n} skipped lines again", len(skipped)).format(
                n=tr.integer(len(skipped))
            ),
            key="review-unskip",
        ):
            del view.skipped
            st.rerun()


# --- estimates and monitor -------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "–" if value is None else tr.percent(value, 1)


def _upper(value: float | None) -> str:
    return "–" if value is None else tr.percent_text(rate_bound_text(value).rstrip("%"))


def _lower(value: float | None) -> str:
    return "–" if value is None else tr.percent_text(rate_lower_text(value).rstrip("%"))


def _bounds(b: Bounds) -> str:
    if b.estimate is None:
        return _("not estimable yet (no label counts)")
    return _("{estimate} (bounds {lower} to {upper})").format(
        estimate=_pct(b.estimate), lower=_lower(b.lower), upper=_upper(b.upper)
    )


with right:
    st.subheader(_("Estimates of version {v}").format(v=version))
    if estimate is not None:
        claim = _("Claim: bluffs at most {alpha}, lost answers at most {beta}, at {confidence} confidence.").format(
            alpha=tr.percent_text(rate_text(estimate.alpha).rstrip("%")),
            beta=tr.percent_text(rate_text(estimate.beta).rstrip("%")),
            confidence=tr.percent_text(rate_text(estimate.confidence).rstrip("%")),
        )
        if not estimate.claim_recorded:
            claim += " " + _("(The decision was saved without a claim: these are the defaults.)")
        ui.plain(claim, small=True, testid="review-claim")
        whole = estimate.whole
        if whole is None:
            st.info(_("No period of this version has a drawn sample yet: nothing to estimate."))
        else:
            for testid, title, b in (
                ("review-bluff", _("Bluff rate (off-topic questions answered)"), whole.bluff_rate),
                ("review-lost", _("Lost rate (answerable, hits hold the answer, refused)"), whole.lost_rate),
                ("review-share", _("Answers that went to off-topic questions"), whole.answered_bluff_share),
            ):
                ui.plain(f"{title}: {_bounds(b)}", testid=testid)
            n_a, n_r = whole.labels
            big_a, big_r = whole.lines
            ui.plain(
                _(
                    "On {n} labels of {lines} lines (answered: {n_a} of {big_a}; refused: {n_r} of {big_r}); bounds at "
                    "{confidence} confidence, rounded on their safe side."
                ).format(
                    n=tr.integer(n_a + n_r),
                    lines=tr.integer(big_a + big_r),
                    n_a=tr.integer(n_a),
                    big_a=tr.integer(big_a),
                    n_r=tr.integer(n_r),
                    big_r=tr.integer(big_r),
                    confidence=tr.percent_text(rate_text(estimate.confidence).rstrip("%")),
                ),
                small=True,
                testid="review-labels",
            )
            if whole.retrieval_misses:
                ui.plain(
                    ngettext(
                        "{n} refused answerable line whose hits miss the answer: a retrieval miss, not a lost answer.",
                        "{n} refused answerable lines whose hits miss the answer: retrieval misses, not lost answers.",
                        whole.retrieval_misses,
                    ).format(n=tr.integer(whole.retrieval_misses)),
                    small=True,
                    testid="review-misses",
                )
        st.markdown("**" + _("Monitor") + "**")
        for testid, title, target, monitor in (
            ("review-monitor-bluff", _("Bluff claim"), estimate.alpha, estimate.bluff),
            ("review-monitor-lost", _("Lost claim"), estimate.beta, estimate.lost),
        ):
            limit = tr.percent_text(rate_text(target).rstrip("%"))
            if monitor is None:
                ui.plain(_("{claim} (at most {limit}): no sample yet.").format(claim=title, limit=limit), testid=testid)
                continue
            said = _("{claim} (at most {limit}): {state} · anytime bounds {lower} to {upper}").format(
                claim=title,
                limit=limit,
                state=_(STATES.get(monitor.state, monitor.state)),
                lower=_lower(monitor.lower),
                upper=_upper(monitor.upper),
            )
            if monitor.state == "undecided" and monitor.labels_to_decide is not None:
                said += " · " + ngettext(
                    "about {n} more label would decide it",
                    "about {n} more labels would decide it",
                    monitor.labels_to_decide,
                ).format(n=tr.integer(monitor.labels_to_decide))
            ui.plain(said, testid=testid)
        st.caption(
            _(
                "holding: the upper bound is under the claim; breached: the lower bound is over it; undecided: "
                "neither yet. The monitor's bounds hold at every look over the version's life, so it is wider than "
                "the bounds above."
            )
        )


# --- progress per stratum, drift, second person -----------------------------------------------------------


def _progress(s: sample.StratumCounts) -> str:
    text = _("{labelled} of {sampled} sampled, of {lines} lines").format(
        labelled=tr.integer(s.labelled), sampled=tr.integer(s.sampled), lines=tr.integer(s.lines)
    )
    if s.blocked > 0:
        text += " " + _("(+{n} after a skipped line)").format(n=tr.integer(s.blocked))
    return text


if estimate is not None and estimate.periods:
    st.subheader(_("Progress per stratum"))
    rows = []
    for p, f in estimate.periods:
        if not p.drawn:
            status = _("not ended yet") if not p.ended else _("ended, no sample drawn yet")
            answered = refused = status
        else:
            answered, refused = _progress(p.answered), _progress(p.refused)
        rows.append(
            {
                _("Period"): f"{tr.date(p.start.date())} – {tr.date(p.end.date())}",
                _("Answered: labelled"): answered,
                _("Refused: labelled"): refused,
                _("Bluff rate"): "" if f is None else _bounds(f.bluff_rate),
                _("Lost rate"): "" if f is None else _bounds(f.lost_rate),
                _("More lines because"): "" if not p.reason else lang.figures(p.reason),
            }
        )
    st.dataframe(rows, hide_index=True, key="review-progress")
    for p, _f in estimate.periods:
        if p.reason:
            ui.plain(
                _("The period from {start} got more lines: its drift test moved ({reason}).").format(
                    start=tr.date(p.start.date()), reason=lang.figures(p.reason)
                ),
                small=True,
                testid="review-drift",
            )
        if p.late_lines:
            ui.plain(
                ngettext(
                    "{n} line of the period from {start} was stored after its sample was drawn: it is outside it.",
                    "{n} lines of the period from {start} were stored after its sample was drawn: they are outside it.",
                    p.late_lines,
                ).format(n=tr.integer(p.late_lines), start=tr.date(p.start.date())),
                small=True,
            )

    st.subheader(_("Second person"))
    frames = ui.guarded(lambda: ui.cached(sample.frames, store, name, version)) or {}
    shares = sorted({f.second_share for f in frames.values()})
    pairs, kappa = ui.guarded(lambda: ui.cached(sample.agreement, store, name, version)) or (0, None)
    share = " / ".join(tr.percent(s, 0) for s in shares) if shares else tr.percent(0.1, 0)
    said = _(
        "{share} of the sampled lines are offered to a second person after their first label; {pairs} carry two labels."
    ).format(share=share, pairs=tr.integer(pairs))
    said += " " + (
        _("Agreement (Cohen's kappa): {kappa}.").format(kappa=tr.number(kappa, 2))
        if kappa is not None
        else _("Agreement (Cohen's kappa): not defined yet (it needs two labels on lines of both kinds).")
    )
    ui.plain(said, testid="review-agreement")
ui.methods_link()
