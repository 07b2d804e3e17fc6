import youyou


def test_all_is_explicit_sorted_and_importable() -> None:
    assert youyou.__all__ == sorted(youyou.__all__, key=lambda n: (n.startswith("_"), n))
    for name in youyou.__all__:
        assert getattr(youyou, name) is not None, name


def test_every_public_class_is_in_all() -> None:
    public = {n for n, v in vars(youyou).items() if not n.startswith("_") and isinstance(v, type)}
    assert public <= set(youyou.__all__)
