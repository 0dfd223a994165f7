"""The main language of a corpus, and the one line that says when the retrievers asked for
do not read it (LANGUAGES.md "Which analyzer for which corpus").

Detection reads a bounded, deterministic sample: at most :data:`SAMPLE_WINDOWS` windows of
:data:`WINDOW_CHARS` characters, placed at evenly spaced offsets of the documents' text laid
end to end (in document id order), so a long document holds more windows than a short one and
a huge one is never read whole. Each window is read by py3langid (its model ships in the
wheel: nothing is downloaded) and votes for its language with the number of letters it holds,
unless the model is unsure (a probability under :data:`MIN_CONFIDENCE`). Digits, punctuation
and symbols are left out before a window is read, so code and tables vote only with the words
they hold, and a sample with fewer than :data:`MIN_SAMPLE_LETTERS` voting letters names no
language.

Nothing here changes a run: :func:`language_hint` only says what the user could ask for.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from babel import Locale, UnknownLocaleError

from evalcore.retrieval.bm25 import UNICODE
from evalcore.retrieval.names import ANALYZED, retriever_name, split_retriever

if TYPE_CHECKING:
    from evalcore.records import Corpus

#: windows read at most (the sample's bound: SAMPLE_WINDOWS x WINDOW_CHARS characters)
SAMPLE_WINDOWS = 64
WINDOW_CHARS = 600
#: a window with fewer letters than this does not vote (a heading, a table of numbers)
MIN_WINDOW_LETTERS = 20
#: a sample with fewer letters than this names no language
MIN_SAMPLE_LETTERS = 200
#: a window read with a lower probability than this does not vote (code, lists of names)
MIN_CONFIDENCE = 0.5
#: py3langid's label for text of no language
NO_LANGUAGE = "zxx"
#: the share of the sample's letters a language needs to be the corpus's language
MAIN_SHARE = 0.5
ENGLISH = "en"
#: the packaged embedding model (trained on English text)
DEFAULT_MODEL = "all-MiniLM-L6-v2"
#: the retrievers that embed with the run's model
EMBEDDED = ("dense", "hybrid", "rerank")

#: ISO 639-1 code (as py3langid names languages) -> the Snowball stemmer PyStemmer names;
#: a language without one is read by ``bm25:unicode`` (words, not stemmed)
SNOWBALL = {
    "ar": "arabic",
    "hy": "armenian",
    "eu": "basque",
    "ca": "catalan",
    "cs": "czech",
    "da": "danish",
    "nl": "dutch",
    "en": "english",
    "eo": "esperanto",
    "et": "estonian",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "el": "greek",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "no": "norwegian",
    "nn": "norwegian",
    "fa": "persian",
    "pl": "polish",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "st": "sesotho",
    "es": "spanish",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}
_NOT_LETTERS = re.compile(r"[\W\d_]+")


@dataclass(frozen=True, slots=True)
class CorpusLanguage:
    """What the sample read: ``code`` the language with the most letters (ISO 639-1, as
    py3langid names it), ``share`` its share of the sample's letters (0-1), ``english`` the
    share read as English, ``letters`` and ``windows`` the letters and windows that voted,
    ``shares`` every language read with its share, largest first (ties by code)."""

    code: str
    share: float
    english: float
    letters: int
    windows: int
    shares: tuple[tuple[str, float], ...]

    @property
    def is_english(self) -> bool:
        """Whether most of the sample reads as English (then nothing is said)."""
        return self.english >= MAIN_SHARE

    @property
    def mixed(self) -> bool:
        """Whether no language holds most of the sample."""
        return self.share < MAIN_SHARE


@dataclass(frozen=True, slots=True)
class LanguageHint:
    """Why the retrievers asked for do not fit a corpus: ``analyzer`` the one that reads it
    (``russian``; ``unicode`` for a mixed corpus or a language without a Snowball stemmer),
    ``plain`` the retrievers that read the chapter's a-z0-9 tokenizer and ``instead`` the
    same retrievers with ``analyzer``, ``default_model`` whether a retriever embeds with the
    packaged English-only model."""

    language: CorpusLanguage
    analyzer: str
    plain: tuple[str, ...]
    instead: tuple[str, ...]
    default_model: bool


def analyzer_for(code: str) -> str:
    """The BM25 analyzer for an ISO 639-1 code: its Snowball stemmer (``ru`` -> ``russian``),
    else ``unicode``."""
    return SNOWBALL.get(code, UNICODE)


def sample_windows(texts: Sequence[str]) -> list[str]:
    """At most SAMPLE_WINDOWS windows of at most WINDOW_CHARS characters of ``texts`` laid end
    to end, centred on evenly spaced offsets, each inside one text; the same texts give the same
    windows. Reads only the windows (a text's length is all that is asked of the rest)."""
    starts: list[int] = []
    total = 0
    for text in texts:
        starts.append(total)
        total += len(text)
    if total == 0:
        return []
    count = min(SAMPLE_WINDOWS, -(-total // WINDOW_CHARS))
    seen: set[tuple[int, int]] = set()
    windows: list[str] = []
    half = WINDOW_CHARS // 2
    for j in range(count):
        offset = (2 * j + 1) * total // (2 * count)
        i = bisect.bisect_right(starts, offset) - 1
        text = texts[i]
        start = max(0, min(offset - starts[i] - half, len(text) - WINDOW_CHARS))
        if (i, start) not in seen:
            seen.add((i, start))
            windows.append(text[start : start + WINDOW_CHARS])
    return windows


@lru_cache(maxsize=1)
def _identifier() -> Any:
    """py3langid's identifier with probabilities, loaded once (about a second: the model is
    decompressed from the wheel's own file). py3langid loads numpy at its head, so it is
    imported on first use: ``evalcore --help`` and ``import evalcore`` stay light."""
    from py3langid import langid

    return langid.LanguageIdentifier.from_model_file(langid.MODEL_FILE, norm_probs=True)


def read_language(windows: Iterable[str]) -> CorpusLanguage | None:
    """The language most of the voting windows' letters are read as; None when they hold fewer
    than MIN_SAMPLE_LETTERS letters (nothing to tell)."""
    votes: dict[str, int] = {}
    voted = 0
    for window in windows:
        words = _NOT_LETTERS.sub(" ", window).strip()
        letters = sum(1 for ch in words if ch.isalpha())
        if letters < MIN_WINDOW_LETTERS:
            continue
        code, confidence = _identifier().classify(words)
        if code == NO_LANGUAGE or confidence < MIN_CONFIDENCE:
            continue
        code = str(code)
        votes[code] = votes.get(code, 0) + letters
        voted += 1
    total = sum(votes.values())
    if total < MIN_SAMPLE_LETTERS:
        return None
    shares = tuple(sorted(((c, n / total) for c, n in votes.items()), key=lambda cs: (-cs[1], cs[0])))
    code, share = shares[0]
    return CorpusLanguage(code, share, votes.get(ENGLISH, 0) / total, total, voted, shares)


def detect_language(corpus: Corpus) -> CorpusLanguage | None:
    """The main language of ``corpus`` from a bounded sample of its documents' text (see the
    module docstring); None when the sample holds too few letters."""
    texts = [d.text for d in sorted(corpus.documents, key=lambda d: d.doc_id)]
    return read_language(sample_windows(texts))


def language_hint(
    language: CorpusLanguage | None, retrievers: Sequence[str], models: Sequence[str] = ()
) -> LanguageHint | None:
    """What to say when a corpus that is not English is read by a retriever that does not fit
    it: a retriever on the chapter's tokenizer (``bm25``, ``hybrid``, ``rerank`` with no
    analyzer, unless the same retriever with the corpus's analyzer is asked for too), or the
    packaged English model (no ``models``). None when there is nothing to say."""
    if language is None or language.is_english:
        return None
    analyzer = UNICODE if language.mixed else analyzer_for(language.code)
    plain: list[str] = []
    instead: list[str] = []
    for name in retrievers:
        base, own = split_retriever(name)
        better = retriever_name(base, analyzer)
        if base in ANALYZED and not own and better not in retrievers:
            plain.append(name)
            instead.append(better)
    default_model = not models and any(split_retriever(r)[0] in EMBEDDED for r in retrievers)
    if not plain and not default_model:
        return None
    return LanguageHint(language, analyzer, tuple(plain), tuple(instead), default_model)


def percent(share: float) -> str:
    """A share as a whole percentage (``0.974`` -> ``97%``)."""
    return f"{round(share * 100)}%"


def read_as(language: CorpusLanguage) -> str:
    """``ru, 97% of the sampled text`` or, mixed, ``ru 45%, de 40%`` (the first three)."""
    if language.mixed:
        return ", ".join(f"{c} {percent(s)}" for c, s in language.shares[:3]) + " of the sampled text"
    return f"{language.code}, {percent(language.share)} of the sampled text"


def hint_line(hint: LanguageHint) -> str:
    """The CLI's one line (English): the corpus's language, the analyzer to use instead of the
    chapter's tokenizer, and that the default model is English-only."""
    lang = hint.language
    what = "mixes languages" if lang.mixed else f"reads as {language_name(lang.code)}"
    parts = [f"note: the corpus {what} ({read_as(lang)})"]
    if hint.plain:
        keep = "keeps" if len(hint.plain) == 1 else "keep"
        parts.append(f"{', '.join(hint.plain)} {keep} only its a-z0-9 words: use {', '.join(hint.instead)}")
    if hint.default_model:
        parts.append(f"the default model {DEFAULT_MODEL} is English-only: give --model a multilingual folder")
    return "; ".join(parts) + "; see docs/LANGUAGES.md"


def language_name(code: str, locale: str = "en") -> str:
    """The language's name in ``locale`` (``ru`` -> ``Russian``, in ``de`` ``Russisch``); the
    code itself when Babel does not know it."""
    try:
        name = Locale.parse(code).get_display_name(locale)
    except (UnknownLocaleError, ValueError):
        return code
    return str(name) if name else code
