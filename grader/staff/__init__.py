"""Course-staff workflows over the API: grading a class (`grade batch`, locally or on Ray), the
Gradescope autograder zip, the student bundle, and `grade validate` for an exercise.
"""
