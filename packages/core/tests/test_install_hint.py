"""Install advice in error messages never names an unpublished distribution for pip."""

from __future__ import annotations

from ferrule.core.install import install_hint


def test_ferrule_distributions_are_installed_from_the_checkout() -> None:
    hint = install_hint("ferrule-ui[server]")
    assert hint == "`python tools/install.py 'ferrule-ui[server]'` in a checkout of ferrule (not on PyPI yet)"
    assert "pip install" not in hint


def test_third_party_requirements_are_named_for_pip() -> None:
    hint = install_hint("ferrule-llamacpp[server]", "xllamacpp==0.2.1")
    assert hint.startswith("`python tools/install.py 'ferrule-llamacpp[server]'`")
    assert hint.endswith("and `pip install 'xllamacpp==0.2.1'`")
