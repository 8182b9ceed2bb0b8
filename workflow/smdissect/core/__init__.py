"""What every layer shares: errors, files, statistics, the arch facts, the run configuration, the manifest loader
(the one reader of kernels/) and the table registry."""
