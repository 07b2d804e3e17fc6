import importlib.metadata
from pathlib import Path

import youyou


def test_all_is_explicit_sorted_and_importable() -> None:
    assert youyou.__all__ == sorted(youyou.__all__, key=lambda n: (n.startswith("_"), n))
    for name in youyou.__all__:
        assert getattr(youyou, name) is not None, name


def test_every_public_class_is_in_all() -> None:
    public = {n for n, v in vars(youyou).items() if not n.startswith("_") and isinstance(v, type)}
    assert public <= set(youyou.__all__)


def test_the_installed_distribution_has_the_package_version() -> None:
    """One version source: the distribution's metadata is read from ``youyou.__version__``."""
    assert importlib.metadata.version("youyou-agent") == youyou.__version__


def test_the_package_declares_its_type_hints() -> None:
    """``py.typed`` ships inside the package, so type checkers of embedders read its hints."""
    assert (Path(youyou.__file__).parent / "py.typed").is_file()
