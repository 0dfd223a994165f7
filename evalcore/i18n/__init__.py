"""The dashboard's languages: gettext catalogs and locale formatting, without Streamlit.

English text is the message id; ``locales/<lang>/LC_MESSAGES/evalcore.po`` holds the German,
Dutch and Indonesian text, read with Babel at run time (no compile step, nothing to build).
Which language a session shows is chosen by the dashboard (``evalcore_app/ui/lang.py``);
everything here takes the language as an argument, so the CLI, the API and library errors
stay English by calling nothing here (or :data:`ENGLISH`).

Figures keep the digits they show in English. A number is first written as today (the bound
rounded on its safe side by :mod:`evalcore.measures.rounding`, a rate with ``:.0%``), then that
text is set in the locale's symbols by Babel with exactly its digits, so no digit can change
(:meth:`Translator.decimal_text` checks it reads back as the same decimal).
"""

from __future__ import annotations

import datetime as dt
import functools
import gettext
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from babel import Locale
from babel.dates import format_date, format_time
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po
from babel.numbers import format_decimal, format_percent, get_decimal_symbol

#: The languages the dashboard offers, by code, each named in its own language.
LANGUAGES: dict[str, str] = {"en": "English", "de": "Deutsch", "nl": "Nederlands", "id": "Bahasa Indonesia"}
DEFAULT = "en"
LOCALES = Path(__file__).resolve().parent / "locales"
DOMAIN = "evalcore"
#: Terms the field writes in English in every language (kept as they are in translations).
KEPT_TERMS = ("recall@k", "hit@k", "MRR", "BM25", "RRF", "bluff", "Wilson", "AUC", "DeLong", "PNG", "SVG", "CSV")
_DECIMAL = re.compile(r"(?<![\w.])-?\d+\.\d+(?![\w.%])")
_PERCENT = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)%")


def N_(message: str) -> str:
    """Mark ``message`` for the catalog; translated where it is shown (``tr.gettext(value)``)."""
    return message


def po_path(lang: str) -> Path:
    """The catalog of ``lang`` (not English: its text is the message id)."""
    return LOCALES / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def language(code: str | None) -> str | None:
    """The offered language a code or browser locale names (``de``, ``de-DE``, ``nl_BE``,
    ``in`` for Indonesian as old Java writes it), else None."""
    if not code:
        return None
    head = re.split(r"[-_]", str(code).strip().lower(), maxsplit=1)[0]
    head = "id" if head == "in" else head
    return head if head in LANGUAGES else None


@functools.cache
def catalog(lang: str) -> Catalog | None:
    """The catalog of ``lang`` as Babel reads it (None for English, or a missing file)."""
    path = po_path(lang)
    if lang == DEFAULT or not path.is_file():
        return None
    with path.open("rb") as handle:
        return read_po(handle, locale=lang, domain=DOMAIN)


