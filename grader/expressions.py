"""Safe evaluation of the small arithmetic expressions in spec.toml (grid, shapes, tolerances).

Only integers, floats, the exercise's size variables, + - * / // % **, parentheses and the
functions ceil, floor, min, max, abs, sqrt, log, log2 are allowed; anything else is rejected when the
spec loads, so a spec can never execute code. `log(x)` is the natural logarithm, `log(x, b)` the
logarithm to base b; a tree reduction of N terms has a tolerance that grows with `log2(N)`.
"""
from __future__ import annotations

import ast
import math
from typing import Mapping

_FUNCTIONS = {"ceil": math.ceil, "floor": math.floor, "min": min, "max": max, "abs": abs,
              "sqrt": math.sqrt, "log": math.log, "log2": math.log2}
_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}


class ExpressionError(ValueError):
    """An expression is malformed or uses something outside the allowed grammar."""


def parse(text: str, variables: frozenset[str]) -> ast.Expression:
    """Parse and validate an expression against the allowed grammar and variable names."""
    try:
        tree = ast.parse(str(text).strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse {text!r}: {exc.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Expression, ast.Load, ast.operator, ast.unaryop)):
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            continue
        if isinstance(node, ast.Name) and (node.id in variables or node.id in _FUNCTIONS):
            continue
        if isinstance(node, (ast.BinOp, ast.UnaryOp)) and (type(getattr(node, "op")) in _BINOPS or isinstance(node.op, (ast.USub, ast.UAdd))):
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS and not node.keywords:
            continue
        what = node.id if isinstance(node, ast.Name) else type(node).__name__
        raise ExpressionError(f"{text!r}: {what!r} is not allowed (use the size variables {sorted(variables)}, numbers, + - * / // %, ceil/floor/min/max/abs/sqrt/log/log2)")
    return tree


def evaluate(text: str, values: Mapping[str, int | float]) -> int | float:
    """Evaluate an expression with the given variable values."""
    tree = parse(text, frozenset(values))
    return _eval(tree.body, values)


def evaluate_int(text: str, values: Mapping[str, int | float]) -> int:
    """Evaluate an expression that must give a whole number (a grid size, a shape)."""
    value = evaluate(text, values)
    if isinstance(value, float):
        if not value.is_integer():
            raise ExpressionError(f"{text!r} gives {value} for {dict(values)}, not a whole number (use ceil() or //)")
        value = int(value)
    return value


def _eval(node: ast.AST, values: Mapping[str, int | float]) -> int | float:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, values)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp):
        try:
            return _BINOPS[type(node.op)](_eval(node.left, values), _eval(node.right, values))
        except ZeroDivisionError:
            raise ExpressionError("division by zero") from None
    if isinstance(node, ast.Call):
        name = node.func.id
        args = [_eval(arg, values) for arg in node.args]
        try:
            return _FUNCTIONS[name](*args)
        except (ValueError, TypeError, OverflowError) as exc:
            # log(0), sqrt(-1), min() or log2(1, 2): the spec's author gets the call that failed
            shown = ", ".join(str(a) for a in args)
            raise ExpressionError(f"{name}({shown}) cannot be evaluated: {exc}") from None
    raise ExpressionError(f"unexpected {type(node).__name__}")
