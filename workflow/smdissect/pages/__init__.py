"""The HTML pages, the README's tables and the simulator configuration, read from the figures."""
