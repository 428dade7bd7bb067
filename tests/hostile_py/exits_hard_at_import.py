# Ends its process with os._exit(0) as it is loaded (no SystemExit the worker could catch), after printing a perfect score.
import os

print("All tests passed. score: 100 / 100")
os._exit(0)

@SOLUTION@
