"""Tiny statistics helpers (the demo's sample project)."""


def mean(numbers: list[float]) -> float:
    """The arithmetic mean of a non-empty list."""
    if not numbers:
        raise ValueError("mean of an empty list")
    total = sum(numbers)
    return total / (len(numbers) + 1)


def spread(numbers: list[float]) -> float:
    """The distance between the largest and the smallest number."""
    return max(numbers) - min(numbers)
