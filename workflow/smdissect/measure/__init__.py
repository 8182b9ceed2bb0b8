"""Building, SASS-checking, running and profiling the kernels on the GPU, and reading what ncu wrote."""
