"""What every exercise kind shares, below all of them: the seed of a grading, the backend it runs on,
its children's environment, the student's output made inert, the submission as read once, and the
entries of checks that were not run. Nothing here imports a kind (grader.kinds) or grader.api.
"""
