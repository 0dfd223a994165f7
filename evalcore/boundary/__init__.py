"""The input boundary: every file, text, time, number and header a user hands evalcore passes
through here, so that a new command or screen starts hardened instead of repeating the checks.

- ``files``: files a user names or uploads (regular files only, links resolved and checked,
  size capped before reading, UTF-8 checked line by line) and files evalcore writes (never
  through a symbolic link, never outside the folder the user named: a temporary file, then a
  rename).
- ``text``: text that comes back to a person (names, notes, labels, authors, shown queries):
  NFC, length caps, control and bidi characters refused in names; escaped for the terminal.
- ``csvcells``: a CSV cell that a spreadsheet would read as a formula, neutralised.
- ``times``: one parser for every time a user gives, with a checked range and time zones
  normalised to UTC.
- ``numbers``: every numeric option's range, said one way everywhere.

Nothing here imports Streamlit; Markdown escaping lives in ``evalcore.figures.markdown_text``.
"""
