"""Process wiring: the CLI, the composition root, the HTTP server and the worker."""
