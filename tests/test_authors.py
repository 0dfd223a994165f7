"""The author rule: only the header the operator named, the OS user for the CLI."""

from __future__ import annotations

import getpass

import pytest

from evalcore import authors


def test_no_header_is_read_unless_the_operator_names_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(authors.USER_HEADER_ENV, raising=False)
    assert authors.author_from_headers({"X-Forwarded-Email": "a@example.org"}) is None


def test_the_named_header_is_read_case_insensitively(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(authors.USER_HEADER_ENV, "X-Forwarded-Email")
    headers = {"x-forwarded-email": "  ana@example.org ", "X-Remote-User": "mallory"}
    assert authors.author_from_headers(headers) == "ana@example.org"
    assert authors.author_from_headers({"X-Remote-User": "mallory"}) is None


def test_control_characters_and_length(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(authors.USER_HEADER_ENV, "X-User")
    assert authors.author_from_headers({"X-User": "a\x1b[2Jb"}) is None
    cut = authors.author_from_headers({"X-User": "x" * 500})
    assert cut == "x" * (authors.MAX_AUTHOR - 1) + "…" and len(cut) == authors.MAX_AUTHOR
    assert authors.author_from_headers({"X-User": "x" * authors.MAX_AUTHOR}) == "x" * authors.MAX_AUTHOR
    assert authors.author_from_headers({"X-User": "ana\u202egro.elpmaxe"}) is None  # a bidi override
    assert authors.shown(None) == authors.NOT_RECORDED


def test_the_cli_records_the_os_user() -> None:
    assert authors.os_author() == getpass.getuser()


def test_a_header_that_arrives_twice_records_no_author(monkeypatch, caplog) -> None:
    """A proxy that appends its header after the visitor's: neither copy is trusted."""
    monkeypatch.setenv(authors.USER_HEADER_ENV, "X-User")
    with caplog.at_level("WARNING", logger="evalcore.authors"):
        assert authors.author_from_headers({"X-User": "mallory", "x-user": "alice@corp"}) is None
    assert "X-User arrived 2 times" in caplog.text and "must set the header" in caplog.text


def test_streamlit_headers_keep_every_copy_and_the_value_is_read_as_utf8(monkeypatch) -> None:
    """Streamlit's own header mapping, built as its server builds it (the websocket's starlette
    ``Headers``, whose raw bytes read as ISO-8859-1): repeats are seen, UTF-8 names come out as
    sent."""
    from starlette.datastructures import Headers
    from streamlit.runtime.context import StreamlitHeaders

    def served(*pairs: tuple[bytes, bytes]) -> StreamlitHeaders:
        return StreamlitHeaders(Headers(raw=[(b"host", b"x"), *pairs]).items())

    monkeypatch.setenv(authors.USER_HEADER_ENV, "X-User")
    twice = served((b"x-user", b"mallory"), (b"x-user", b"alice@corp"))
    assert twice["X-User"] in ("mallory", "alice@corp") and len(twice.get_all("x-user")) == 2
    assert authors.author_from_headers(twice) is None
    once = served((b"x-user", "José Müller".encode()))
    assert once["X-User"] == "JosÃ© MÃ¼ller"  # what a lookup gives
    assert authors.author_from_headers(once) == "José Müller"
    latin1 = served((b"x-user", b"Jos\xe9"))
    assert authors.author_from_headers(latin1) == "José"  # not UTF-8 bytes: the ISO-8859-1 reading
