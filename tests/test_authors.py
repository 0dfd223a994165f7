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
    assert authors.author_from_headers({"X-User": "x" * 500}) == "x" * authors.MAX_AUTHOR
    assert authors.shown(None) == authors.NOT_RECORDED


def test_the_cli_records_the_os_user() -> None:
    assert authors.os_author() == getpass.getuser()
