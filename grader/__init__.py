"""kernel-grader: an autograder and exercise framework for CUDA kernel homework."""

__version__ = "0.1.0"
