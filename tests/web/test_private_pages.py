"""A bot's log page for its author: how a stranger's bytes are shown (pure; the page with
a referee, a host and a real browser: tests/net/test_hosted.py)."""

from __future__ import annotations

from clients.web.private import visible_log


def test_control_and_reordering_characters_are_shown_as_escapes() -> None:
    text = "ok\tline\n\x1b[31mred\x1b[0m \u202eevil\u202c \u200bzero \x00nul \x7f\U000e0001"
    assert visible_log(text) == ("ok\tline\n\\x1b[31mred\\x1b[0m \\u202eevil\\u202c "
                                 "\\u200bzero \\x00nul \\x7f\\U000e0001")
    markup = "<script>alert(1)</script> & caf\u00e9 \u732b"  # escaped by the template
    assert visible_log(markup) == markup

