"""app/config/redaction.py: web addresses without their user:password, secrets cut out of texts (issue 19, item 4)."""

from __future__ import annotations

import pytest

from app.config.redaction import Redactor, redact_url, redact_urls, scrub, secret_name, split_userinfo, url_secrets


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:S3CRETPASS@127.0.0.1:8080/v1", "http://[redacted]@127.0.0.1:8080/v1"),
        ("https://token@proxy.example/v1/", "https://[redacted]@proxy.example/v1/"),
        ("http://u:p@ss@host/v1", "http://[redacted]@host/v1"),  # an unencoded @ in the password
        ("http://u:p%40ss@host", "http://[redacted]@host"),
        ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"),
        ("https://medium.com/@wisp?ref=feed", "https://medium.com/@wisp?ref=feed"),  # an @ in the path only
        ("https://host/v1?key=AIzaSECRET&alt=json", "https://host/v1?key=[redacted]&alt=json"),
        ("https://host/v1?api_key=x1&x-token=y2#top", "https://host/v1?api_key=[redacted]&x-token=[redacted]#top"),
        ("wss://a:b@gateway.local/?v=10", "wss://[redacted]@gateway.local/?v=10"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_redact_urls_in_a_text_leaves_the_rest() -> None:
    text = "The LLM endpoint http://user:S3CRETPASS@10.0.0.2/v1 answered with an error 500 (see 'http://a:b@c/')."
    assert redact_urls(text) == (
        "The LLM endpoint http://[redacted]@10.0.0.2/v1 answered with an error 500 (see 'http://[redacted]@c/')."
    )
    assert redact_urls("no address here: user:pass@host") == "no address here: user:pass@host"


def test_split_userinfo() -> None:
    assert split_userinfo("http://user:pa%3Ass@host:1/v1?q=1") == ("http://host:1/v1?q=1", "user", "pa%3Ass")
    assert split_userinfo("http://token@host/") == ("http://host/", "token", None)
    assert split_userinfo("http://host/") == ("http://host/", None, None)
    assert split_userinfo("not a url") == ("not a url", None, None)
    assert sorted(url_secrets("http://u:p%40ss@host")) == ["p%40ss", "p@ss"]
    assert url_secrets("http://host") == ()


def test_scrub_and_the_redactor_cut_known_secrets() -> None:
    assert scrub("token abcdef and abc", ["abcdef", "abc", ""]) == "token [redacted] and abc"  # short ones stay
    known = ["sk-first"]
    redactor = Redactor()
    redactor.know(lambda: known)
    assert redactor("key sk-first at http://u:pw@h/") == "key [redacted] at http://[redacted]@h/"
    known[:] = ["sk-second"]  # asked each time: a key changed in Settings
    assert redactor("sk-first sk-second") == "sk-first [redacted]"


def test_secret_names() -> None:
    assert all(secret_name(n) for n in ("api_key", "x-api-key", "token", "access_token", "Password", "sig"))
    assert not any(secret_name(n) for n in ("alt", "model", "keyboard", "bypass", "monkey"))
