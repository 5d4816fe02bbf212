"""Signing in to the hosted lab through its page, as a learner does."""

from __future__ import annotations


def submit_sign_in(page, name: str, password: str) -> None:
    """Fills the sign-in form of the page open now and sends it."""
    page.fill("#sign-in input[name=name]", name)
    page.fill("#sign-in input[name=password]", password)
    page.click("#sign-in button[type=submit]")


def sign_in(page, address: str, name: str, password: str) -> None:
    """Opens `address`, which sends a stranger to the sign-in page first, signs in there and waits
    to be back at `address`."""
    page.goto(address)
    page.wait_for_url("**/login?next=*")
    submit_sign_in(page, name, password)
    page.wait_for_url(address)
