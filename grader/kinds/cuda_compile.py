"""Compiling a kernel submission for the CUDA kind and `grade profile`: NVRTC in a child with the
exercise's time limit (or the compile cache), then the kernels the spec names, checked in the PTX."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

from ..compile import entry_names, kernel_param_types
from ..exercise import Exercise
from ..grading.children import child_env
from ..results import TestResult
from ..run.parent import compile_cache
from ..run.parent.sandbox import python_argv, run_child
from ..run.parent.supervisor import child_limits
from ..spec import Spec

_PTX_TYPES = {"int": {"u32", "s32", "b32"}, "unsigned int": {"u32", "s32", "b32"}, "float": {"f32", "b32"},
              "long long": {"u64", "s64", "b64"}, "unsigned long long": {"u64", "s64", "b64"}, "double": {"f64", "b64"}}


def compile_submission(exercise: Exercise, sub, arch: str, tmp: Path) -> Mapping[str, dict]:
    """Compile the submission (and the reference solution) in a child with the spec's time limit;
    sources compiled before with the same everything come from the compile cache instead."""
    src = tmp / "submission.cu"
    src.write_text(sub.source, encoding="utf-8")
    sources = [{"label": "submission", "path": str(src), "name": sub.name, "out": str(tmp / "submission")}]
    if exercise.solution_path.exists():
        sources.append({"label": "reference", "path": str(exercise.solution_path), "name": "solution.cu", "out": str(tmp / "reference")})
    limits = exercise.spec.limits
    root = compile_cache.cache_root()
    keys = {item["label"]: compile_cache.key(Path(item["path"]).read_text(encoding="utf-8", errors="replace"), item["name"],
                                             arch, limits.allowed_includes, limits.memory_bytes) for item in sources}
    done: dict[str, dict] = {}
    for item in sources:
        hit = compile_cache.load(root, keys[item["label"]], item["out"])
        if hit is not None:
            done[item["label"]] = hit
    todo = [item for item in sources if item["label"] not in done]
    if todo:
        fresh = _compile_in_child(todo, arch, limits, tmp)
        for label, entry in fresh.items():
            if label in keys:  # not the _timed_out/_describe notes of a compile that did not finish
                compile_cache.store(root, keys[label], entry)
        done.update(fresh)
    if "_tool_error" in done:
        return {"_tool_error": {"ok": False, "log": done["_tool_error"]}}
    if "submission" not in done:
        why = (f"the compiler stopped after the {limits.compile_seconds:.0f} s limit" if done.get("_timed_out")
               else f"the compiler {done.get('_describe', 'failed')}")
        done["submission"] = {"ok": False, "log": f"{why} (a compile-time bomb? deep template or macro recursion?)"}
    return {k: v for k, v in done.items() if not k.startswith("_")}


def _compile_in_child(sources: list[dict], arch: str, limits, tmp: Path) -> dict[str, dict]:
    """Compile in a child: what it finished, by label (plus _timed_out/_describe when it did not end well)."""
    job = tmp / "compile.json"
    summary = tmp / "compile-summary.json"
    job.write_text(json.dumps({"sources": sources, "arch": arch, "summary": str(summary)}))
    limit = limits.compile_seconds
    # An empty working directory: nothing a relative #include could name. NVRTC is host code, so
    # the address-space cap applies (a macro bomb stops at it rather than at the machine's memory).
    cwd = tmp / "compile-cwd"
    cwd.mkdir(exist_ok=True)
    child = run_child(python_argv("grader.compile", str(job)), timeout=limit * len(sources), env=child_env(tmp),
                      output_cap=limits.output_bytes, cwd=str(cwd), limits=child_limits(limits, limit * len(sources)))
    done = json.loads(summary.read_text()) if summary.exists() else {}
    if "submission" not in done and any(item["label"] == "submission" for item in sources):
        done["_timed_out"] = child.timed_out or child.signal_name == "SIGXCPU"
        done["_describe"] = child.describe()
    return done


def compile_problem(spec: Spec, name: str, result: Mapping) -> str | None:
    """Why the submission cannot be graded after compiling: an error, a missing or mistyped kernel."""
    if not result.get("ok"):
        text = f"{name} does not compile:\n{result.get('log', '').strip()}"
        if result.get("hint"):
            text += f"\nHint: {result['hint']}"
        return text
    ptx = Path(result["ptx"]).read_text()
    for kernel in spec.kernel.chain:  # an exercise of several kernels checks each one
        problem = _kernel_problem(ptx, kernel)
        if problem:
            return problem
    return None


def _kernel_problem(ptx: str, kernel) -> str | None:
    """Why one kernel of the exercise is missing from the PTX or has the wrong parameters, or None."""
    types = kernel_param_types(ptx, kernel.name)
    if types is None:
        found = entry_names(ptx)
        mangled = [n for n in found if kernel.name in n]
        if len(mangled) > 1:
            return (f"There are {len(mangled)} kernels named {kernel.name} (C++ overloads: {', '.join(mangled)}) and none is "
                    f"extern \"C\". Keep exactly one, declared as:\n{kernel.signature}")
        if mangled:
            return f"The kernel {kernel.name} is not declared extern \"C\" (it was compiled as {mangled[0]}). Expected:\n{kernel.signature}"
        have = ", ".join(found) or "none"
        return f"No kernel named {kernel.name} was found (kernels in your file: {have}). Expected:\n{kernel.signature}"
    if len(types) != len(kernel.params):
        return f"{kernel.name} takes {len(types)} parameter(s); the exercise expects {len(kernel.params)}:\n{kernel.signature}"
    for p, t in zip(kernel.params, types):
        allowed = {"u64", "b64", "s64"} if p.is_pointer else _PTX_TYPES[p.type]
        if t not in allowed:
            return f"Parameter {p.name} of {kernel.name} has the wrong type (compiled as .{t}). Expected:\n{kernel.signature}"
    return None


def compile_test(spec: Spec, result: Mapping) -> TestResult | None:
    """The passed "Compiles" test of a submission that compiled: the options, the time and any warnings."""
    conf = spec.checks.get("compile")
    warnings = result.get("log", "").strip()
    cached = " (cached)" if result.get("cached") else ""
    text = (f"Compiled with NVRTC ({' '.join(result.get('options', []))}) in {result.get('seconds', 0):.2f} s{cached}; "
            "the kernel has the expected signature.")
    if warnings:
        text += "\nCompiler warnings:\n" + warnings
    points = conf.points if conf else 0.0
    return TestResult("Compiles", "compile", points, points, True, text, visibility=conf.visibility if conf else "visible")
