"""Sentences the library writes in English that a screen or the review pack shows in the
dashboard's language: templates (message ids with ``{fields}``) that
:meth:`evalcore.i18n.Translator.rewrite` matches and translates, figures kept."""

from __future__ import annotations

from evalcore.i18n import N_

#: Sentences the library writes in English about a choice (why a configuration or threshold was
#: chosen, a decision, a suggestion's rule), matched and rewritten by
#: :meth:`evalcore.i18n.Translator.rewrite` (the dashboard's screens and the review pack).
SOURCES = (
    N_("saved decision: {decision}"),
    N_("suggested: {rule}"),
    N_("the claim's recommendation: {sentence}"),
    N_("set on the Threshold screen (not saved)"),
    N_("suggested for {label} at cost ratio {ratio} (no decision saved for it yet)"),
    N_(
        "the threshold claim's recommendation for {label} (bluffs <= {alpha} with {confidence} confidence; "
        "no decision saved for it yet)"
    ),
    N_("the fallback {t} (nothing to suggest from)"),
    N_("the configuration of the latest saved decision ({decision})"),
    N_("the best configuration by recall@{k} ({value}); no decision is saved for this run"),
    N_("the run's only configuration"),
    N_("the run's first configuration"),
    N_("the configuration named in the link"),
    N_("the link's configuration"),
    N_("t = {t} for {label}, saved {when} by {author} (decision {id})"),
    N_("No threshold claim stored with this decision."),
    N_(
        "Saved under the claim: bluffs <= {alpha} and lost <= {beta} with {confidence} confidence, on {n_ood} "
        "off-topic and {n_answerable} answerable questions: bluff {bluff}, lost {lost}, the bluff claim holding "
        "for {region} ({method})."
    ),
    N_(
        "Saved under the claim: bluffs <= {alpha} and lost <= {beta} with {confidence} confidence, on {n_ood} "
        "off-topic and {n_answerable} answerable questions: bluff {bluff}, lost {lost} ({method})."
    ),
    N_(
        "cost ratio {ratio}: one bluff costs as much as {ratio2} lost answers; minimise {ratio3} x bluffs + lost "
        "answers (lost = answerable in-domain queries refused or answered from wrong chunks only; other refusals "
        "add nothing); ties go to the {strictest} threshold. Here: {bluffs} bluffs, {lost} lost, cost {cost}."
    ),
    N_(
        "bluff ceiling {ceiling}: the most correct answers with a bluff rate at most the ceiling, then the fewest "
        "bluffs. Here: {bluffs} of {n} out-of-domain queries bluffed ({rate}), {correct} answered correctly, "
        "{lost} lost."
    ),
    # the Distances screen's n (evalcore.read.distances.DistanceSummary.n_text)
    N_("{n} in-domain queries ({answers}) and {m} out-of-domain queries"),
    N_("{n} with a distance to their answer, {m} destroyed: no chunk holds their answer"),
    N_("each with a distance to its answer"),
    N_("{n} with their answer among the hits returned, {m} without: not returned, or no chunk holds it"),
    N_("each with its answer among the hits returned"),
    # the claim's sentence (evalcore.read.claims.claim_sentence), as a threshold's source names it
    N_(
        "{head}; there (t = {t}), {share} [{low}, {high}] of answerable questions lose their answer "
        "({lost} of {answerable}; the claim 'lost <= {beta}' holds for {region})."
    ),
    N_("{head}; but {problem}"),
    N_("Every threshold keeps bluffs <= {alpha} with {confidence} confidence"),
    N_("{region} keeps bluffs <= {alpha} with {confidence} confidence"),
)

#: Words the library writes that screens show on their own (translated where shown).
WORDS = (
    N_("highest"),
    N_("lowest"),
    N_("cosine distance < t"),
    N_("score >= t"),
    N_("score < t"),
    N_("cosine distance"),
    N_("score (higher = closer)"),
    N_("score (lower = closer)"),
    N_("distance < t"),
    N_("not recorded"),
)