@dataclass(frozen=True, slots=True)
class Translator:
    """One language's text and number formatting (``Translator("de").gettext("Run")``)."""

    lang: str = DEFAULT

    @property
    def locale(self) -> Locale:
        return Locale.parse(self.lang)

    @property
    def name(self) -> str:
        return LANGUAGES.get(self.lang, self.lang)

    def _entry(self, msgid: str | tuple[str, str]) -> object:
        cat = catalog(self.lang)
        if cat is None:
            return None
        message = cat.get(msgid)
        if message is None or message.fuzzy:
            return None
        return message.string

    def gettext(self, message: str) -> str:
        """``message`` in this language (the English text where no translation is written)."""
        found = self._entry(message)
        return found if isinstance(found, str) and found else message

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        """The plural form for ``n`` (the catalog's plural rule; English: one/other)."""
        cat = catalog(self.lang)
        if cat is not None:
            found = self._entry(singular)
            if isinstance(found, tuple | list) and all(found):
                return str(found[min(_plural_index(cat, n), len(found) - 1)])
        return singular if n == 1 else plural

    # --- figures ---------------------------------------------------------------------------

    @property
    def comma(self) -> bool:
        """Whether this locale writes decimals with a comma (then lists of numbers use ``;``)."""
        return get_decimal_symbol(self.locale) == ","

    def decimal_text(self, text: str) -> str:
        """A number already written in English digits (``"0.470"``, ``"-3"``, ``"12.5"``) in
        this locale's symbols, with exactly its digits: Babel is given the decimal value and a
        pattern with as many fraction digits as it has, so nothing is rounded again. Text that
        is no finite number (``inf``, ``none``) is returned as it is."""
        try:
            value = Decimal(text)
        except InvalidOperation:
            return text
        if not value.is_finite() or self.lang == DEFAULT:
            return text
        digits = max(0, -int(value.as_tuple().exponent))
        pattern = "0." + "0" * digits if digits else "0"
        shown = format_decimal(value, format=pattern, locale=self.locale, decimal_quantization=True)
        back = shown.replace("\u2212", "-").replace(get_decimal_symbol(self.locale), ".")
        if Decimal(back) != value:  # cannot happen with a pattern of its own digits; a promise is checked
            raise ValueError(f"locale formatting changed {text!r} to {shown!r}")
        return shown

    def integer(self, value: int) -> str:
        """A count with the locale's thousands separator (``12,345``; ``12.345``)."""
        if self.lang == DEFAULT:
            return f"{value:,}"
        return format_decimal(value, format="#,##0", locale=self.locale)

    def number(self, value: float, digits: int = 3) -> str:
        """``value`` with ``digits`` decimals (as ``f"{value:.{digits}f}"`` writes it) in this locale."""
        return self.decimal_text(f"{value:.{digits}f}")

    def percent(self, value: float, digits: int = 0) -> str:
        """A share as a percentage with ``digits`` decimals (as ``f"{value:.{digits}%}"`` rounds
        it) in this locale's form (``14%``, ``14 %``)."""
        return self.percent_text(f"{100 * value:.{digits}f}")

    def percent_text(self, text: str) -> str:
        """A percentage already written in English digits (``"2.5"`` for 2.5%) in this locale's
        form, with exactly its digits."""
        if self.lang == DEFAULT:
            return text + "%"
        try:
            exact = Decimal(text)
        except InvalidOperation:
            return text + "%"
        digits = max(0, -int(exact.as_tuple().exponent))
        base = str(self.locale.percent_formats[None].pattern)  # the locale's own form: "#,##0 %"
        pattern = base.replace("#,##0", "0." + "0" * digits if digits else "0")
        return format_percent(exact.scaleb(-2), format=pattern, locale=self.locale, decimal_quantization=True)

    def interval(self, low: str, high: str) -> str:
        """An interval of two numbers already written (``[0.566, 0.777]``; ``[0,566; 0,777]``
        where the locale's decimal mark is a comma)."""
        sep = "; " if self.comma else ", "
        return f"[{self.decimal_text(low)}{sep}{self.decimal_text(high)}]"

    def numbers_in(self, text: str) -> str:
        """Every decimal number in ``text`` (``0.470``, ``p = 0.031``) in this locale, each with
        its digits; ``[a, b]`` intervals of such numbers with the locale's separator. For the
        library's sentences about figures (never for ids, names or paths)."""
        if self.lang == DEFAULT:
            return text
        if self.comma:
            text = re.sub(
                r"\[(-?\d+(?:\.\d+)?%?), (-?\d+(?:\.\d+)?%?)\]",
                lambda m: f"[{m.group(1)}; {m.group(2)}]",
                text,
            )
        text = _PERCENT.sub(lambda m: self.percent_text(m.group(1)), text)
        return _DECIMAL.sub(lambda m: self.decimal_text(m.group(0)), text)

    def rewrite(self, text: str, templates: tuple[str, ...]) -> str:
        """A sentence the library wrote in English from one of ``templates`` (message ids with
        ``{name}`` fields: ``"saved decision: {decision}"``) in this language: the first template
        the whole text matches is translated and its fields filled with the values read from the
        text (each rewritten too, its figures in the locale). Text no template matches is
        translated as a message id (or kept) with its figures in the locale."""
        if self.lang == DEFAULT or not text:
            return text
        whole = self.gettext(text)  # a message id as it is wins over a template it also fits
        if whole != text:
            return whole
        for template in templates:
            match = _pattern(template).fullmatch(text)
            if match is not None:
                values = {k: self.rewrite(v, templates) for k, v in match.groupdict().items()}
                return self.gettext(template).format(**values)
        return self.numbers_in(self.gettext(text))

    def date(self, value: dt.datetime | dt.date | None, seconds: bool = True) -> str:
        """A date (and time) as this locale writes it (to the second, or the minute without
        ``seconds``); English keeps the ISO form shown today."""
        if value is None:
            return ""

        if self.lang == DEFAULT:
            if isinstance(value, dt.datetime):
                return value.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")
            return value.strftime("%Y-%m-%d")
        day = format_date(value, format="medium", locale=self.locale)
        if not isinstance(value, dt.datetime):
            return day
        return f"{day} {format_time(value, format='medium' if seconds else 'short', locale=self.locale)}"

    def vega_format_locale(self) -> dict[str, object]:
        """Vega-Lite's number format locale (d3-format) for charts: the axis and tooltip numbers
        written as the text writes them."""
        symbols = self.locale.number_symbols.get("latn", {})
        decimal = str(symbols.get("decimal", "."))
        group = str(symbols.get("group", ","))
        thousands = group.replace("\u202f", "\u00a0")
        return {"decimal": decimal, "thousands": thousands, "grouping": [3], "currency": ["", ""]}


def matches(text: str, templates: tuple[str, ...]) -> bool:
    """Whether ``text`` is one of ``templates`` with its fields filled (or one without fields)."""
    return any(_pattern(t).fullmatch(text) for t in templates)


@functools.cache
def _pattern(template: str) -> re.Pattern[str]:
    """A template's regular expression: its text literally, each ``{field}`` any text."""
    parts = re.split(r"\{(\w+)\}", template)
    regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts))
    return re.compile(regex, re.DOTALL)


def _plural_index(cat: Catalog, n: int) -> int:
    """The catalog's ``Plural-Forms`` expression at ``n`` (gettext's own evaluator)."""
    return int(gettext.c2py(cat.plural_expr)(n))


ENGLISH = Translator(DEFAULT)


@functools.cache
def translator(lang: str | None) -> Translator:
    """The translator of an offered language (English for anything else)."""
    return Translator(language(lang) or DEFAULT)
