"""Chat adapters: translate platform events into `core.Request` and render `core.Reply`."""
