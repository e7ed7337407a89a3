"""The local console channel: `threadline chat` and `threadline ask`."""
