"""Code in the grading process that starts child processes and supervises them: the supervisor that
hands tasks to child runners, the sandbox every child starts in (time, memory and output limits), a
whole grading in a child (for batch and Gradescope), the stage timeline, the compile cache, the BLAS
thread caps set for children, and the GPU probe (asked in a child so the parent holds no CUDA context).
"""
