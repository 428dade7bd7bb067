"""`python -m grader` is the `grade` command."""
from .cli import main

main()
