import pytest

from grader.expressions import ExpressionError, evaluate, evaluate_int


def test_grid_expressions():
    assert evaluate_int("ceil(N / 32)", {"N": 33}) == 2
    assert evaluate_int("(cols + 31) // 32", {"cols": 64}) == 2
    assert evaluate("max(N, 3) * 2 - 1", {"N": 1}) == 5


@pytest.mark.parametrize("text", ["__import__('os')", "N.real", "[N]", "lambda: 1", "open('x')", "M + 1"])
def test_anything_else_is_refused(text):
    with pytest.raises(ExpressionError):
        evaluate(text, {"N": 3})


def test_non_integer_is_refused_where_an_integer_is_needed():
    with pytest.raises(ExpressionError, match="whole number"):
        evaluate_int("N / 32", {"N": 33})
