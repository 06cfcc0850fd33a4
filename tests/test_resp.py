"""The referee's lean RESP2 codec (server/resp.py): replies parse whole or not at all."""

from __future__ import annotations

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from server.resp import pack, parse

MESSAGE = b"*3\r\n$7\r\nmessage\r\n$20\r\nms:bot:b-1234:events\r\n$9\r\n{\"a\":\"b\"}\r\n"


def test_pack_is_a_resp_array_of_bulk_strings() -> None:
    assert pack(["EVALSHA", b"ab", 2, "k\u00e9"]) == (
        b"*4\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$1\r\n2\r\n$3\r\nk\xc3\xa9\r\n")


@pytest.mark.parametrize(("raw", "value"), [
    (b"+OK\r\n", "OK"),
    (b":42\r\n", 42),
    (b":-1\r\n", -1),
    (b"$3\r\nabc\r\n", b"abc"),
    (b"$0\r\n\r\n", b""),
    (b"$-1\r\n", None),
    (b"*-1\r\n", None),
    (b"*0\r\n", []),
    (b"*2\r\n:1\r\n*1\r\n$1\r\nx\r\n", [1, [b"x"]]),
    (MESSAGE, [b"message", b"ms:bot:b-1234:events", b'{"a":"b"}']),
])
def test_parse_each_kind(raw: bytes, value: object) -> None:
    assert parse(raw, 0) == (value, len(raw))


def test_bulk_strings_may_hold_crlf() -> None:
    raw = b"$4\r\n\r\n\r\n\r\n"
    assert parse(raw, 0) == (b"\r\n\r\n", len(raw))


def test_an_error_is_a_value_not_raised() -> None:
    got = parse(b"-NOSCRIPT No matching script\r\n", 0)
    assert got is not None
    value, end = got
    assert isinstance(value, ResponseError) and str(value).startswith("NOSCRIPT")
    assert end == 30


def test_nothing_until_the_reply_is_complete() -> None:
    for cut in range(len(MESSAGE)):
        assert parse(MESSAGE[:cut], 0) is None


def test_replies_one_after_another() -> None:
    buf = b":1\r\n" + MESSAGE + b"+QUEUED\r\n"
    got, pos = [], 0
    while (step := parse(buf, pos)) is not None:
        got.append(step[0])
        pos = step[1]
    assert got == [1, [b"message", b"ms:bot:b-1234:events", b'{"a":"b"}'], "QUEUED"]
    assert pos == len(buf)


def test_garbage_is_refused() -> None:
    with pytest.raises(RedisConnectionError):
        parse(b"!nope\r\n", 0)
