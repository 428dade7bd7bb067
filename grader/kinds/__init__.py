"""Exercise kinds: one grading pipeline per kind of exercise, each behind the one interface of
grader.kinds.base.Kind, found by the spec's `kind` in grader.kinds.registry.

- cuda (grader.kinds.cuda): a .cu kernel (or a notebook's kernel cell) compiled with NVRTC and run
  on a GPU or the CPU emulator, judged by the checks of grader.checks.
- python (grader.kinds.python): a .py module of functions (or a notebook's definitions) run in a
  walled-off Python child, judged by the exercise's checks and hidden tests (grader.pyexercise).
- triton (grader.kinds.triton): a @triton.jit kernel and its launcher (a .py file) run by Triton's
  interpreter in the same walled-off child, torch and Triton lent, its loads and stores watched (grader.triton).

A kind reads its submission once (Kind.read) and grades it (Kind.grade). What every kind shares
lives below them all, in grader.grading; no kind imports grader.api. A new kind is one more module
here and one line in the registry.
"""
