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


@pytest.mark.parametrize("text, want", [
    ("log2(N)", 10.0), ("ceil(log2(N))", 10), ("log(N, 2)", 10.0), ("sqrt(N) * 2", 64.0),
    ("min(N, 256)", 256), ("max(N // 4, 1)", 256), ("abs(1 - N)", 1023), ("log(1)", 0.0),
    ("4 * log2(N) + 8", 48.0),
])
def test_math_functions(text, want):
    from grader.expressions import evaluate
    assert evaluate(text, {"N": 1024}) == pytest.approx(want)


@pytest.mark.parametrize("text", ["log2(N - N)", "sqrt(0 - N)", "log2(N, 2, 3)", "min()"])
def test_a_function_outside_its_domain_is_an_expression_error(text):
    from grader.expressions import ExpressionError, evaluate
    with pytest.raises(ExpressionError) as err:
        evaluate(text, {"N": 4})
    assert "cannot be evaluated" in str(err.value)
